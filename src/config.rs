//! Settings: defaults, an optional TOML file, `TESSERA_*` environment and flags, in that
//! order of precedence; validated once at start with one clear line per bad setting.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::auth::client_ip::{Cidr, ForwardedHeader};
use crate::crypto::sealed::MasterKey;
use crate::crypto::Secret;
use url::Url;

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

/// Values as given on the command line or in the environment, before parsing.
/// Every field is text so that a bad value gets our message, not a parser's.
/// `Debug` leaves the master key and the metrics token out.
#[derive(Default, Clone)]
pub struct RawSettings {
    pub config: Option<PathBuf>,
    pub db: Option<String>,
    /// A PostgreSQL URL; selects PostgreSQL instead of the SQLite file.
    pub database_url: Option<String>,
    /// `serve --no-migrate`: leave the schema to `tessera migrate`.
    pub no_migrate: bool,
    /// The SMTP relay (may hold a password), its password file and the sender.
    pub smtp_url: Option<String>,
    pub smtp_password_file: Option<String>,
    pub smtp_from: Option<String>,
    pub signup: Option<String>,
    pub signup_domains: Option<String>,
    pub org_name: Option<String>,
    pub default_locale: Option<String>,
    pub access_token_alg: Option<String>,
    /// Branding files and colour (`branding::Defaults`).
    pub logo: Option<String>,
    pub accent_color: Option<String>,
    pub stylesheet: Option<String>,
    pub mail_per_hour: Option<String>,
    pub account_deletion: Option<String>,
    pub passkey_mode: Option<String>,
    pub listen: Option<String>,
    pub issuer: Option<String>,
    pub bcrypt_cost: Option<String>,
    pub sqlite_wal: Option<String>,
    pub sqlite_synchronous: Option<String>,
    pub log_format: Option<String>,
    pub hash_threads: Option<String>,
    pub workers: Option<String>,
    pub pg_pool: Option<String>,
    pub rate_limit: Option<String>,
    pub lockout: Option<String>,
    pub audit_retention_days: Option<String>,
    pub trusted_proxies: Option<String>,
    pub forwarded_header: Option<String>,
    pub forward_auth_cookie_domain: Option<String>,
    pub metrics_token: Option<String>,
    /// A file holding the metrics token, so it stays out of argv and the environment.
    pub metrics_token_file: Option<String>,
    /// The master key itself (from `TESSERA_MASTER_KEY`, never a flag: argv is public).
    pub master_key: Option<String>,
    pub master_key_file: Option<String>,
    pub sqlite_autocheckpoint: Option<String>,
    /// `serve --replicate-to`, `--replicate-retention`.
    pub replicate_to: Option<String>,
    pub replicate_retention: Option<String>,
    /// `serve --backup-dir`, `--backup-every`, `--backup-keep`.
    pub backup_dir: Option<String>,
    pub backup_every: Option<String>,
    pub backup_keep: Option<String>,
    /// S3-compatible object storage for `s3://` replica targets.
    pub s3_endpoint: Option<String>,
    pub s3_region: Option<String>,
    pub s3_path_style: Option<String>,
    /// `serve --apply FILE`.
    pub apply: Option<PathBuf>,
    /// `serve --require-par`, `--registration`, `--client-id-documents`,
    /// `--fetch-private-addresses`, `--dpop-nonce`.
    pub require_par: Option<String>,
    pub registration: Option<String>,
    pub client_id_documents: Option<String>,
    pub fetch_private_addresses: Option<String>,
    pub dpop_nonce: Option<String>,
}

impl std::fmt::Debug for RawSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("RawSettings")
            .field("config", &self.config)
            .field("db", &self.db)
            .field("database_url", &hidden(&self.database_url))
            .field("smtp_url", &hidden(&self.smtp_url))
            .field("listen", &self.listen)
            .field("issuer", &self.issuer)
            .field("metrics_token", &hidden(&self.metrics_token))
            .field("metrics_token_file", &self.metrics_token_file)
            .field("master_key", &hidden(&self.master_key))
            .field("master_key_file", &self.master_key_file)
            .finish_non_exhaustive()
    }
}

/// Keys accepted in the TOML file; any other key is an error, not silently ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    db: Option<toml::Value>,
    database_url: Option<toml::Value>,
    smtp_url: Option<toml::Value>,
    smtp_password_file: Option<toml::Value>,
    smtp_from: Option<toml::Value>,
    signup: Option<toml::Value>,
    signup_domains: Option<toml::Value>,
    org_name: Option<toml::Value>,
    default_locale: Option<toml::Value>,
    access_token_alg: Option<toml::Value>,
    logo: Option<toml::Value>,
    accent_color: Option<toml::Value>,
    stylesheet: Option<toml::Value>,
    mail_per_hour: Option<toml::Value>,
    account_deletion: Option<toml::Value>,
    passkey_mode: Option<toml::Value>,
    listen: Option<toml::Value>,
    issuer: Option<toml::Value>,
    bcrypt_cost: Option<toml::Value>,
    sqlite_wal: Option<toml::Value>,
    sqlite_synchronous: Option<toml::Value>,
    log_format: Option<toml::Value>,
    hash_threads: Option<toml::Value>,
    workers: Option<toml::Value>,
    pg_pool: Option<toml::Value>,
    rate_limit: Option<toml::Value>,
    lockout: Option<toml::Value>,
    audit_retention_days: Option<toml::Value>,
    trusted_proxies: Option<toml::Value>,
    forwarded_header: Option<toml::Value>,
    forward_auth_cookie_domain: Option<toml::Value>,
    metrics_token: Option<toml::Value>,
    metrics_token_file: Option<toml::Value>,
    master_key_file: Option<toml::Value>,
    sqlite_autocheckpoint: Option<toml::Value>,
    replicate_to: Option<toml::Value>,
    replicate_retention: Option<toml::Value>,
    backup_dir: Option<toml::Value>,
    backup_every: Option<toml::Value>,
    backup_keep: Option<toml::Value>,
    s3_endpoint: Option<toml::Value>,
    s3_region: Option<toml::Value>,
    s3_path_style: Option<toml::Value>,
    require_par: Option<toml::Value>,
    registration: Option<toml::Value>,
    client_id_documents: Option<toml::Value>,
    fetch_private_addresses: Option<toml::Value>,
    dpop_nonce: Option<toml::Value>,
}

/// SQLite's `synchronous` pragma: NORMAL is safe against process crashes in WAL mode;
/// FULL also survives power loss, at the price of an fsync per group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    Normal,
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone)]
pub struct SqliteSettings {
    pub wal: bool,
    pub synchronous: Synchronous,
    /// Bound of the writer's queue; a full queue answers 503 rather than waiting.
    pub writer_queue: usize,
    pub read_pool: u32,
    /// SQLite's automatic checkpoints (every 1000 WAL pages). Off for a Litestream
    /// sidecar, which checkpoints itself; Tessera's own replication turns them off on
    /// the server's writer and checkpoints after shipping.
    pub autocheckpoint: bool,
}

/// `serve --backup-dir DIR --backup-every 1h --backup-keep 48`.
#[derive(Debug, Clone)]
pub struct BackupSchedule {
    pub dir: PathBuf,
    /// Seconds between two copies (at least 1).
    pub every: u64,
    /// Copies kept; older ones are deleted.
    pub keep: usize,
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
    pub sqlite: SqliteSettings,
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
    pub smtp: Option<crate::mail::Smtp>,
    /// Who may create an account: nobody (`off`), people an administrator invited
    /// (`invite`), or anyone (`open`, limited to `signup_domains` when set).
    pub signup: Signup,
    /// Email domains `open` sign-up accepts (lowercase); empty accepts any.
    pub signup_domains: Vec<String>,
    /// The organisation's name, in mail and on pages.
    pub org_name: String,
    /// The language of pages and mail when neither the application (`ui_locales`)
    /// nor the browser (`Accept-Language`) names one Tessera speaks.
    pub default_locale: crate::i18n::Locale,
    /// `--access-token-alg`: what access tokens are signed with; `None` signs them as
    /// the client's ID tokens (RS256 unless the client chose another).
    pub access_token_alg: Option<crate::crypto::keys::Alg>,
    /// The logo, accent colour and stylesheet the flags give; the admin page's take
    /// precedence.
    pub branding: crate::branding::Defaults,
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
    pub replicate_to: Option<crate::replica::Target>,
    /// Seconds a replica keeps history for point-in-time restores (`--replicate-retention`).
    pub replicate_retention: u64,
    /// The endpoint, region and addressing of `s3://` targets.
    pub s3: crate::replica::S3Settings,
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
            sqlite: SqliteSettings {
                wal: true,
                synchronous: Synchronous::Normal,
                writer_queue: 8192,
                read_pool: 8,
                autocheckpoint: true,
            },
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
            default_locale: crate::i18n::Locale::En,
            access_token_alg: None,
            branding: crate::branding::Defaults::default(),
            mail_per_hour: 5,
            account_deletion: AccountDeletion::SelfService,
            passkey_mode: PasskeyMode::Offer,
            key_reload_every: 10,
            replicate_to: None,
            replicate_retention: 7 * 24 * 3600,
            s3: crate::replica::S3Settings::default(),
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

    /// Layers defaults < file < environment/flags and validates every value.
    pub fn load(raw: &RawSettings) -> Result<Self, ConfigError> {
        let file = match &raw.config {
            Some(path) => read_file(path)?,
            None => FileSettings::default(),
        };
        let pick =
            |flag: &Option<String>, file: &Option<toml::Value>| flag.clone().or_else(|| file.as_ref().map(value_text));
        let mut s = Settings::default();
        if let Some(v) = pick(&raw.db, &file.db) {
            if v.trim().is_empty() {
                return Err(invalid("db", "must not be empty"));
            }
            s.db_path = PathBuf::from(v);
        }
        if let Some(v) = pick(&raw.database_url, &file.database_url) {
            if pick(&raw.db, &file.db).is_some() {
                return Err(invalid(
                    "database_url",
                    "given together with `db`: choose the SQLite file (--db) or PostgreSQL (--database-url)",
                ));
            }
            crate::db::check_database_url(v.trim()).map_err(|e| invalid("database_url", e))?;
            s.database_url = Some(Secret::from_string(v.trim().to_string()));
        }
        s.migrate = !raw.no_migrate;
        if let Some(url) = pick(&raw.smtp_url, &file.smtp_url) {
            let password = match pick(&raw.smtp_password_file, &file.smtp_password_file) {
                Some(path) => Some(
                    std::fs::read_to_string(&path)
                        .map_err(|e| invalid("smtp_password_file", format!("cannot read {path}: {e}")))?,
                ),
                None => None,
            };
            let from = pick(&raw.smtp_from, &file.smtp_from);
            s.smtp = Some(
                crate::mail::Smtp::parse(&url, password.as_deref(), from.as_deref())
                    .map_err(|e| invalid("smtp_url", e))?,
            );
        }
        if let Some(v) = pick(&raw.signup, &file.signup) {
            s.signup = match v.trim() {
                "off" => Signup::Off,
                "invite" => Signup::Invite,
                "open" => Signup::Open,
                other => return Err(invalid("signup", format!("`{other}` is not off, invite or open"))),
            };
        }
        if let Some(v) = pick(&raw.signup_domains, &file.signup_domains) {
            s.signup_domains = parse_domains(&v)?;
        }
        // An open sign-up is held until its address is verified, which takes mail.
        if s.signup == Signup::Open && s.smtp.is_none() {
            return Err(invalid(
                "signup",
                "`open` needs mail to verify addresses: set smtp_url (--smtp-url) too",
            ));
        }
        if let Some(v) = pick(&raw.org_name, &file.org_name) {
            let v = v.trim();
            if v.is_empty() || v.chars().count() > 100 || v.chars().any(char::is_control) {
                return Err(invalid(
                    "org_name",
                    "must be 1 to 100 characters with no control characters",
                ));
            }
            s.org_name = v.to_string();
        }
        {
            let (accent, logo, sheet) = (
                pick(&raw.accent_color, &file.accent_color),
                pick(&raw.logo, &file.logo),
                pick(&raw.stylesheet, &file.stylesheet),
            );
            s.branding = crate::branding::Defaults::load(accent.as_deref(), logo.as_deref(), sheet.as_deref())
                .map_err(|(key, e)| invalid(key, e))?;
        }
        if let Some(v) = pick(&raw.default_locale, &file.default_locale) {
            s.default_locale = crate::i18n::Locale::from_tag(&v).ok_or_else(|| {
                invalid(
                    "default_locale",
                    format!("`{}` is not one of {}", v.trim(), crate::i18n::supported().join(", ")),
                )
            })?;
        }
        if let Some(v) = pick(&raw.access_token_alg, &file.access_token_alg) {
            s.access_token_alg = Some(crate::crypto::keys::Alg::parse(v.trim()).ok_or_else(|| {
                invalid(
                    "access_token_alg",
                    format!("`{}` is not RS256, ES256 or EdDSA", v.trim()),
                )
            })?);
        }
        if let Some(v) = pick(&raw.mail_per_hour, &file.mail_per_hour) {
            s.mail_per_hour = parse_in_range("mail_per_hour", &v, 1, 1000)?;
        }
        if let Some(v) = pick(&raw.account_deletion, &file.account_deletion) {
            s.account_deletion = match v.trim() {
                "self" => AccountDeletion::SelfService,
                "approval" => AccountDeletion::Approval,
                other => {
                    return Err(invalid(
                        "account_deletion",
                        format!("`{other}` is not self or approval"),
                    ))
                }
            };
        }
        if let Some(v) = pick(&raw.passkey_mode, &file.passkey_mode) {
            s.passkey_mode = match v.trim() {
                "offer" => PasskeyMode::Offer,
                "username-first" => PasskeyMode::UsernameFirst,
                "passkey-only" => PasskeyMode::PasskeyOnly,
                other => {
                    return Err(invalid(
                        "passkey_mode",
                        format!("`{other}` is not offer, username-first or passkey-only"),
                    ))
                }
            };
        }
        if let Some(v) = pick(&raw.listen, &file.listen) {
            s.listen = v
                .parse()
                .map_err(|_| invalid("listen", format!("`{v}` is not an address like 127.0.0.1:9000")))?;
        }
        if let Some(v) = pick(&raw.issuer, &file.issuer) {
            s.issuer = Some(parse_issuer(&v)?);
        }
        if let Some(v) = pick(&raw.bcrypt_cost, &file.bcrypt_cost) {
            s.bcrypt_cost = parse_in_range("bcrypt_cost", &v, 4, 31)? as u32;
        }
        if let Some(v) = pick(&raw.sqlite_wal, &file.sqlite_wal) {
            s.sqlite.wal = parse_bool("sqlite_wal", &v)?;
        }
        if let Some(v) = pick(&raw.sqlite_synchronous, &file.sqlite_synchronous) {
            s.sqlite.synchronous = match v.to_ascii_lowercase().as_str() {
                "normal" => Synchronous::Normal,
                "full" => Synchronous::Full,
                _ => {
                    return Err(invalid(
                        "sqlite_synchronous",
                        format!("`{v}` is not `normal` or `full`"),
                    ))
                }
            };
        }
        if let Some(v) = pick(&raw.log_format, &file.log_format) {
            s.log_format = match v.to_ascii_lowercase().as_str() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => return Err(invalid("log_format", format!("`{v}` is not `text` or `json`"))),
            };
        }
        if let Some(v) = pick(&raw.hash_threads, &file.hash_threads) {
            s.hash_threads = parse_in_range("hash_threads", &v, 1, 256)? as usize;
        }
        if let Some(v) = pick(&raw.pg_pool, &file.pg_pool) {
            s.pg_pool = parse_in_range("pg_pool", &v, 1, 1000)? as u32;
        }
        if let Some(v) = pick(&raw.workers, &file.workers) {
            s.workers = parse_in_range("workers", &v, 1, 256)? as usize;
        }
        if let Some(v) = pick(&raw.require_par, &file.require_par) {
            s.protocol.require_par = parse_bool("require_par", &v)?;
        }
        if let Some(v) = pick(&raw.registration, &file.registration) {
            s.protocol.registration = match v.trim() {
                "off" => Registration::Off,
                "token" => Registration::Token,
                "open" => Registration::Open,
                other => return Err(invalid("registration", format!("`{other}` is not off, token or open"))),
            };
        }
        if let Some(v) = pick(&raw.client_id_documents, &file.client_id_documents) {
            s.protocol.client_id_documents = parse_bool("client_id_documents", &v)?;
        }
        if let Some(v) = pick(&raw.fetch_private_addresses, &file.fetch_private_addresses) {
            s.protocol.fetch_private_addresses = parse_bool("fetch_private_addresses", &v)?;
        }
        if let Some(v) = pick(&raw.dpop_nonce, &file.dpop_nonce) {
            s.protocol.dpop_nonce = parse_bool("dpop_nonce", &v)?;
        }
        if let Some(v) = pick(&raw.rate_limit, &file.rate_limit) {
            s.rate_limit = parse_bool("rate_limit", &v)?;
        }
        if let Some(v) = pick(&raw.lockout, &file.lockout) {
            s.lockout = parse_bool("lockout", &v)?;
        }
        if let Some(v) = pick(&raw.audit_retention_days, &file.audit_retention_days) {
            s.audit_retention_days = parse_in_range("audit_retention_days", &v, 0, 36500)?;
        }
        if let Some(v) = &raw.master_key {
            s.master_key = Some(MasterKey::parse(v).map_err(|e| invalid("master_key", e))?);
        } else if let Some(path) = pick(&raw.master_key_file, &file.master_key_file) {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| invalid("master_key_file", format!("cannot read {path}: {e}")))?;
            s.master_key = Some(MasterKey::parse(&text).map_err(|e| invalid("master_key_file", e))?);
        }
        s.metrics_token = metrics_token(
            pick(&raw.metrics_token, &file.metrics_token),
            pick(&raw.metrics_token_file, &file.metrics_token_file),
        )?;
        if let Some(v) = pick(&raw.trusted_proxies, &file.trusted_proxies) {
            s.trusted_proxies = v
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(|p| p.trim().trim_matches('"'))
                .filter(|p| !p.is_empty())
                .map(Cidr::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| invalid("trusted_proxies", e))?;
        }
        if let Some(v) = pick(&raw.forwarded_header, &file.forwarded_header) {
            s.forwarded_header = ForwardedHeader::parse(&v).map_err(|e| invalid("forwarded_header", e))?;
        }
        if let Some(v) = pick(&raw.forward_auth_cookie_domain, &file.forward_auth_cookie_domain) {
            s.forward_auth_cookie_domain =
                Some(parse_cookie_domain(&v).map_err(|e| invalid("forward_auth_cookie_domain", e))?);
        }
        // A browser drops a cookie whose domain does not cover the host that set it
        // (RFC 6265 §5.3 step 6), so Tessera's own host must lie within it.
        if let (Some(domain), Some(host)) = (
            &s.forward_auth_cookie_domain,
            s.issuer
                .as_ref()
                .and_then(|u| u.host_str())
                .map(str::to_ascii_lowercase),
        ) {
            if host != *domain && !host.ends_with(&format!(".{domain}")) {
                return Err(invalid(
                    "forward_auth_cookie_domain",
                    format!("`{domain}` does not cover the issuer's host `{host}`"),
                ));
            }
        }
        s.load_storage_care(raw, &file)?;
        Ok(s)
    }

    /// Replication, scheduled backups, checkpoints and S3: the SQLite file's care.
    fn load_storage_care(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let pick =
            |flag: &Option<String>, file: &Option<toml::Value>| flag.clone().or_else(|| file.as_ref().map(value_text));
        if let Some(v) = pick(&raw.sqlite_autocheckpoint, &file.sqlite_autocheckpoint) {
            self.sqlite.autocheckpoint = parse_bool("sqlite_autocheckpoint", &v)?;
        }
        self.s3 = crate::replica::S3Settings::load(
            pick(&raw.s3_endpoint, &file.s3_endpoint),
            pick(&raw.s3_region, &file.s3_region),
            pick(&raw.s3_path_style, &file.s3_path_style),
        )
        .map_err(|e| invalid("s3_endpoint", e))?;
        if let Some(v) = pick(&raw.replicate_to, &file.replicate_to).filter(|v| !v.trim().is_empty()) {
            self.replicate_to = Some(crate::replica::Target::parse(&v).map_err(|e| invalid("replicate_to", e))?);
        }
        if let Some(v) = pick(&raw.replicate_retention, &file.replicate_retention) {
            self.replicate_retention = parse_interval("replicate_retention", &v, 60)?;
        }
        if let Some(dir) = pick(&raw.backup_dir, &file.backup_dir).filter(|v| !v.trim().is_empty()) {
            let every = match pick(&raw.backup_every, &file.backup_every) {
                Some(v) => parse_interval("backup_every", &v, 1)?,
                None => 3600,
            };
            let keep = match pick(&raw.backup_keep, &file.backup_keep) {
                Some(v) => parse_in_range("backup_keep", &v, 1, 100_000)? as usize,
                None => 48,
            };
            self.backups = Some(BackupSchedule {
                dir: PathBuf::from(dir),
                every,
                keep,
            });
        } else if pick(&raw.backup_every, &file.backup_every).is_some()
            || pick(&raw.backup_keep, &file.backup_keep).is_some()
        {
            return Err(invalid("backup_every", "set backup_dir (--backup-dir) too"));
        }
        self.apply_file = raw.apply.clone();
        let postgres = "is for the SQLite file; on PostgreSQL use the engine's WAL archiving \
             (pgBackRest, pg_basebackup) and `tessera export` (docs/OPERATIONS.md)";
        if self.database_url.is_some() {
            if self.replicate_to.is_some() {
                return Err(invalid("replicate_to", postgres));
            }
            if self.backups.is_some() {
                return Err(invalid("backup_dir", postgres));
            }
        }
        if self.replicate_to.is_some() && !self.sqlite.wal {
            return Err(invalid(
                "replicate_to",
                "ships the write-ahead log: it needs sqlite_wal=true",
            ));
        }
        if self.replicate_to.is_some() && !self.sqlite.autocheckpoint {
            return Err(invalid(
                "replicate_to",
                "checkpoints are left to another tool (sqlite_autocheckpoint=false): use that tool or Tessera's replication, not both",
            ));
        }
        Ok(())
    }
}

/// `30s`, `10m`, `1h`, `7d` (or plain seconds), at least `min` seconds.
pub fn parse_interval(name: &'static str, v: &str, min: u64) -> Result<u64, ConfigError> {
    let t = v.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => 0,
    };
    let n = digits
        .parse::<u64>()
        .ok()
        .filter(|_| scale > 0)
        .and_then(|n| n.checked_mul(scale));
    match n {
        Some(n) if n >= min && n <= 100 * 365 * 86_400 => Ok(n),
        _ => Err(invalid(
            name,
            format!("`{v}` is not an interval of at least {min}s, written like 30s, 10m, 1h or 7d"),
        )),
    }
}

/// A URL without its password.
pub fn redact_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "(unparsable URL)".to_string(),
    }
}

/// The metrics token, given itself (`metrics_token`) or in a file (`metrics_token_file`,
/// read like the master key and SMTP password files: one line, its newline dropped).
fn metrics_token(given: Option<String>, path: Option<String>) -> Result<Option<Secret>, ConfigError> {
    let (name, v) = match (given, path) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(invalid(
                "metrics_token_file",
                "given together with `metrics_token`: give the token or a file holding it, not both",
            ))
        }
        (Some(v), None) => ("metrics_token", v),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| invalid("metrics_token_file", format!("cannot read {path}: {e}")))?;
            let token = text.trim_end_matches(['\r', '\n']).to_string();
            if token.is_empty() {
                return Err(invalid("metrics_token_file", format!("{path} is empty")));
            }
            ("metrics_token_file", token)
        }
    };
    if v.len() < 16 || v.len() > 256 || !v.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(name, "16 to 256 visible ASCII characters"));
    }
    Ok(Some(Secret::from_string(v)))
}

fn read_file(path: &Path) -> Result<FileSettings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::File {
        path: path.display().to_string(),
        reason: e.message().replace('\n', " "),
    })
}

/// `example.org,example.com`: each a host name, compared in lowercase.
fn parse_domains(v: &str) -> Result<Vec<String>, ConfigError> {
    let mut out = Vec::new();
    for d in v.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let d = d.trim_start_matches('@').to_ascii_lowercase();
        let ok = d.contains('.')
            && d.len() <= 253
            && d.split('.')
                .all(|l| !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        if !ok {
            return Err(invalid(
                "signup_domains",
                format!("`{d}` is not a domain like example.org"),
            ));
        }
        out.push(d);
    }
    Ok(out)
}

fn value_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn parse_in_range(name: &'static str, v: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
    match v.trim().parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(invalid(
            name,
            format!("`{v}` is not a whole number from {min} to {max}"),
        )),
    }
}

fn parse_bool(name: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(invalid(name, format!("`{v}` is not `true` or `false`"))),
    }
}

/// The issuer is an https (or, for local use, http) URL without query or fragment
/// (OpenID Connect Discovery 1.0 §3); a trailing slash is dropped so that
/// `{issuer}/.well-known/openid-configuration` is well formed.
pub fn parse_issuer(v: &str) -> Result<Url, ConfigError> {
    let trimmed = v.trim().trim_end_matches('/');
    let url = Url::parse(trimmed).map_err(|e| invalid("issuer", format!("`{v}` is not a URL: {e}")))?;
    if url.scheme() != "https" && url.scheme() != "http" {
        return Err(invalid("issuer", "must be an http or https URL"));
    }
    if url.query().is_some() || url.fragment().is_some() || url.host().is_none() {
        return Err(invalid("issuer", "must have a host and no query or fragment"));
    }
    Ok(url)
}

/// A cookie domain (RFC 6265 §5.2.3): a DNS name of at least two labels, lower case,
/// without a leading dot, port or IP address.
pub fn parse_cookie_domain(v: &str) -> Result<String, String> {
    let d = v.trim().trim_start_matches('.').to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    let labels: Vec<&str> = d.split('.').collect();
    if d.len() > 253 || labels.len() < 2 || !labels.iter().all(|l| label_ok(l)) {
        return Err(format!("`{v}` is not a domain name such as example.org"));
    }
    if labels.last().is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit())) {
        return Err(format!("`{v}` is an IP address; a cookie domain is a DNS name"));
    }
    Ok(d)
}

/// The issuer string as it appears in tokens: the URL without a trailing slash.
pub fn issuer_text(url: &Url) -> String {
    url.as_str().trim_end_matches('/').to_string()
}

/// The issuer to use when none is configured: the bound address, with a wildcard
/// address replaced by loopback so the URL is reachable from this machine.
pub fn default_issuer(bound: SocketAddr) -> Result<Url, ConfigError> {
    let ip = match bound.ip() {
        ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    parse_issuer(&format!("http://{}", SocketAddr::new(ip, bound.port())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_ones() {
        let s = Settings::load(&RawSettings::default()).unwrap();
        assert_eq!(s.db_path, PathBuf::from("tessera.db"));
        assert_eq!(s.listen.to_string(), "127.0.0.1:9000");
        assert_eq!(s.bcrypt_cost, 10);
        assert!(s.sqlite.wal);
        let issuer = default_issuer(s.listen).unwrap();
        assert_eq!(issuer_text(&issuer), "http://127.0.0.1:9000");
    }

    #[test]
    fn a_bad_value_names_the_setting_in_one_line() {
        let raw = RawSettings {
            bcrypt_cost: Some("99".into()),
            ..Default::default()
        };
        let err = Settings::load(&raw).unwrap_err().to_string();
        assert!(err.contains("`bcrypt_cost`"), "{err}");
        assert!(!err.contains('\n'));
        let raw = RawSettings {
            sqlite_wal: Some("maybe".into()),
            ..Default::default()
        };
        assert!(Settings::load(&raw).unwrap_err().to_string().contains("`sqlite_wal`"));
    }

    #[test]
    fn the_forward_auth_cookie_domain_is_a_dns_name_covering_the_issuer() {
        assert_eq!(parse_cookie_domain(".Example.ORG").unwrap(), "example.org");
        for bad in [
            "org",
            "127.0.0.1",
            "example.org:443",
            "ex ample.org",
            "-a.org",
            "a..org",
            "",
        ] {
            assert!(parse_cookie_domain(bad).is_err(), "{bad}");
        }
        let with = |issuer: &str| RawSettings {
            issuer: Some(issuer.into()),
            forward_auth_cookie_domain: Some("example.org".into()),
            ..Default::default()
        };
        assert!(Settings::load(&with("https://auth.example.org")).is_ok());
        assert!(Settings::load(&with("https://example.org")).is_ok());
        let err = Settings::load(&with("https://auth.example.net"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not cover"), "{err}");
        assert!(Settings::load(&with("https://badexample.org")).is_err());
    }

    #[test]
    fn flags_override_the_file_which_overrides_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.toml");
        std::fs::write(
            &path,
            "bcrypt_cost = 12\nlisten = \"127.0.0.1:7000\"\nsqlite_wal = false\n",
        )
        .unwrap();
        let raw = RawSettings {
            config: Some(path),
            bcrypt_cost: Some("11".into()),
            ..Default::default()
        };
        let s = Settings::load(&raw).unwrap();
        assert_eq!(s.bcrypt_cost, 11);
        assert_eq!(s.listen.port(), 7000);
        assert!(!s.sqlite.wal);
    }

    #[test]
    fn unknown_file_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.toml");
        std::fs::write(&path, "bcrypt_cots = 12\n").unwrap();
        let raw = RawSettings {
            config: Some(path),
            ..Default::default()
        };
        assert!(matches!(Settings::load(&raw), Err(ConfigError::File { .. })));
    }

    #[test]
    fn open_signup_without_smtp_is_refused_in_one_line() {
        let raw = RawSettings {
            signup: Some("open".into()),
            ..Default::default()
        };
        let err = Settings::load(&raw).unwrap_err().to_string();
        assert!(err.contains("`signup`") && err.contains("smtp_url"), "{err}");
        assert!(!err.contains('\n'));
        let with_mail = RawSettings {
            signup: Some("open".into()),
            smtp_url: Some("smtp://127.0.0.1:25".into()),
            smtp_from: Some("id@example.org".into()),
            ..Default::default()
        };
        assert_eq!(Settings::load(&with_mail).unwrap().signup, Signup::Open);
        let invite = RawSettings {
            signup: Some("invite".into()),
            ..Default::default()
        };
        assert_eq!(Settings::load(&invite).unwrap().signup, Signup::Invite);
    }

    #[test]
    fn issuer_must_be_a_plain_http_url() {
        assert!(parse_issuer("ftp://x").is_err());
        assert!(parse_issuer("https://id.example.com/?a=b").is_err());
        let url = parse_issuer("https://id.example.com/").unwrap();
        assert_eq!(issuer_text(&url), "https://id.example.com");
    }

    #[test]
    fn lifecycle_settings_parse_and_refuse_in_one_line() {
        let raw = RawSettings {
            signup: Some("invite".into()),
            signup_domains: Some(" Example.org, @example.com ".into()),
            org_name: Some("Example Org".into()),
            mail_per_hour: Some("12".into()),
            account_deletion: Some("approval".into()),
            passkey_mode: Some("username-first".into()),
            default_locale: Some("pt-BR".into()),
            access_token_alg: Some("EdDSA".into()),
            ..Default::default()
        };
        let s = Settings::load(&raw).unwrap();
        assert_eq!(s.access_token_alg, Some(crate::crypto::keys::Alg::EdDsa));
        assert_eq!(s.passkey_mode, PasskeyMode::UsernameFirst);
        assert_eq!(s.default_locale, crate::i18n::Locale::Pt);
        assert_eq!(s.signup, Signup::Invite);
        assert_eq!(s.signup_domains, ["example.org", "example.com"]);
        assert_eq!((s.org_name.as_str(), s.mail_per_hour), ("Example Org", 12));
        assert_eq!(s.account_deletion, AccountDeletion::Approval);
        let defaults = Settings::load(&RawSettings::default()).unwrap();
        assert_eq!((defaults.signup, defaults.mail_per_hour), (Signup::Off, 5));
        assert_eq!(defaults.account_deletion, AccountDeletion::SelfService);
        assert_eq!(defaults.passkey_mode, PasskeyMode::Offer);
        let only = RawSettings {
            passkey_mode: Some("passkey-only".into()),
            ..Default::default()
        };
        let only = Settings::load(&only).unwrap().passkey_mode;
        assert_eq!(only, PasskeyMode::PasskeyOnly);
        assert!(only.passkey_only() && !PasskeyMode::UsernameFirst.passkey_only());
        assert_eq!(defaults.default_locale, crate::i18n::Locale::En);
        for (raw, name) in [
            (
                RawSettings {
                    signup: Some("everyone".into()),
                    ..Default::default()
                },
                "signup",
            ),
            (
                RawSettings {
                    signup_domains: Some("not a domain".into()),
                    ..Default::default()
                },
                "signup_domains",
            ),
            (
                RawSettings {
                    mail_per_hour: Some("0".into()),
                    ..Default::default()
                },
                "mail_per_hour",
            ),
            (
                RawSettings {
                    account_deletion: Some("never".into()),
                    ..Default::default()
                },
                "account_deletion",
            ),
            (
                RawSettings {
                    org_name: Some(" ".into()),
                    ..Default::default()
                },
                "org_name",
            ),
            (
                RawSettings {
                    passkey_mode: Some("passkeys-please".into()),
                    ..Default::default()
                },
                "passkey_mode",
            ),
            (
                RawSettings {
                    default_locale: Some("sv".into()),
                    ..Default::default()
                },
                "default_locale",
            ),
            (
                RawSettings {
                    access_token_alg: Some("HS256".into()),
                    ..Default::default()
                },
                "access_token_alg",
            ),
            (
                RawSettings {
                    accent_color: Some("red".into()),
                    ..Default::default()
                },
                "accent_color",
            ),
        ] {
            let e = Settings::load(&raw).unwrap_err().to_string();
            assert!(e.contains(name) && !e.contains('\n'), "{e}");
        }
    }
}
