//! Encryption at rest (AES-256-GCM) for the few secrets Tessera must be able to read
//! back, such as signing private keys, under an operator-held master key.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::rngs::OsRng;
use rand::RngCore;

const PREFIX: &str = "sealed:v1:";

pub use crate::domain::MasterKey;

/// Keys derived for each purpose.
impl MasterKey {
    /// A key for one purpose (`info`), derived with HKDF-SHA256 (RFC 5869, one block
    /// of output), so that the master key never encrypts two kinds of data itself.
    pub fn derive(&self, info: &[u8]) -> [u8; 32] {
        use hmac::{Hmac, Mac};
        type HmacSha256 = Hmac<sha2::Sha256>;
        // HMAC pads a short key with zeros to the hash's 64-byte block (RFC 2104 §2),
        // so a key given already padded is the same key, and needs no fallible call.
        let block = |key: &[u8]| {
            let mut padded = [0u8; 64];
            padded[..key.len()].copy_from_slice(key);
            <HmacSha256 as Mac>::new(&padded.into())
        };
        let mut extract = block(b"tessera hkdf salt v1");
        extract.update(self.bytes());
        let prk = extract.finalize().into_bytes();
        let mut expand = block(&prk);
        expand.update(info);
        expand.update(&[1]);
        expand.finalize().into_bytes().into()
    }
}

pub fn is_sealed(text: &str) -> bool {
    text.starts_with(PREFIX)
}

/// `sealed:v1:` + base64(nonce ‖ ciphertext ‖ tag), with a fresh 96-bit nonce.
pub fn seal(key: &MasterKey, plaintext: &[u8]) -> Result<String, String> {
    let cipher = Aes256Gcm::new_from_slice(key.bytes()).map_err(|e| e.to_string())?;
    let mut nonce = [0u8; 12];
    OsRng.fill_bytes(&mut nonce);
    let sealed = cipher
        .encrypt(Nonce::from_slice(&nonce), plaintext)
        .map_err(|_| "encryption failed".to_string())?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    Ok(format!("{PREFIX}{}", STANDARD.encode(out)))
}

/// The plaintext of a sealed value; fails on a wrong key or any tampering.
pub fn open(key: &MasterKey, text: &str) -> Result<Vec<u8>, String> {
    let body = text.strip_prefix(PREFIX).ok_or("not a sealed value")?;
    let bytes = STANDARD.decode(body).map_err(|_| "sealed value is not base64")?;
    if bytes.len() < 12 + 16 {
        return Err("sealed value is too short".into());
    }
    let (nonce, ciphertext) = bytes.split_at(12);
    let cipher = Aes256Gcm::new_from_slice(key.bytes()).map_err(|e| e.to_string())?;
    cipher
        .decrypt(Nonce::from_slice(nonce), ciphertext)
        .map_err(|_| "the master key does not open this value (wrong key or tampered data)".into())
}

/// `text` as stored: sealed when a master key is set, as it is otherwise.
pub fn seal_text(key: Option<&MasterKey>, text: &str) -> Result<String, String> {
    match key {
        Some(key) => seal(key, text.as_bytes()),
        None => Ok(text.to_string()),
    }
}

/// The text of a stored value: opened when it was stored sealed (which needs the
/// key), as it is otherwise.
pub fn open_text(key: Option<&MasterKey>, stored: &str) -> Result<String, String> {
    if !is_sealed(stored) {
        return Ok(stored.to_string());
    }
    let key = key.ok_or("sealed, and no master key is set")?;
    String::from_utf8(open(key, stored)?).map_err(|_| "the sealed value is not text".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> MasterKey {
        MasterKey::parse(&STANDARD.encode([byte; 32])).unwrap()
    }

    #[test]
    fn sealing_round_trips_and_resists_wrong_keys_and_tampering() {
        let sealed = seal(&key(1), b"-----BEGIN PRIVATE KEY-----").unwrap();
        assert!(is_sealed(&sealed) && !sealed.contains("PRIVATE"));
        assert_eq!(open(&key(1), &sealed).unwrap(), b"-----BEGIN PRIVATE KEY-----");
        assert!(open(&key(2), &sealed).is_err());
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        assert!(open(&key(1), &String::from_utf8(tampered).unwrap()).is_err());
        assert_ne!(
            seal(&key(1), b"x").unwrap(),
            seal(&key(1), b"x").unwrap(),
            "fresh nonce each time"
        );
    }

    #[test]
    fn derived_keys_differ_by_purpose_and_from_the_master_key() {
        let a = key(1).derive(b"replica");
        assert_eq!(a, key(1).derive(b"replica"));
        assert_ne!(a, key(1).derive(b"other"));
        assert_ne!(a, key(2).derive(b"replica"));
        assert_ne!(a, [1u8; 32]);
    }

    #[test]
    fn keys_must_be_32_bytes_of_base64() {
        assert!(MasterKey::parse("short").is_err());
        assert!(MasterKey::parse(&STANDARD.encode([0u8; 16])).is_err());
        assert!(!format!("{:?}", key(7)).contains('7'));
    }
}
