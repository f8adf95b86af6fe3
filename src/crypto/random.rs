//! Random bearer values (256 bits, base64url) and the SHA-256 digests stored in their place.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// A bearer value handed to a client once; `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// 256 bits from the operating system's CSPRNG, base64url without padding.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        Self(URL_SAFE_NO_PAD.encode(bytes))
    }

    pub fn from_string(value: String) -> Self {
        Self(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> TokenHash {
        TokenHash::of(&self.0)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
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
