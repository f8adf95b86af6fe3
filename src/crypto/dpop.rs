//! DPoP proof JWTs (RFC 9449 §4): their signature checked with the public key they
//! carry, that key's RFC 7638 thumbprint, and the server's stateless nonces (§8).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use josekit::jwk::Jwk;
use josekit::jwt;
use rand::RngCore;
use serde_json::{Map, Value};
use sha2::Sha256;

/// Why a proof is not acceptable; the text is fixed (never request text), so it may be
/// shown to the client as `error_description`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProofError(pub &'static str);

/// A proof whose signature is valid for the key in its own header.
#[derive(Debug)]
pub struct VerifiedProof {
    /// The JWK SHA-256 thumbprint of the proof's key (RFC 7638 §3).
    pub jkt: String,
    pub claims: Map<String, Value>,
}

/// A proof is a few hundred bytes (an RSA key makes it ~1 KiB); more is not a proof.
const MAX_PROOF: usize = 8 * 1024;

/// Members of a JWK that only a private (or symmetric) key has (RFC 7518 §6.2.2,
/// §6.3.2, §6.4.1; RFC 8037 §2): a proof must carry the public key alone (RFC 9449
/// §4.2 `jwk`, §4.3 step 7).
const PRIVATE_MEMBERS: &[&str] = &["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

fn header_of(proof: &str) -> Result<Map<String, Value>, ProofError> {
    let bad = ProofError("the DPoP proof is not a JWS");
    let mut parts = proof.split('.');
    let (Some(h), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad);
    };
    let bytes = URL_SAFE_NO_PAD.decode(h).map_err(|_| bad)?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(bad),
    }
}

/// RFC 9449 §4.3 steps 1–7: one well-formed JWS, `typ` `dpop+jwt`, an asymmetric
/// `alg` of `allowed`, a public `jwk`, and a signature valid with that key. The
/// claims are the caller's to check (steps 8–12).
pub fn verify_proof(proof: &str, allowed: &[&str]) -> Result<VerifiedProof, ProofError> {
    if proof.len() > MAX_PROOF {
        return Err(ProofError("the DPoP proof is too large"));
    }
    let header = header_of(proof)?;
    // §4.2: exactly this media type (compared without case, RFC 7515 §4.1.9).
    let typ = header.get("typ").and_then(Value::as_str).unwrap_or_default();
    if !typ.eq_ignore_ascii_case("dpop+jwt") {
        return Err(ProofError("the DPoP proof's typ is not dpop+jwt"));
    }
    // §4.3 step 6: asymmetric algorithms only: `none` and the HMACs prove no key.
    let alg = header.get("alg").and_then(Value::as_str).unwrap_or_default();
    if !allowed.contains(&alg) {
        return Err(ProofError("the DPoP proof's alg is not supported"));
    }
    let Some(Value::Object(jwk)) = header.get("jwk") else {
        return Err(ProofError("the DPoP proof carries no jwk"));
    };
    if PRIVATE_MEMBERS.iter().any(|m| jwk.contains_key(*m)) {
        return Err(ProofError("the DPoP proof's jwk is not a public key"));
    }
    let jkt = thumbprint(jwk).ok_or(ProofError("the DPoP proof's jwk is not a usable public key"))?;
    let key = Jwk::from_map(jwk.clone()).map_err(|_| ProofError("the DPoP proof's jwk is not a usable public key"))?;
    let verifier =
        super::assertion::verifier_for(alg, &key).ok_or(ProofError("the DPoP proof's jwk does not fit its alg"))?;
    let (payload, _) = jwt::decode_with_verifier(proof, verifier.as_ref()).map_err(|e| match e {
        josekit::JoseError::InvalidSignature(_) => ProofError("the DPoP proof's signature is not valid"),
        _ => ProofError("the DPoP proof is not a valid JWT"),
    })?;
    Ok(VerifiedProof {
        jkt,
        claims: payload.claims_set().clone(),
    })
}

/// RFC 7638 §3: SHA-256 over the key's required members in lexicographic order, no
/// whitespace, base64url; `None` for a key type a proof cannot use.
pub fn thumbprint(jwk: &Map<String, Value>) -> Option<String> {
    let members: &[&str] = match jwk.get("kty")?.as_str()? {
        "EC" => &["crv", "kty", "x", "y"],
        "RSA" => &["e", "kty", "n"],
        "OKP" => &["crv", "kty", "x"],
        _ => return None,
    };
    let mut canonical = String::from("{");
    for (i, name) in members.iter().enumerate() {
        let value = jwk.get(*name)?.as_str()?;
        if i > 0 {
            canonical.push(',');
        }
        // serde_json escapes as RFC 7159 requires; base64url values need none anyway.
        canonical.push_str(&serde_json::to_string(name).ok()?);
        canonical.push(':');
        canonical.push_str(&serde_json::to_string(value).ok()?);
    }
    canonical.push('}');
    Some(super::sha256_b64(canonical.as_bytes()))
}

/// Whether `value` has the shape of a SHA-256 JWK thumbprint: 43 base64url characters
/// (32 bytes, unpadded).
pub fn is_thumbprint(value: &str) -> bool {
    value.len() == 43 && URL_SAFE_NO_PAD.decode(value).is_ok_and(|b| b.len() == 32)
}

/// The key of the server's DPoP nonces (RFC 9449 §8), the same on every node.
#[derive(Clone)]
pub struct NonceKey([u8; 32]);

impl NonceKey {
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }

    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The nonce of time slot `slot`: HMAC-SHA-256(key, "dpop-nonce" ‖ slot), base64url.
    pub fn nonce(&self, slot: i64) -> String {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.0) else {
            return String::new();
        };
        mac.update(b"dpop-nonce");
        mac.update(&slot.to_be_bytes());
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Whether `presented` is the nonce of one of `slots`, compared in constant time.
    pub fn accepts(&self, presented: &str, slots: &[i64]) -> bool {
        use subtle::ConstantTimeEq;
        slots
            .iter()
            .any(|s| bool::from(self.nonce(*s).as_bytes().ct_eq(presented.as_bytes())))
    }
}

impl std::fmt::Debug for NonceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NonceKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use josekit::jws::{JwsHeader, ES256, HS256};
    use josekit::jwt::JwtPayload;

    const ALGS: &[&str] = &["RS256", "PS256", "ES256", "EdDSA"];

    fn es256_proof(with_private: bool, typ: &str) -> (String, String) {
        let kp = ES256.generate_key_pair().unwrap();
        let public = kp.to_jwk_public_key();
        let jwk = if with_private {
            kp.to_jwk_private_key()
        } else {
            public.clone()
        };
        let mut header = JwsHeader::new();
        header.set_token_type(typ);
        header.set_jwk(jwk);
        let mut payload = JwtPayload::new();
        payload.set_jwt_id("j1");
        let signer = ES256.signer_from_jwk(&kp.to_jwk_private_key()).unwrap();
        let token = jwt::encode_with_signer(&payload, &header, &signer).unwrap();
        let map: Map<String, Value> = public.as_ref().clone();
        (token, thumbprint(&map).unwrap())
    }

    #[test]
    fn a_proof_verifies_with_its_own_public_key() {
        let (token, jkt) = es256_proof(false, "dpop+jwt");
        let v = verify_proof(&token, ALGS).unwrap();
        assert_eq!(v.jkt, jkt);
        assert_eq!(v.claims["jti"], "j1");
    }

    #[test]
    fn a_private_key_wrong_typ_or_hmac_is_refused() {
        let (token, _) = es256_proof(true, "dpop+jwt");
        assert_eq!(
            verify_proof(&token, ALGS).unwrap_err(),
            ProofError("the DPoP proof's jwk is not a public key")
        );
        let (token, _) = es256_proof(false, "JWT");
        assert!(verify_proof(&token, ALGS).is_err());
        let mut header = JwsHeader::new();
        header.set_token_type("dpop+jwt");
        let signer = HS256.signer_from_bytes(b"a-secret-of-at-least-32-bytes-long!").unwrap();
        let token = jwt::encode_with_signer(&JwtPayload::new(), &header, &signer).unwrap();
        assert!(verify_proof(&token, ALGS).is_err());
        assert!(verify_proof("a.b", ALGS).is_err());
        assert!(verify_proof("", ALGS).is_err());
    }

    #[test]
    fn the_rfc_7638_example_thumbprint() {
        // RFC 7638 §3.1.
        let jwk: Map<String, Value> = serde_json::from_str(
            r#"{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}"#,
        )
        .unwrap();
        assert_eq!(thumbprint(&jwk).unwrap(), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
        assert!(is_thumbprint("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"));
        assert!(!is_thumbprint("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9X"));
        assert!(!is_thumbprint("NzbLsXh8uDCcd+6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"));
    }

    #[test]
    fn nonces_are_keyed_and_per_slot() {
        let (a, b) = (NonceKey::generate(), NonceKey::generate());
        let n = a.nonce(7);
        assert!(a.accepts(&n, &[7, 6]));
        assert!(!a.accepts(&n, &[8, 9]));
        assert!(!b.accepts(&n, &[7]));
        assert!(!a.accepts("", &[7]));
    }
}
