//! The SMTP relay and sender `--smtp-url`, `--smtp-password-file` and `--smtp-from`
//! name: implicit TLS, STARTTLS required, or plain to a loopback host only.

use std::net::IpAddr;

use lettre::message::Mailbox;

use crate::domain::Secret;

/// How the connection to the relay is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// `smtps://`: TLS from the first byte (port 465).
    Implicit,
    /// `smtp://…?tls=starttls`: STARTTLS, and a server that does not offer it is refused.
    StartTls,
    /// `smtp://` to a loopback host: a relay on this machine, nothing on the wire.
    Plain,
}

/// A configured relay and sender.
#[derive(Clone)]
pub struct Smtp {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) security: Security,
    pub(crate) user: Option<String>,
    pub(crate) password: Option<Secret>,
    pub(crate) from: Mailbox,
}

impl std::fmt::Debug for Smtp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smtp")
            .field("relay", &self.label())
            .field("user", &self.user)
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl Smtp {
    /// Reads `--smtp-url`, with the password from `--smtp-password-file` when given
    /// (it wins over one in the URL) and the sender from `--smtp-from`.
    pub fn parse(url: &str, password_file_text: Option<&str>, from: Option<&str>) -> Result<Self, String> {
        let parsed = url::Url::parse(url.trim()).map_err(|e| format!("not a URL: {e}"))?;
        let mut starttls = false;
        for (k, v) in parsed.query_pairs() {
            match (k.as_ref(), v.as_ref()) {
                ("tls", "starttls") => starttls = true,
                ("tls", other) => return Err(format!("tls={other} is not known; the one value is tls=starttls")),
                (other, _) => return Err(format!("unknown parameter {other}; the one parameter is tls=starttls")),
            }
        }
        let security = match (parsed.scheme(), starttls) {
            ("smtps", false) => Security::Implicit,
            ("smtps", true) => return Err("smtps:// is TLS already; tls=starttls belongs to smtp://".into()),
            ("smtp", true) => Security::StartTls,
            ("smtp", false) => Security::Plain,
            (other, _) => return Err(format!("{other}:// is not SMTP; use smtps:// or smtp://")),
        };
        let host = match parsed.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            Some(url::Host::Ipv6(a)) => a.to_string(),
            None => return Err("the URL names no host".into()),
        };
        if security == Security::Plain && !is_loopback(&host) {
            return Err(format!(
                "plain SMTP is allowed only to a loopback host, not {host}: use smtps://{host}:465 or smtp://{host}:587?tls=starttls"
            ));
        }
        let port = parsed.port().unwrap_or(match security {
            Security::Implicit => 465,
            Security::StartTls => 587,
            Security::Plain => 25,
        });
        let decode = |s: &str| {
            percent_decode(s)
                .ok_or_else(|| "the user or password in the URL is not valid percent-encoded UTF-8".to_string())
        };
        let user = match parsed.username() {
            "" => None,
            u => Some(decode(u)?),
        };
        let password = match (password_file_text, parsed.password()) {
            (Some(text), _) => Some(text.trim_end_matches(['\r', '\n']).to_string()),
            (None, Some(p)) => Some(decode(p)?),
            (None, None) => None,
        };
        if password.is_some() && user.is_none() {
            return Err("a password needs a user: smtps://USER:PASSWORD@host".into());
        }
        let from = from
            .ok_or("mail needs a sender: set --smtp-from \"Name <address>\"")?
            .parse::<Mailbox>()
            .map_err(|e| format!("--smtp-from is not an address like \"Name <address>\": {e}"))?;
        Ok(Self {
            host,
            port,
            security,
            user,
            password: password.map(Secret::from_string),
            from,
        })
    }

    /// The relay as messages name it, without credentials.
    pub fn label(&self) -> String {
        let scheme = if self.security == Security::Implicit {
            "smtps"
        } else {
            "smtp"
        };
        let tls = if self.security == Security::StartTls {
            "?tls=starttls"
        } else {
            ""
        };
        format!("{scheme}://{}:{}{tls}", self.host, self.port)
    }

    pub fn security(&self) -> Security {
        self.security
    }

    pub fn from(&self) -> &Mailbox {
        &self.from
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|a| a.is_loopback())
}

fn percent_decode(s: &str) -> Option<String> {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FROM: Option<&str> = Some("Tessera <id@example.org>");

    #[test]
    fn each_scheme_has_its_protection_and_port() {
        let s = Smtp::parse("smtps://u:p%40ss@mail.example.org", None, FROM).unwrap();
        assert_eq!((s.security, s.port), (Security::Implicit, 465));
        assert_eq!(s.password.as_ref().unwrap().expose(), "p@ss");
        let s = Smtp::parse("smtp://u:p@mail.example.org:2587?tls=starttls", None, FROM).unwrap();
        assert_eq!((s.security, s.port), (Security::StartTls, 2587));
        let s = Smtp::parse("smtp://127.0.0.1", None, FROM).unwrap();
        assert_eq!((s.security, s.port), (Security::Plain, 25));
        assert!(Smtp::parse("smtp://[::1]:2525", None, FROM).is_ok());
        assert!(Smtp::parse("smtp://localhost:2525", None, FROM).is_ok());
        assert_eq!(s.label(), "smtp://127.0.0.1:25");
    }

    #[test]
    fn plain_smtp_to_another_host_is_refused() {
        let e = Smtp::parse("smtp://mail.example.org:25", None, FROM).unwrap_err();
        assert!(e.contains("only to a loopback host"), "{e}");
        assert!(Smtp::parse("smtp://10.0.0.1", None, FROM).is_err());
    }

    #[test]
    fn the_password_file_wins_and_never_shows() {
        let s = Smtp::parse("smtps://u:url-pass@mail.example.org", Some("file-pass\n"), FROM).unwrap();
        assert_eq!(s.password.as_ref().unwrap().expose(), "file-pass");
        let shown = format!("{s:?} {}", s.label());
        assert!(!shown.contains("pass"), "{shown}");
    }

    #[test]
    fn bad_urls_and_senders_say_why() {
        for (url, from, why) in [
            ("http://mail.example.org", FROM, "not SMTP"),
            ("smtp://mail.example.org?tls=yes", FROM, "tls=yes"),
            ("smtp://mail.example.org?port=1", FROM, "unknown parameter"),
            ("smtps://mail.example.org?tls=starttls", FROM, "TLS already"),
            ("smtps://:p@mail.example.org", FROM, "needs a user"),
            ("smtps://mail.example.org", None, "--smtp-from"),
            ("smtps://mail.example.org", Some("not an address"), "--smtp-from"),
        ] {
            let e = Smtp::parse(url, None, from).unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
        }
    }
}
