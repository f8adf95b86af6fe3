//! Client authentication at the token, introspection and revocation endpoints
//! (RFC 6749 §2.3): `client_secret_basic`, `client_secret_post`, and `none` for public
//! clients. Exactly one method per request (§2.3.1: clients MUST NOT use more than one).

use subtle::ConstantTimeEq;

use super::{ErrorCode, OAuthError};
use crate::crypto::{Secret, TokenHash};
use crate::db::{self, clients::Client};
use crate::state::AppState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    SecretBasic,
    SecretPost,
    None,
}

/// What the request presented, before anything is checked.
#[derive(Debug)]
pub struct Presented {
    pub client_id: String,
    pub secret: Option<Secret>,
    pub method: AuthMethod,
}

/// Every authentication failure looks the same to the caller (RFC 6749 §5.2).
fn failed() -> OAuthError {
    OAuthError::new(ErrorCode::InvalidClient, "client authentication failed")
}

pub async fn authenticate(state: &AppState, presented: Presented) -> Result<Client, OAuthError> {
    if presented.client_id.is_empty() || presented.client_id.len() > 256 {
        return Err(failed());
    }
    let id = presented.client_id.clone();
    let client = state.db.read(move |c| db::clients::find(c, &id)).await?;
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
        (_, AuthMethod::None, None) if client.is_public() => Ok(client),
        _ => Err(failed()),
    }
}
