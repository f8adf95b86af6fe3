//! Redirection endpoints (RFC 6749 §3.1.2): absolute, no fragment, compared exactly.

use url::Url;

use super::{refuse, ParseError};

/// A registered redirect URI. Matching is by exact string comparison (RFC 9700 §4.1.3),
/// so the text is kept as registered rather than normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectUri(String);

impl RedirectUri {
    pub fn parse(s: &str) -> Result<Self, ParseError> {
        let url = match Url::parse(s) {
            Ok(url) => url,
            Err(_) => return refuse(format!("`{s}` is not an absolute URI")),
        };
        if url.fragment().is_some() || s.contains('#') {
            return refuse("a redirect URI must not contain a fragment (RFC 6749 §3.1.2)");
        }
        if matches!(url.scheme(), "javascript" | "data" | "vbscript" | "file") {
            return refuse(format!(
                "the `{}` scheme is not allowed for redirect URIs",
                url.scheme()
            ));
        }
        if matches!(url.scheme(), "http" | "https") && url.host().is_none() {
            return refuse("an http(s) redirect URI needs a host");
        }
        if s.len() > 2000 {
            return refuse("a redirect URI is at most 2000 characters");
        }
        Ok(Self(s.to_string()))
    }

    /// Wraps a value already checked elsewhere (a URI stored at registration).
    pub fn unchecked(s: &str) -> Self {
        Self(s.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// This URI with `params` appended to its query, keeping any query it has.
    pub fn with_query(&self, params: &[(&str, &str)]) -> String {
        // Nothing to add: the URI as registered (no stray `?`).
        if params.is_empty() {
            return self.0.clone();
        }
        match Url::parse(&self.0) {
            Ok(mut url) => {
                {
                    let mut q = url.query_pairs_mut();
                    for (k, v) in params {
                        q.append_pair(k, v);
                    }
                }
                url.to_string()
            }
            Err(_) => self.0.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_parameters_leave_the_uri_as_registered() {
        let r = RedirectUri::parse("https://rp.example/bye").unwrap();
        assert_eq!(r.with_query(&[]), "https://rp.example/bye");
        assert_eq!(r.with_query(&[("state", "s")]), "https://rp.example/bye?state=s");
    }

    #[test]
    fn accepts_web_and_native_uris() {
        assert!(RedirectUri::parse("https://app.example.com/cb").is_ok());
        assert!(RedirectUri::parse("http://127.0.0.1:8080/cb").is_ok());
        assert!(RedirectUri::parse("com.example.app:/oauth").is_ok());
    }

    #[test]
    fn refuses_fragments_relative_and_script_uris() {
        assert!(RedirectUri::parse("https://app.example.com/cb#x").is_err());
        assert!(RedirectUri::parse("/cb").is_err());
        assert!(RedirectUri::parse("javascript:alert(1)").is_err());
    }

    #[test]
    fn query_is_appended_and_encoded() {
        let uri = RedirectUri::parse("https://app.example.com/cb?x=1").unwrap();
        let url = uri.with_query(&[("code", "a b"), ("state", "s&t")]);
        assert_eq!(url, "https://app.example.com/cb?x=1&code=a+b&state=s%26t");
    }
}
