//! The form of single settings of a client: redirect and logout URIs, fetched URLs,
//! browser origins, scopes for the client itself, lifetimes.

use crate::domain::{Problems, RedirectUri};

pub(super) fn parse_uris(field: &str, uris: &[String], problems: &mut Problems) -> Vec<String> {
    let mut out = Vec::new();
    for u in uris.iter().map(|u| u.trim()).filter(|u| !u.is_empty()) {
        match RedirectUri::parse(u) {
            Ok(r) => out.push(r.as_str().to_string()),
            Err(e) => {
                problems.insert(field.into(), format!("{u}: {e}"));
            }
        }
    }
    out
}

/// Browser origins: `scheme://host[:port]` over http(s), nothing more, as a browser
/// sends them in `Origin`.
pub(super) fn parse_origins(origins: &[String], problems: &mut Problems) -> Vec<String> {
    let mut out = Vec::new();
    for o in origins.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
        let parsed = url::Url::parse(o).ok().filter(|u| {
            matches!(u.scheme(), "http" | "https")
                && u.host().is_some()
                && u.username().is_empty()
                && u.path() == "/"
                && u.query().is_none()
                && u.fragment().is_none()
                && !o.ends_with('/')
        });
        match parsed {
            Some(u) => out.push(u.origin().ascii_serialization()),
            None => {
                problems.insert("web_origins".into(), format!("{o}: an origin is scheme://host[:port]"));
            }
        }
    }
    out.dedup();
    out
}

/// Scopes a client may ask for itself: RFC 6749 §3.3 tokens, neither OpenID Connect
/// scopes (they mean nothing without a user) nor the admin scope (`admin` grants it).
pub(super) fn parse_client_scopes(scopes: &[String], problems: &mut Problems) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scopes.iter().flat_map(|s| s.split_whitespace()) {
        if crate::domain::Scope::parse(s).is_err() {
            problems.insert("client_scopes".into(), format!("`{s}` is not a scope"));
        } else if crate::oidc::claims::SUPPORTED_SCOPES.contains(&s) || s == crate::oidc::token::ADMIN_SCOPE {
            problems.insert(
                "client_scopes".into(),
                format!("`{s}` cannot be granted to a client for itself"),
            );
        } else if !out.iter().any(|x| x == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// A URL the server or a browser fetches for the client: absolute https, or http on a
/// loopback host only (a developer's machine; the outbound fetcher refuses loopback
/// targets outside its test mode anyway). A query is kept (Front-Channel Logout 1.0 §2
/// allows one); a fragment is refused, as for redirect URIs.
pub(super) fn web_url(field: &str, u: &str, problems: &mut Problems) -> Option<String> {
    let parsed = match url::Url::parse(u) {
        Ok(url) => url,
        Err(_) => {
            problems.insert(field.into(), format!("{u}: not an absolute URL"));
            return None;
        }
    };
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    };
    let problem = if parsed.host().is_none() || !matches!(parsed.scheme(), "http" | "https") {
        Some("an http(s) URL with a host")
    } else if parsed.scheme() == "http" && !loopback {
        Some("https, or http only on a loopback host")
    } else if parsed.fragment().is_some() || u.contains('#') {
        Some("no fragment")
    } else if !parsed.username().is_empty() || parsed.password().is_some() {
        Some("no user name or password in the URL")
    } else if u.len() > 2000 {
        Some("at most 2000 characters")
    } else {
        None
    };
    match problem {
        Some(why) => {
            problems.insert(field.into(), format!("{u}: {why}"));
            None
        }
        None => Some(u.to_string()),
    }
}

/// OpenID Connect Registration §2: `initiate_login_uri` MUST use the https scheme.
pub(super) fn https_url(field: &str, u: &str, problems: &mut Problems) -> Option<String> {
    if !u.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://")) {
        problems.insert(field.into(), format!("{u}: an https URL"));
        return None;
    }
    web_url(field, u, problems)
}

pub(super) fn ttl(field: &str, v: Option<i64>, min: i64, max: i64, problems: &mut Problems) -> Option<i64> {
    if let Some(n) = v.filter(|n| !(min..=max).contains(n)) {
        problems.insert(field.into(), format!("{n} is outside {min}–{max} seconds"));
    }
    v
}
