//! The settings as given, before parsing: flags and environment (`RawSettings`) and
//! the TOML file (`FileSettings`), every value still text.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

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
pub(super) struct FileSettings {
    pub(super) db: Option<toml::Value>,
    pub(super) database_url: Option<toml::Value>,
    pub(super) smtp_url: Option<toml::Value>,
    pub(super) smtp_password_file: Option<toml::Value>,
    pub(super) smtp_from: Option<toml::Value>,
    pub(super) signup: Option<toml::Value>,
    pub(super) signup_domains: Option<toml::Value>,
    pub(super) org_name: Option<toml::Value>,
    pub(super) default_locale: Option<toml::Value>,
    pub(super) access_token_alg: Option<toml::Value>,
    pub(super) logo: Option<toml::Value>,
    pub(super) accent_color: Option<toml::Value>,
    pub(super) stylesheet: Option<toml::Value>,
    pub(super) mail_per_hour: Option<toml::Value>,
    pub(super) account_deletion: Option<toml::Value>,
    pub(super) passkey_mode: Option<toml::Value>,
    pub(super) listen: Option<toml::Value>,
    pub(super) issuer: Option<toml::Value>,
    pub(super) bcrypt_cost: Option<toml::Value>,
    pub(super) sqlite_wal: Option<toml::Value>,
    pub(super) sqlite_synchronous: Option<toml::Value>,
    pub(super) log_format: Option<toml::Value>,
    pub(super) hash_threads: Option<toml::Value>,
    pub(super) workers: Option<toml::Value>,
    pub(super) pg_pool: Option<toml::Value>,
    pub(super) rate_limit: Option<toml::Value>,
    pub(super) lockout: Option<toml::Value>,
    pub(super) audit_retention_days: Option<toml::Value>,
    pub(super) trusted_proxies: Option<toml::Value>,
    pub(super) forwarded_header: Option<toml::Value>,
    pub(super) forward_auth_cookie_domain: Option<toml::Value>,
    pub(super) metrics_token: Option<toml::Value>,
    pub(super) metrics_token_file: Option<toml::Value>,
    pub(super) master_key_file: Option<toml::Value>,
    pub(super) sqlite_autocheckpoint: Option<toml::Value>,
    pub(super) replicate_to: Option<toml::Value>,
    pub(super) replicate_retention: Option<toml::Value>,
    pub(super) backup_dir: Option<toml::Value>,
    pub(super) backup_every: Option<toml::Value>,
    pub(super) backup_keep: Option<toml::Value>,
    pub(super) s3_endpoint: Option<toml::Value>,
    pub(super) s3_region: Option<toml::Value>,
    pub(super) s3_path_style: Option<toml::Value>,
    pub(super) require_par: Option<toml::Value>,
    pub(super) registration: Option<toml::Value>,
    pub(super) client_id_documents: Option<toml::Value>,
    pub(super) fetch_private_addresses: Option<toml::Value>,
    pub(super) dpop_nonce: Option<toml::Value>,
}

impl FileSettings {
    /// The file named by `--config`, or no file.
    pub(super) fn read(raw: &RawSettings) -> Result<Self, ConfigError> {
        match &raw.config {
            Some(path) => read_file(path),
            None => Ok(Self::default()),
        }
    }
}

/// A flag's value, else the file's: the one precedence rule of every setting.
pub(super) fn pick(flag: &Option<String>, file: &Option<toml::Value>) -> Option<String> {
    flag.clone().or_else(|| file.as_ref().map(value_text))
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

fn value_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
