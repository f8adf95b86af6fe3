//! Standard claims released per scope (OpenID Connect Core §5.1, §5.4), individual
//! claims asked for with the `claims` request parameter (§5.5), and the claims a
//! client's mapping adds (docs/PROTOCOL.md "Claim mapping"): `release` decides all of
//! them, with the reason of each, for tokens, userinfo and the admin preview alike.

use serde_json::{Map, Value};

use crate::db::claim_rules::ClaimRule;
use crate::db::clients::Client;
use crate::db::users::User;
use crate::domain::Scope;

/// Scopes this provider understands; others are dropped from requests (RFC 6749 §3.3
/// lets the server issue a narrower scope than asked for).
pub const SUPPORTED_SCOPES: &[&str] = &[
    "openid",
    "profile",
    "email",
    "address",
    "phone",
    "groups",
    "offline_access",
];

const PROFILE: &[&str] = &[
    "name",
    "family_name",
    "given_name",
    "middle_name",
    "nickname",
    "preferred_username",
    "profile",
    "picture",
    "website",
    "gender",
    "birthdate",
    "zoneinfo",
    "locale",
    "updated_at",
];
const EMAIL: &[&str] = &["email", "email_verified"];
const ADDRESS: &[&str] = &["address"];
const PHONE: &[&str] = &["phone_number", "phone_number_verified"];
const GROUPS: &[&str] = &["groups"];

/// Every claim name a token or userinfo response may carry, for discovery.
pub fn supported_claims() -> Vec<&'static str> {
    let protocol = [
        "sub",
        "iss",
        "aud",
        "exp",
        "iat",
        "auth_time",
        "nonce",
        "at_hash",
        "azp",
        "sid",
        "acr",
        "amr",
    ];
    protocol
        .into_iter()
        .chain(PROFILE.iter().copied())
        .chain(EMAIL.iter().copied())
        .chain(ADDRESS.iter().copied())
        .chain(PHONE.iter().copied())
        .chain(GROUPS.iter().copied())
        .collect()
}

/// Whether a claim may be released at all: the standard claims a scope stands for.
/// Any other name (a custom claim an administrator stored on the user) is never
/// released through the `claims` parameter, whatever the client.
pub fn releasable(name: &str) -> bool {
    [PROFILE, EMAIL, ADDRESS, PHONE, GROUPS]
        .iter()
        .any(|names| names.contains(&name))
}

/// Each standard scope and the claims it stands for (Core §5.4).
const SCOPE_CLAIMS: [(&str, &[&str]); 5] = [
    ("profile", PROFILE),
    ("email", EMAIL),
    ("address", ADDRESS),
    ("phone", PHONE),
    ("groups", GROUPS),
];

fn scope_claims(scope: &Scope) -> Vec<&'static str> {
    SCOPE_CLAIMS
        .into_iter()
        .filter(|(s, _)| scope.contains(s))
        .flat_map(|(_, names)| names.iter().copied())
        .collect()
}

/// Every claim known about the user, by standard name.
fn known(user: &User) -> Map<String, Value> {
    let mut all = Map::new();
    for (k, v) in &user.claims {
        if !v.is_null() {
            all.insert(k.clone(), v.clone());
        }
    }
    all.insert("preferred_username".into(), Value::from(user.username.clone()));
    if let Some(name) = &user.name {
        all.insert("name".into(), Value::from(name.clone()));
    }
    all.insert("updated_at".into(), Value::from(user.updated_at));
    if let Some(email) = &user.email {
        all.insert("email".into(), Value::from(email.clone()));
        all.insert("email_verified".into(), Value::from(user.email_verified));
    }
    all.insert("groups".into(), Value::from(user.groups.clone()));
    all
}

/// Names a mapping can never produce: they carry the protocol's own meaning (RFC 7519
/// §4.1, OpenID Connect Core §2 and §3.1.3.6, RFC 9068 §2.2, RFC 7800), so a rule that
/// set them could forge an audience, a subject or a lifetime.
pub const PROTECTED: &[&str] = &[
    "iss",
    "sub",
    "aud",
    "exp",
    "iat",
    "nbf",
    "jti",
    "nonce",
    "auth_time",
    "acr",
    "amr",
    "azp",
    "at_hash",
    "c_hash",
    "sid",
    "client_id",
    "scope",
    "gid",
    "cnf",
    "typ",
];

/// Whether a client may ask for `scope`: one this provider understands, or a custom
/// scope named by one of the client's claim rules.
pub fn client_supports(client: &Client, scope: &str) -> bool {
    SUPPORTED_SCOPES.contains(&scope) || client.claim_rules.iter().any(|r| r.scope.as_deref() == Some(scope))
}

/// The value a rule gives this user; `None` leaves the claim out.
fn mapped_value(user: &User, all: &Map<String, Value>, rule: &ClaimRule) -> Option<Value> {
    match rule.source.as_str() {
        "sub" => Some(Value::from(user.sub.clone())),
        "group_values" => rule
            .values
            .iter()
            .find(|(group, _)| user.groups.contains(group))
            .map(|(_, v)| v.clone())
            .or_else(|| rule.default.clone())
            .map(Value::from),
        other => all.get(other).cloned(),
    }
}

/// Why a mapped claim is there, for the preview: `claim mapping "roles" (groups)`.
fn mapping_reason(rule: &ClaimRule) -> String {
    match &rule.scope {
        None => format!("claim mapping \"{}\" ({})", rule.claim, rule.source),
        Some(s) => format!("claim mapping \"{}\" ({}, scope {s})", rule.claim, rule.source),
    }
}

/// What one target (ID token, access token or userinfo) carries besides the
/// protocol's own claims, and why each claim is there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Released {
    pub claims: Map<String, Value>,
    pub reasons: Map<String, Value>,
}

impl Released {
    fn put(&mut self, name: &str, value: Value, why: String) {
        self.claims.insert(name.to_string(), value);
        self.reasons.insert(name.to_string(), Value::from(why));
    }
}

/// A requested claim or scope that is not released, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    pub what: String,
    pub why: String,
}

/// Every target's user claims for one user, client mapping, granted scope and
/// `claims` request: the one place that decides what a token or userinfo says.
#[derive(Debug, Clone, Default)]
pub struct Release {
    pub id_token: Released,
    pub access_token: Released,
    pub userinfo: Released,
    pub refused: Vec<Refusal>,
}

/// One target's standard claims: `sub` always, the scope's claims, the releasable
/// claims asked for by name, then the mapping's (which may rename or add, never
/// touch a protected name).
fn standard(user: &User, all: &Map<String, Value>, scope: &Scope, extra: &[String]) -> Released {
    let mut out = Released::default();
    out.put("sub", Value::from(user.sub.clone()), "always".into());
    for (s, names) in SCOPE_CLAIMS {
        if scope.contains(s) {
            for name in names.iter() {
                if let Some(v) = all.get(*name) {
                    out.put(name, v.clone(), format!("scope {s}"));
                }
            }
        }
    }
    for name in extra.iter().filter(|n| releasable(n)) {
        if let (false, Some(v)) = (out.claims.contains_key(name.as_str()), all.get(name.as_str())) {
            out.put(name, v.clone(), "claims request".into());
        }
    }
    out
}

pub fn release(user: &User, rules: &[ClaimRule], scope: &Scope, request: &ClaimsRequest) -> Release {
    let all = known(user);
    let mut out = Release {
        id_token: standard(user, &all, scope, &request.id_token),
        access_token: Released::default(),
        userinfo: standard(user, &all, scope, &request.userinfo),
        refused: Vec::new(),
    };
    let mut asked: Vec<&String> = request.id_token.iter().chain(&request.userinfo).collect();
    asked.sort();
    asked.dedup();
    for name in asked.into_iter().filter(|n| !releasable(n)) {
        out.refused.push(Refusal {
            what: format!("claim {name}"),
            why: "not a standard claim: only the client's claim mapping can release it".into(),
        });
    }
    for rule in rules {
        if PROTECTED.contains(&rule.claim.as_str()) || rule.scope.as_deref().is_some_and(|s| !scope.contains(s)) {
            continue;
        }
        let Some(value) = mapped_value(user, &all, rule) else {
            continue;
        };
        let why = mapping_reason(rule);
        for (on, target) in [
            (rule.id_token, &mut out.id_token),
            (rule.access_token, &mut out.access_token),
            (rule.userinfo, &mut out.userinfo),
        ] {
            if on {
                target.put(&rule.claim, value.clone(), why.clone());
            }
        }
    }
    out
}

/// Words for a person for what one rule releases, for the consent page:
/// `roles: your groups mapped to Admin/Editor/Viewer`.
pub fn describe_rule(rule: &ClaimRule) -> String {
    let t = crate::i18n::t();
    let what = match rule.source.as_str() {
        "groups" => t.claim_groups.to_string(),
        "preferred_username" => t.claim_username.to_string(),
        "email" => t.claim_email.to_string(),
        "email_verified" => t.claim_email_verified.to_string(),
        "name" => t.claim_name.to_string(),
        "sub" => t.claim_sub.to_string(),
        "group_values" => {
            let mut values: Vec<&str> = rule.values.iter().map(|(_, v)| v.as_str()).collect();
            values.extend(rule.default.as_deref());
            values.dedup();
            t.fill(t.claim_groups_mapped, "values", values.join("/"))
        }
        other => t.fill(t.claim_other, "source", other),
    };
    format!("{}: {what}", rule.claim)
}

/// The rules a request for `scope` releases, described for the consent page.
pub fn describe_mapping(rules: &[ClaimRule], scope: &Scope) -> Vec<String> {
    rules
        .iter()
        .filter(|r| !PROTECTED.contains(&r.claim.as_str()))
        .filter(|r| r.scope.as_deref().is_none_or(|s| scope.contains(s)))
        .map(describe_rule)
        .collect()
}

/// The `claims` request parameter, reduced to the names asked for per target.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClaimsRequest {
    pub userinfo: Vec<String>,
    pub id_token: Vec<String>,
}

impl ClaimsRequest {
    /// Parses the JSON object of Core §5.5; member values (`essential`, `value`) are
    /// accepted and do not change what is released.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|_| "claims is not a JSON object".to_string())?;
        let Value::Object(obj) = value else {
            return Err("claims is not a JSON object".into());
        };
        let names = |key: &str| -> Result<Vec<String>, String> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Object(m)) => Ok(m.keys().cloned().collect()),
                Some(_) => Err(format!("claims.{key} is not a JSON object")),
            }
        };
        Ok(Self {
            userinfo: names("userinfo")?,
            id_token: names("id_token")?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.userinfo.is_empty() && self.id_token.is_empty()
    }

    /// The releasable claims asked for by name that `scope` does not already cover:
    /// what the user must approve one by one (sorted, without duplicates).
    pub fn beyond(&self, scope: &Scope) -> Vec<String> {
        let covered = scope_claims(scope);
        let mut out: Vec<String> = self
            .userinfo
            .iter()
            .chain(&self.id_token)
            .filter(|n| releasable(n) && !covered.contains(&n.as_str()))
            .cloned()
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The claims of a stored `claims` request (the JSON this provider wrote).
pub fn stored(text: Option<&str>) -> ClaimsRequest {
    text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The claims `scope` releases plus the individually requested `extra` ones, `sub` always.
    pub fn user_claims(user: &User, scope: &Scope, extra: &[String]) -> Map<String, Value> {
        let request = ClaimsRequest {
            userinfo: Vec::new(),
            id_token: extra.to_vec(),
        };
        release(user, &[], scope, &request).id_token.claims
    }

    fn user() -> User {
        let mut claims = Map::new();
        claims.insert("phone_number".into(), Value::from("+1 555 0100"));
        claims.insert("given_name".into(), Value::from("Alice"));
        User {
            id: 1,
            sub: "s".into(),
            username: "alice".into(),
            email: Some("a@example.com".into()),
            email_verified: true,
            name: Some("Alice A".into()),
            password_hash: String::new(),
            is_admin: false,
            disabled: false,
            created_at: 0,
            updated_at: 5,
            claims,
            groups: vec!["staff".into()],
        }
    }

    #[test]
    fn scopes_release_their_claims_only() {
        let c = user_claims(&user(), &Scope::parse("openid email").unwrap(), &[]);
        assert_eq!(c["email"], "a@example.com");
        assert!(c.get("name").is_none() && c.get("phone_number").is_none());
        let c = user_claims(&user(), &Scope::parse("openid profile phone groups").unwrap(), &[]);
        assert_eq!(c["given_name"], "Alice");
        assert_eq!(c["phone_number"], "+1 555 0100");
        assert_eq!(c["groups"], serde_json::json!(["staff"]));
        assert_eq!(c["updated_at"], 5, "updated_at is a number (Core §5.1)");
    }

    #[test]
    fn custom_claims_are_never_released_by_name() {
        let mut u = user();
        u.claims.insert("salary".into(), Value::from(100));
        let c = user_claims(&u, &Scope::parse("openid").unwrap(), &["salary".into(), "email".into()]);
        assert!(c.get("salary").is_none());
        assert_eq!(c["email"], "a@example.com");
    }

    #[test]
    fn only_claims_beyond_the_scope_need_their_own_approval() {
        let req =
            ClaimsRequest::parse(r#"{"id_token":{"email":null,"salary":null},"userinfo":{"name":null,"email":null}}"#)
                .unwrap();
        assert_eq!(req.beyond(&Scope::parse("openid").unwrap()), ["email", "name"]);
        assert_eq!(req.beyond(&Scope::parse("openid email").unwrap()), ["name"]);
        assert!(req.beyond(&Scope::parse("openid email profile").unwrap()).is_empty());
    }

    #[test]
    fn individually_requested_claims_are_added() {
        let req =
            ClaimsRequest::parse(r#"{"id_token":{"email":{"essential":true}},"userinfo":{"name":null}}"#).unwrap();
        assert_eq!(req.id_token, vec!["email"]);
        let c = user_claims(&user(), &Scope::parse("openid").unwrap(), &req.id_token);
        assert_eq!(c["email"], "a@example.com");
        assert!(ClaimsRequest::parse("[1]").is_err());
        assert!(ClaimsRequest::parse(r#"{"userinfo":3}"#).is_err());
    }
}
