//! A client's public keys: its registered `jwks`, or the JWK Set at its `jwks_uri`
//! (RFC 7591 §2), fetched with the outbound limits of `fetch.rs` and kept in memory
//! for a few minutes, so that a key rotated at the URI is seen soon and a request
//! does not cost a fetch.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::fetch::Fetcher;
use crate::db::clients::Client;
use crate::oidc::{Ctx, OAuthError};

/// Seconds a fetched JWK Set is used before it is fetched again.
const TTL: i64 = 300;
/// A set fetched this recently is not fetched again for an unknown key, so a stream
/// of assertions with made-up `kid`s cannot turn into a stream of fetches.
const REFETCH_AFTER: i64 = 30;
/// Sets kept before the cache starts over; bounds memory whatever URIs are registered.
const CAPACITY: usize = 1024;
/// A JWK Set larger than this is refused: a few RSA-4096 keys take 4 KB.
pub const MAX_JWKS_BYTES: usize = 64 * 1024;

/// Fetched JWK Sets by URI, with when they were fetched.
#[derive(Default)]
pub struct JwksCache {
    sets: RwLock<HashMap<String, (Arc<str>, i64)>>,
}

impl JwksCache {
    fn fresh(&self, uri: &str, now: i64, max_age: i64) -> Option<Arc<str>> {
        let sets = self.sets.read().ok()?;
        let (set, at) = sets.get(uri)?;
        (now - at < max_age).then(|| set.clone())
    }

    fn keep(&self, uri: &str, set: Arc<str>, now: i64) {
        if let Ok(mut sets) = self.sets.write() {
            if sets.len() >= CAPACITY {
                sets.clear();
            }
            sets.insert(uri.to_string(), (set, now));
        }
    }
}

/// The client's JWK Set as JSON text; `None` when it registered none, or its
/// `jwks_uri` gave no usable set (logged; the caller refuses what needed a key).
pub async fn jwks(cx: &Ctx<'_>, client: &Client) -> Result<Option<String>, OAuthError> {
    if let Some(j) = &client.jwks {
        return Ok(Some(j.clone()));
    }
    let Some(uri) = &client.jwks_uri else {
        return Ok(None);
    };
    Ok(remote(cx, uri, TTL).await)
}

/// The client's keys after a signature matched none of them: a `jwks_uri` set is
/// fetched again (at most every `REFETCH_AFTER` seconds), since the client may have
/// rotated its keys; a registered `jwks` is what it is.
pub async fn refetched(cx: &Ctx<'_>, client: &Client) -> Result<Option<String>, OAuthError> {
    match &client.jwks_uri {
        Some(uri) if client.jwks.is_none() => Ok(remote(cx, uri, REFETCH_AFTER).await),
        _ => Ok(client.jwks.clone()),
    }
}

async fn remote(cx: &Ctx<'_>, uri: &str, max_age: i64) -> Option<String> {
    let cache = cx.clients.jwks_cache();
    if let Some(set) = cache.fresh(uri, cx.now, max_age) {
        return Some(set.to_string());
    }
    match fetch_set(cx.clients.fetcher(), uri).await {
        Ok(set) => {
            cache.keep(uri, Arc::from(set.as_str()), cx.now);
            Some(set)
        }
        Err(why) => {
            tracing::warn!(jwks_uri = %uri, error = %why, "cannot use a client's jwks_uri");
            // A set fetched before still names the keys the client had.
            cache.fresh(uri, cx.now, TTL * 12).map(|s| s.to_string())
        }
    }
}

/// Fetches a JWK Set and checks its shape (`{"keys": [...]}`, RFC 7517 §5); the error
/// says why in words fit for a registration's `error_description`.
pub async fn fetch_set(fetcher: &Fetcher, uri: &str) -> Result<String, String> {
    let fetched = fetcher.get(uri, MAX_JWKS_BYTES).await.map_err(|e| e.to_string())?;
    let value: Value =
        serde_json::from_slice(&fetched.body).map_err(|_| "the jwks_uri does not hold JSON".to_string())?;
    if !value.get("keys").is_some_and(Value::is_array) {
        return Err("the jwks_uri does not hold a JWK Set ({\"keys\": [...]})".into());
    }
    Ok(value.to_string())
}
