//! Signing keys: generated and parsed once, held in memory, swapped whole on rotation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use josekit::jwk::alg::ed::EdCurve;
use josekit::jws::{EdDSA, JwsSigner, JwsVerifier, ES256, RS256};
use serde_json::{Map, Value};

use super::signed::Signed;
pub use crate::domain::Alg;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("key operation failed: {0}")]
    Jose(#[from] josekit::JoseError),
    #[error("stored key {kid} is unusable: {reason}")]
    Stored { kid: String, reason: String },
    #[error("no active signing key for {0}")]
    NoActiveKey(&'static str),
}

/// A key as stored: the private key as PKCS#8 PEM and its public JWK. `Debug`
/// leaves the private key out.
#[derive(Clone)]
pub struct SigningKeyRecord {
    pub kid: String,
    pub alg: Alg,
    pub private_pem: String,
    pub public_jwk: String,
    pub created_at: i64,
    /// When set, the key no longer signs; it stays in the JWKS until the tokens it
    /// signed have expired (`keep_retired` seconds after this).
    pub retired_at: Option<i64>,
}

impl std::fmt::Debug for SigningKeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKeyRecord")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("private_pem", &"<redacted>")
            .field("public_jwk", &self.public_jwk)
            .field("created_at", &self.created_at)
            .field("retired_at", &self.retired_at)
            .finish()
    }
}

impl SigningKeyRecord {
    /// Generates a new key pair for `alg` (RSA 2048, P-256 or Ed25519).
    pub fn generate(alg: Alg, kid: String, now: i64) -> Result<Self, KeyError> {
        let (pem, mut jwk) = match alg {
            Alg::Rs256 => {
                let kp = RS256.generate_key_pair(2048)?;
                (kp.to_pem_private_key(), kp.to_jwk_public_key())
            }
            Alg::Es256 => {
                let kp = ES256.generate_key_pair()?;
                (kp.to_pem_private_key(), kp.to_jwk_public_key())
            }
            Alg::EdDsa => {
                let kp = EdDSA.generate_key_pair(EdCurve::Ed25519)?;
                (kp.to_pem_private_key(), kp.to_jwk_public_key())
            }
        };
        jwk.set_key_id(&kid);
        jwk.set_key_use("sig");
        jwk.set_algorithm(alg.as_str());
        Ok(Self {
            kid,
            alg,
            private_pem: String::from_utf8_lossy(&pem).into_owned(),
            public_jwk: jwk.to_string(),
            created_at: now,
            retired_at: None,
        })
    }
}

struct ActiveKey {
    kid: String,
    /// When this key stops signing: set when a rotation has published its successor,
    /// which signs from then on.
    until: Option<i64>,
    signer: Box<dyn JwsSigner>,
}

/// Every key parsed once: signers for the keys of each algorithm that sign now or
/// next, verifiers for every published key, and the JWKS document already serialised.
pub struct KeySet {
    /// Per algorithm, the key signing now first, then (during a rotation) the one that
    /// takes over at its `until`.
    active: HashMap<Alg, Vec<ActiveKey>>,
    verifiers: HashMap<String, Box<dyn JwsVerifier>>,
    jwks: String,
    /// Tokens this set has verified, by the SHA-256 of their compact form: a resource
    /// server introspects the same access token on every call it serves, and its
    /// signature (and the parse) need not be checked again. Held with the set, so a
    /// rotation or a reload (a key withdrawn) drops them; bounded by `REMEMBERED`.
    verified: Mutex<HashMap<[u8; 32], Signed>>,
}

/// Verified tokens a key set keeps; when full it starts over (each entry is the
/// token's claims, a few hundred bytes).
const REMEMBERED: usize = 2048;

impl KeySet {
    /// Builds the set from stored keys. A key whose `retired_at` is still ahead signs
    /// until then and its successor (the unretired key) is published but waits: a
    /// rotation publishes before it signs. A retired key stays published (and
    /// verifiable) until `now - retired_at` exceeds `keep_retired`, so tokens it
    /// signed outlive it.
    pub fn from_records(records: &[SigningKeyRecord], now: i64, keep_retired: i64) -> Result<Self, KeyError> {
        let mut candidates: HashMap<Alg, Vec<(i64, ActiveKey)>> = HashMap::new();
        let mut verifiers: HashMap<String, Box<dyn JwsVerifier>> = HashMap::new();
        let mut published = Vec::new();
        for rec in records {
            if rec.retired_at.is_some_and(|t| now - t > keep_retired) {
                continue;
            }
            let stored = |reason: String| KeyError::Stored {
                kid: rec.kid.clone(),
                reason,
            };
            // The private key gives the verifier too, and the stored JWK is published
            // as written: josekit's `Jwk` checks its members with a regular expression,
            // a cost (about a megabyte resident) that key loading need not pay.
            let (_, der) = super::pem::decode(&rec.private_pem).map_err(stored)?;
            let jwk: Map<String, Value> = serde_json::from_str(&rec.public_jwk).map_err(|e| stored(e.to_string()))?;
            let public = match rec.alg {
                Alg::Rs256 => RS256.key_pair_from_der(&der)?.to_der_public_key(),
                Alg::Es256 => ES256.key_pair_from_der(&der)?.to_der_public_key(),
                Alg::EdDsa => EdDSA.key_pair_from_der(&der)?.to_der_public_key(),
            };
            let verifier: Box<dyn JwsVerifier> = match rec.alg {
                Alg::Rs256 => Box::new(RS256.verifier_from_der(&public)?),
                Alg::Es256 => Box::new(ES256.verifier_from_der(&public)?),
                Alg::EdDsa => Box::new(EdDSA.verifier_from_der(&public)?),
            };
            verifiers.insert(rec.kid.clone(), verifier);
            published.push(Value::Object(jwk));
            if rec.retired_at.is_some_and(|t| t <= now) {
                continue;
            }
            let signer: Box<dyn JwsSigner> = match rec.alg {
                Alg::Rs256 => Box::new(RS256.signer_from_der(&der)?),
                Alg::Es256 => Box::new(ES256.signer_from_der(&der)?),
                Alg::EdDsa => Box::new(EdDSA.signer_from_der(&der)?),
            };
            let key = ActiveKey {
                kid: rec.kid.clone(),
                until: rec.retired_at,
                signer,
            };
            candidates.entry(rec.alg).or_default().push((rec.created_at, key));
        }
        // The key that retires first signs first (an unretired key last); among
        // unretired keys only the newest ever signs.
        let active = candidates
            .into_iter()
            .map(|(alg, mut keys)| {
                keys.sort_by_key(|(created, k)| (k.until.unwrap_or(i64::MAX), std::cmp::Reverse(*created)));
                let mut keys: Vec<ActiveKey> = keys.into_iter().map(|(_, k)| k).collect();
                if let Some(first_open) = keys.iter().position(|k| k.until.is_none()) {
                    keys.truncate(first_open + 1);
                }
                (alg, keys)
            })
            .collect();
        let mut doc = Map::new();
        doc.insert("keys".into(), Value::Array(published));
        Ok(Self {
            active,
            verifiers,
            jwks: Value::Object(doc).to_string(),
            verified: Mutex::new(HashMap::new()),
        })
    }

    pub fn jwks_json(&self) -> &str {
        &self.jwks
    }

    /// The key of `alg` that signs at `now`.
    pub(crate) fn signer(&self, alg: Alg, now: i64) -> Result<(&str, &dyn JwsSigner), KeyError> {
        self.active
            .get(&alg)
            .and_then(|keys| keys.iter().find(|k| k.until.is_none_or(|t| now < t)))
            .map(|k| (k.kid.as_str(), k.signer.as_ref()))
            .ok_or(KeyError::NoActiveKey(alg.as_str()))
    }

    pub(crate) fn verifier(&self, kid: &str) -> Option<&dyn JwsVerifier> {
        self.verifiers.get(kid).map(|v| v.as_ref())
    }

    /// Whether a key with this `kid` is published in the set.
    pub fn knows(&self, kid: &str) -> bool {
        self.verifiers.contains_key(kid)
    }

    /// A token this set verified before, by its digest.
    pub(crate) fn remembered(&self, digest: &[u8; 32]) -> Option<Signed> {
        self.verified.lock().ok()?.get(digest).cloned()
    }

    /// Keeps a verified token for `remembered`.
    pub(crate) fn remember(&self, digest: [u8; 32], signed: &Signed) {
        if let Ok(mut verified) = self.verified.lock() {
            if verified.len() >= REMEMBERED {
                verified.clear();
            }
            verified.insert(digest, signed.clone());
        }
    }
}

/// The shared, swappable key set handed to handlers.
#[derive(Clone)]
pub struct KeyStore {
    current: Arc<RwLock<Arc<KeySet>>>,
    /// When a token with an unknown `kid` last made this node reload (Unix seconds).
    unknown_kid_reload: Arc<std::sync::atomic::AtomicI64>,
}

impl KeyStore {
    pub fn new(set: KeySet) -> Self {
        Self {
            current: Arc::new(RwLock::new(Arc::new(set))),
            unknown_kid_reload: Arc::new(std::sync::atomic::AtomicI64::new(i64::MIN)),
        }
    }

    /// Whether a reload for an unknown `kid` may run at `now`: at most one a second,
    /// so that tokens with made-up key ids cannot turn into a database read each.
    pub fn may_reload_for_unknown_kid(&self, now: i64) -> bool {
        use std::sync::atomic::Ordering;
        let last = self.unknown_kid_reload.load(Ordering::Relaxed);
        now > last
            && self
                .unknown_kid_reload
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// A snapshot: cheap to take, unaffected by a rotation that happens meanwhile.
    pub fn current(&self) -> Arc<KeySet> {
        match self.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn replace(&self, set: KeySet) {
        let mut guard = match self.current.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *guard = Arc::new(set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_unretired_key_signs_and_all_are_published() {
        let old = SigningKeyRecord::generate(Alg::Es256, "old".into(), 1).unwrap();
        let new = SigningKeyRecord::generate(Alg::Es256, "new".into(), 2).unwrap();
        let set = KeySet::from_records(&[old, new], 0, 0).unwrap();
        assert_eq!(set.signer(Alg::Es256, 0).unwrap().0, "new");
        assert!(set.verifier("old").is_some());
        let jwks: Value = serde_json::from_str(set.jwks_json()).unwrap();
        assert_eq!(jwks["keys"].as_array().unwrap().len(), 2);
        assert!(jwks["keys"][0].get("d").is_none(), "private part leaked");
    }

    #[test]
    fn a_retired_key_is_published_until_its_tokens_have_expired() {
        let mut old = SigningKeyRecord::generate(Alg::EdDsa, "old".into(), 1).unwrap();
        let new = SigningKeyRecord::generate(Alg::EdDsa, "new".into(), 2).unwrap();
        old.retired_at = Some(100);
        let records = [old, new];
        let during = KeySet::from_records(&records, 100 + 900, 900).unwrap();
        assert!(during.verifier("old").is_some());
        assert_eq!(during.signer(Alg::EdDsa, 100 + 900).unwrap().0, "new");
        let after = KeySet::from_records(&records, 100 + 901, 900).unwrap();
        assert!(after.verifier("old").is_none());
    }

    #[test]
    fn a_rotated_key_is_published_at_once_but_signs_only_when_its_predecessor_retires() {
        let mut old = SigningKeyRecord::generate(Alg::Es256, "old".into(), 1).unwrap();
        let new = SigningKeyRecord::generate(Alg::Es256, "new".into(), 50).unwrap();
        old.retired_at = Some(65);
        let set = KeySet::from_records(&[old, new], 50, 900).unwrap();
        assert!(set.knows("new") && set.knows("old"), "both published from the start");
        assert_eq!(set.signer(Alg::Es256, 50).unwrap().0, "old");
        assert_eq!(set.signer(Alg::Es256, 64).unwrap().0, "old");
        assert_eq!(
            set.signer(Alg::Es256, 65).unwrap().0,
            "new",
            "the same set switches on time"
        );
        assert_eq!(set.signer(Alg::Es256, 10_000).unwrap().0, "new");
    }
}
