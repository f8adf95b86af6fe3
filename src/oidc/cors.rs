//! The browser origins a client may call the token endpoints from: those of its
//! http(s) redirect URIs and the web origins registered for it.

use crate::db::clients::Client;

/// The origin (`scheme://host[:port]`) of an http(s) URL; none for other schemes
/// (a native app's `com.example.app:/cb` is no browser origin).
pub fn origin_of(uri: &str) -> Option<String> {
    let u = url::Url::parse(uri).ok()?;
    matches!(u.scheme(), "http" | "https").then(|| u.origin().ascii_serialization())
}

pub fn client_origins(c: &Client) -> impl Iterator<Item = String> + '_ {
    c.redirect_uris
        .iter()
        .filter_map(|u| origin_of(u))
        .chain(c.web_origins.iter().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_come_from_web_redirect_uris_and_web_origins() {
        let mut c = Client::new(
            "spa",
            "SPA",
            None,
            vec!["http://localhost:5173/cb".into(), "com.example.app:/cb".into()],
        );
        c.web_origins = vec!["https://app.example.org".into()];
        let all: Vec<String> = client_origins(&c).collect();
        assert_eq!(all, ["http://localhost:5173", "https://app.example.org"]);
        assert_eq!(
            origin_of("https://a.example:8443/x?y"),
            Some("https://a.example:8443".into())
        );
    }
}
