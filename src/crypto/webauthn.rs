//! WebAuthn Level 2 relying-party checks for passkeys: client data (§7.1 steps 7–10,
//! §7.2 steps 11–14), authenticator data (§6.1), the credential public key (COSE,
//! RFC 9053) and the assertion signature. Attestation statements are not verified:
//! Tessera asks for `attestation: "none"`, as passkey providers expect.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ciborium::Value as Cbor;
use josekit::jwk::Jwk;
use serde_json::{json, Value};

use super::sha256;

/// The relying party: its id (the issuer's host) and the origin pages run on.
#[derive(Debug, Clone)]
pub struct RelyingParty {
    pub id: String,
    pub origin: String,
}

impl RelyingParty {
    pub fn of_issuer(issuer: &str) -> Option<Self> {
        let url = url::Url::parse(issuer).ok()?;
        Some(Self {
            id: url.host_str()?.to_string(),
            origin: url.origin().ascii_serialization(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub &'static str);

fn refuse<T>(why: &'static str) -> Result<T, Refused> {
    Err(Refused(why))
}

/// A credential to store after registration.
#[derive(Debug, Clone)]
pub struct NewCredential {
    pub id: Vec<u8>,
    /// The public key as a JWK, ready for a JWS verifier.
    pub public_jwk: String,
    pub alg: &'static str,
    pub sign_count: u32,
}

/// Authenticator data flags (§6.1).
const UP: u8 = 0x01;
const UV: u8 = 0x04;
const AT: u8 = 0x40;

struct AuthData {
    rp_id_hash: [u8; 32],
    flags: u8,
    sign_count: u32,
    /// Credential id and COSE key bytes, when attested credential data is present.
    attested: Option<(Vec<u8>, Vec<u8>)>,
}

fn parse_auth_data(bytes: &[u8]) -> Result<AuthData, Refused> {
    if bytes.len() < 37 {
        return refuse("authenticator data is too short");
    }
    let mut rp_id_hash = [0u8; 32];
    rp_id_hash.copy_from_slice(&bytes[..32]);
    let flags = bytes[32];
    let sign_count = u32::from_be_bytes([bytes[33], bytes[34], bytes[35], bytes[36]]);
    let attested = if flags & AT != 0 {
        // aaguid (16) | credentialIdLength (2) | credentialId | credentialPublicKey
        let rest = &bytes[37..];
        if rest.len() < 18 {
            return refuse("attested credential data is too short");
        }
        let len = usize::from(u16::from_be_bytes([rest[16], rest[17]]));
        if len == 0 || len > 1023 || rest.len() < 18 + len + 1 {
            return refuse("the credential id is malformed");
        }
        Some((rest[18..18 + len].to_vec(), rest[18 + len..].to_vec()))
    } else {
        None
    };
    Ok(AuthData {
        rp_id_hash,
        flags,
        sign_count,
        attested,
    })
}

fn int_key(map: &[(Cbor, Cbor)], key: i64) -> Option<&Cbor> {
    map.iter()
        .find(|(k, _)| k.as_integer().and_then(|i| i64::try_from(i).ok()) == Some(key))
        .map(|(_, v)| v)
}

fn bytes_at(map: &[(Cbor, Cbor)], key: i64) -> Result<&[u8], Refused> {
    int_key(map, key)
        .and_then(Cbor::as_bytes)
        .map(Vec::as_slice)
        .ok_or(Refused("the credential key lacks a coordinate"))
}

fn int_at(map: &[(Cbor, Cbor)], key: i64) -> Option<i64> {
    int_key(map, key)
        .and_then(Cbor::as_integer)
        .and_then(|i| i64::try_from(i).ok())
}

/// A COSE_Key (RFC 9053 §7) as a JWK and its JWS algorithm: ES256 on P-256, EdDSA on
/// Ed25519, or RS256.
fn cose_to_jwk(cose: &[u8]) -> Result<(Value, &'static str), Refused> {
    let key: Cbor = ciborium::de::from_reader(cose).map_err(|_| Refused("the credential key is not CBOR"))?;
    let Some(map) = key.as_map() else {
        return refuse("the credential key is not a COSE key");
    };
    let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
    match (int_at(map, 1), int_at(map, 3), int_at(map, -1)) {
        (Some(2), Some(-7), Some(1)) => {
            let (x, y) = (bytes_at(map, -2)?, bytes_at(map, -3)?);
            if x.len() != 32 || y.len() != 32 {
                return refuse("the P-256 key has the wrong size");
            }
            Ok((json!({"kty": "EC", "crv": "P-256", "x": b64(x), "y": b64(y)}), "ES256"))
        }
        (Some(1), Some(-8), Some(6)) => {
            let x = bytes_at(map, -2)?;
            if x.len() != 32 {
                return refuse("the Ed25519 key has the wrong size");
            }
            Ok((json!({"kty": "OKP", "crv": "Ed25519", "x": b64(x)}), "EdDSA"))
        }
        (Some(3), Some(-257), _) => {
            let (n, e) = (bytes_at(map, -1)?, bytes_at(map, -2)?);
            if n.len() < 256 {
                return refuse("the RSA key is shorter than 2048 bits");
            }
            Ok((json!({"kty": "RSA", "n": b64(n), "e": b64(e)}), "RS256"))
        }
        _ => refuse("the credential key uses an unsupported algorithm"),
    }
}

/// Checks `clientDataJSON` and returns its challenge (base64url) for the caller to
/// match against the one it issued.
fn client_data(json: &[u8], kind: &str, rp: &RelyingParty) -> Result<String, Refused> {
    let v: Value = serde_json::from_slice(json).map_err(|_| Refused("client data is not JSON"))?;
    if v["type"].as_str() != Some(kind) {
        return refuse("client data is for another ceremony");
    }
    if v["origin"].as_str() != Some(rp.origin.as_str()) {
        return refuse("the page was not on this issuer's origin");
    }
    if v["crossOrigin"].as_bool() == Some(true) {
        return refuse("cross-origin ceremonies are not accepted");
    }
    v["challenge"]
        .as_str()
        .filter(|c| !c.is_empty() && c.len() <= 128)
        .map(str::to_string)
        .ok_or(Refused("client data has no challenge"))
}

fn check_flags(data: &AuthData, rp: &RelyingParty) -> Result<(), Refused> {
    if data.rp_id_hash != sha256(rp.id.as_bytes()) {
        return refuse("the credential is for another site");
    }
    if data.flags & UP == 0 {
        return refuse("the user was not present");
    }
    if data.flags & UV == 0 {
        return refuse("the user was not verified by the authenticator");
    }
    Ok(())
}

/// §7.1 registration: returns the challenge the browser signed over and the
/// credential to store.
pub fn register(
    rp: &RelyingParty,
    client_data_json: &[u8],
    attestation_object: &[u8],
) -> Result<(String, NewCredential), Refused> {
    let challenge = client_data(client_data_json, "webauthn.create", rp)?;
    let object: Cbor =
        ciborium::de::from_reader(attestation_object).map_err(|_| Refused("the attestation object is not CBOR"))?;
    let auth_data = object
        .as_map()
        .and_then(|m| m.iter().find(|(k, _)| k.as_text() == Some("authData")))
        .and_then(|(_, v)| v.as_bytes())
        .ok_or(Refused("the attestation object has no authenticator data"))?;
    let data = parse_auth_data(auth_data)?;
    check_flags(&data, rp)?;
    let Some((id, cose)) = data.attested else {
        return refuse("no credential was created");
    };
    let (jwk, alg) = cose_to_jwk(&cose)?;
    Ok((
        challenge,
        NewCredential {
            id,
            public_jwk: jwk.to_string(),
            alg,
            sign_count: data.sign_count,
        },
    ))
}

/// An ECDSA signature in DER (what authenticators send) as the fixed-size r‖s a JWS
/// verifier takes.
fn der_to_raw(der: &[u8]) -> Option<Vec<u8>> {
    fn int(b: &[u8]) -> Option<(&[u8], &[u8])> {
        let (&tag, rest) = b.split_first()?;
        let (&len, rest) = rest.split_first()?;
        let len = usize::from(len);
        (tag == 0x02 && len <= 33 && rest.len() >= len).then(|| rest.split_at(len))
    }
    let (&tag, rest) = der.split_first()?;
    let (&len, body) = rest.split_first()?;
    if tag != 0x30 || usize::from(len) != body.len() {
        return None;
    }
    let (r, rest) = int(body)?;
    let (s, rest) = int(rest)?;
    if !rest.is_empty() {
        return None;
    }
    let mut out = vec![0u8; 64];
    for (value, at) in [(r, 0), (s, 32)] {
        let value = if value.len() == 33 && value[0] == 0 {
            &value[1..]
        } else {
            value
        };
        if value.len() > 32 {
            return None;
        }
        out[at + 32 - value.len()..at + 32].copy_from_slice(value);
    }
    Some(out)
}

/// What a verified assertion reports.
#[derive(Debug)]
pub struct Asserted {
    pub challenge: String,
    pub sign_count: u32,
}

/// §7.2 authentication with a stored credential. A signature counter that does not
/// grow (when either side counts) marks a cloned authenticator and is refused.
pub fn verify_assertion(
    rp: &RelyingParty,
    client_data_json: &[u8],
    authenticator_data: &[u8],
    signature: &[u8],
    public_jwk: &str,
    alg: &str,
    stored_count: u32,
) -> Result<Asserted, Refused> {
    let challenge = client_data(client_data_json, "webauthn.get", rp)?;
    let data = parse_auth_data(authenticator_data)?;
    check_flags(&data, rp)?;
    let jwk = Jwk::from_bytes(public_jwk.as_bytes()).map_err(|_| Refused("the stored key is unreadable"))?;
    let verifier = super::assertion::verifier_for(alg, &jwk).ok_or(Refused("the stored key is unusable"))?;
    let mut signed = authenticator_data.to_vec();
    signed.extend_from_slice(&sha256(client_data_json));
    let signature = if alg == "ES256" {
        der_to_raw(signature).ok_or(Refused("the signature is malformed"))?
    } else {
        signature.to_vec()
    };
    if verifier.verify(&signed, &signature).is_err() {
        return refuse("the signature does not verify");
    }
    if (stored_count != 0 || data.sign_count != 0) && data.sign_count <= stored_count {
        return refuse("the authenticator's counter went backwards");
    }
    Ok(Asserted {
        challenge,
        sign_count: data.sign_count,
    })
}

#[cfg(test)]
mod tests;
