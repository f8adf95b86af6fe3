//! Settings: defaults, an optional TOML file, `TESSERA_*` environment and flags, in that
//! order of precedence; validated once at start with one clear line per bad setting.

pub mod branding;
mod load;
mod parse;
mod raw;
pub mod replication;
pub mod smtp;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use url::Url;

use crate::domain::{Alg, Cidr, ForwardedHeader, Locale, MasterKey, Secret, SqliteOptions};

pub use parse::{default_issuer, issuer_text, parse_cookie_domain, parse_interval, parse_issuer, redact_url};
pub use raw::RawSettings;
pub use replication::BackupSchedule;

/// A setting that could not be used, named as the operator wrote it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid setting `{name}`: {reason}")]
    Invalid { name: &'static str, reason: String },
    #[error("cannot read config file {path}: {reason}")]
    File { path: String, reason: String },
}

fn invalid(name: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        name,
        reason: reason.into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Lifetimes in seconds.
#[derive(Debug, Clone)]
pub struct TokenLifetimes {
    pub code: i64,
    pub access_token: i64,
    pub id_token: i64,
    pub refresh_token: i64,
    pub session: i64,
    pub login_request: i64,
    /// How long a grant may be refreshed from the sign-in that opened it, however
    /// often it is used (clients may set their own).
    pub grant: i64,
}

impl Default for TokenLifetimes {
    fn default() -> Self {
        Self {
            code: 60,
            access_token: 900,
            id_token: 900,
            refresh_token: 30 * 24 * 3600,
            session: 12 * 3600,
            login_request: 15 * 60,
            grant: 90 * 24 * 3600,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub db_path: PathBuf,
    /// PostgreSQL instead of the SQLite file at `db_path` (it contains a password:
    /// never logged).
    pub database_url: Option<Secret>,
    /// Whether `serve` applies migrations on start (`--no-migrate` leaves them to
    /// `tessera migrate`, for rolling upgrades of several nodes).
    pub migrate: bool,
    /// Connections each node keeps to PostgreSQL at most.
    pub pg_pool: u32,
    pub listen: SocketAddr,
    /// `None` means "derive from the bound address", which is how tests on port 0 work.
    pub issuer: Option<Url>,
    pub bcrypt_cost: u32,
    pub sqlite: SqliteOptions,
    pub log_format: LogFormat,
    pub hash_threads: usize,
    pub workers: usize,
    pub lifetimes: TokenLifetimes,
    /// Rate limits per address and account; off only for load tests.
    pub rate_limit: bool,
    /// Account lockout after repeated failed passwords; off only for load tests.
    pub lockout: bool,
    /// Proxies whose `X-Forwarded-For` / `Forwarded` headers are believed.
    pub trusted_proxies: Vec<Cidr>,
    /// The one header trusted proxies set with the client's address.
    pub forwarded_header: ForwardedHeader,
    /// The domain the forward-auth cookie `tessera_fa` is set on (`example.org` covers
    /// `app.example.org`); `None`: only Tessera's own host.
    pub forward_auth_cookie_domain: Option<String>,
    /// When set, `/metrics` answers only `Authorization: Bearer <token>`.
    pub metrics_token: Option<Secret>,
    /// Encrypts signing private keys and TOTP secrets at rest when set.
    pub master_key: Option<MasterKey>,
    /// Audit entries older than this are deleted; 0 keeps them forever.
    pub audit_retention_days: i64,
    /// The SMTP relay and sender; without it every mail feature is off.
    pub smtp: Option<smtp::Smtp>,
    /// Who may create an account: nobody (`off`), people an administrator invited
    /// (`invite`), or anyone (`open`, limited to `signup_domains` when set).
    pub signup: Signup,
    /// Email domains `open` sign-up accepts (lowercase); empty accepts any.
    pub signup_domains: Vec<String>,
    /// The organisation's name, in mail and on pages.
    pub org_name: String,
    /// The language of pages and mail when neither the application (`ui_locales`)
    /// nor the browser (`Accept-Language`) names one Tessera speaks.
    pub default_locale: Locale,
    /// `--access-token-alg`: what access tokens are signed with; `None` signs them as
    /// the client's ID tokens (RS256 unless the client chose another).
    pub access_token_alg: Option<Alg>,
    /// The logo, accent colour and stylesheet the flags give; the admin page's take
    /// precedence.
    pub branding: branding::Defaults,
    /// Mails one account (or one address) may be sent per hour.
    pub mail_per_hour: i64,
    /// Whether people delete their own accounts or ask an administrator to approve.
    pub account_deletion: AccountDeletion,
    /// How the login page asks: username and password together, or the username first.
    pub passkey_mode: PasskeyMode,
    /// How often (seconds) each node looks for signing keys another node or the CLI
    /// added; a rotated key is published this long (and a margin) before it signs.
    /// Not a flag: tests shorten it.
    pub key_reload_every: u64,
    /// `serve --replicate-to`: where the SQLite file is continuously shipped.
    pub replicate_to: Option<replication::Target>,
    /// Seconds a replica keeps history for point-in-time restores (`--replicate-retention`).
    pub replicate_retention: u64,
    /// The endpoint, region and addressing of `s3://` targets.
    pub s3: replication::S3Settings,
    /// Scheduled copies of the SQLite file.
    pub backups: Option<BackupSchedule>,
    /// `serve --apply FILE`: a declarative configuration applied at start.
    pub apply_file: Option<PathBuf>,
    /// PAR, registration, metadata documents and DPoP (docs/PROTOCOL.md).
    pub protocol: ProtocolSettings,
}

/// The server-wide switches of the second protocol wave.
#[derive(Debug, Clone, Default)]
pub struct ProtocolSettings {
    /// `--require-par`: every authorization request through PAR (RFC 9126 §5).
    pub require_par: bool,
    /// `--registration`: who may use the RFC 7591 registration endpoint.
    pub registration: Registration,
    /// `--client-id-documents`: accept https `client_id`s that name a metadata document.
    pub client_id_documents: bool,
    /// `--fetch-private-addresses`: let outbound fetches (metadata documents,
    /// `jwks_uri`, registered logos, self-registered clients' back-channel logout)
    /// reach loopback and private addresses over plain http too. For tests only.
    pub fetch_private_addresses: bool,
    /// `--dpop-nonce`: DPoP proofs must carry a server nonce (RFC 9449 §8).
    pub dpop_nonce: bool,
}

/// `--registration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Registration {
    /// No registration endpoint.
    Off,
    /// Registration with an initial access token (`tessera client registration-token`).
    #[default]
    Token,
    /// As `Token`, and without one for public clients with loopback or native
    /// redirect URIs.
    Open,
}

/// `--signup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signup {
    Off,
    Invite,
    Open,
}

/// `--account-deletion`: `self` (the account page deletes at once) or `approval` (it
/// asks, and an administrator deletes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountDeletion {
    SelfService,
    Approval,
}

/// `--passkey-mode`: how the login page offers passkeys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasskeyMode {
    /// The username and password together; passkeys in the username field's
    /// autofill and behind a button.
    Offer,
    /// The username first; an account with a passkey is then asked for it, with its
    /// password as the alternative, and any other for its password.
    UsernameFirst,
    /// Username-first sign-in, and accounts without passwords: an invitation or a
    /// sign-up makes a passkey instead of a password, and a reset replaces the password
    /// with a passkey. Accounts that have a password keep it until then.
    PasskeyOnly,
}

impl PasskeyMode {
    /// Whether new accounts get a passkey instead of a password.
    pub fn passkey_only(self) -> bool {
        self == PasskeyMode::PasskeyOnly
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            db_path: PathBuf::from("tessera.db"),
            database_url: None,
            migrate: true,
            pg_pool: 16,
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9000),
            issuer: None,
            bcrypt_cost: 10,
            sqlite: SqliteOptions::default(),
            log_format: LogFormat::Text,
            hash_threads: cores(),
            workers: cores(),
            lifetimes: TokenLifetimes::default(),
            rate_limit: true,
            lockout: true,
            trusted_proxies: Vec::new(),
            forwarded_header: ForwardedHeader::default(),
            forward_auth_cookie_domain: None,
            metrics_token: None,
            master_key: None,
            audit_retention_days: 90,
            smtp: None,
            signup: Signup::Off,
            signup_domains: Vec::new(),
            org_name: "Tessera".to_string(),
            default_locale: Locale::En,
            access_token_alg: None,
            branding: branding::Defaults::default(),
            mail_per_hour: 5,
            account_deletion: AccountDeletion::SelfService,
            passkey_mode: PasskeyMode::Offer,
            key_reload_every: 10,
            replicate_to: None,
            replicate_retention: 7 * 24 * 3600,
            s3: replication::S3Settings::default(),
            backups: None,
            apply_file: None,
            protocol: ProtocolSettings::default(),
        }
    }
}

impl Settings {
    /// Seconds between a rotation publishing a new key and that key signing: three
    /// reload intervals, which covers a node that misses one reload (a busy
    /// database), a JWKS response cached for one interval (its `max-age`) and a few
    /// seconds of clock skew between nodes, so no node's JWKS, fresh or cached,
    /// lacks a kid any token carries.
    pub fn key_publish_delay(&self) -> i64 {
        3 * self.key_reload_every as i64
    }

    /// The database, as the banner and messages name it (never the password).
    pub fn database_label(&self) -> String {
        match &self.database_url {
            Some(url) => format!("PostgreSQL {}", redact_url(url.expose())),
            None => self.db_path.display().to_string(),
        }
    }

    /// The flag that points another command at the same database, for hints printed
    /// to the operator (the PostgreSQL URL through its environment variable, since it
    /// holds a password).
    pub fn database_flag(&self) -> String {
        match &self.database_url {
            Some(_) => "--database-url \"$TESSERA_DATABASE_URL\"".to_string(),
            None => format!("--db {}", self.db_path.display()),
        }
    }
}

#[cfg(test)]
mod tests;
