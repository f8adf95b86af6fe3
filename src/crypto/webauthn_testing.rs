//! A software passkey authenticator (ES256, user verification on) that produces what a
//! browser would send. It exists for the tests of the WebAuthn checks and of the
//! passkey endpoints; nothing in the server uses it.

use ciborium::Value as Cbor;
use josekit::jwk::alg::ec::EcKeyPair;
use josekit::jws::{JwsSigner, ES256};
use serde_json::json;

use super::sha256;
use super::webauthn::RelyingParty;
use crate::domain::Secret;

pub struct Authenticator {
    rp: RelyingParty,
    key: EcKeyPair,
    pub credential_id: Vec<u8>,
    count: u32,
    verify_user: bool,
}

fn raw_to_der(raw: &[u8]) -> Vec<u8> {
    let int = |half: &[u8]| {
        let trimmed: Vec<u8> = half.iter().copied().skip_while(|b| *b == 0).collect();
        let mut v = if trimmed.first().is_none_or(|b| *b & 0x80 != 0) {
            let mut v = vec![0u8];
            v.extend(trimmed);
            v
        } else {
            trimmed
        };
        let mut out = vec![0x02, v.len() as u8];
        out.append(&mut v);
        out
    };
    let (mut r, mut s) = (int(&raw[..32]), int(&raw[32..]));
    let mut der = vec![0x30, (r.len() + s.len()) as u8];
    der.append(&mut r);
    der.append(&mut s);
    der
}

impl Authenticator {
    /// A new authenticator for `rp` with a fresh P-256 key (`None` if OpenSSL fails).
    pub fn new(rp: &RelyingParty) -> Option<Self> {
        let key = ES256.generate_key_pair().ok()?;
        Some(Self {
            rp: rp.clone(),
            key,
            credential_id: Secret::generate().expose().as_bytes().to_vec(),
            count: 0,
            verify_user: true,
        })
    }

    /// One whose user verification (PIN, biometrics) is off.
    pub fn without_user_verification(rp: &RelyingParty) -> Option<Self> {
        Some(Self {
            verify_user: false,
            ..Self::new(rp)?
        })
    }

    fn client_data(&self, kind: &str, challenge: &str) -> Vec<u8> {
        json!({"type": kind, "challenge": challenge, "origin": self.rp.origin, "crossOrigin": false})
            .to_string()
            .into_bytes()
    }

    fn auth_data(&mut self, attested: bool) -> Vec<u8> {
        self.count += 1;
        let mut flags = 0x01 | if self.verify_user { 0x04 } else { 0 };
        let mut out = sha256(self.rp.id.as_bytes()).to_vec();
        if attested {
            flags |= 0x40;
        }
        out.push(flags);
        out.extend_from_slice(&self.count.to_be_bytes());
        if attested {
            let jwk = self.key.to_jwk_public_key();
            let coord = |name: &str| {
                let text = jwk.parameter(name).and_then(|v| v.as_str()).unwrap_or_default();
                base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, text).unwrap_or_default()
            };
            let cose = Cbor::Map(vec![
                (Cbor::from(1), Cbor::from(2)),
                (Cbor::from(3), Cbor::from(-7)),
                (Cbor::from(-1), Cbor::from(1)),
                (Cbor::from(-2), Cbor::Bytes(coord("x"))),
                (Cbor::from(-3), Cbor::Bytes(coord("y"))),
            ]);
            out.extend_from_slice(&[0u8; 16]);
            out.extend_from_slice(&(self.credential_id.len() as u16).to_be_bytes());
            out.extend_from_slice(&self.credential_id);
            let _ = ciborium::ser::into_writer(&cose, &mut out);
        }
        out
    }

    /// `navigator.credentials.create`: clientDataJSON and the attestation object.
    pub fn create(&mut self, challenge: &str) -> (Vec<u8>, Vec<u8>) {
        let cdj = self.client_data("webauthn.create", challenge);
        let object = Cbor::Map(vec![
            (Cbor::from("fmt"), Cbor::from("none")),
            (Cbor::from("attStmt"), Cbor::Map(vec![])),
            (Cbor::from("authData"), Cbor::Bytes(self.auth_data(true))),
        ]);
        let mut att = Vec::new();
        let _ = ciborium::ser::into_writer(&object, &mut att);
        (cdj, att)
    }

    /// `navigator.credentials.get`: clientDataJSON, authenticator data and the DER
    /// signature over both.
    pub fn get(&mut self, challenge: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let key = self.key.clone();
        self.get_signed_by(&key, challenge)
    }

    /// An assertion for this authenticator's site, signed with `other`'s key (a
    /// credential used where it was not registered).
    pub fn get_with(&mut self, other: &Authenticator, challenge: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        self.get_signed_by(&other.key.clone(), challenge)
    }

    fn get_signed_by(&mut self, key: &EcKeyPair, challenge: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let cdj = self.client_data("webauthn.get", challenge);
        let ad = self.auth_data(false);
        let mut signed = ad.clone();
        signed.extend_from_slice(&sha256(&cdj));
        let raw = ES256
            .signer_from_jwk(&key.to_jwk_key_pair())
            .and_then(|s| s.sign(&signed))
            .unwrap_or_default();
        (cdj, ad, raw_to_der(&raw))
    }
}
