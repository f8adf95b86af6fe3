//! OAuth scope (RFC 6749 §3.3): a set of space-delimited, case-sensitive tokens.

use super::{refuse, ParseError};

/// A scope as an ordered set without duplicates; order of first appearance is kept so
/// that responses echo what the client asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scope(Vec<String>);

impl Scope {
    pub fn parse(s: &str) -> Result<Self, ParseError> {
        let mut tokens: Vec<String> = Vec::new();
        for token in s.split(' ').filter(|t| !t.is_empty()) {
            // scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
            let valid = token
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b));
            if !valid {
                return refuse(format!("`{token}` is not a valid scope token"));
            }
            if !tokens.iter().any(|t| t == token) {
                tokens.push(token.to_string());
            }
        }
        Ok(Self(tokens))
    }

    pub fn contains(&self, token: &str) -> bool {
        self.0.iter().any(|t| t == token)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Keeps only the tokens `keep` accepts.
    pub fn filter(&self, keep: impl Fn(&str) -> bool) -> Self {
        Self(self.0.iter().filter(|t| keep(t)).cloned().collect())
    }

    pub fn is_subset_of(&self, other: &Scope) -> bool {
        self.0.iter().all(|t| other.contains(t))
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dedupes_and_prints() {
        let s = Scope::parse("openid  profile openid email").unwrap();
        assert_eq!(s.to_string(), "openid profile email");
        assert!(s.contains("profile"));
        assert!(!s.contains("Profile"), "scope is case-sensitive");
    }

    #[test]
    fn refuses_quotes_and_backslashes() {
        assert!(Scope::parse("a\"b").is_err());
        assert!(Scope::parse("a\\b").is_err());
    }

    #[test]
    fn subset() {
        let all = Scope::parse("openid profile").unwrap();
        assert!(Scope::parse("openid").unwrap().is_subset_of(&all));
        assert!(!Scope::parse("openid email").unwrap().is_subset_of(&all));
    }
}
