//! Domain newtypes, each made by parsing: once built, a value is known to be valid.

mod address_like;
pub mod alg;
pub mod branding;
mod grant_type;
pub mod locale;
mod lookalike;
pub mod net;
mod redirect_uri;
mod scope;
pub mod secret;
mod sqlite;

pub use address_like::username_address_problem;
pub use alg::Alg;
pub use grant_type::GrantType;
pub use locale::Locale;
pub use lookalike::{nfkc, username_lookalike_problem, username_skeleton};
pub use net::{Cidr, ForwardedHeader};
pub use redirect_uri::RedirectUri;
pub use scope::Scope;
pub use secret::{MasterKey, Secret};
pub use sqlite::{SqliteOptions, Synchronous};

/// What is wrong with a form or a request body: field name → message, shown next to
/// the field on a page or returned as JSON by the admin API. One type for every form.
pub type Problems = std::collections::BTreeMap<String, String>;

/// Why a value was refused, in words fit to show the person who typed it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

fn refuse<T>(msg: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(msg.into()))
}

/// A client identifier as registered: 1–128 characters from a URL-safe set, so it can
/// appear unescaped in logs, paths and the `client_id:secret` Basic form (RFC 6749 §2.3.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientId(String);

impl ClientId {
    pub fn parse(s: &str) -> Result<Self, ParseError> {
        let ok =
            !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
        if !ok {
            return refuse("a client id is 1-128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'");
        }
        Ok(Self(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A login name chosen for a new account: in NFKC, 1–64 characters, no whitespace,
/// control, invisible or formatting characters, letters of one script only (see
/// `lookalike`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    /// The name in NFKC, or why it is refused; the value holds the normalised form,
    /// which is what must be stored.
    pub fn parse(s: &str) -> Result<Self, ParseError> {
        let s = nfkc(s);
        let ok = !s.is_empty() && s.chars().count() <= 64 && !s.chars().any(|c| c.is_whitespace() || c.is_control());
        if !ok {
            return refuse("a username is 1-64 characters without spaces");
        }
        if let Some(problem) = username_lookalike_problem(&s) {
            return refuse(problem);
        }
        Ok(Self(s))
    }

    /// `parse`, then the rule that keeps a name from passing for an address: an `@`
    /// only when the name is the account's own verified address (`verified_email`;
    /// `None` when there is none, or it is not verified yet).
    pub fn parse_new(s: &str, verified_email: Option<&str>) -> Result<Self, ParseError> {
        let name = Self::parse(s)?;
        match username_address_problem(name.as_str(), verified_email) {
            Some(problem) => Err(ParseError(problem)),
            None => Ok(name),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An email address, checked for shape only; ownership is proven elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    pub fn parse(s: &str) -> Result<Self, ParseError> {
        let s = s.trim();
        let ok = s.len() <= 254
            && !s.chars().any(|c| c.is_whitespace() || c.is_control())
            && s.split_once('@')
                .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !domain.contains('@'));
        if !ok {
            return refuse("not an email address");
        }
        Ok(Self(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A new password: 8 to 72 bytes (bcrypt reads no further than 72, and a longer
/// password silently truncated would be weaker than its owner believes).
#[derive(Clone)]
pub struct NewPassword(String);

impl NewPassword {
    pub fn parse(s: &str) -> Result<Self, ParseError> {
        if s.chars().count() < 8 {
            return refuse("a password has at least 8 characters");
        }
        if s.len() > 72 {
            return refuse("a password has at most 72 bytes");
        }
        Ok(Self(s.to_string()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// Passwords too well known to accept.
const COMMON_PASSWORDS: &[&str] = &[
    "password",
    "12345678",
    "123456789",
    "1234567890",
    "qwertyuiop",
    "administrator",
    "letmein123",
    "password1",
    "iloveyou",
];

/// What is wrong with a password a person chooses (sign-up, invitation, reset, the
/// setup page): a `NewPassword` (8 to 72 bytes), not one repeated pattern, not a
/// well-known password, not containing the username.
pub fn password_problem(password: &str, username: &str) -> Option<String> {
    if let Err(e) = NewPassword::parse(password) {
        return Some(e.0);
    }
    let lower = password.to_lowercase();
    let distinct = password.chars().collect::<std::collections::BTreeSet<_>>().len();
    if distinct < 5 || COMMON_PASSWORDS.contains(&lower.as_str()) {
        Some("this password is too easy to guess".into())
    } else if !username.is_empty() && lower.contains(&username.to_lowercase()) {
        Some("the password must not contain the username".into())
    } else {
        None
    }
}

impl std::fmt::Debug for NewPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NewPassword(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids() {
        assert!(ClientId::parse("grafana").is_ok());
        assert!(ClientId::parse("my-app_1.v2").is_ok());
        assert!(ClientId::parse("").is_err());
        assert!(ClientId::parse("a:b").is_err());
        assert!(ClientId::parse(&"x".repeat(129)).is_err());
    }

    #[test]
    fn usernames_and_emails() {
        assert!(Username::parse("alice").is_ok());
        assert!(Username::parse("al ice").is_err());
        assert!(Email::parse("a@example.com").is_ok());
        assert!(Email::parse("a@b@example.com").is_err());
        assert!(Email::parse("nobody").is_err());
    }

    #[test]
    fn passwords_are_redacted_and_bounded() {
        let p = NewPassword::parse("correct horse").unwrap();
        assert!(!format!("{p:?}").contains("horse"));
        assert!(NewPassword::parse("short").is_err());
        assert!(NewPassword::parse(&"x".repeat(73)).is_err());
    }
}
