//! WebFinger issuer discovery (OpenID Connect Discovery 1.0 §2, RFC 7033).
//!
//! A relying party that knows only a person's address (`acct:alice@example.org`, or
//! an email typed into Tailscale's custom OIDC set-up) asks who issues identities for
//! it. The answer names this issuer and nothing else.
//!
//! Which `acct:` resources get that answer: every well-formed one, whatever its host
//! and whether or not an account has that address. Per-account answers would tell a
//! stranger which addresses have accounts (the issue forbids it); answering only for
//! the issuer's own host would break the common case where addresses are at the
//! organisation's domain (`@example.org`) and the provider at another host
//! (`id.example.org`) that the domain's `/.well-known/webfinger` is routed to; and
//! answering per email domain in use would still reveal which domains those are. The
//! link says only "ask this issuer", which the issuer says of itself in discovery
//! already, so answering for every address gives nothing away.

use serde_json::{json, Value};

/// The link relation of an OpenID Connect issuer (Discovery 1.0 §2).
pub const ISSUER_REL: &str = "http://openid.net/specs/connect/1.0/issuer";

/// Why no answer is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// RFC 7033 §4.2: the resource parameter is missing or malformed (400).
    BadRequest(&'static str),
    /// RFC 7033 §4.2: a well-formed resource this server has no information about (404).
    NotFound,
}

/// The JRD (RFC 7033 §4.4) for `resource`, with only the links whose relation is in
/// `rels` when any is given (§4.3; an unknown one leaves `links` empty).
pub fn answer(issuer: &str, resource: Option<&str>, rels: &[&str]) -> Result<Value, Refusal> {
    let resource = resource
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or(Refusal::BadRequest("the resource parameter is required"))?;
    if resource.len() > 512 {
        return Err(Refusal::BadRequest("the resource is too long"));
    }
    if let Some(account) = resource.strip_prefix("acct:") {
        if !well_formed_account(account) {
            return Err(Refusal::BadRequest("an acct: resource is acct:user@host (RFC 7565)"));
        }
    } else {
        let url = url::Url::parse(resource).map_err(|_| Refusal::BadRequest("the resource is not a URI"))?;
        if !is_issuer(issuer, &url) {
            return Err(Refusal::NotFound);
        }
    }
    let links: Vec<Value> = [(ISSUER_REL, issuer)]
        .into_iter()
        .filter(|(rel, _)| rels.is_empty() || rels.contains(rel))
        .map(|(rel, href)| json!({"rel": rel, "href": href}))
        .collect();
    Ok(json!({"subject": resource, "links": links}))
}

/// RFC 7565 §7: `acct:` userpart `@` host, both non-empty, host a plausible domain
/// name or address (no path, port, query or spaces).
fn well_formed_account(account: &str) -> bool {
    let Some((user, host)) = account.rsplit_once('@') else {
        return false;
    };
    !user.is_empty()
        && !host.is_empty()
        && !user.chars().any(|c| c.is_whitespace() || c.is_control())
        && url::Host::parse(host).is_ok()
        && !host.contains(['/', '?', '#', ':', '@'])
}

/// The issuer URL itself (Discovery 1.0 §2.1 also finds the issuer from a URL), with
/// or without a trailing slash; any other URL is not ours to describe.
fn is_issuer(issuer: &str, url: &url::Url) -> bool {
    let given = url.as_str().trim_end_matches('/');
    url::Url::parse(issuer).is_ok_and(|i| i.as_str().trim_end_matches('/') == given)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISS: &str = "https://id.example.org";

    #[test]
    fn every_well_formed_account_gets_the_same_answer_shape() {
        let a = answer(ISS, Some("acct:alice@example.org"), &[ISSUER_REL]).unwrap();
        let b = answer(ISS, Some("acct:nobody@other.example"), &[ISSUER_REL]).unwrap();
        assert_eq!(a["links"], b["links"]);
        assert_eq!(a["subject"], "acct:alice@example.org");
        assert_eq!(a["links"][0]["href"], ISS);
    }

    #[test]
    fn malformed_and_foreign_resources_are_refused() {
        assert!(matches!(answer(ISS, None, &[]), Err(Refusal::BadRequest(_))));
        assert!(matches!(
            answer(ISS, Some("acct:alice"), &[]),
            Err(Refusal::BadRequest(_))
        ));
        assert!(matches!(
            answer(ISS, Some("acct:@x.org"), &[]),
            Err(Refusal::BadRequest(_))
        ));
        assert!(matches!(
            answer(ISS, Some("acct:a@x.org/p"), &[]),
            Err(Refusal::BadRequest(_))
        ));
        assert!(matches!(
            answer(ISS, Some("not a uri"), &[]),
            Err(Refusal::BadRequest(_))
        ));
        assert_eq!(
            answer(ISS, Some("https://elsewhere.example"), &[]),
            Err(Refusal::NotFound)
        );
        assert!(answer(ISS, Some("https://id.example.org/"), &[]).is_ok());
    }

    #[test]
    fn an_unknown_rel_leaves_links_empty() {
        let v = answer(ISS, Some("acct:a@b.example"), &["http://webfinger.net/rel/avatar"]).unwrap();
        assert_eq!(v["links"], json!([]));
    }
}
