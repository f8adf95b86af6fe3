//! Reading request parameters the way the RFCs ask: form bodies and query strings as
//! ordered pairs (so repeats are visible), and client credentials from HTTP Basic or
//! the body (RFC 6749 §2.3.1).

use std::collections::HashMap;

use actix_web::http::header;
use actix_web::HttpRequest;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use crate::domain::Secret;
use crate::oidc::client_auth::{AuthMethod, Presented};
use crate::oidc::OAuthError;

/// Most parameters a protocol request may carry; more is abuse, not a request.
const MAX_PAIRS: usize = 64;

pub fn pairs(raw: &[u8]) -> Result<Vec<(String, String)>, OAuthError> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(raw)
        .take(MAX_PAIRS + 1)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if pairs.len() > MAX_PAIRS {
        return Err(OAuthError::invalid_request("too many parameters"));
    }
    Ok(pairs)
}

/// A form where every parameter appears once (RFC 6749 §3.1, §3.2), except
/// `resource`, which RFC 8707 §2 lets repeat: its values are kept space-separated
/// (an absolute URI holds no space, so one that does is refused).
pub fn unique_form(raw: &[u8]) -> Result<HashMap<String, String>, OAuthError> {
    let mut map: HashMap<String, String> = HashMap::new();
    for (k, v) in pairs(raw)? {
        if k == "resource" {
            if v.is_empty() || v.chars().any(char::is_whitespace) {
                return Err(OAuthError::new(
                    crate::oidc::ErrorCode::InvalidTarget,
                    "a resource is an absolute URI without spaces",
                ));
            }
            let joined = map.entry(k).or_default();
            if !joined.is_empty() {
                joined.push(' ');
            }
            joined.push_str(&v);
            continue;
        }
        if map.insert(k.clone(), v).is_some() {
            return Err(OAuthError::invalid_request(format!("the `{k}` parameter is repeated")));
        }
    }
    Ok(map)
}

/// A field of a form read with `unique_form` (so each name has at most one value), or
/// "" when it is absent: the one way handlers read a posted field.
pub fn field<'a>(form: &'a HashMap<String, String>, name: &str) -> &'a str {
    form.get(name).map(String::as_str).unwrap_or_default()
}

/// The first value of `name` among parameters kept in order (a request whose
/// repetitions were already refused), if it is there.
pub fn first<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The body of a POST must be `application/x-www-form-urlencoded` (RFC 6749 §4.1.3).
pub fn require_form(req: &HttpRequest) -> Result<(), OAuthError> {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let essence = ct.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        Ok(())
    } else {
        Err(OAuthError::invalid_request(
            "the body must be application/x-www-form-urlencoded",
        ))
    }
}

fn basic_failed() -> OAuthError {
    OAuthError::invalid_client("malformed HTTP Basic credentials")
}

fn form_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// `Authorization: Basic` with the form-encoded `client_id:client_secret`.
fn basic(req: &HttpRequest) -> Result<Option<(String, String)>, OAuthError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| basic_failed())?;
    let Some((scheme, rest)) = value.split_once(' ') else {
        return Err(basic_failed());
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Ok(None);
    }
    let decoded = STANDARD.decode(rest.trim()).map_err(|_| basic_failed())?;
    let text = String::from_utf8(decoded).map_err(|_| basic_failed())?;
    let (id, secret) = text.split_once(':').ok_or_else(basic_failed)?;
    Ok(Some((form_decode(id), form_decode(secret))))
}

/// Which client the request claims to be, and how it proves it. Using two methods at
/// once is an error.
pub fn client_credentials(req: &HttpRequest, form: &HashMap<String, String>) -> Result<Presented, OAuthError> {
    let body_id = form.get("client_id").filter(|v| !v.is_empty());
    let body_secret = form.get("client_secret").filter(|v| !v.is_empty());
    if let Some(assertion) = form.get("client_assertion").filter(|v| !v.is_empty()) {
        return assertion_credentials(req, form, body_id, body_secret, assertion);
    }
    match (basic(req)?, body_id, body_secret) {
        (Some(_), _, Some(_)) => Err(OAuthError::invalid_request("use one client authentication method")),
        (Some((id, _)), Some(body), None) if *body != id => Err(OAuthError::invalid_request(
            "client_id does not match the Authorization header",
        )),
        (Some((id, secret)), _, None) => Ok(Presented {
            client_id: id,
            secret: Some(Secret::from_string(secret)),
            method: AuthMethod::SecretBasic,
            assertion: None,
        }),
        (None, Some(id), Some(secret)) => Ok(Presented {
            client_id: id.clone(),
            secret: Some(Secret::from_string(secret.clone())),
            method: AuthMethod::SecretPost,
            assertion: None,
        }),
        (None, Some(id), None) => Ok(Presented {
            client_id: id.clone(),
            secret: None,
            method: AuthMethod::None,
            assertion: None,
        }),
        (None, None, _) => Err(OAuthError::invalid_client("client authentication is required")),
    }
}

pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// RFC 7523 §2.2: a signed JWT instead of a secret; the client is named by the
/// assertion's subject (checked against `client_id` when both are given).
fn assertion_credentials(
    req: &HttpRequest,
    form: &HashMap<String, String>,
    body_id: Option<&String>,
    body_secret: Option<&String>,
    assertion: &str,
) -> Result<Presented, OAuthError> {
    if form.get("client_assertion_type").map(String::as_str) != Some(JWT_BEARER) {
        return Err(OAuthError::invalid_request("client_assertion_type must be jwt-bearer"));
    }
    if basic(req)?.is_some() || body_secret.is_some() {
        return Err(OAuthError::invalid_request("use one client authentication method"));
    }
    let claimed = crate::crypto::assertion::peek_claims(assertion)
        .and_then(|c| c.get("sub").and_then(|s| s.as_str()).map(str::to_string))
        .ok_or_else(|| OAuthError::invalid_client("client_assertion is not a JWT"))?;
    if body_id.is_some_and(|id| *id != claimed) {
        return Err(OAuthError::invalid_client("client_id does not match the assertion"));
    }
    Ok(Presented {
        client_id: claimed,
        secret: None,
        method: AuthMethod::Jwt,
        assertion: Some(assertion.to_string()),
    })
}

/// A cookie's value, if the request carries it.
/// The `token` query parameter of a mailed or printed link (empty when absent).
pub fn link_token(req: &HttpRequest) -> String {
    url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The one cookie of that name; two of one name count as none (`cookies::single`).
pub fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    crate::http::cookies::single(req, name)
}
