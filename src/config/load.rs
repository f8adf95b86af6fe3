//! `Settings::load`: defaults, then the file, then the environment and flags, each
//! value validated in one named step.

use std::path::PathBuf;

use super::branding::Defaults;
use super::parse::{
    metrics_token, parse_bool, parse_cookie_domain, parse_domains, parse_in_range, parse_interval, parse_issuer,
};
use super::raw::{pick, FileSettings, RawSettings};
use super::replication::{BackupSchedule, S3Settings, Target};
use super::smtp::Smtp;
use super::{invalid, AccountDeletion, ConfigError, LogFormat, PasskeyMode, Registration, Settings, Signup};
use crate::domain::locale::supported;
use crate::domain::{Alg, Cidr, ForwardedHeader, Locale, MasterKey, Secret, Synchronous};

impl Settings {
    /// Layers defaults < file < environment/flags and validates every value.
    pub fn load(raw: &RawSettings) -> Result<Self, ConfigError> {
        let file = FileSettings::read(raw)?;
        let mut s = Settings::default();
        s.load_database(raw, &file)?;
        s.load_mail(raw, &file)?;
        s.load_accounts(raw, &file)?;
        s.load_looks(raw, &file)?;
        s.load_server(raw, &file)?;
        s.load_protocol(raw, &file)?;
        s.load_limits_and_secrets(raw, &file)?;
        s.load_proxies(raw, &file)?;
        s.load_storage_care(raw, &file)?;
        Ok(s)
    }

    /// The SQLite file or the PostgreSQL URL, never both.
    fn load_database(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let s = self;
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
            s.database_url = Some(Secret::from_string(v.trim().to_string()));
        }
        Ok(())
    }

    /// Whether `serve` migrates, and the SMTP relay.
    fn load_mail(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let s = self;
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
            s.smtp = Some(Smtp::parse(&url, password.as_deref(), from.as_deref()).map_err(|e| invalid("smtp_url", e))?);
        }
        Ok(())
    }

    /// Who may sign up, and the organisation's name.
    fn load_accounts(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let s = self;
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
        Ok(())
    }

    /// Branding, language, token algorithm, mail limit, deletion and passkeys.
    fn load_looks(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let s = self;
        {
            let (accent, logo, sheet) = (
                pick(&raw.accent_color, &file.accent_color),
                pick(&raw.logo, &file.logo),
                pick(&raw.stylesheet, &file.stylesheet),
            );
            s.branding = Defaults::load(accent.as_deref(), logo.as_deref(), sheet.as_deref())
                .map_err(|(key, e)| invalid(key, e))?;
        }
        if let Some(v) = pick(&raw.default_locale, &file.default_locale) {
            s.default_locale = Locale::from_tag(&v).ok_or_else(|| {
                invalid(
                    "default_locale",
                    format!("`{}` is not one of {}", v.trim(), supported().join(", ")),
                )
            })?;
        }
        if let Some(v) = pick(&raw.access_token_alg, &file.access_token_alg) {
            s.access_token_alg = Some(Alg::parse(v.trim()).ok_or_else(|| {
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
        Ok(())
    }

    /// The listener, issuer, hashing, SQLite pragmas, log format and pools.
    fn load_server(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let s = self;
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
        Ok(())
    }

    /// The protocol switches (PAR, registration, metadata documents, DPoP).
    fn load_protocol(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let s = self;
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
        Ok(())
    }

    /// Rate limits, lockout, audit retention, the master key and the metrics token.
    fn load_limits_and_secrets(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let s = self;
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
        Ok(())
    }

    /// Trusted proxies, their header, and the forward-auth cookie's domain.
    fn load_proxies(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        let s = self;
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
        Ok(())
    }

    /// Replication, scheduled backups, checkpoints and S3: the SQLite file's care.
    fn load_storage_care(&mut self, raw: &RawSettings, file: &FileSettings) -> Result<(), ConfigError> {
        if let Some(v) = pick(&raw.sqlite_autocheckpoint, &file.sqlite_autocheckpoint) {
            self.sqlite.autocheckpoint = parse_bool("sqlite_autocheckpoint", &v)?;
        }
        self.s3 = S3Settings::load(
            pick(&raw.s3_endpoint, &file.s3_endpoint),
            pick(&raw.s3_region, &file.s3_region),
            pick(&raw.s3_path_style, &file.s3_path_style),
        )
        .map_err(|e| invalid("s3_endpoint", e))?;
        if let Some(v) = pick(&raw.replicate_to, &file.replicate_to).filter(|v| !v.trim().is_empty()) {
            self.replicate_to = Some(Target::parse(&v).map_err(|e| invalid("replicate_to", e))?);
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
