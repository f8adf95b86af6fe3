//! Parsers of single values: intervals, numbers, switches, domains, the issuer, the
//! metrics token; each error names the setting.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use url::Url;

use super::{invalid, ConfigError};
use crate::domain::Secret;

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
pub(super) fn metrics_token(given: Option<String>, path: Option<String>) -> Result<Option<Secret>, ConfigError> {
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

/// `example.org,example.com`: each a host name, compared in lowercase.
pub(super) fn parse_domains(v: &str) -> Result<Vec<String>, ConfigError> {
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

pub(super) fn parse_in_range(name: &'static str, v: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
    match v.trim().parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(invalid(
            name,
            format!("`{v}` is not a whole number from {min} to {max}"),
        )),
    }
}

pub(super) fn parse_bool(name: &'static str, v: &str) -> Result<bool, ConfigError> {
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
