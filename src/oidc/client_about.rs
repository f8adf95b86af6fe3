//! What a registered client said about itself for people to see (OpenID Connect
//! Dynamic Client Registration 1.0 §2: `logo_uri`, `policy_uri`, `tos_uri`), as the
//! login and consent pages show it.
//!
//! The policy and terms are links the person follows. The logo is not hot-linked
//! from the client's host (the pages' CSP allows images from this origin only, and a
//! third-party image would tell that host who is signing in, and when): it is
//! fetched through the outbound fetch policy (`fetch.rs`), kept only when its bytes
//! are a raster image (PNG, JPEG, GIF, WebP: no SVG, which can carry script), held in
//! memory for a while, and served from this origin with the branding logo's sandbox.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::Ctx;
use crate::db::clients::{Client, ORIGIN_ADMIN};
use crate::error::Internal;

/// Largest logo accepted: a logo on a sign-in page needs no more.
const MAX_LOGO_BYTES: usize = 100 * 1024;
/// Seconds a fetched logo (or the failure to get one) is reused.
const LOGO_TTL: i64 = 3600;
/// Logos kept before the cache starts over; bounds memory whatever is registered.
const CAPACITY: usize = 256;

/// The links and logo a page shows for a client; all empty for an administrator's
/// client, whose pages are branded by the administrator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct About {
    /// A path on this server that serves the logo (`/branding/registered-logo?…`).
    pub logo_url: Option<String>,
    pub policy_uri: Option<String>,
    pub tos_uri: Option<String>,
}

/// A registered logo as served: its bytes and their image type.
pub type Logo = (Arc<[u8]>, &'static str);

/// Logos by URI, with when they were fetched; `None` remembers a failure.
#[derive(Default)]
pub struct LogoCache {
    logos: RwLock<HashMap<String, (Option<Logo>, i64)>>,
}

/// `field` of the client's registration metadata, when it is an https URL (plain
/// http too with `allow_http`, the fetch policy's test mode). The links are https at
/// registration; rows stored before that rule are held to it here.
fn https_field(client: &Client, field: &str, allow_http: bool) -> Option<String> {
    if client.origin == ORIGIN_ADMIN {
        return None;
    }
    let meta: Value = serde_json::from_str(client.registration_metadata.as_deref()?).ok()?;
    let uri = meta.get(field)?.as_str()?;
    let parsed = url::Url::parse(uri).ok()?;
    let scheme_ok = parsed.scheme() == "https" || (allow_http && parsed.scheme() == "http");
    (scheme_ok && parsed.host().is_some()).then(|| uri.to_string())
}

/// What the pages show for `client`; `fetch_http` when the fetch policy allows
/// plain http (test mode), so that a logo on a local test server is shown.
pub fn about(client: &Client, fetch_http: bool) -> About {
    let id = url::form_urlencoded::byte_serialize(client.client_id.as_bytes()).collect::<String>();
    About {
        logo_url: https_field(client, "logo_uri", fetch_http)
            .map(|_| format!("/branding/registered-logo?client_id={id}")),
        policy_uri: https_field(client, "policy_uri", false),
        tos_uri: https_field(client, "tos_uri", false),
    }
}

/// What the pages show for the client `client_id` (nothing for an unknown one).
pub async fn about_id(cx: &Ctx<'_>, client_id: &str) -> Result<About, Internal> {
    Ok(cx
        .clients
        .get(cx.db, client_id, cx.now)
        .await?
        .map(|c| about(&c, cx.clients.fetcher().allows_private()))
        .unwrap_or_default())
}

/// The image type of `bytes` by their signature; nothing else is served.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() > 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The registered logo of `client_id`, fetched through the fetch policy at most once
/// an hour per URI; `None` when it has none, or it cannot be had as an image.
pub async fn logo(cx: &Ctx<'_>, client_id: &str) -> Result<Option<Logo>, Internal> {
    let Some(client) = cx.clients.get(cx.db, client_id, cx.now).await? else {
        return Ok(None);
    };
    let Some(uri) = https_field(&client, "logo_uri", cx.clients.fetcher().allows_private()) else {
        return Ok(None);
    };
    let cache = cx.clients.logo_cache();
    if let Some(kept) = cache.fresh(&uri, cx.now) {
        return Ok(kept);
    }
    let fetched = match cx
        .clients
        .fetcher()
        .get_as(&uri, MAX_LOGO_BYTES, "image/png, image/jpeg, image/gif, image/webp")
        .await
    {
        Ok(f) => image_type(&f.body).map(|kind| (Arc::from(f.body), kind)),
        Err(e) => {
            tracing::warn!(client_id = %client_id, error = %e, "cannot fetch a registered logo");
            None
        }
    };
    cache.keep(uri, fetched.clone(), cx.now);
    Ok(fetched)
}

impl LogoCache {
    /// The logo (or failure) kept for `uri`, while it is fresh.
    fn fresh(&self, uri: &str, now: i64) -> Option<Option<Logo>> {
        let logos = self.logos.read().ok()?;
        let (logo, at) = logos.get(uri)?;
        (now >= *at && now - at < LOGO_TTL).then(|| logo.clone())
    }

    fn keep(&self, uri: String, logo: Option<Logo>, now: i64) {
        if let Ok(mut logos) = self.logos.write() {
            if logos.len() >= CAPACITY {
                logos.clear();
            }
            logos.insert(uri, (logo, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_raster_images_are_served() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_type(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"<svg xmlns='http://www.w3.org/2000/svg'/>"), None);
        assert_eq!(image_type(b"<html>"), None);
    }

    #[test]
    fn only_registered_clients_show_https_links() {
        let mut c = Client::new("a b", "A", None, vec![]);
        c.registration_metadata = Some(
            r#"{"logo_uri":"https://a.example/l.png","policy_uri":"https://a.example/p","tos_uri":"http://a.example/t"}"#
                .into(),
        );
        assert_eq!(
            about(&c, false),
            About::default(),
            "an administrator's client shows none"
        );
        c.origin = crate::db::clients::ORIGIN_REGISTRATION.into();
        let shown = about(&c, false);
        assert_eq!(
            shown.logo_url.as_deref(),
            Some("/branding/registered-logo?client_id=a+b")
        );
        assert_eq!(shown.policy_uri.as_deref(), Some("https://a.example/p"));
        assert_eq!(shown.tos_uri, None, "plain http is not linked");
    }
}
