//! Why an authorization request failed, and so where the answer goes.

use super::response::AuthResponse;
use crate::db::DbError;
use crate::error::Internal;

/// Why a request failed, and so where the answer goes.
#[derive(Debug)]
pub enum AuthorizeError {
    /// The client or its redirect URI cannot be trusted: tell the person, never redirect
    /// (RFC 6749 §4.1.2.1, RFC 9700 §4.11 on open redirectors).
    Fatal(String),
    /// Everything else goes back to the registered redirect URI.
    Respond(AuthResponse),
    /// The server itself failed (storage busy or broken).
    Server(Internal),
}

impl From<DbError> for AuthorizeError {
    fn from(e: DbError) -> Self {
        AuthorizeError::Server(e.into())
    }
}
