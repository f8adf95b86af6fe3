//! Where requests go: the issuer itself, or several nodes sharing one database
//! (`STRESS_TARGETS`) taken in turn request by request, while tokens and redirects
//! keep speaking the issuer.

use std::borrow::Cow;

/// The issuer and the base URLs requests are sent to (the issuer alone by default).
#[derive(Debug)]
pub struct Targets {
    issuer: String,
    bases: Vec<String>,
}

/// A virtual user's place in the round: each request it sends goes to the node after
/// the one its previous request went to, so one flow crosses every node.
#[derive(Debug, Default, Clone, Copy)]
pub struct Hop(usize);

impl Hop {
    /// Virtual users start on different nodes, so the nodes share the load evenly.
    pub fn starting_at(vu: usize) -> Self {
        Self(vu)
    }
}

/// `url` without a trailing slash, if it is an `http(s)` base URL.
fn base_url(url: &str) -> Result<String, String> {
    let trimmed = url.trim().trim_end_matches('/');
    let parsed = url::Url::parse(trimmed).map_err(|e| format!("target `{trimmed}` is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!("target `{trimmed}` is not an http(s) base URL"));
    }
    Ok(trimmed.to_string())
}

impl Targets {
    /// `targets` is a comma-separated list of base URLs; `None` or an empty list sends
    /// everything to the issuer.
    pub fn new(issuer: &str, targets: Option<&str>) -> Result<Self, String> {
        let issuer = base_url(issuer)?;
        let mut bases = targets
            .unwrap_or_default()
            .split(',')
            .filter(|t| !t.trim().is_empty())
            .map(base_url)
            .collect::<Result<Vec<_>, _>>()?;
        if bases.is_empty() {
            bases.push(issuer.clone());
        }
        Ok(Self { issuer, bases })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn all(&self) -> &[String] {
        &self.bases
    }

    /// The base URL of `hop`'s next request. With one target it is always the same,
    /// and `hop` is left alone.
    pub fn base(&self, hop: &mut Hop) -> &str {
        match self.bases.as_slice() {
            [only] => only,
            many => {
                let base = &many[hop.0 % many.len()];
                hop.0 = hop.0.wrapping_add(1);
                base
            }
        }
    }

    /// Whether a redirect to `location` stays on the issuer (its URL, or a path).
    pub fn on_issuer(&self, location: &str) -> bool {
        let absolute = location
            .strip_prefix(self.issuer.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?', '#']));
        absolute || (location.starts_with('/') && !location.starts_with("//"))
    }

    /// Where `hop`'s next request to the issuer's `path` (`/token`) goes.
    pub fn url(&self, hop: &mut Hop, path: &str) -> String {
        format!("{}{path}", self.base(hop))
    }

    /// Where a browser sent to `location` (an issuer URL, as redirects and relying
    /// parties give it, or a path on the issuer) lands: the next target, the rest of
    /// the URL unchanged. Other URLs, and every URL when the only target is the issuer
    /// itself, are returned as they are, without a copy.
    pub fn follow<'a>(&self, hop: &mut Hop, location: &'a str) -> Cow<'a, str> {
        let on_issuer = location
            .strip_prefix(self.issuer.as_str())
            .filter(|rest| rest.is_empty() || rest.starts_with(['/', '?', '#']));
        let rest = match on_issuer {
            Some(_) if self.bases.len() == 1 && self.bases[0] == self.issuer => return Cow::Borrowed(location),
            Some(rest) => rest,
            None if location.starts_with('/') && !location.starts_with("//") => location,
            None => return Cow::Borrowed(location),
        };
        Cow::Owned(format!("{}{rest}", self.base(hop)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_targets_everything_goes_to_the_issuer_uncopied() {
        let t = Targets::new("http://127.0.0.1:9100/", None).unwrap();
        assert_eq!(t.all(), ["http://127.0.0.1:9100"]);
        let mut hop = Hop::starting_at(3);
        assert_eq!(t.url(&mut hop, "/token"), "http://127.0.0.1:9100/token");
        let location = "http://127.0.0.1:9100/authorize?client_id=x";
        assert!(matches!(t.follow(&mut hop, location), Cow::Borrowed(l) if l == location));
        assert_eq!(t.follow(&mut hop, "/login"), "http://127.0.0.1:9100/login");
    }

    #[test]
    fn several_targets_take_turns_per_request_and_redirects_follow_the_turn() {
        let t = Targets::new(
            "http://127.0.0.1:9100",
            Some("http://127.0.0.1:9100, http://127.0.0.1:9101/"),
        )
        .unwrap();
        let mut hop = Hop::starting_at(1);
        assert_eq!(t.url(&mut hop, "/authorize"), "http://127.0.0.1:9101/authorize");
        assert_eq!(t.url(&mut hop, "/login"), "http://127.0.0.1:9100/login");
        assert_eq!(
            t.follow(&mut hop, "http://127.0.0.1:9100/authorize?a=1"),
            "http://127.0.0.1:9101/authorize?a=1"
        );
        assert_eq!(t.follow(&mut hop, "/consent"), "http://127.0.0.1:9100/consent");
        let client = "http://127.0.0.1:9999/callback?code=c";
        assert_eq!(
            t.follow(&mut hop, client),
            client,
            "the client's URL is not the issuer's"
        );
        assert_eq!(
            t.follow(&mut hop, "http://127.0.0.1:91000/x"),
            "http://127.0.0.1:91000/x",
            "a longer port is another origin"
        );
    }

    #[test]
    fn one_target_beside_the_issuer_gets_every_request() {
        let t = Targets::new("https://id.example", Some("http://127.0.0.1:9100")).unwrap();
        let mut hop = Hop::default();
        assert_eq!(
            t.follow(&mut hop, "https://id.example/authorize?x=1"),
            "http://127.0.0.1:9100/authorize?x=1"
        );
        assert_eq!(t.issuer(), "https://id.example");
    }

    #[test]
    fn redirects_on_the_issuer_are_told_from_the_clients() {
        let t = Targets::new("http://127.0.0.1:9200", None).unwrap();
        assert!(t.on_issuer("/interaction/abc"));
        assert!(t.on_issuer("http://127.0.0.1:9200/authorize/abc"));
        assert!(!t.on_issuer("http://127.0.0.1:9999/callback?code=c"));
        assert!(!t.on_issuer("http://127.0.0.1:92000/x"));
        assert!(!t.on_issuer("//evil.example/x"));
    }

    #[test]
    fn targets_must_be_base_urls() {
        assert!(Targets::new("http://a", Some("127.0.0.1:9100")).is_err());
        assert!(Targets::new("http://a", Some("http://b/?x=1")).is_err());
        assert!(Targets::new("http://a", Some(" , ")).is_ok_and(|t| t.all() == ["http://a"]));
    }
}
