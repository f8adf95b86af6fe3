//! AppState: everything a request needs, built once in `startup` and shared; no globals.

use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::password::Hasher;
use crate::crypto::KeyStore;
use crate::db::Db;

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    /// The issuer identifier exactly as it appears in `iss` (no trailing slash).
    pub issuer: Arc<str>,
    pub db: Db,
    pub keys: KeyStore,
    pub hasher: Hasher,
    pub clock: Clock,
    /// Wakes the back-channel logout deliverer when a logout is queued.
    pub logout_wakeup: Arc<tokio::sync::Notify>,
    /// Wakes the mailer when mail is queued.
    pub mail_wakeup: Arc<tokio::sync::Notify>,
    /// Client registrations, cached for a second.
    pub clients: crate::oidc::client_cache::ClientCache,
    pub limits: crate::auth::limits::RateLimits,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Keys the pseudonyms of unknown sign-in names in logs.
    pub log_key: crate::crypto::random::LogKey,
    /// Keys the server's DPoP nonces (RFC 9449 §8): one secret in the database.
    pub dpop_nonces: crate::crypto::dpop::NonceKey,
    /// This process among the nodes sharing a database: the holder of the leases of
    /// background jobs that run on one node at a time.
    pub node: Arc<str>,
    /// Upstream identity providers' HTTP client and discovery cache.
    pub upstreams: Arc<crate::federation::Upstreams>,
    /// The forward-auth grants this node has already audited.
    pub forward_auth: Arc<crate::forward_auth::Seen>,
    /// The replication thread, when `--replicate-to` is set.
    pub replication: Option<Arc<crate::replica::shipper::Shipper>>,
    /// Scheduled backups' counters (`--backup-dir`).
    pub backups: Arc<crate::replica::backups::Stats>,
    /// The branding pages show, as this node last read it.
    pub branding: crate::branding::Cache,
}

impl AppState {
    /// An absolute URL for a path on this provider.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.issuer, path)
    }

    /// Cookies get `Secure` whenever the issuer is served over https.
    pub fn secure_cookies(&self) -> bool {
        self.issuer.starts_with("https://")
    }

    /// What protocol code needs of this state, with the clock read once: make it at the
    /// top of a request and pass it to every `oidc` call the request makes.
    pub fn ctx(&self) -> crate::oidc::Ctx<'_> {
        crate::oidc::Ctx {
            base: crate::context::Ctx {
                issuer: &self.issuer,
                settings: &self.settings,
                db: &self.db,
                keys: &self.keys,
                now: self.clock.now(),
                hasher: &self.hasher,
                log_key: &self.log_key,
                dpop_nonces: &self.dpop_nonces,
                logout_wakeup: &self.logout_wakeup,
                mail_wakeup: &self.mail_wakeup,
                metrics: &self.metrics,
                node: &self.node,
            },
            clients: &self.clients,
        }
    }
}
