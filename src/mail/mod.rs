//! Mail over SMTP: the relay named by `--smtp-url` (implicit TLS, STARTTLS required,
//! or plain to a loopback host only), the sender, and one send that reports the
//! server's answer.

pub mod message;
pub mod outbox;

use crate::config::smtp::{Security, Smtp};

use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// How long one SMTP conversation may take before it counts as failed.
const SMTP_TIMEOUT: Duration = Duration::from_secs(15);

/// Sending through the relay.
impl Smtp {
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
