//! Front-Channel Logout 1.0: the iframes the signed-out page loads, one per client
//! of the ended session that registered a `frontchannel_logout_uri`.

use crate::db;
use crate::error::Internal;
use crate::oidc::Ctx;

/// One hidden iframe of the signed-out page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The client's URI, with `iss` and `sid` when it asked for them (§2).
    pub src: String,
    /// `scheme://host[:port]` of `src`, for the page's `frame-src`.
    pub origin: String,
}

/// The frames for session `sid`. Read before the session ends (as back-channel
/// logout reads its audience): the grants that name the session are what tie a client
/// to it, and they are read while the session is certainly still whole.
pub async fn frames(cx: &Ctx<'_>, sid: &str) -> Result<Vec<Frame>, Internal> {
    let sid_owned = sid.to_string();
    let targets = cx
        .db
        .read(move |c| db::logout::frontchannel_of_session(c, &sid_owned))
        .await?;
    Ok(targets
        .iter()
        .filter_map(|(uri, wants_sid)| frame(uri, wants_sid.then_some((cx.issuer, sid))))
        .collect())
}

/// §2: "the OP renders `<iframe src="frontchannel_logout_uri">`", adding `iss` and
/// `sid` as query parameters when the client registered
/// `frontchannel_logout_session_required`, after any query the URI already has (the
/// URL serializer picks `?` or `&`). A stored URI that no longer parses as http(s)
/// gets no frame rather than a broken one.
pub fn frame(uri: &str, session: Option<(&str, &str)>) -> Option<Frame> {
    let mut url = url::Url::parse(uri).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    if let Some((iss, sid)) = session {
        url.query_pairs_mut().append_pair("iss", iss).append_pair("sid", sid);
    }
    Some(Frame {
        origin: url.origin().ascii_serialization(),
        src: url.to_string(),
    })
}

/// The distinct origins of `frames`, in order: the `frame-src` of the page.
pub fn origins(frames: &[Frame]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in frames {
        if !out.contains(&f.origin) {
            out.push(f.origin.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iss_and_sid_follow_an_existing_query_with_the_right_separator() {
        let f = frame("https://rp.example/logout?x=1", Some(("https://id.example", "s 1"))).unwrap();
        assert_eq!(
            f.src,
            "https://rp.example/logout?x=1&iss=https%3A%2F%2Fid.example&sid=s+1"
        );
        let f = frame("https://rp.example:8443/logout", Some(("https://id.example", "abc"))).unwrap();
        assert_eq!(
            f.src,
            "https://rp.example:8443/logout?iss=https%3A%2F%2Fid.example&sid=abc"
        );
        assert_eq!(f.origin, "https://rp.example:8443");
    }

    #[test]
    fn without_session_required_the_uri_is_loaded_as_registered() {
        let f = frame("https://rp.example/logout", None).unwrap();
        assert_eq!(f.src, "https://rp.example/logout");
        assert!(frame("javascript:alert(1)", None).is_none());
    }

    #[test]
    fn origins_are_listed_once() {
        let a = frame("https://a.example/x", None).unwrap();
        let b = frame("https://a.example/y", None).unwrap();
        let c = frame("http://127.0.0.1:9/z", None).unwrap();
        assert_eq!(origins(&[a, b, c]), vec!["https://a.example", "http://127.0.0.1:9"]);
    }
}
