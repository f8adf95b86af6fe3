//! A short-lived in-memory copy of client registrations: the token, introspection and
//! authorization endpoints look a client up on every request, and a registration
//! changes rarely. Changes made by the CLI take effect within `TTL`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use crate::db::{self, clients::Client, Db, DbError};

/// Seconds a cached registration is trusted.
pub const TTL: i64 = 1;
/// Entries kept before the cache starts over; bounds memory whatever ids are sent.
const CAPACITY: usize = 4096;

/// A registration and when it was read.
type Entry = (Arc<Client>, i64);
/// Every registered browser origin, and when the set was read.
type Origins = Option<(Arc<HashSet<String>>, i64)>;

#[derive(Clone, Default)]
pub struct ClientCache {
    entries: Arc<RwLock<HashMap<String, Entry>>>,
    /// Every registered browser origin (CORS preflights), and when it was read.
    origins: Arc<RwLock<Origins>>,
    /// What the registry may fetch: metadata documents and `jwks_uri` key sets.
    remote: Arc<Remote>,
}

/// The outbound side of the registry (`--client-id-documents`,
/// `--fetch-private-addresses`).
#[derive(Default)]
struct Remote {
    /// Client ID metadata documents are resolved (draft-ietf-oauth-client-id-metadata-document).
    documents: bool,
    fetcher: super::fetch::Fetcher,
    jwks: super::client_keys::JwksCache,
    /// Registered clients' logos, fetched for the pages (`client_about.rs`).
    logos: super::client_about::LogoCache,
}

impl ClientCache {
    /// The registry of a server with `settings`' outbound switches.
    pub fn new(settings: &crate::config::Settings) -> Self {
        Self {
            remote: Arc::new(Remote {
                documents: settings.protocol.client_id_documents,
                fetcher: super::fetch::Fetcher::new(settings.protocol.fetch_private_addresses),
                jwks: Default::default(),
                logos: Default::default(),
            }),
            ..Self::default()
        }
    }

    /// The outbound HTTP client for metadata documents and `jwks_uri`.
    pub fn fetcher(&self) -> &super::fetch::Fetcher {
        &self.remote.fetcher
    }

    /// Registered clients' logos, as fetched.
    pub fn logo_cache(&self) -> &super::client_about::LogoCache {
        &self.remote.logos
    }

    /// Key sets fetched from clients' `jwks_uri`.
    pub fn jwks_cache(&self) -> &super::client_keys::JwksCache {
        &self.remote.jwks
    }

    /// The registration of `client_id`; unknown ids are not cached, so a new client
    /// is usable at once.
    pub async fn get(&self, db: &Db, client_id: &str, now: i64) -> Result<Option<Arc<Client>>, DbError> {
        if let Ok(map) = self.entries.read() {
            if let Some((client, at)) = map.get(client_id) {
                if now - at < TTL {
                    return Ok(Some(client.clone()));
                }
            }
        }
        let found = if self.remote.documents
            && super::metadata_document::names_document(client_id, self.remote.fetcher.allows_private())
        {
            let resolved = super::metadata_document::resolve(&self.remote.fetcher, db, client_id, now).await?;
            if resolved.stored_anew {
                self.forget(client_id);
            }
            resolved.client
        } else {
            let id = client_id.to_string();
            // A document's registration counts only while documents are resolved.
            db.read(move |c| db::clients::find(c, &id))
                .await?
                .filter(|c| c.origin != db::clients::ORIGIN_METADATA_DOCUMENT)
        };
        let Some(client) = found else {
            return Ok(None);
        };
        let client = Arc::new(client);
        if let Ok(mut map) = self.entries.write() {
            if map.len() >= CAPACITY {
                map.clear();
            }
            map.insert(client_id.to_string(), (client.clone(), now));
        }
        Ok(Some(client))
    }

    /// Whether any client registered `origin` (through a redirect URI or as a web
    /// origin); the set is read at most once per `TTL`.
    pub async fn origin_registered(&self, db: &Db, origin: &str, now: i64) -> Result<bool, DbError> {
        if let Ok(guard) = self.origins.read() {
            if let Some((set, at)) = guard.as_ref() {
                if now - at < TTL {
                    return Ok(set.contains(origin));
                }
            }
        }
        let clients = db.read(db::clients::list).await?;
        let set: HashSet<String> = clients.iter().flat_map(super::cors::client_origins).collect();
        let found = set.contains(origin);
        if let Ok(mut guard) = self.origins.write() {
            *guard = Some((Arc::new(set), now));
        }
        Ok(found)
    }

    /// Drops a registration after an administrator changed it, so the change (a
    /// rotated secret, a deletion) takes effect at once in this process.
    pub fn forget(&self, client_id: &str) {
        if let Ok(mut map) = self.entries.write() {
            map.remove(client_id);
        }
        if let Ok(mut origins) = self.origins.write() {
            *origins = None;
        }
    }
}
