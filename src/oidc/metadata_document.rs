//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): a
//! `client_id` that is an https URL names the document its registration is read from.
//!
//! The client registry (`client_cache.rs`) calls `resolve` for such ids when
//! `--client-id-documents` is on. A document is fetched through `fetch.rs`, checked
//! (§4), and stored as a client of origin `metadata_document` until its HTTP
//! freshness runs out (§4.3), so a second authorization within that time costs no
//! fetch and every node shares the copy. These are third-party clients: consent is
//! always asked, and the consent page names the document's host.

use serde_json::json;

use super::fetch::Fetcher;
use super::registration;
use crate::audit::Event;
use crate::db::{self, clients::Client, Db, DbError};

/// Largest document accepted. A registration is a few hundred bytes of JSON; the
/// draft (§6.6) asks servers to bound it, and 5 KB bounds what anyone who can type a
/// `client_id` makes this server download and parse, while fitting a document with
/// an inline JWK Set of a few keys.
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// Bounds on how long a fetched document is used (from its Cache-Control max-age or
/// Expires): at least 5 minutes, so a document saying `no-cache` does not turn every
/// sign-in into a fetch; at most a day, so a changed document is seen.
const MIN_FRESH: i64 = 300;
const MAX_FRESH: i64 = 86_400;
/// Freshness when the answer says nothing about caching.
const DEFAULT_FRESH: i64 = 3600;
/// A stale copy still serves this long past its expiry while the host is down or
/// failing (a transport error, 5xx, 429): an outage of the client's web server does
/// not stop its users from signing in for an hour. A refusal, a 404 or an invalid
/// document ends it at once.
const GRACE: i64 = 3600;
/// Longest client_id accepted as a document URL (the token endpoint reads ids up to
/// 256 characters).
const MAX_ID: usize = 255;

/// Whether `client_id` has the form of a metadata document URL (§3): https (http only
/// in the fetch test mode), a host, a path other than `/`, no fragment, no user name
/// or password, no dot segments, and already in the normalised form of a URL (so the
/// id compares equal to the document's own `client_id` exactly).
pub fn names_document(client_id: &str, allow_http: bool) -> bool {
    if client_id.len() > MAX_ID {
        return false;
    }
    let Ok(u) = url::Url::parse(client_id) else {
        return false;
    };
    let scheme_ok = u.scheme() == "https" || (allow_http && u.scheme() == "http");
    scheme_ok
        && u.host().is_some()
        && u.path() != "/"
        && u.fragment().is_none()
        && u.username().is_empty()
        && u.password().is_none()
        && u.as_str() == client_id
        && !u.path().split('/').any(|s| s == "." || s == "..")
}

/// A document client's registration as `resolve` found it.
pub struct Resolved {
    /// `None`: an unknown client.
    pub client: Option<Client>,
    /// The document was fetched and stored anew: the registry drops what it holds of
    /// this client (and the registered origins).
    pub stored_anew: bool,
}

impl Resolved {
    /// Nothing was stored: the registry keeps what it holds.
    fn kept(client: Option<Client>) -> Self {
        Resolved {
            client,
            stored_anew: false,
        }
    }
}

/// The registration of a document client_id: the stored copy while it is fresh,
/// otherwise the document fetched again (through `fetcher`); no client when it cannot
/// be had. Only storage failures are errors.
pub async fn resolve(fetcher: &Fetcher, db: &Db, client_id: &str, now: i64) -> Result<Resolved, DbError> {
    let id = client_id.to_string();
    let stored = db
        .read(move |c| db::clients::find(c, &id))
        .await?
        .filter(|c| c.origin == db::clients::ORIGIN_METADATA_DOCUMENT);
    let expires = stored.as_ref().and_then(|c| c.metadata_expires_at).unwrap_or(0);
    if stored.is_some() && expires > now {
        return Ok(Resolved::kept(stored));
    }
    let fetched = match fetcher.get(client_id, MAX_DOCUMENT_BYTES).await {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(client_id = %client_id, error = %e, "cannot fetch a client metadata document");
            let grace = e.transient() && expires + GRACE > now;
            return Ok(Resolved::kept(stored.filter(|_| grace)));
        }
    };
    let checked = match client_of_document(client_id, &fetched.body, now) {
        Ok(c) => registration::check_logout_uris(fetcher, &c)
            .await
            .map(|_| c)
            .map_err(|e| e.description.to_string()),
        Err(why) => Err(why),
    };
    let mut client = match checked {
        Ok(c) => c,
        Err(why) => {
            tracing::warn!(client_id = %client_id, error = %why, "client metadata document refused");
            return Ok(Resolved::kept(None));
        }
    };
    let fresh = fetched
        .freshness(now)
        .unwrap_or(DEFAULT_FRESH)
        .clamp(MIN_FRESH, MAX_FRESH);
    client.metadata_expires_at = Some(now + fresh);
    if let Some(s) = &stored {
        client.created_at = s.created_at;
    }
    store(db, &client, stored.as_ref(), now).await?;
    Ok(Resolved {
        client: Some(client),
        stored_anew: true,
    })
}

/// Upserts the document's client: an unchanged document only moves its expiry.
async fn store(db: &Db, client: &Client, stored: Option<&Client>, now: i64) -> Result<(), DbError> {
    let unchanged = stored.is_some_and(|s| same(s, client));
    let (c2, exists) = (client.clone(), stored.is_some());
    let inserted = db
        .write(move |c| {
            if unchanged {
                db::registration::renew_document(c, &c2.client_id, c2.metadata_expires_at.unwrap_or(now))?;
                return Ok(true);
            }
            if exists {
                return db::clients::update(c, &c2, now);
            }
            match db::clients::insert(c, &c2) {
                // Another request (or node) stored it first: update below.
                Err(DbError::Conflict) => return Ok(false),
                other => other?,
            }
            Event::new("client.metadata_document_added")
                .actor("metadata_document")
                .target(format!("client:{}", c2.client_id))
                .detail(json!({"client_name": c2.name, "redirect_uris": c2.redirect_uris}))
                .write(c, now)?;
            Ok(true)
        })
        .await?;
    if !inserted {
        let c3 = client.clone();
        db.write(move |c| db::clients::update(c, &c3, now)).await?;
    }
    Ok(())
}

/// Whether a refetched document says what the stored copy says.
fn same(a: &Client, b: &Client) -> bool {
    super::client_spec::view(a) == super::client_spec::view(b)
        && a.jwks == b.jwks
        && a.registration_metadata == b.registration_metadata
}

/// Checks a fetched document (§4.1) and makes its client: a JSON object whose
/// `client_id` is the URL exactly, with redirect URIs, authenticating with `none` or
/// `private_key_jwt` (a document is public: it can hold no shared secret), using the
/// code and refresh grants only.
pub fn client_of_document(url: &str, body: &[u8], now: i64) -> Result<Client, String> {
    let m = registration::parse(body).map_err(|e| e.description.to_string())?;
    if m.client_id.as_deref() != Some(url) {
        return Err("the document's client_id is not the URL it was fetched from".into());
    }
    if m.client_secret.is_some() {
        return Err("a metadata document cannot carry a client_secret".into());
    }
    let mut m = m;
    let method = m.token_endpoint_auth_method.get_or_insert_with(|| "none".into());
    if !matches!(method.as_str(), "none" | "private_key_jwt") {
        return Err(format!(
            "token_endpoint_auth_method `{method}`: a document client uses none or private_key_jwt"
        ));
    }
    if let Some(g) = m
        .grant_types
        .iter()
        .flatten()
        .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
    {
        return Err(format!("grant type `{g}` is not available to a document client"));
    }
    if m.redirect_uris.is_empty() {
        return Err("the document has no redirect_uris".into());
    }
    let (mut client, _) = registration::client_of(&m, url, now).map_err(|e| e.description.to_string())?;
    registration::check_document_post_logout(url, &client)?;
    // The host is the one thing about the client that was checked: show it.
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    client.name = match m.client_name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => format!("{n} ({host})"),
        None => host,
    };
    client.origin = db::clients::ORIGIN_METADATA_DOCUMENT.into();
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oidc::fetch::FetchError;

    #[test]
    fn document_urls_follow_section_3() {
        assert!(names_document("https://app.example/client.json", false));
        assert!(names_document("https://app.example:8443/oauth/client", false));
        for id in [
            "https://app.example",
            "https://app.example/",
            "https://app.example/a#frag",
            "https://u:p@app.example/c",
            "https://app.example/a/../c",
            "https://app.example/a/./c",
            "https://APP.example/c",
            "http://app.example/c",
            "grafana",
        ] {
            assert!(!names_document(id, false), "{id}");
        }
        assert!(names_document("http://127.0.0.1:9000/c", true));
    }

    #[test]
    fn documents_are_checked() {
        let url = "https://app.example/c";
        let ok =
            br#"{"client_id":"https://app.example/c","client_name":"Agent","redirect_uris":["http://127.0.0.1:7/cb"]}"#;
        let c = client_of_document(url, ok, 0).unwrap();
        assert_eq!(c.name, "Agent (app.example)");
        assert!(c.is_public() && c.consent_required);
        let other = br#"{"client_id":"https://evil.example/c","redirect_uris":["http://127.0.0.1:7/cb"]}"#;
        assert!(client_of_document(url, other, 0).is_err());
        let secret = br#"{"client_id":"https://app.example/c","redirect_uris":["http://127.0.0.1:7/cb"],
            "token_endpoint_auth_method":"client_secret_basic"}"#;
        assert!(client_of_document(url, secret, 0).is_err());
        let no_uris = br#"{"client_id":"https://app.example/c"}"#;
        assert!(client_of_document(url, no_uris, 0).is_err());
        assert!(client_of_document(url, b"[]", 0).is_err());
    }

    #[test]
    fn only_host_failures_allow_the_stale_copy() {
        assert!(FetchError::Unreachable.transient());
        assert!(FetchError::Status(503).transient());
        assert!(!FetchError::Status(404).transient());
        assert!(!FetchError::TooLarge(5).transient());
    }
}
