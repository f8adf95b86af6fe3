//! The URLs a client that registered itself may name beyond its redirect URIs: where
//! the server sends logout tokens, what the browser loads on sign-out, and where
//! the user is sent back after logout.
//!
//! An administrator's client may name any of them. A registration or a metadata
//! document is written by whoever sent it, so its back-channel URI would be a
//! request the server makes for them (server-side request forgery, RFC 7591 §5), its
//! front-channel URI a page the user's browser loads, and its post-logout URIs a way
//! to make this server redirect anywhere.

use super::metadata::{metadata_error, stays_on_device};
use crate::db::clients::Client;
use crate::oidc::fetch::{FetchError, Fetcher};
use crate::oidc::OAuthError;

/// Back-Channel Logout 1.0 §2.2 and Front-Channel Logout 1.0 §2 URIs must pass the
/// outbound fetch policy now: https, a host whose every address is public (unless
/// `--fetch-private-addresses`). The front-channel URI is loaded by the browser, not
/// by the server, but an intranet page framed on the sign-out page is the same harm.
/// A name that does not resolve at all is accepted: resolving may fail for a while,
/// and every delivery checks the addresses again.
pub async fn check_logout_uris(fetcher: &Fetcher, client: &Client) -> Result<(), OAuthError> {
    for (field, uri) in [
        ("backchannel_logout_uri", &client.backchannel_logout_uri),
        ("frontchannel_logout_uri", &client.frontchannel_logout_uri),
    ] {
        let Some(uri) = uri else { continue };
        match fetcher.check_target(uri).await {
            Ok(_) | Err(FetchError::Unreachable) => {}
            Err(why) => {
                return Err(metadata_error(format!(
                    "{field}: {why}; this server sends to https URLs on public addresses only \
                     (an administrator can register a client with an internal URL)"
                )))
            }
        }
    }
    Ok(())
}

/// Where an open registration may send the user after logout: as its redirect URIs,
/// back to the user's machine only (RFC 8252 §7.1, §7.3).
pub fn check_open_post_logout(client: &Client) -> Result<(), OAuthError> {
    match client.post_logout_redirect_uris.iter().find(|u| !stays_on_device(u)) {
        None => Ok(()),
        Some(u) => Err(metadata_error(format!(
            "post_logout_redirect_uris: `{u}` is not allowed without an initial access token: \
             only loopback (http://127.0.0.1:PORT/…, http://[::1]:PORT/…, http://localhost:PORT/…) \
             or a private-use scheme (com.example.app:/…), as for redirect_uris"
        ))),
    }
}

/// Where a metadata-document client may send the user after logout: the origin of
/// its document URL (the one thing about it that was checked), or the user's machine.
pub fn check_document_post_logout(document_url: &str, client: &Client) -> Result<(), String> {
    let origin = url::Url::parse(document_url).map(|u| u.origin()).ok();
    let same_origin = |u: &str| url::Url::parse(u).is_ok_and(|p| Some(p.origin()) == origin);
    match client
        .post_logout_redirect_uris
        .iter()
        .find(|u| !stays_on_device(u) && !same_origin(u))
    {
        None => Ok(()),
        Some(u) => Err(format!(
            "post_logout_redirect_uris: `{u}` is neither on the document's origin nor loopback"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_post_logout(uris: &[&str]) -> Client {
        let mut c = Client::new("c", "c", None, vec![]);
        c.post_logout_redirect_uris = uris.iter().map(|u| u.to_string()).collect();
        c
    }

    #[test]
    fn open_registrations_return_only_to_the_device() {
        assert!(check_open_post_logout(&with_post_logout(&["http://127.0.0.1:9/out", "com.example.app:/out"])).is_ok());
        assert!(check_open_post_logout(&with_post_logout(&["https://evil.example/"])).is_err());
    }

    #[test]
    fn documents_return_to_their_origin_or_the_device() {
        let doc = "https://app.example/client.json";
        assert!(check_document_post_logout(doc, &with_post_logout(&["https://app.example/bye"])).is_ok());
        assert!(check_document_post_logout(doc, &with_post_logout(&["http://localhost:7/bye"])).is_ok());
        for bad in [
            "https://evil.example/",
            "https://app.example.evil.example/",
            "http://app.example/bye",
        ] {
            assert!(
                check_document_post_logout(doc, &with_post_logout(&[bad])).is_err(),
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn private_logout_uris_are_refused() {
        let strict = Fetcher::new(false);
        for uri in [
            "https://127.0.0.1/bc",
            "https://10.0.0.1/bc",
            "https://169.254.169.254/latest",
            "http://rp.example/bc",
            "https://localhost/bc",
        ] {
            let mut c = Client::new("c", "c", None, vec![]);
            c.backchannel_logout_uri = Some(uri.into());
            assert!(check_logout_uris(&strict, &c).await.is_err(), "{uri}");
            let mut c = Client::new("c", "c", None, vec![]);
            c.frontchannel_logout_uri = Some(uri.into());
            assert!(check_logout_uris(&strict, &c).await.is_err(), "{uri}");
        }
    }
}
