//! Failures that are the server's own rather than the request's: storage, password
//! hashing, signing. Each is logged once, where it is converted, and becomes `Busy`
//! (come back shortly) or `Failed` (see the log); no cause travels further, so no
//! response can leak one. `http/errors.rs` turns them into a page or an RFC 6749
//! `server_error` / `temporarily_unavailable` answer.

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Internal {
    /// A queue or pool is full: shed load (503 with `Retry-After`).
    #[error("the server is busy; retry shortly")]
    Busy,
    /// Something broke; the cause is in the server log.
    #[error("the server could not complete the request")]
    Failed,
}
