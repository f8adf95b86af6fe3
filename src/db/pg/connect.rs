//! Where and how to connect: the libpq URL form (`postgres://` or `postgresql://`),
//! with `sslmode` as libpq means it — `disable`, `prefer` and `require` encrypt when
//! asked but do not authenticate the server; `verify-full` checks its certificate
//! against `sslrootcert` (or the system's roots) and its host name.

use std::time::Duration;

use native_tls::{Certificate, TlsConnector};
use postgres::config::SslMode;
use postgres_native_tls::MakeTlsConnector;

/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long sent data may stay unacknowledged before the connection counts as lost.
const UNACKED_LIMIT: Duration = Duration::from_secs(8);

#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    tls: Option<MakeTlsConnector>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyFull,
}

impl Target {
    /// Parses a database URL; the error is one line naming what is wrong, never the
    /// password.
    pub fn parse(url: &str) -> Result<Self, String> {
        let mut parsed = url::Url::parse(url).map_err(|e| format!("the database URL is not valid: {e}"))?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") {
            return Err("the database URL must start with postgres:// or postgresql://".into());
        }
        let mut mode = Mode::Prefer;
        let mut root_cert = None;
        let mut kept = Vec::new();
        for (k, v) in parsed.query_pairs() {
            match &*k {
                "sslmode" => {
                    mode = match &*v {
                        "disable" => Mode::Disable,
                        "prefer" => Mode::Prefer,
                        "require" => Mode::Require,
                        "verify-full" => Mode::VerifyFull,
                        other => {
                            return Err(format!(
                                "sslmode {other} is not supported; use disable, prefer, require or verify-full"
                            ))
                        }
                    }
                }
                "sslrootcert" => root_cert = Some(v.into_owned()),
                _ => kept.push((k.into_owned(), v.into_owned())),
            }
        }
        if kept.is_empty() {
            parsed.set_query(None);
        } else {
            parsed.query_pairs_mut().clear().extend_pairs(kept);
        }
        let mut config: postgres::Config = parsed
            .as_str()
            .parse()
            .map_err(|e| format!("the database URL is not valid: {e}"))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        // A database that vanishes without a reset (a partition dropping packets)
        // would otherwise hold a statement in flight until TCP gives up, minutes
        // later: unacknowledged data fails the connection after `UNACKED_LIMIT`, and
        // keepalive probes find a silent peer within 5 + 3 × 1 s. Both count only a
        // peer that does not answer at all, never a slow statement.
        config
            .tcp_user_timeout(UNACKED_LIMIT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(5))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(3);
        if config.get_application_name().is_none() {
            config.application_name("tessera");
        }
        let tls = match mode {
            Mode::Disable => {
                config.ssl_mode(SslMode::Disable);
                None
            }
            Mode::Prefer | Mode::Require => {
                config.ssl_mode(if mode == Mode::Prefer {
                    SslMode::Prefer
                } else {
                    SslMode::Require
                });
                let connector = TlsConnector::builder()
                    .danger_accept_invalid_certs(true)
                    .danger_accept_invalid_hostnames(true)
                    .build()
                    .map_err(|e| format!("TLS to PostgreSQL cannot be set up: {e}"))?;
                Some(MakeTlsConnector::new(connector))
            }
            Mode::VerifyFull => {
                config.ssl_mode(SslMode::Require);
                let mut builder = TlsConnector::builder();
                if let Some(path) = &root_cert {
                    let pem = std::fs::read(path).map_err(|e| format!("sslrootcert {path}: {e}"))?;
                    let cert = Certificate::from_pem(&pem)
                        .map_err(|e| format!("sslrootcert {path} is not a PEM certificate: {e}"))?;
                    builder.add_root_certificate(cert);
                }
                let connector = builder
                    .build()
                    .map_err(|e| format!("TLS to PostgreSQL cannot be set up: {e}"))?;
                Some(MakeTlsConnector::new(connector))
            }
        };
        Ok(Self { config, tls })
    }

    pub fn connect(&self) -> Result<postgres::Client, postgres::Error> {
        match &self.tls {
            None => self.config.connect(postgres::NoTls),
            Some(tls) => self.config.connect(tls.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_their_tls_mode() {
        assert!(Target::parse("postgres://u:p@127.0.0.1:5432/db?sslmode=disable").is_ok());
        assert!(Target::parse("postgresql://u@localhost/db?sslmode=require&application_name=x").is_ok());
        assert!(Target::parse("postgres://u@localhost/db").is_ok());
        let e = Target::parse("postgres://u@localhost/db?sslmode=allow").err().unwrap();
        assert!(e.contains("sslmode allow"), "{e}");
        let e = Target::parse("mysql://u@localhost/db").err().unwrap();
        assert!(e.contains("postgres://"), "{e}");
        let e = Target::parse("postgres://u:secret@localhost/db?sslmode=verify-full&sslrootcert=/nonexistent")
            .err()
            .unwrap();
        assert!(e.contains("/nonexistent") && !e.contains("secret"), "{e}");
    }
}
