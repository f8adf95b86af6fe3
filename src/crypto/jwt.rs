//! JWS compact serialisation of claim sets: signing with the active key, verifying by `kid`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use josekit::jws::JwsHeader;
use josekit::jwt::{self, JwtPayload};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256, Sha512};

use super::keys::{Alg, KeyError, KeySet};
pub use super::signed::Signed;

#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("signing failed: {0}")]
    Sign(josekit::JoseError),
    #[error("token is not a valid signed JWT")]
    Invalid,
}

/// Signs `claims` with the key of `alg` that signs at `now`, `typ` and `kid` in the
/// header.
pub fn sign(keys: &KeySet, alg: Alg, typ: &str, claims: Map<String, Value>, now: i64) -> Result<String, JwtError> {
    let (kid, signer) = keys.signer(alg, now)?;
    let mut header = JwsHeader::new();
    header.set_token_type(typ);
    header.set_key_id(kid);
    let payload = JwtPayload::from_map(claims).map_err(JwtError::Sign)?;
    jwt::encode_with_signer(&payload, &header, signer).map_err(JwtError::Sign)
}

/// Verifies the signature with the key named by `kid`; expiry and audience are the
/// caller's to check. Any malformed input is `Invalid`, never a panic.
pub fn verify(keys: &KeySet, token: &str) -> Result<Signed, JwtError> {
    if token.len() > 16 * 1024 {
        return Err(JwtError::Invalid);
    }
    // The digest covers the whole compact form, signature included: only the very
    // token verified before is taken as verified.
    let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    if let Some(signed) = keys.remembered(&digest) {
        return Ok(signed);
    }
    let (payload, header) =
        jwt::decode_with_verifier_selector(token, |header| Ok(header.key_id().and_then(|kid| keys.verifier(kid))))
            .map_err(|_| JwtError::Invalid)?;
    let signed = Signed {
        typ: header.token_type().map(str::to_string),
        alg: header.algorithm().unwrap_or_default().to_string(),
        claims: payload.into(),
    };
    keys.remember(digest, &signed);
    Ok(signed)
}

/// The `kid` a token's header names, read without verifying anything: only to decide
/// whether the key set is stale (another node rotated), never to trust the token.
pub fn unverified_kid(token: &str) -> Option<String> {
    let header = token.split('.').next()?;
    if header.len() > 1024 {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(header).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    value.get("kid")?.as_str().map(str::to_string)
}

/// `at_hash` / `c_hash` (OpenID Connect Core §3.1.3.6): the left half of the hash of the
/// value's ASCII octets, with the hash the signing algorithm uses (SHA-512 for Ed25519).
pub fn half_hash(alg: Alg, value: &str) -> String {
    match alg {
        Alg::Rs256 | Alg::Es256 => {
            let digest = Sha256::digest(value.as_bytes());
            URL_SAFE_NO_PAD.encode(&digest[..16])
        }
        Alg::EdDsa => {
            let digest = Sha512::digest(value.as_bytes());
            URL_SAFE_NO_PAD.encode(&digest[..32])
        }
    }
}

/// A signing failure is the server's own; logged here, once.
impl From<JwtError> for crate::error::Internal {
    fn from(e: JwtError) -> Self {
        tracing::error!(error = %e, "token signing error");
        Self::Failed
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_unverified_kid_is_read_from_the_header_only() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","kid":"abc"}"#);
        assert_eq!(unverified_kid(&format!("{header}.e30.sig")).as_deref(), Some("abc"));
        assert_eq!(unverified_kid("not a token"), None);
        assert_eq!(
            unverified_kid(&format!("{}.e30.sig", URL_SAFE_NO_PAD.encode(b"{}"))),
            None
        );
        assert_eq!(unverified_kid(&"A".repeat(5000)), None);
    }

    use super::*;
    use crate::crypto::keys::SigningKeyRecord;
    use serde_json::json;

    fn keys() -> KeySet {
        let rec = SigningKeyRecord::generate(Alg::Es256, "k1".into(), 0).unwrap();
        KeySet::from_records(&[rec], 0, 0).unwrap()
    }

    #[test]
    fn a_signed_token_verifies_and_a_tampered_one_does_not() {
        let keys = keys();
        let mut claims = Map::new();
        claims.insert("sub".into(), json!("alice"));
        let token = sign(&keys, Alg::Es256, "at+jwt", claims, 0).unwrap();
        let signed = verify(&keys, &token).unwrap();
        assert_eq!(signed.claims["sub"], "alice");
        assert_eq!(signed.typ.as_deref(), Some("at+jwt"));

        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(br#"{"sub":"mallory"}"#);
        parts[1] = &forged;
        assert!(verify(&keys, &parts.join(".")).is_err());
        assert!(verify(&keys, "not.a.jwt").is_err());
        assert!(verify(&keys, "").is_err());
    }

    #[test]
    fn a_verified_token_is_remembered_by_its_key_set_and_only_that_token() {
        let keys = keys();
        let mut claims = Map::new();
        claims.insert("sub".into(), json!("alice"));
        let token = sign(&keys, Alg::Es256, "at+jwt", claims, 0).unwrap();
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        assert!(keys.remembered(&digest).is_none());
        verify(&keys, &token).unwrap();
        let again = keys.remembered(&digest).expect("remembered after the first check");
        assert_eq!(again.claims["sub"], "alice");
        assert_eq!(verify(&keys, &token).unwrap().typ.as_deref(), Some("at+jwt"));

        // Another signature over the same header and claims is checked, not taken
        // for the remembered token.
        let (head, sig) = token.rsplit_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(sig).unwrap();
        bytes[0] ^= 1;
        let altered = format!("{head}.{}", URL_SAFE_NO_PAD.encode(bytes));
        assert!(verify(&keys, &altered).is_err());

        // A new set (a rotation, or a reload after a key is withdrawn) starts empty.
        let rec = SigningKeyRecord::generate(Alg::Es256, "k2".into(), 0).unwrap();
        let rotated = KeySet::from_records(&[rec], 0, 0).unwrap();
        assert!(verify(&rotated, &token).is_err());
    }

    #[test]
    fn a_token_from_an_unknown_key_is_refused() {
        let other = keys();
        let token = sign(&other, Alg::Es256, "JWT", Map::new(), 0).unwrap();
        assert!(verify(&keys(), &token).is_err(), "same kid, different key");
    }

    #[test]
    fn at_hash_matches_the_spec_example() {
        // OpenID Connect Core, Appendix A.3 (ID token with at_hash, RS256).
        assert_eq!(
            half_hash(Alg::Rs256, "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"),
            "77QmUPtjPfzWtF2AnpK9RQ"
        );
    }
}
