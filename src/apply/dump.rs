//! `tessera dump-config`: the current groups (with members), clients (every option and
//! the claim mapping), apps and providers as an apply file that applies as
//! `no changes`. Secrets cannot be dumped (clients' are stored as digests, providers'
//! sealed), so each is a `secret_env` reference to fill in. Users are left out: a
//! file meant for a repository should not carry everyone's address.

use std::fmt::Write;

use serde_json::Value;

use super::step::Current;
use crate::admin::claims::RuleSpec;
use crate::admin::clients::spec_of;

pub async fn dump(cx: &crate::context::Ctx<'_>) -> Result<String, String> {
    let now = Current::read(cx).await.map_err(super::run::text)?;
    let mut out = String::from(
        "# Tessera's clients, groups, apps and providers, as `tessera dump-config` wrote\n\
         # them; `tessera apply FILE` makes a database match (docs/APPLY.md).\n",
    );
    for (name, members) in &now.groups {
        out.push_str("\n[[groups]]\n");
        line(&mut out, "name", &Value::from(name.as_str()));
        line(&mut out, "members", &Value::from(members.clone()));
    }
    for c in &now.clients {
        out.push_str("\n[[clients]]\n");
        line(&mut out, "client_id", &Value::from(c.client_id.as_str()));
        if let Ok(Value::Object(spec)) = serde_json::to_value(spec_of(c)) {
            for (k, v) in spec.iter().filter(|(k, _)| *k != "client_id") {
                line(&mut out, k, v);
            }
        }
        if c.secret_hash.is_some() {
            let var = env_name("CLIENT", &c.client_id);
            let _ = writeln!(
                out,
                "# Stored only as a digest: set {var} to this client's secret (or to a new one)."
            );
            line(&mut out, "secret_env", &Value::from(var));
        }
        for rule in &c.claim_rules {
            out.push_str("\n[[clients.claims]]\n");
            if let Ok(Value::Object(r)) = serde_json::to_value(RuleSpec::of(rule)) {
                for key in ["claim", "source", "scope", "in", "values", "default"] {
                    if let Some(v) = r.get(key) {
                        line(&mut out, key, v);
                    }
                }
            }
        }
    }
    for a in &now.apps {
        out.push_str("\n[[apps]]\n");
        line(&mut out, "id", &Value::from(a.id.as_str()));
        line(&mut out, "url", &Value::from(a.url.as_str()));
        line(&mut out, "allowed_groups", &Value::from(a.allowed_groups.clone()));
        line(&mut out, "require_mfa", &Value::from(a.require_mfa));
        line(&mut out, "header_prefix", &Value::from(a.header_prefix.as_str()));
    }
    for (p, _) in &now.providers {
        out.push_str("\n[[providers]]\n");
        let map: Vec<String> = p.group_map.iter().map(|(u, l)| format!("{u}={l}")).collect();
        let fields = [
            ("id", Value::from(p.id.as_str())),
            ("kind", Value::from(p.kind.as_str())),
            ("name", Value::from(p.name.as_str())),
            ("issuer", p.issuer.clone().map_or(Value::Null, Value::from)),
            ("client_id", Value::from(p.client_id.as_str())),
            ("scope", Value::from(p.scope.as_str())),
            ("jit", Value::from(p.jit)),
            ("link_by_email", Value::from(p.link_by_email)),
            ("require_local_mfa", Value::from(p.require_local_mfa)),
            ("group_claim", p.group_claim.clone().map_or(Value::Null, Value::from)),
            ("map_group", Value::from(map)),
        ];
        for (k, v) in &fields {
            line(&mut out, k, v);
        }
        let var = env_name("PROVIDER", &p.id);
        let _ = writeln!(out, "# Set {var} to the client secret the upstream issued.");
        line(&mut out, "secret_env", &Value::from(var));
    }
    Ok(out)
}

/// `CLIENT_MY_APP_SECRET` for the client `my-app`: what the shell accepts as a name.
fn env_name(kind: &str, id: &str) -> String {
    let id: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{kind}_{id}_SECRET")
}

/// `key = value`; a JSON `null` (no value set) is left out, as TOML has none.
fn line(out: &mut String, key: &str, v: &Value) {
    if let Some(t) = toml_value(v) {
        let _ = writeln!(out, "{key} = {}", t.to_string().trim());
    }
}

fn toml_value(v: &Value) -> Option<toml_edit::Value> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => toml_edit::Value::Array(items.iter().filter_map(toml_value).collect()),
        Value::Object(map) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, v) in map {
                if let Some(x) = toml_value(v) {
                    t.insert(k, x);
                }
            }
            toml_edit::Value::InlineTable(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_toml_and_names_are_shell_names() {
        let mut out = String::new();
        line(&mut out, "a", &serde_json::json!(["x\"y", 1, true, null]));
        line(&mut out, "b", &Value::Null);
        line(&mut out, "c", &serde_json::json!({"keys": [{"kty": "EC"}]}));
        // Whatever quoting toml_edit picks, the text reads back as the values.
        let back: toml::Table = out.parse().unwrap();
        assert_eq!(back.len(), 2, "a null is left out: {out}");
        assert_eq!(
            back["a"],
            toml::Value::Array(vec!["x\"y".into(), 1.into(), true.into()])
        );
        assert_eq!(back["c"]["keys"][0]["kty"].as_str(), Some("EC"));
        assert_eq!(env_name("CLIENT", "my-app.v2"), "CLIENT_MY_APP_V2_SECRET");
    }
}
