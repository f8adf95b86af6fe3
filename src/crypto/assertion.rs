//! Verifying JWTs signed by clients (RFC 7523 client assertions): with the client's
//! registered public keys (`private_key_jwt`) or its shared secret (`client_secret_jwt`).

use josekit::jwk::{Jwk, JwkSet};
use josekit::jws::{
    EdDSA, JwsVerifier, ES256, ES384, ES512, HS256, HS384, HS512, PS256, PS384, PS512, RS256, RS384, RS512,
};
use josekit::jwt;
use serde_json::{Map, Value};

use super::JwtError;

/// The claims of a JWT, read without checking its signature: only to learn which
/// client claims to have signed it, never to trust.
pub fn peek_claims(token: &str) -> Option<Map<String, Value>> {
    if token.len() > 16 * 1024 {
        return None;
    }
    use base64::Engine;
    let mut parts = token.split('.');
    let payload = parts.nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn header_of(token: &str) -> Result<(String, Option<String>), JwtError> {
    let header = jwt::decode_header(token).map_err(|_| JwtError::Invalid)?;
    let alg = header
        .claim("alg")
        .and_then(Value::as_str)
        .ok_or(JwtError::Invalid)?
        .to_string();
    let kid = header.claim("kid").and_then(Value::as_str).map(str::to_string);
    Ok((alg, kid))
}

pub(crate) fn verifier_for(alg: &str, jwk: &Jwk) -> Option<Box<dyn JwsVerifier>> {
    let v: Box<dyn JwsVerifier> = match alg {
        "RS256" => Box::new(RS256.verifier_from_jwk(jwk).ok()?),
        "RS384" => Box::new(RS384.verifier_from_jwk(jwk).ok()?),
        "RS512" => Box::new(RS512.verifier_from_jwk(jwk).ok()?),
        "PS256" => Box::new(PS256.verifier_from_jwk(jwk).ok()?),
        "PS384" => Box::new(PS384.verifier_from_jwk(jwk).ok()?),
        "PS512" => Box::new(PS512.verifier_from_jwk(jwk).ok()?),
        "ES256" => Box::new(ES256.verifier_from_jwk(jwk).ok()?),
        "ES384" => Box::new(ES384.verifier_from_jwk(jwk).ok()?),
        "ES512" => Box::new(ES512.verifier_from_jwk(jwk).ok()?),
        "EdDSA" => Box::new(EdDSA.verifier_from_jwk(jwk).ok()?),
        _ => return None,
    };
    Some(v)
}

/// `private_key_jwt`: verifies with the key the header names (or any key that fits).
pub fn verify_with_jwks(jwks: &str, token: &str) -> Result<Map<String, Value>, JwtError> {
    let (alg, kid) = header_of(token)?;
    let set = JwkSet::from_bytes(jwks.as_bytes()).map_err(|_| JwtError::Invalid)?;
    verify_with_set(&set, token, &alg, kid.as_deref()).ok_or(JwtError::Invalid)
}

/// The claims of `token` signed with `alg` by a key of `set`: the one `kid` names, or
/// any that fits when there is none. A key registered for another algorithm, or for
/// encryption, does not sign (RFC 7517 §4.2, §4.4).
pub(crate) fn verify_with_set(set: &JwkSet, token: &str, alg: &str, kid: Option<&str>) -> Option<Map<String, Value>> {
    let candidates: Vec<&Jwk> = match kid {
        Some(kid) => set.get(kid),
        None => set.keys(),
    };
    candidates
        .into_iter()
        .filter(|jwk| jwk.algorithm().is_none_or(|a| a == alg) && jwk.key_use().is_none_or(|u| u == "sig"))
        .filter_map(|jwk| verifier_for(alg, jwk))
        .find_map(|verifier| jwt::decode_with_verifier(token, verifier.as_ref()).ok())
        .map(|(payload, _)| payload.claims_set().clone())
}

/// `client_secret_jwt`: an HMAC keyed with the client secret (RFC 7523 §2.2).
pub fn verify_with_secret(secret: &str, token: &str) -> Result<Map<String, Value>, JwtError> {
    let (alg, _) = header_of(token)?;
    let key = secret.as_bytes();
    let verifier: Box<dyn JwsVerifier> = match alg.as_str() {
        "HS256" => Box::new(HS256.verifier_from_bytes(key).map_err(|_| JwtError::Invalid)?),
        "HS384" => Box::new(HS384.verifier_from_bytes(key).map_err(|_| JwtError::Invalid)?),
        "HS512" => Box::new(HS512.verifier_from_bytes(key).map_err(|_| JwtError::Invalid)?),
        _ => return Err(JwtError::Invalid),
    };
    let (payload, _) = jwt::decode_with_verifier(token, verifier.as_ref()).map_err(|_| JwtError::Invalid)?;
    Ok(payload.claims_set().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use josekit::jws::JwsHeader;
    use josekit::jwt::JwtPayload;

    fn sign_es256(kid: &str) -> (String, String) {
        let kp = ES256.generate_key_pair().unwrap();
        let mut jwk = kp.to_jwk_public_key();
        jwk.set_key_id(kid);
        let jwks = format!(r#"{{"keys":[{jwk}]}}"#);
        let mut header = JwsHeader::new();
        header.set_key_id(kid);
        let mut payload = JwtPayload::new();
        payload.set_subject("app");
        let signer = ES256.signer_from_pem(kp.to_pem_private_key()).unwrap();
        (jwks, jwt::encode_with_signer(&payload, &header, &signer).unwrap())
    }

    #[test]
    fn a_client_key_verifies_its_assertion_and_no_other_key_does() {
        let (jwks, token) = sign_es256("k1");
        assert_eq!(verify_with_jwks(&jwks, &token).unwrap()["sub"], "app");
        let (other_jwks, _) = sign_es256("k1");
        assert!(verify_with_jwks(&other_jwks, &token).is_err());
        assert_eq!(peek_claims(&token).unwrap()["sub"], "app");
    }

    #[test]
    fn hmac_assertions_need_the_secret() {
        let mut payload = JwtPayload::new();
        payload.set_subject("app");
        let signer = HS256.signer_from_bytes(b"a-secret-of-at-least-32-bytes-long!").unwrap();
        let token = jwt::encode_with_signer(&payload, &JwsHeader::new(), &signer).unwrap();
        assert!(verify_with_secret("a-secret-of-at-least-32-bytes-long!", &token).is_ok());
        assert!(verify_with_secret("another-secret-of-at-least-32-bytes", &token).is_err());
        assert!(
            verify_with_jwks(r#"{"keys":[]}"#, &token).is_err(),
            "alg none/HS with no keys fails"
        );
    }
}
