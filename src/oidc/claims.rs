//! Standard claims released per scope (OpenID Connect Core §5.1, §5.4).

use serde_json::{Map, Value};

use crate::db::users::User;
use crate::domain::Scope;

/// Scopes this provider understands; others are dropped from requests (RFC 6749 §3.3
/// lets the server issue a narrower scope than asked for).
pub const SUPPORTED_SCOPES: &[&str] = &["openid", "profile", "email"];

pub const SUPPORTED_CLAIMS: &[&str] = &[
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
    "name",
    "preferred_username",
    "updated_at",
    "email",
    "email_verified",
];

/// The user's claims that `scope` releases, `sub` included.
pub fn user_claims(user: &User, scope: &Scope) -> Map<String, Value> {
    let mut claims = Map::new();
    claims.insert("sub".into(), Value::from(user.sub.clone()));
    if scope.contains("profile") {
        claims.insert("preferred_username".into(), Value::from(user.username.clone()));
        if let Some(name) = &user.name {
            claims.insert("name".into(), Value::from(name.clone()));
        }
        claims.insert("updated_at".into(), Value::from(user.updated_at));
    }
    if scope.contains("email") {
        if let Some(email) = &user.email {
            claims.insert("email".into(), Value::from(email.clone()));
            claims.insert("email_verified".into(), Value::from(user.email_verified));
        }
    }
    claims
}
