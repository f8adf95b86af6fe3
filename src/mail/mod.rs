//! Mail over SMTP: the relay named by `--smtp-url` (implicit TLS, STARTTLS required,
//! or plain to a loopback host only), the sender, and one send that reports the
//! server's answer.

pub mod message;
pub mod outbox;

use std::net::IpAddr;
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::crypto::Secret;

/// How long one SMTP conversation may take before it counts as failed.
const SMTP_TIMEOUT: Duration = Duration::from_secs(15);

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
    host: String,
    port: u16,
    security: Security,
    user: Option<String>,
    password: Option<Secret>,
    from: Mailbox,
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

    fn transport(&self) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
        let tls = || TlsParameters::new(self.host.clone()).map_err(|e| format!("TLS set-up: {e}"));
        let tls = match self.security {
            Security::Implicit => Tls::Wrapper(tls()?),
            Security::StartTls => Tls::Required(tls()?),
            Security::Plain => Tls::None,
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(self.host.as_str())
            .port(self.port)
            .tls(tls)
            .timeout(Some(SMTP_TIMEOUT));
        if let Some(user) = &self.user {
            let password = self
                .password
                .as_ref()
                .map(|p| p.expose().to_string())
                .unwrap_or_default();
            builder = builder.credentials(Credentials::new(user.clone(), password));
        }
        Ok(builder.build())
    }

    /// Sends one plain-text message and returns the server's answer to it ("250 …").
    pub async fn send(&self, to: &Mailbox, subject: &str, text: String) -> Result<String, String> {
        let message = Message::builder()
            .from(self.from.clone())
            .to(to.clone())
            .subject(subject)
            .header(ContentType::TEXT_PLAIN)
            .body(text)
            .map_err(|e| format!("cannot build the message: {e}"))?;
        self.deliver(message).await.map_err(|f| f.answer)
    }

    /// Sends a message with a plain-text and an HTML body (multipart/alternative).
    pub async fn send_both(&self, to: &str, subject: &str, text: &str, html: &str) -> Result<String, Failure> {
        let to: Mailbox = to.parse().map_err(|e| Failure {
            answer: format!("not an address: {e}"),
            permanent: true,
        })?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject)
            .multipart(MultiPart::alternative_plain_html(text.to_string(), html.to_string()))
            .map_err(|e| Failure {
                answer: format!("cannot build the message: {e}"),
                permanent: true,
            })?;
        self.deliver(message).await
    }

    async fn deliver(&self, message: Message) -> Result<String, Failure> {
        let transport = self.transport().map_err(|answer| Failure {
            answer,
            permanent: false,
        })?;
        let response = transport.send(message).await.map_err(|e| Failure {
            answer: format!("{} refused or failed: {}", self.label(), describe(&e)),
            // A 5xx reply (RFC 5321 §4.2.1) will not change on a retry.
            permanent: e.is_permanent(),
        })?;
        let words: Vec<&str> = response.message().collect();
        Ok(format!("{} {}", response.code(), words.join(" "))
            .trim_end()
            .to_string())
    }
}

/// A send that failed: the server's answer (or what went wrong on the way), and
/// whether retrying can help.
#[derive(Debug, Clone)]
pub struct Failure {
    pub answer: String,
    pub permanent: bool,
}

/// lettre's error and its causes on one line (the cause says which step failed).
fn describe(e: &lettre::transport::smtp::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        // lettre's error often repeats its cause's words; say them once.
        let cause = s.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
        source = s.source();
    }
    text
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
