//! Failures that are the server's own rather than the request's: storage, password
//! hashing, signing. Each is logged once, where it is converted, and becomes `Busy`
//! (come back shortly) or `Failed` (see the log); no cause travels further, so no
//! response can leak one. `http/errors.rs` turns them into a page or an RFC 6749
//! `server_error` / `temporarily_unavailable` answer.

use crate::db::DbError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Internal {
    /// A queue or pool is full: shed load (503 with `Retry-After`).
    #[error("the server is busy; retry shortly")]
    Busy,
    /// Something broke; the cause is in the server log.
    #[error("the server could not complete the request")]
    Failed,
}

impl From<DbError> for Internal {
    fn from(e: DbError) -> Self {
        match e {
            // A full disk was logged where it was found, once per run.
            DbError::Busy | DbError::Full => Internal::Busy,
            other => {
                tracing::error!(error = %other, "storage error");
                Internal::Failed
            }
        }
    }
}

impl From<crate::crypto::password::HashError> for Internal {
    fn from(e: crate::crypto::password::HashError) -> Self {
        match e {
            crate::crypto::password::HashError::Overloaded => Internal::Busy,
            other => {
                tracing::error!(error = %other, "password hashing error");
                Internal::Failed
            }
        }
    }
}

impl From<crate::crypto::JwtError> for Internal {
    fn from(e: crate::crypto::JwtError) -> Self {
        tracing::error!(error = %e, "token signing error");
        Internal::Failed
    }
}
