//! Random bearer values (256 bits, base64url) and the SHA-256 digests stored in their place.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::domain::Secret;

/// Fresh secrets, and the digest stored in their place.
impl Secret {
    /// 256 bits from the operating system's CSPRNG, base64url without padding.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        Self::from_string(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// 512 bits: a client_secret_jwt secret is the HMAC key itself, and HS512 needs a
    /// key of at least 64 bytes (RFC 7518 §3.2).
    pub fn generate_hmac_key() -> Self {
        let mut bytes = [0u8; 64];
        OsRng.fill_bytes(&mut bytes);
        Self::from_string(URL_SAFE_NO_PAD.encode(bytes))
    }

    pub fn hash(&self) -> TokenHash {
        TokenHash::of(self.expose())
    }
}

/// SHA-256 of a bearer value: what the database keeps instead of the value.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct TokenHash(pub [u8; 32]);

impl TokenHash {
    pub fn of(value: &str) -> Self {
        Self(sha256(value.as_bytes()))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

pub fn sha256_b64(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(sha256(data))
}

/// The key behind pseudonyms in logs: names typed at sign-in that match no account
/// are recorded as `unknown:` + a keyed digest, so repeated attempts with one name
/// still line up without the name (perhaps a password) being written anywhere.
#[derive(Clone)]
pub struct LogKey([u8; 32]);

impl LogKey {
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }

    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// `unknown:` and the first 12 bytes of HMAC-SHA-256(key, lower-cased name).
    pub fn pseudonym(&self, name: &str) -> String {
        use hmac::{Hmac, Mac};
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.0) else {
            return "unknown".into();
        };
        mac.update(name.to_lowercase().as_bytes());
        let digest = mac.finalize().into_bytes();
        format!("unknown:{}", URL_SAFE_NO_PAD.encode(&digest[..12]))
    }
}

impl std::fmt::Debug for LogKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogKey(<redacted>)")
    }
}

/// A random identifier (not a secret): 128 bits, base64url.
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudonyms_are_keyed_stable_and_hide_the_name() {
        let (a, b) = (LogKey::generate(), LogKey::generate());
        let p = a.pseudonym("Hunter2-Password");
        assert!(p.starts_with("unknown:") && !p.contains("Hunter2"));
        assert_eq!(p, a.pseudonym("hunter2-password"), "same name, same pseudonym");
        assert_ne!(p, b.pseudonym("Hunter2-Password"), "another key, another pseudonym");
    }

    #[test]
    fn secrets_are_256_bit_and_distinct() {
        let a = Secret::generate();
        let b = Secret::generate();
        assert_ne!(a, b);
        assert_eq!(URL_SAFE_NO_PAD.decode(a.expose()).unwrap().len(), 32);
    }

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::generate();
        assert!(!format!("{s:?}").contains(s.expose()));
    }

    #[test]
    fn hash_is_sha256() {
        // FIPS 180-2 test vector for "abc".
        assert_eq!(sha256_b64(b"abc"), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
    }
}
