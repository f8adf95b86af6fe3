//! What a mail says, rendered into a plain-text and an HTML body from one description
//! (askama templates in `templates/mail/`): no remote images, no tracking, the
//! organisation's name.

use askama::Template;

use crate::i18n::Messages;

/// A mail before rendering: a greeting, paragraphs, at most one link (with its words)
/// and one code, and closing paragraphs.
#[derive(Debug, Clone, Default)]
pub struct Message {
    pub subject: String,
    pub greeting: String,
    pub paragraphs: Vec<String>,
    pub action: Option<(String, String)>,
    pub code: Option<String>,
    pub after: Vec<String>,
}

/// Both bodies of a message, ready to queue.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

#[derive(Template)]
#[template(path = "mail/message.txt")]
struct Text<'a> {
    t: &'a Messages,
    org: &'a str,
    greeting: &'a str,
    paragraphs: &'a [String],
    action: Option<(&'a str, &'a str)>,
    code: Option<&'a str>,
    after: &'a [String],
}

#[derive(Template)]
#[template(path = "mail/message.html")]
struct Html<'a> {
    t: &'a Messages,
    org: &'a str,
    subject: &'a str,
    greeting: &'a str,
    paragraphs: &'a [String],
    action: Option<(&'a str, &'a str)>,
    code: Option<&'a str>,
    after: &'a [String],
}

impl Message {
    pub fn new(subject: impl Into<String>, greeting: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            greeting: greeting.into(),
            ..Self::default()
        }
    }

    pub fn paragraph(mut self, p: impl Into<String>) -> Self {
        self.paragraphs.push(p.into());
        self
    }

    pub fn action(mut self, label: impl Into<String>, url: impl Into<String>) -> Self {
        self.action = Some((label.into(), url.into()));
        self
    }

    pub fn code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    pub fn after(mut self, p: impl Into<String>) -> Self {
        self.after.push(p.into());
        self
    }

    /// Both bodies in language `t` (the request's, taken before its write).
    pub fn render(&self, org: &str, t: &Messages) -> Rendered {
        let action = self.action.as_ref().map(|(l, u)| (l.as_str(), u.as_str()));
        let text = Text {
            t,
            org,
            greeting: &self.greeting,
            paragraphs: &self.paragraphs,
            action,
            code: self.code.as_deref(),
            after: &self.after,
        };
        let html = Html {
            t,
            org,
            subject: &self.subject,
            greeting: &self.greeting,
            paragraphs: &self.paragraphs,
            action,
            code: self.code.as_deref(),
            after: &self.after,
        };
        Rendered {
            subject: format!("{}: {}", org, self.subject),
            // The templates are compiled; rendering only fails when writing fails,
            // which a String never does.
            text: text.render().unwrap_or_default(),
            html: html.render().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_bodies_carry_the_link_and_code_and_html_is_escaped() {
        let m = Message::new("Reset your password", "Hello <ada>,")
            .paragraph("Someone asked to reset the password.")
            .action(
                "Choose a new password",
                "https://id.example.org/password/reset?token=abc&x=1",
            )
            .code("123456")
            .render("Example & Co", crate::i18n::Locale::En.messages());
        assert_eq!(m.subject, "Example & Co: Reset your password");
        assert!(m.text.contains("https://id.example.org/password/reset?token=abc&x=1"));
        assert!(m.text.contains("Your code: 123456"));
        assert!(m.text.contains("Hello <ada>,"));
        assert!(m.html.contains("Hello &#60;ada&#62;,") || m.html.contains("Hello &lt;ada&gt;,"));
        assert!(m.html.contains("Example &#38; Co") || m.html.contains("Example &amp; Co"));
        assert!(!m.html.contains("<img"), "no remote images");
        assert!(m.html.contains("123456"));
    }
}
