//! Client authentication at the token, introspection, revocation and device
//! endpoints (RFC 6749 §2.3): `client_secret_basic`, `client_secret_post`,
//! `client_secret_jwt` and `private_key_jwt` (RFC 7523, each assertion used once), and
//! `none` for public clients. Exactly one method per request (§2.3.1).

use std::sync::Arc;

use serde_json::Value;
use subtle::ConstantTimeEq;

use super::{ErrorCode, OAuthError};
use crate::crypto::{assertion, TokenHash};
use crate::db::{self, clients::Client};
use crate::domain::Secret;
use crate::oidc::Ctx;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    SecretBasic,
    SecretPost,
    Jwt,
    None,
}

/// What the request presented, before anything is checked. `Debug` shows neither
/// the secret nor the assertion.
pub struct Presented {
    pub client_id: String,
    pub secret: Option<Secret>,
    pub method: AuthMethod,
    pub assertion: Option<String>,
}

impl std::fmt::Debug for Presented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Presented")
            .field("client_id", &self.client_id)
            .field("secret", &self.secret)
            .field("method", &self.method)
            .field("assertion", &self.assertion.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Every authentication failure looks the same to the caller (RFC 6749 §5.2).
fn failed() -> OAuthError {
    OAuthError::new(ErrorCode::InvalidClient, "client authentication failed")
}

/// Longest lifetime accepted for an assertion; bounds the replay table too.
const MAX_ASSERTION_LIFETIME: i64 = 3600;
const CLOCK_SKEW: i64 = 60;

pub async fn authenticate(cx: &Ctx<'_>, presented: Presented) -> Result<Arc<Client>, OAuthError> {
    if presented.client_id.is_empty() || presented.client_id.len() > 256 {
        return Err(failed());
    }
    let client = cx.clients.get(cx.db, &presented.client_id, cx.now).await?;
    let Some(client) = client else {
        return Err(failed());
    };
    // Basic and post carry the same secret and are interchangeable; the JWT methods
    // and `none` are only accepted from clients registered for them.
    let secret_client = matches!(
        client.auth_method.as_str(),
        "client_secret_basic" | "client_secret_post"
    );
    match (&client.secret_hash, presented.method, &presented.secret) {
        (Some(stored), AuthMethod::SecretBasic | AuthMethod::SecretPost, Some(secret)) if secret_client => {
            let given = TokenHash::of(secret.expose());
            if bool::from(given.as_bytes().ct_eq(stored.as_bytes())) {
                Ok(client)
            } else {
                Err(failed())
            }
        }
        (_, AuthMethod::Jwt, None) => {
            let token = presented.assertion.as_deref().unwrap_or_default();
            check_assertion(cx, &client, token).await?;
            Ok(client)
        }
        (_, AuthMethod::None, None) if client.is_public() => Ok(client),
        _ => Err(failed()),
    }
}

/// The HMAC key of a client_secret_jwt client, unsealed with the master key when it
/// was stored sealed.
fn hmac_key(cx: &Ctx<'_>, stored: &str) -> Result<String, OAuthError> {
    crate::crypto::sealed::open_text(cx.settings.master_key.as_ref(), stored).map_err(|e| {
        tracing::error!(error = %e, "cannot open a client secret");
        OAuthError::server_error()
    })
}

/// RFC 7523 §3: signature by the client's key, iss = sub = client_id, our issuer or
/// endpoint as audience, a bounded unexpired lifetime, and a jti never seen before.
async fn check_assertion(cx: &Ctx<'_>, client: &Client, token: &str) -> Result<(), OAuthError> {
    let claims = match (client.auth_method.as_str(), &client.secret_for_hmac) {
        ("private_key_jwt", _) => private_key_claims(cx, client, token).await?,
        ("client_secret_jwt", Some(stored)) => {
            assertion::verify_with_secret(&hmac_key(cx, stored)?, token).map_err(|_| failed())?
        }
        _ => return Err(failed()),
    };
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    let now = cx.now;
    let exp = claims.get("exp").and_then(Value::as_i64).unwrap_or(0);
    let nbf = claims.get("nbf").and_then(Value::as_i64).unwrap_or(0);
    let audience_ok = match claims.get("aud") {
        Some(Value::String(a)) => accepted_audience(cx, a),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).any(|a| accepted_audience(cx, a)),
        _ => false,
    };
    let valid = text("iss") == Some(client.client_id.as_str())
        && text("sub") == Some(client.client_id.as_str())
        && audience_ok
        && exp > now - CLOCK_SKEW
        && exp <= now + MAX_ASSERTION_LIFETIME
        && nbf <= now + CLOCK_SKEW;
    let Some(jti) = text("jti").filter(|j| valid && !j.is_empty() && j.len() <= 256) else {
        return Err(failed());
    };
    let (client_id, jti) = (client.client_id.clone(), jti.to_string());
    let fresh = cx
        .db
        .write(move |c| Ok(db::clients::record_assertion(c, &client_id, &jti, exp)?.won()))
        .await?;
    if fresh {
        Ok(())
    } else {
        Err(OAuthError::invalid_client("the client assertion was already used"))
    }
}

/// The assertion's claims, verified with the client's keys (`jwks`, or its
/// `jwks_uri` through `client_keys`, fetched once more when no key matched: the
/// client may have rotated them).
async fn private_key_claims(
    cx: &Ctx<'_>,
    client: &Client,
    token: &str,
) -> Result<serde_json::Map<String, Value>, OAuthError> {
    let jwks = super::client_keys::jwks(cx, client).await?.ok_or_else(failed)?;
    match assertion::verify_with_jwks(&jwks, token) {
        Ok(claims) => Ok(claims),
        Err(_) if client.jwks_uri.is_some() => {
            let again = super::client_keys::refetched(cx, client).await?.ok_or_else(failed)?;
            assertion::verify_with_jwks(&again, token).map_err(|_| failed())
        }
        Err(_) => Err(failed()),
    }
}

fn accepted_audience(cx: &Ctx<'_>, aud: &str) -> bool {
    aud == cx.issuer
        || ["/token", "/introspect", "/revoke", "/device_authorization"]
            .iter()
            .any(|p| aud == cx.url(p))
}
