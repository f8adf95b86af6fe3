//! Verifying request objects (RFC 9101 §6.2): a JWS signed by the client with one of
//! its registered keys, in one of the algorithms this provider accepts from clients.

use josekit::jwk::JwkSet;
use josekit::jwt;
use serde_json::{Map, Value};

use super::assertion::verify_with_set;

/// Why a request object was not accepted; each becomes `invalid_request_object`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestJwtError {
    /// Five parts: a JWE. Encrypted objects are not supported (no client encryption keys).
    Encrypted,
    /// Not a compact JWS, or its header or payload is not JSON.
    Malformed,
    /// `none`, an HMAC or any algorithm outside the accepted ones (RFC 9101 §6.2).
    Algorithm(String),
    /// A `typ` that names another kind of JWT (RFC 8725 §3.11).
    Type(String),
    /// The client's JWK Set is not valid JSON.
    BadKeySet,
    /// No key of the client verifies the signature.
    Signature,
}

/// The `typ` values a request object may carry: the RFC 9101 §10.8 media type, the
/// generic `JWT`, or none (most libraries send none).
const TYPES: &[&str] = &["oauth-authz-req+jwt", "JWT"];

/// Checks the signature of `token` with a key of `jwks` (the header's `kid`, or any key
/// that fits when there is none), the algorithm being one of `algs`; the claims.
pub fn verify(jwks: &str, token: &str, algs: &[&str]) -> Result<Map<String, Value>, RequestJwtError> {
    match token.split('.').count() {
        3 => {}
        5 => return Err(RequestJwtError::Encrypted),
        _ => return Err(RequestJwtError::Malformed),
    }
    let header = jwt::decode_header(token).map_err(|_| RequestJwtError::Malformed)?;
    let alg = header
        .claim("alg")
        .and_then(Value::as_str)
        .ok_or(RequestJwtError::Malformed)?
        .to_string();
    if !algs.contains(&alg.as_str()) {
        return Err(RequestJwtError::Algorithm(alg));
    }
    if let Some(typ) = header.claim("typ") {
        let typ = typ.as_str().unwrap_or_default();
        if !TYPES.iter().any(|t| t.eq_ignore_ascii_case(typ)) {
            return Err(RequestJwtError::Type(typ.chars().take(40).collect()));
        }
    }
    let kid = header.claim("kid").and_then(Value::as_str).map(str::to_string);
    let set = JwkSet::from_bytes(jwks.as_bytes()).map_err(|_| RequestJwtError::BadKeySet)?;
    verify_with_set(&set, token, &alg, kid.as_deref()).ok_or(RequestJwtError::Signature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use josekit::jws::{JwsHeader, ES256, HS256};
    use josekit::jwt::JwtPayload;

    const ALGS: &[&str] = &["RS256", "PS256", "ES256", "EdDSA"];

    fn payload() -> JwtPayload {
        let mut p = JwtPayload::new();
        p.set_issuer("app");
        p
    }

    fn es256(kid: &str, typ: Option<&str>) -> (String, String) {
        let kp = ES256.generate_key_pair().unwrap();
        let mut jwk = kp.to_jwk_public_key();
        jwk.set_key_id(kid);
        let jwks = format!(r#"{{"keys":[{jwk}]}}"#);
        let mut header = JwsHeader::new();
        header.set_key_id(kid);
        if let Some(t) = typ {
            header.set_token_type(t);
        }
        let signer = ES256.signer_from_pem(kp.to_pem_private_key()).unwrap();
        (jwks, jwt::encode_with_signer(&payload(), &header, &signer).unwrap())
    }

    #[test]
    fn a_client_key_verifies_and_another_does_not() {
        let (jwks, token) = es256("k", Some("oauth-authz-req+jwt"));
        assert_eq!(verify(&jwks, &token, ALGS).unwrap()["iss"], "app");
        let (other, _) = es256("k", None);
        assert_eq!(verify(&other, &token, ALGS), Err(RequestJwtError::Signature));
        assert_eq!(verify("not json", &token, ALGS), Err(RequestJwtError::BadKeySet));
    }

    #[test]
    fn only_the_accepted_algorithms_and_types_pass() {
        let signer = HS256.signer_from_bytes(b"a-secret-of-at-least-32-bytes-long!").unwrap();
        let hmac = jwt::encode_with_signer(&payload(), &JwsHeader::new(), &signer).unwrap();
        assert_eq!(
            verify(r#"{"keys":[]}"#, &hmac, ALGS),
            Err(RequestJwtError::Algorithm("HS256".into()))
        );
        let unsecured = jwt::encode_unsecured(&payload(), &JwsHeader::new()).unwrap();
        assert_eq!(
            verify(r#"{"keys":[]}"#, &unsecured, ALGS),
            Err(RequestJwtError::Algorithm("none".into()))
        );
        let (jwks, token) = es256("k", Some("at+jwt"));
        assert!(matches!(verify(&jwks, &token, ALGS), Err(RequestJwtError::Type(_))));
        assert_eq!(verify(&jwks, "a.b.c.d.e", ALGS), Err(RequestJwtError::Encrypted));
        assert_eq!(verify(&jwks, "garbage", ALGS), Err(RequestJwtError::Malformed));
    }
}
