//! One operation of the OpenAPI document and its builder: the request body, the
//! answers, the query parameters, and the answers every call of the admin API shares.

use serde_json::{json, Value};

use super::primitives::{array_of, schema};

/// One operation: a method and a path template in actix's (and OpenAPI's) `{name}` form.
pub struct Op {
    pub method: &'static str,
    pub path: &'static str,
    public: bool,
    has_input: bool,
    v: Value,
}

/// An operation with its id, tag and one-line summary; the methods below add the rest.
pub fn op(method: &'static str, path: &'static str, id: &str, tag: &str, summary: &str) -> Op {
    Op {
        method,
        path,
        public: false,
        has_input: false,
        v: json!({"operationId": id, "tags": [tag], "summary": summary, "responses": {}}),
    }
}

fn reference(kind: &str, name: &str) -> Value {
    json!({"$ref": format!("#/components/{kind}/{name}")})
}

impl Op {
    fn request(mut self, name: &str, required: bool) -> Self {
        self.v["requestBody"] = json!({
            "required": required,
            "content": {"application/json": {"schema": schema(name)}},
        });
        self.has_input = true;
        self
    }

    /// A JSON body that must be there.
    pub fn body(self, name: &str) -> Self {
        self.request(name, true)
    }

    /// A JSON body that may be left out (the defaults apply).
    pub fn optional_body(self, name: &str) -> Self {
        self.request(name, false)
    }

    pub fn answer(mut self, status: &str, description: &str, body: Value) -> Self {
        self.v["responses"][status] = json!({
            "description": description,
            "content": {"application/json": {"schema": body}},
        });
        self
    }

    pub fn ok(self, name: &str) -> Self {
        self.answer("200", "OK", schema(name))
    }

    pub fn ok_list(self, name: &str) -> Self {
        self.answer("200", "OK", array_of(name))
    }

    pub fn created(self, name: &str) -> Self {
        self.answer("201", "Created", schema(name))
    }

    pub fn no_content(mut self, description: &str) -> Self {
        self.v["responses"]["204"] = json!({"description": description});
        self
    }

    pub fn query(mut self, names: &[&str]) -> Self {
        let params = self.v["parameters"].as_array().cloned().unwrap_or_default();
        let more = names.iter().map(|n| reference("parameters", n));
        self.v["parameters"] = Value::Array(params.into_iter().chain(more).collect());
        self.has_input = true;
        self
    }

    pub fn describe(mut self, text: &str) -> Self {
        self.v["description"] = json!(text);
        self
    }

    /// Served to anyone: no security requirement, none of the refusals of `run`.
    pub fn public(mut self) -> Self {
        self.public = true;
        self.v["security"] = json!([]);
        self
    }

    /// The operation with its path parameters and the answers it shares with the others.
    pub fn finish(mut self) -> Value {
        let names = self
            .path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')));
        let path_params: Vec<Value> = names
            .map(|n| json!({"name": n, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let has_params = !path_params.is_empty();
        if has_params {
            let query = self.v["parameters"].as_array().cloned().unwrap_or_default();
            self.v["parameters"] = Value::Array(path_params.into_iter().chain(query).collect());
        }
        if self.public {
            return self.v;
        }
        let mut shared = vec![("401", "Unauthenticated"), ("403", "Forbidden"), ("503", "Unavailable")];
        if self.has_input {
            shared.push(("400", "Invalid"));
        }
        if has_params {
            shared.push(("404", "NotFound"));
        }
        if self.method != "GET" {
            shared.push(("409", "Conflict"));
        }
        for (status, name) in shared {
            self.v["responses"][status] = reference("responses", name);
        }
        self.v
    }
}
