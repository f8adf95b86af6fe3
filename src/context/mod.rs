//! `Ctx`: what a use case needs of the running server (issuer, settings, store, keys,
//! the bcrypt pool, wake-ups, metrics) and the time of the request, read once.

use crate::config::Settings;
use crate::crypto::password::Hasher;
use crate::crypto::KeyStore;
use crate::db::Db;

/// Made once per request (or per pass of a background task) from the server's state
/// (`ctx()` in `src/state.rs`) and passed by reference to every use case the
/// request calls, so that they all see the same `now`. Protocol code receives an
/// `oidc::Ctx`, this context with the client registry beside it; it dereferences to
/// this one, so a use case taking `&Ctx` accepts either.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The issuer identifier exactly as it appears in `iss` (no trailing slash).
    pub issuer: &'a str,
    pub settings: &'a Settings,
    pub db: &'a Db,
    pub keys: &'a KeyStore,
    /// The request's time, read once when the context is made (Unix seconds).
    pub now: i64,
    /// The bcrypt pool: every password is checked and hashed on its threads.
    pub hasher: &'a Hasher,
    /// Keys the pseudonyms of unknown sign-in names in the audit log.
    pub log_key: &'a crate::crypto::random::LogKey,
    /// Keys the server's DPoP nonces (RFC 9449 §8), the same on every node.
    pub dpop_nonces: &'a crate::crypto::dpop::NonceKey,
    /// Wakes the back-channel logout deliverer when a logout is queued.
    pub logout_wakeup: &'a tokio::sync::Notify,
    /// Wakes the mailer when mail is queued.
    pub mail_wakeup: &'a tokio::sync::Notify,
    pub metrics: &'a crate::metrics::Metrics,
    /// This process among the nodes sharing a database.
    pub node: &'a str,
}

impl Ctx<'_> {
    /// An absolute URL for a path on this provider.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.issuer, path)
    }

    /// Cookies get `Secure` whenever the issuer is served over https.
    pub fn secure_cookies(&self) -> bool {
        self.issuer.starts_with("https://")
    }
}
