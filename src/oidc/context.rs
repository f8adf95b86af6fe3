//! `Ctx`: what protocol code uses of the server (issuer, settings, store, keys, client
//! registry) and the time of the request, read once.

use crate::config::Settings;
use crate::crypto::KeyStore;
use crate::db::Db;
use crate::oidc::client_cache::ClientCache;

/// Made once per request (or per pass of a background task) by `state.ctx()` (see
/// `src/state.rs`) and passed by reference to every protocol function the request
/// calls, so that they all see the same `now`.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The issuer identifier exactly as it appears in `iss` (no trailing slash).
    pub issuer: &'a str,
    pub settings: &'a Settings,
    pub db: &'a Db,
    pub keys: &'a KeyStore,
    /// Client registrations, cached for a second.
    pub clients: &'a ClientCache,
    /// Wakes the back-channel logout deliverer when a logout is queued.
    pub logout_wakeup: &'a tokio::sync::Notify,
    /// The request's time, read once when the context is made (Unix seconds).
    pub now: i64,
    /// The bcrypt pool, for the password grant (RFC 6749 §4.3), which checks a password
    /// exactly as the login form does.
    pub hasher: &'a crate::auth::Hasher,
    /// Keys the pseudonyms of unknown sign-in names in the audit log.
    pub log_key: &'a crate::crypto::random::LogKey,
    /// Keys the server's DPoP nonces (RFC 9449 §8), the same on every node.
    pub dpop_nonces: &'a crate::crypto::dpop::NonceKey,
}

impl Ctx<'_> {
    /// An absolute URL for a path on this provider.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.issuer, path)
    }
}
