//! Request objects (RFC 9101): authorization parameters in a JWT signed with the
//! client's registered key. When one is sent, its claims are the request: the outer
//! parameters count for nothing but `client_id` (RFC 9101 §5, §6.3).

use serde_json::{Map, Value};

use crate::crypto::request_jwt::{self, RequestJwtError};
use crate::db::{self, clients::Client, jtis};
use crate::error::Internal;
use crate::oidc::discovery::CLIENT_SIGNING_ALGS;
use crate::oidc::Ctx;

/// The longest `request` value read: a signed object with a `claims` request and an
/// RSA signature stays far below this.
pub const MAX_LEN: usize = 16 * 1024;
/// Clock difference tolerated between the client and this provider.
const LEEWAY: i64 = 30;
/// An object is accepted for at most this long after it was made (`nbf`, `iat`) and
/// may not claim to live longer: it is one authorization request, not a credential,
/// and its `jti` is remembered until its `exp`.
const MAX_LIFETIME: i64 = 3600;
/// How long the `jti` of an object without `exp` is remembered: such an object has
/// no end of its own (OpenID Connect Core §6.1 makes `exp` optional), so a day.
const OPEN_JTI_MEMORY: i64 = 86_400;

/// Why a request object was refused.
#[derive(Debug)]
pub enum ObjectError {
    /// `invalid_request_object`, with a description safe to show the client.
    Invalid(String),
    /// Storage failed while recording its `jti`.
    Server(Internal),
}

fn invalid(d: impl Into<String>) -> ObjectError {
    ObjectError::Invalid(d.into())
}

/// JWT claims that describe the object itself, not the authorization request.
const ENVELOPE: &[&str] = &["iss", "aud", "exp", "nbf", "iat", "jti", "sub"];

/// Verifies the request object `token` of `client` and returns the authorization
/// parameters it carries, with `client_id` set to the client's.
pub async fn expand(cx: &Ctx<'_>, client: &Client, token: &str) -> Result<Vec<(String, String)>, ObjectError> {
    if token.len() > MAX_LEN {
        return Err(invalid("the request object is too large"));
    }
    let jwks = match crate::oidc::client_keys::jwks(cx, client).await {
        Ok(Some(jwks)) => jwks,
        Ok(None) => {
            return Err(invalid(
                "the client has registered no keys to verify a request object with",
            ))
        }
        Err(e) => {
            return Err(invalid(format!(
                "the client's keys are not available: {}",
                e.description
            )))
        }
    };
    let claims = request_jwt::verify(&jwks, token, CLIENT_SIGNING_ALGS).map_err(|e| invalid(describe(&e)))?;
    let exp = check_claims(&claims, &client.client_id, cx.issuer, cx.now)?;
    let params = to_params(&claims, &client.client_id).map_err(ObjectError::Invalid)?;
    if let Some(jti) = claims.get("jti") {
        let jti = jti.as_str().filter(|j| !j.is_empty() && j.len() <= 256);
        let jti = jti.ok_or_else(|| invalid("jti is not a short string"))?;
        // RFC 9101 §10.8: a `jti` is accepted once; namespaced by client, since each
        // client makes its own.
        let key = format!("{} {jti}", client.client_id);
        let won = cx
            .db
            .write(move |c| db::jtis::record(c, jtis::REQUEST_OBJECT, &key, exp))
            .await
            .map_err(|e| ObjectError::Server(e.into()))?;
        if !won.won() {
            return Err(invalid("the request object was already used (jti)"));
        }
    }
    Ok(params)
}

fn describe(e: &RequestJwtError) -> String {
    match e {
        RequestJwtError::Encrypted => "encrypted request objects are not supported; sign it (JWS)".into(),
        RequestJwtError::Malformed => "the request object is not a signed JWT".into(),
        RequestJwtError::Algorithm(alg) => format!(
            "the request object's algorithm `{}` is not accepted (use one of {})",
            alg.chars().take(20).collect::<String>(),
            CLIENT_SIGNING_ALGS.join(", ")
        ),
        RequestJwtError::Type(typ) => format!("a JWT of type `{typ}` is not a request object"),
        RequestJwtError::BadKeySet => "the client's registered JWK Set cannot be read".into(),
        RequestJwtError::Signature => "no key registered for the client verifies the request object".into(),
    }
}

fn int_claim(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, ObjectError> {
    match claims.get(name) {
        None => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| invalid(format!("{name} is not a number"))),
    }
}

/// RFC 9101 §6.3 with RFC 7519 §4.1: who made the object, for whom, and when; the
/// time until which its `jti` is remembered (its `exp`, or a day without one).
///
/// OpenID Connect Core §6.1 and RFC 9101 §4 make `iss` and `aud` a SHOULD and ask
/// for no `exp`: each is checked when present and not required (the signature with
/// the client's own key already says who made it).
fn check_claims(claims: &Map<String, Value>, client_id: &str, issuer: &str, now: i64) -> Result<i64, ObjectError> {
    if claims.get("iss").is_some_and(|iss| iss.as_str() != Some(client_id)) {
        return Err(invalid("iss must be the client_id"));
    }
    let aud_ok = match claims.get("aud") {
        None => true,
        Some(Value::String(a)) => a == issuer,
        Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(issuer)),
        _ => false,
    };
    if !aud_ok {
        return Err(invalid("aud must be the issuer"));
    }
    if let Some(inner) = claims.get("client_id") {
        if inner.as_str() != Some(client_id) {
            return Err(invalid(
                "the client_id inside the request object differs from the request's",
            ));
        }
    }
    let exp = int_claim(claims, "exp")?;
    if exp.is_some_and(|exp| exp <= now - LEEWAY) {
        return Err(invalid("the request object has expired"));
    }
    if exp.is_some_and(|exp| exp > now + MAX_LIFETIME + LEEWAY) {
        return Err(invalid(
            "the request object lives too long (exp more than an hour ahead)",
        ));
    }
    if let Some(nbf) = int_claim(claims, "nbf")? {
        if nbf > now + LEEWAY {
            return Err(invalid("the request object is not valid yet (nbf)"));
        }
        if nbf < now - MAX_LIFETIME {
            return Err(invalid("the request object is too old (nbf more than an hour ago)"));
        }
    }
    if let Some(iat) = int_claim(claims, "iat")? {
        if iat > now + LEEWAY || iat < now - MAX_LIFETIME {
            return Err(invalid("iat is not within the last hour"));
        }
    }
    Ok(exp.unwrap_or(now + OPEN_JTI_MEMORY))
}

/// The object's claims as authorization parameters: strings as they are, arrays of
/// strings as a repeated parameter (`resource`), `claims` (an object) re-serialised,
/// numbers (`max_age`) and booleans written out.
fn to_params(claims: &Map<String, Value>, client_id: &str) -> Result<Vec<(String, String)>, String> {
    let mut params = vec![("client_id".to_string(), client_id.to_string())];
    for (name, value) in claims {
        if ENVELOPE.contains(&name.as_str()) || name == "client_id" {
            continue;
        }
        // RFC 9101 §4: "MUST NOT include the request or request_uri parameters".
        if name == "request" || name == "request_uri" {
            return Err(format!("a request object cannot carry `{name}`"));
        }
        match value {
            Value::Null => {}
            Value::String(s) => params.push((name.clone(), s.clone())),
            Value::Number(n) => params.push((name.clone(), n.to_string())),
            Value::Bool(b) => params.push((name.clone(), b.to_string())),
            Value::Object(_) => params.push((name.clone(), value.to_string())),
            Value::Array(items) => {
                for item in items {
                    let s = item
                        .as_str()
                        .ok_or_else(|| format!("`{name}` holds something not a string"))?;
                    params.push((name.clone(), s.to_string()));
                }
            }
        }
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn claims_become_parameters() {
        let c = claims(json!({
            "iss": "app", "aud": "https://id", "exp": 10, "jti": "j",
            "scope": "openid", "max_age": 60, "resource": ["https://a", "https://b"],
            "claims": {"userinfo": {"email": null}}, "state": null,
        }));
        let p = to_params(&c, "app").unwrap();
        let get = |n: &str| {
            p.iter()
                .filter(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("client_id"), ["app"]);
        assert_eq!(get("scope"), ["openid"]);
        assert_eq!(get("max_age"), ["60"]);
        assert_eq!(get("resource"), ["https://a", "https://b"]);
        assert_eq!(get("claims"), [r#"{"userinfo":{"email":null}}"#]);
        assert!(get("iss").is_empty() && get("exp").is_empty() && get("state").is_empty());
        assert!(to_params(&claims(json!({"request_uri": "x"})), "app").is_err());
        assert!(to_params(&claims(json!({"resource": [1]})), "app").is_err());
    }

    #[test]
    fn envelope_rules() {
        let ok = |v: Value| check_claims(&claims(v), "app", "https://id", 1000);
        assert!(ok(json!({"iss": "app", "aud": "https://id", "exp": 1060})).is_ok());
        assert!(ok(json!({"iss": "app", "aud": ["x", "https://id"], "exp": 1060, "nbf": 990})).is_ok());
        assert!(ok(json!({"iss": "other", "aud": "https://id", "exp": 1060})).is_err());
        assert!(ok(json!({"iss": "app", "aud": "https://other", "exp": 1060})).is_err());
        // OpenID Connect Core §6.1: iss, aud and exp are not required.
        assert_eq!(ok(json!({})).unwrap(), 1000 + OPEN_JTI_MEMORY);
        assert!(ok(json!({"iss": "app", "aud": "https://id"})).is_ok());
        assert!(ok(json!({"iss": 7})).is_err());
        assert!(ok(json!({"aud": 7})).is_err());
        assert!(ok(json!({"iss": "app", "aud": "https://id", "exp": 900})).is_err());
        assert!(ok(json!({"iss": "app", "aud": "https://id", "exp": 9000})).is_err());
        assert!(ok(json!({"iss": "app", "aud": "https://id", "exp": 1060, "nbf": 1200})).is_err());
        assert!(ok(json!({"iss": "app", "aud": "https://id", "exp": 1060, "client_id": "x"})).is_err());
    }
}
