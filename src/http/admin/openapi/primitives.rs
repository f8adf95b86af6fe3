//! The building blocks of the document's schemas: JSON Schema for the scalar types, a
//! reference to a component, open and closed objects, and the pages lists answer with.

use serde_json::{json, Value};

pub(super) fn string() -> Value {
    json!({"type": "string"})
}

pub(super) fn text_or_null() -> Value {
    json!({"type": ["string", "null"]})
}

pub(super) fn integer() -> Value {
    json!({"type": "integer", "format": "int64"})
}

pub(super) fn integer_or_null() -> Value {
    json!({"type": ["integer", "null"], "format": "int64"})
}

/// Unix seconds, as every time in the API.
pub(super) fn time() -> Value {
    json!({"type": "integer", "format": "int64", "description": "Unix seconds"})
}

pub(super) fn time_or_null() -> Value {
    json!({"type": ["integer", "null"], "format": "int64", "description": "Unix seconds"})
}

pub(super) fn boolean() -> Value {
    json!({"type": "boolean"})
}

pub(super) fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

pub(super) fn free_object() -> Value {
    json!({"type": "object"})
}

/// A reference to one of the schemas below.
pub fn schema(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub fn array_of(name: &str) -> Value {
    json!({"type": "array", "items": schema(name)})
}

pub(super) fn object(props: Value, required: &[&str]) -> Value {
    let mut v = json!({"type": "object", "properties": props});
    if !required.is_empty() {
        v["required"] = json!(required);
    }
    v
}

/// A request body the server deserialises with `deny_unknown_fields`.
pub(super) fn closed(props: Value, required: &[&str]) -> Value {
    let mut v = object(props, required);
    v["additionalProperties"] = json!(false);
    v
}

/// What `GET` on a paged collection answers.
pub(super) fn page(item: &str) -> Value {
    object(
        json!({"items": array_of(item), "total": integer(), "limit": integer(), "offset": integer()}),
        &["items", "total", "limit", "offset"],
    )
}

/// `{"items": [...]}` without paging.
pub(super) fn items(item: &str) -> Value {
    object(json!({"items": array_of(item)}), &["items"])
}
