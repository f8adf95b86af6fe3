//! Standard claims released per scope (OpenID Connect Core §5.1, §5.4) and individual
//! claims asked for with the `claims` request parameter (§5.5).

use serde_json::{Map, Value};

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

fn scope_claims(scope: &Scope) -> Vec<&'static str> {
    [
        ("profile", PROFILE),
        ("email", EMAIL),
        ("address", ADDRESS),
        ("phone", PHONE),
        ("groups", GROUPS),
    ]
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

/// The claims `scope` releases plus the individually requested `extra` ones, `sub` always.
pub fn user_claims(user: &User, scope: &Scope, extra: &[String]) -> Map<String, Value> {
    let all = known(user);
    let mut out = Map::new();
    out.insert("sub".into(), Value::from(user.sub.clone()));
    let scoped = scope_claims(scope);
    let named = extra.iter().map(String::as_str).filter(|n| releasable(n));
    let wanted = scoped.iter().copied().chain(named);
    for name in wanted {
        if let Some(v) = all.get(name) {
            out.insert(name.to_string(), v.clone());
        }
    }
    out
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
