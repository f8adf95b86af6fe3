//! Device Authorization Grant (RFC 8628).

use super::issue::TokenResponse;
use super::token::Form;
use super::{ErrorCode, OAuthError};
use crate::db::clients::Client;
use crate::state::AppState;

/// RFC 8628 §3.4: the device polls until the person has decided.
pub async fn poll(_state: &AppState, _client: &Client, _form: &Form) -> Result<TokenResponse, OAuthError> {
    Err(OAuthError::new(
        ErrorCode::UnsupportedGrantType,
        "device authorization is not enabled",
    ))
}
