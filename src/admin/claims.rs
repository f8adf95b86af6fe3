//! A client's claim mapping as the CLI, the admin pages and the admin API change it
//! (docs/PROTOCOL.md "Claim mapping"): each rule checked, each change one transaction
//! with its audit entry (the table before and after); and the token preview.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{invalid, Actor, AdminError, Problems};
use crate::context::Ctx;
use crate::db::{self, claim_rules::ClaimRule, claim_rules::SOURCES};
use crate::domain::Scope;
use crate::oidc::claims::PROTECTED;
use crate::oidc::client_cache::ClientCache;

/// Rules a client may have, and values a `group_values` rule may list: a mapping is a
/// small table an administrator reads, not a data store.
pub const MAX_RULES: usize = 50;
pub const MAX_VALUES: usize = 100;
pub const TARGETS: &[&str] = &["id_token", "access_token", "userinfo"];
/// Where a rule goes when it does not say (`--in`): what a sign-in reads.
pub const DEFAULT_TARGETS: &[&str] = &["id_token", "userinfo"];

/// One `group_values` pair as the API writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupValue {
    pub group: String,
    pub value: String,
}

/// A rule as an administrator writes it (the admin API's body has these names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuleSpec {
    pub claim: String,
    pub source: String,
    pub scope: Option<String>,
    /// Any of `TARGETS`; empty: `DEFAULT_TARGETS`.
    #[serde(rename = "in")]
    pub targets: Vec<String>,
    pub values: Vec<GroupValue>,
    pub default: Option<String>,
}

impl RuleSpec {
    pub fn of(rule: &ClaimRule) -> Self {
        let on = [rule.id_token, rule.access_token, rule.userinfo];
        Self {
            claim: rule.claim.clone(),
            source: rule.source.clone(),
            scope: rule.scope.clone(),
            targets: TARGETS
                .iter()
                .zip(on)
                .filter(|(_, on)| *on)
                .map(|(t, _)| t.to_string())
                .collect(),
            values: rule
                .values
                .iter()
                .map(|(g, v)| GroupValue {
                    group: g.clone(),
                    value: v.clone(),
                })
                .collect(),
            default: rule.default.clone(),
        }
    }
}

/// A claim name: a letter or `_` first, then letters, digits, `_ . : -`, 64 at most.
fn is_claim_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// A name a claim stored on a user may have (`given_name`, `department`).
fn is_user_claim_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks one rule and makes the record to store; group names are checked against
/// the database when it is stored.
pub fn build(spec: &RuleSpec) -> Result<ClaimRule, Problems> {
    let mut problems = Problems::new();
    let mut problem = |field: &str, msg: String| {
        problems.entry(field.to_string()).or_insert(msg);
    };
    let claim = spec.claim.trim();
    if PROTECTED.contains(&claim) {
        problem("claim", format!("`{claim}` is a protocol claim and cannot be mapped"));
    } else if !is_claim_name(claim) {
        problem(
            "claim",
            "a letter or _ first, then letters, digits, _ . : - (64 at most)".into(),
        );
    }
    let source = spec.source.trim();
    if !SOURCES.contains(&source) && (!is_user_claim_name(source) || PROTECTED.contains(&source)) {
        problem(
            "source",
            format!("one of {}, or the name of a claim stored on users", SOURCES.join(", ")),
        );
    }
    let scope = spec.scope.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if let Some(s) = scope {
        let one_token = Scope::parse(s).is_ok_and(|p| p.iter().count() == 1);
        if !one_token || s.len() > 128 {
            problem(
                "scope",
                "one scope token (RFC 6749 §3.3), 128 characters at most".into(),
            );
        }
    }
    let targets: Vec<&str> = if spec.targets.is_empty() {
        DEFAULT_TARGETS.to_vec()
    } else {
        spec.targets.iter().map(|t| t.trim()).collect()
    };
    if let Some(t) = targets.iter().find(|t| !TARGETS.contains(t)) {
        problem("in", format!("`{t}` is not one of {}", TARGETS.join(", ")));
    }
    let grouped = source == "group_values";
    if grouped {
        if spec.values.is_empty() {
            problem("values", "group_values needs at least one GROUP=VALUE".into());
        }
        if spec.values.len() > MAX_VALUES {
            problem("values", format!("at most {MAX_VALUES} values"));
        }
        let bad = |v: &str| v.is_empty() || v.chars().count() > 256 || v.chars().any(char::is_control);
        if spec.values.iter().any(|v| bad(&v.value) || v.group.trim().is_empty()) {
            problem("values", "each value is 1 to 256 characters, for a group name".into());
        }
        if spec.default.as_deref().is_some_and(bad) {
            problem("default", "1 to 256 characters".into());
        }
    } else {
        if !spec.values.is_empty() {
            problem("values", "values are only for the group_values source".into());
        }
        if spec.default.is_some() {
            problem("default", "a default is only for the group_values source".into());
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(ClaimRule {
        claim: claim.to_string(),
        source: source.to_string(),
        scope: scope.map(str::to_string),
        id_token: targets.contains(&"id_token"),
        access_token: targets.contains(&"access_token"),
        userinfo: targets.contains(&"userinfo"),
        values: spec
            .values
            .iter()
            .map(|v| (v.group.trim().to_string(), v.value.clone()))
            .collect(),
        default: if grouped { spec.default.clone() } else { None },
    })
}

/// Checks a whole table: each rule, distinct claim names, `MAX_RULES` at most.
pub fn build_all(specs: &[RuleSpec]) -> Result<Vec<ClaimRule>, Problems> {
    if specs.len() > MAX_RULES {
        return Err(Problems::from([(
            "rules".to_string(),
            format!("at most {MAX_RULES} rules per client"),
        )]));
    }
    let mut out: Vec<ClaimRule> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let rule = build(spec).map_err(|p| {
            p.into_iter()
                .map(|(k, v)| (format!("rules[{i}].{k}"), v))
                .collect::<Problems>()
        })?;
        if out.iter().any(|r| r.claim == rule.claim) {
            return Err(Problems::from([(
                format!("rules[{i}].claim"),
                format!("`{}` is mapped twice", rule.claim),
            )]));
        }
        out.push(rule);
    }
    Ok(out)
}

fn view(rules: &[ClaimRule]) -> Value {
    Value::from(rules.iter().map(|r| json!(RuleSpec::of(r))).collect::<Vec<_>>())
}

/// The first group a rule names that does not exist.
fn unknown_group(tx: &db::Tx<'_>, rules: &[ClaimRule]) -> Result<Option<String>, db::DbError> {
    for (group, _) in rules.iter().flat_map(|r| &r.values) {
        if db::groups::id_of(tx, group)?.is_none() {
            return Ok(Some(format!("there is no group named `{group}`")));
        }
    }
    Ok(None)
}

/// The client's rules; `NotFound` when there is no such client.
pub async fn list(cx: &Ctx<'_>, client_id: &str) -> Result<Vec<ClaimRule>, AdminError> {
    Ok(super::clients::get(cx, client_id).await?.claim_rules)
}

/// How a change turns the table before into the table after.
enum Change {
    Put(ClaimRule),
    Delete(String),
    Replace(Vec<ClaimRule>),
}

/// Applies a change in one transaction with its audit entry; the table after.
async fn apply(
    cx: &Ctx<'_>,
    clients: &ClientCache,
    actor: &Actor,
    client_id: &str,
    change: Change,
) -> Result<Vec<ClaimRule>, AdminError> {
    let (now, actor, cid) = (cx.now, actor.clone(), client_id.to_string());
    let after = cx
        .db
        .write(move |tx| {
            if db::clients::find(tx, &cid)?.is_none() {
                return Ok(Err(AdminError::NotFound("client")));
            }
            let before = db::claim_rules::of_client(tx, &cid)?;
            match &change {
                Change::Put(rule) => {
                    if let Some(msg) = unknown_group(tx, std::slice::from_ref(rule))? {
                        return Ok(Err(invalid("values", msg)));
                    }
                    let adds = !before.iter().any(|r| r.claim == rule.claim);
                    if adds && before.len() >= MAX_RULES {
                        return Ok(Err(invalid("rules", format!("at most {MAX_RULES} rules per client"))));
                    }
                    db::claim_rules::put_one(tx, &cid, rule)?;
                }
                Change::Delete(claim) => {
                    if !db::claim_rules::delete_one(tx, &cid, claim)? {
                        return Ok(Err(AdminError::NotFound("claim rule")));
                    }
                }
                Change::Replace(rules) => {
                    if let Some(msg) = unknown_group(tx, rules)? {
                        return Ok(Err(invalid("values", msg)));
                    }
                    db::claim_rules::replace(tx, &cid, rules)?;
                }
            }
            let after = db::claim_rules::of_client(tx, &cid)?;
            actor
                .event("admin.client_claims_changed")
                .target(format!("client:{cid}"))
                .detail(json!({"before": view(&before), "after": view(&after)}))
                .write(tx, now)?;
            Ok(Ok(after))
        })
        .await??;
    clients.forget(client_id);
    Ok(after)
}

/// Adds a rule, or replaces the rule for the same claim in place.
pub async fn put(
    cx: &Ctx<'_>,
    clients: &ClientCache,
    actor: &Actor,
    client_id: &str,
    spec: &RuleSpec,
) -> Result<Vec<ClaimRule>, AdminError> {
    let rule = build(spec).map_err(AdminError::Invalid)?;
    apply(cx, clients, actor, client_id, Change::Put(rule)).await
}

pub async fn delete(
    cx: &Ctx<'_>,
    clients: &ClientCache,
    actor: &Actor,
    client_id: &str,
    claim: &str,
) -> Result<(), AdminError> {
    apply(cx, clients, actor, client_id, Change::Delete(claim.to_string()))
        .await
        .map(|_| ())
}

/// Makes the table exactly `specs`, in order.
pub async fn replace(
    cx: &Ctx<'_>,
    clients: &ClientCache,
    actor: &Actor,
    client_id: &str,
    specs: &[RuleSpec],
) -> Result<Vec<ClaimRule>, AdminError> {
    let rules = build_all(specs).map_err(AdminError::Invalid)?;
    apply(cx, clients, actor, client_id, Change::Replace(rules)).await
}

/// The scope a preview shows when none is given: what nearly every relying party (and
/// every app preset) asks for. Every scope the client could ask for would overstate
/// what an app gets; `openid` alone would hide the profile claims most apps read.
pub const PREVIEW_SCOPE: &str = "openid profile email";

/// The token preview of `client_id` for `username` (docs/ADMIN_API.md): nothing signed,
/// nothing stored.
pub async fn preview(
    cx: &crate::oidc::Ctx<'_>,
    client_id: &str,
    username: &str,
    scope: Option<&str>,
) -> Result<Value, AdminError> {
    let client = super::clients::get(cx, client_id).await?;
    let text = scope.map(str::trim).filter(|s| !s.is_empty()).unwrap_or(PREVIEW_SCOPE);
    let asked = Scope::parse(text).map_err(|e| invalid("scope", e.0))?;
    let (name, cid) = (username.trim().to_string(), client.client_id.clone());
    let found = cx
        .db
        .read(move |tx| {
            let Some(mut user) = db::users::find_by_username(tx, &name)? else {
                return Ok(None);
            };
            db::users::load_groups(tx, &mut user)?;
            let allowed = db::clients::group_allowed(tx, &cid, user.id)?;
            let consent = db::consents::find(tx, user.id, &cid)?;
            Ok(Some((user, allowed, consent)))
        })
        .await?;
    let (user, allowed, consent) = found.ok_or(AdminError::NotFound("user"))?;
    let standing = crate::oidc::preview::Standing {
        allowed,
        consent: consent.as_ref(),
    };
    Ok(crate::oidc::preview::compute(cx, &client, &user, &asked, &standing))
}

/// "Test sign-in" for the administrator signed in with `session`
/// (`oidc::self_test`), audited as `client.test_sign_in`.
pub async fn test_sign_in(
    cx: &crate::oidc::Ctx<'_>,
    actor: &Actor,
    client_id: &str,
    session: &db::sessions::Session,
) -> Result<crate::oidc::self_test::TestRun, AdminError> {
    let client = super::clients::get(cx, client_id).await?;
    let ip = actor.ip.clone().unwrap_or_default();
    let event = actor.event("client.test_sign_in");
    Ok(crate::oidc::self_test::run(cx, &client, session, &ip, event).await?)
}

/// The rules as the API answers them.
pub fn listed(rules: &[ClaimRule]) -> Value {
    json!({ "items": view(rules) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(claim: &str, source: &str) -> RuleSpec {
        RuleSpec {
            claim: claim.into(),
            source: source.into(),
            ..RuleSpec::default()
        }
    }

    #[test]
    fn protected_and_malformed_names_are_refused() {
        for name in ["sub", "iss", "aud", "nonce", "scope", "cnf"] {
            let p = build(&spec(name, "groups")).unwrap_err();
            assert!(p["claim"].contains("protocol claim"), "{name}: {p:?}");
        }
        assert!(build(&spec("9roles", "groups")).is_err());
        assert!(build(&spec("ro les", "groups")).is_err());
        assert!(build(&spec("roles", "pass word")).is_err());
        assert!(
            build(&spec("roles", "aud")).is_err(),
            "a protocol name is no user claim"
        );
        assert!(build(&spec(&"r".repeat(65), "groups")).is_err());
        assert!(build(&spec("https:roles", "groups")).is_ok());
    }

    #[test]
    fn targets_default_and_values_belong_to_group_values() {
        let r = build(&spec("roles", "groups")).unwrap();
        assert!(r.id_token && r.userinfo && !r.access_token);
        let mut s = spec("roles", "groups");
        s.values = vec![GroupValue {
            group: "a".into(),
            value: "A".into(),
        }];
        assert!(build(&s).unwrap_err().contains_key("values"));
        s.source = "group_values".into();
        s.default = Some("Viewer".into());
        s.targets = vec!["access_token".into()];
        let r = build(&s).unwrap();
        assert!(r.access_token && !r.id_token && !r.userinfo);
        assert_eq!(r.values, vec![("a".to_string(), "A".to_string())]);
        s.values.clear();
        assert!(build(&s).unwrap_err().contains_key("values"));
        let mut t = spec("roles", "groups");
        t.targets = vec!["cookie".into()];
        assert!(build(&t).unwrap_err().contains_key("in"));
        t.targets.clear();
        t.scope = Some("two scopes".into());
        assert!(build(&t).unwrap_err().contains_key("scope"));
    }

    #[test]
    fn a_table_has_distinct_claims_and_a_bound() {
        let two = [spec("roles", "groups"), spec("roles", "email")];
        assert!(build_all(&two).unwrap_err().contains_key("rules[1].claim"));
        let many: Vec<RuleSpec> = (0..=MAX_RULES).map(|i| spec(&format!("c{i}"), "email")).collect();
        assert!(build_all(&many).unwrap_err().contains_key("rules"));
    }
}
