//! DPoP (RFC 9449): proofs of possession of a key at the token endpoint and at
//! resources, the server nonces that keep proofs fresh, and the rules for tokens
//! bound to that key.

use serde_json::{Map, Value};

use super::discovery::CLIENT_SIGNING_ALGS;
use super::{ErrorCode, OAuthError};
use crate::crypto::dpop as proofs;
use crate::db::{self, clients::Client, jtis, DbError, Tx};
use crate::oidc::Ctx;

/// Seconds a proof's `iat` may differ from our clock, either way (RFC 9449 §11.1).
/// A proof is made just before its request, so a minute covers the round trip and
/// ordinary clock skew of devices; the jti of every accepted proof is kept for this
/// long too, so a wider window would only make the replay cache bigger, not safer.
pub const IAT_WINDOW: i64 = 60;

/// Seconds one server nonce is issued for (RFC 9449 §8). The previous slot's is still
/// taken, so a nonce lives between five and ten minutes: long enough for a client to
/// reuse it across a sign-in, short enough that a proof made in advance goes stale.
pub const NONCE_SLOT: i64 = 300;

/// What a request must look like to its proof: the method and URL it was sent to, and
/// at a resource the access token it carries (`ath`, RFC 9449 §4.3 step 11).
pub struct Expect<'a> {
    pub method: &'a str,
    /// The endpoint's path on this issuer (`/token`, `/userinfo`).
    pub path: &'a str,
    pub access_token: Option<&'a str>,
}

/// A proof that passed every check but the replay check, which needs a write: the
/// grant's own transaction records it (`record`), or `record_alone` does.
#[derive(Debug, Clone)]
pub struct Proof {
    /// The JWK SHA-256 thumbprint of the proof's key: what tokens are bound to.
    pub jkt: String,
    /// SHA-256 of the key's thumbprint and the proof's `jti`: the same `jti` from two
    /// keys is two proofs, and no client-chosen text is stored.
    replay_key: String,
    /// The proof is stale after this, so its `jti` need not be kept longer.
    expires_at: i64,
}

fn invalid(description: &'static str) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidDpopProof, description)
}

/// The refusal of a proof seen before (RFC 9449 §11.1).
pub fn replayed() -> OAuthError {
    invalid("the DPoP proof was already used")
}

/// The nonce a client should put in its next proofs (RFC 9449 §8.1, the `DPoP-Nonce`
/// header); `None` when nonces are not required.
pub fn nonce(cx: &Ctx<'_>) -> Option<String> {
    cx.settings
        .protocol
        .dpop_nonce
        .then(|| cx.dpop_nonces.nonce(cx.now.div_euclid(NONCE_SLOT)))
}

/// RFC 9449 §4.3: verifies a proof for a request that looks like `expect`.
pub fn verify(cx: &Ctx<'_>, proof: &str, expect: &Expect<'_>) -> Result<Proof, OAuthError> {
    // Steps 1–7: the JWS, its typ and alg, the public key and the signature.
    let verified = proofs::verify_proof(proof, CLIENT_SIGNING_ALGS).map_err(|e| invalid(e.0))?;
    let claims = &verified.claims;
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    // Step 8 (a): `jti` names this proof; a bounded length keeps it from being a payload.
    let jti = text("jti")
        .filter(|j| !j.is_empty() && j.len() <= 256)
        .ok_or(invalid("the DPoP proof has no usable jti"))?;
    // Step 9: `htm` is the request's method, exactly.
    if text("htm") != Some(expect.method) {
        return Err(invalid("the DPoP proof's htm is not this request's method"));
    }
    // Step 10: `htu` is this endpoint, without query and fragment, after normalisation.
    let ours = normalised_htu(&cx.url(expect.path));
    if ours.is_none() || text("htu").and_then(normalised_htu) != ours {
        return Err(invalid("the DPoP proof's htu is not this endpoint"));
    }
    // Step 11: `iat` within the window around our clock (§11.1).
    let iat = claims
        .get("iat")
        .and_then(Value::as_i64)
        .ok_or(invalid("the DPoP proof has no iat"))?;
    // abs_diff: an `iat` near i64's ends must not overflow.
    if iat.abs_diff(cx.now) > IAT_WINDOW.unsigned_abs() {
        return Err(invalid("the DPoP proof's iat is too far from the current time"));
    }
    // Step 12 (resources): `ath` is the hash of the token it accompanies.
    if let Some(token) = expect.access_token {
        if text("ath") != Some(crate::crypto::sha256_b64(token.as_bytes()).as_str()) {
            return Err(invalid("the DPoP proof's ath does not match the access token"));
        }
    }
    // Step 10 (nonce, §8): checked last, so that `use_dpop_nonce` tells a client whose
    // proof is otherwise right that only the nonce is missing.
    if cx.settings.protocol.dpop_nonce {
        let slot = cx.now.div_euclid(NONCE_SLOT);
        let fresh = text("nonce").is_some_and(|n| cx.dpop_nonces.accepts(n, &[slot, slot - 1]));
        if !fresh {
            return Err(OAuthError::new(
                ErrorCode::UseDpopNonce,
                "the DPoP proof must carry the nonce of the DPoP-Nonce header",
            ));
        }
    }
    let replay_key = crate::crypto::sha256_b64(format!("{}.{jti}", verified.jkt).as_bytes());
    Ok(Proof {
        jkt: verified.jkt,
        replay_key,
        // One second past the last moment `iat` is still accepted.
        expires_at: iat + IAT_WINDOW + 1,
    })
}

/// RFC 9449 §4.3 step 10 with RFC 3986 §6.2.2 (case and percent-encoding) and §6.2.3
/// (default port, empty path) normalisation; query and fragment dropped. `None` when
/// `value` is not an absolute http(s) URL.
fn normalised_htu(value: &str) -> Option<String> {
    if value.len() > 2048 {
        return None;
    }
    // The url crate lower-cases scheme and host, drops a default port, makes an empty
    // path `/` and removes dot segments.
    let url = url::Url::parse(value).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let mut out = format!("{}://{}", url.scheme(), url.host_str()?);
    if let Some(port) = url.port() {
        out.push_str(&format!(":{port}"));
    }
    out.push_str(&normalise_percent(url.path()));
    Some(out)
}

/// RFC 3986 §6.2.2.1–2: percent-encoded unreserved characters decoded, the remaining
/// escapes in upper case.
fn normalise_percent(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                let c = (h * 16 + l) as u8;
                if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
                    out.push(c as char);
                } else {
                    out.push_str(&format!("%{c:02X}"));
                }
                i += 3;
                continue;
            }
        }
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

/// RFC 9449 §5: the proof of a token request, if any. A client registered as
/// `dpop_bound_access_tokens` (§5.2) must send one; without it the answer is
/// `invalid_dpop_proof`, the code that tells the client what to fix (a proof), where
/// `invalid_request` would not say which part of the request is wrong.
pub fn at_token(cx: &Ctx<'_>, client: &Client, header: Option<&str>) -> Result<Option<Proof>, OAuthError> {
    match header {
        None if client.dpop_bound => Err(invalid("this client must send a DPoP proof")),
        None => Ok(None),
        Some(proof) => verify(
            cx,
            proof,
            &Expect {
                method: "POST",
                path: "/token",
                access_token: None,
            },
        )
        .map(Some),
    }
}

/// Records the proof's `jti` inside the caller's transaction; `false` when it was
/// seen before, on any node (RFC 9449 §11.1).
pub fn record(c: &Tx<'_>, proof: &Proof) -> Result<bool, DbError> {
    Ok(db::jtis::record(c, jtis::DPOP, &proof.replay_key, proof.expires_at)?.won())
}

/// `record` in a transaction of its own, where the request writes nothing else.
pub async fn record_alone(cx: &Ctx<'_>, proof: &Proof) -> Result<(), OAuthError> {
    let p = proof.clone();
    if cx.db.write(move |c| record(c, &p)).await? {
        Ok(())
    } else {
        Err(replayed())
    }
}

/// RFC 9449 §10.1: a code bound with `dpop_jkt` is exchanged only with a proof of
/// that key.
pub fn fits_code(bound: Option<&str>, proof: Option<&Proof>) -> bool {
    match bound {
        None => true,
        Some(jkt) => proof.is_some_and(|p| p.jkt == jkt),
    }
}

/// RFC 9449 §5, RFC 9700 §4.14.2: a grant of a public client that proved a key at its
/// first exchange is bound to that key; its refresh token is then sender-constrained.
pub fn grant_binding(client: &Client, proof: Option<&Proof>) -> Option<String> {
    proof.filter(|_| client.is_public()).map(|p| p.jkt.clone())
}

/// RFC 9449 §10: the `dpop_jkt` authorization parameter, a JWK SHA-256 thumbprint.
pub fn jkt_param(value: Option<&str>) -> Result<Option<String>, &'static str> {
    match value {
        None => Ok(None),
        Some(v) if proofs::is_thumbprint(v) => Ok(Some(v.to_string())),
        Some(_) => Err("dpop_jkt is not a base64url SHA-256 JWK thumbprint"),
    }
}

/// How a resource request presented its access token (RFC 9449 §7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Bearer,
    DPoP,
}

/// What a resource request brought besides the token: its scheme, its `DPoP` header
/// and its method, for the proof's `htm`.
pub struct Presented<'a> {
    pub scheme: Scheme,
    pub proof: Option<&'a str>,
    pub method: &'a str,
}

/// The `cnf.jkt` of an access token's claims (RFC 9449 §6.1).
pub fn bound_key(claims: &Map<String, Value>) -> Option<&str> {
    claims.get("cnf")?.get("jkt")?.as_str()
}

/// RFC 9449 §7: a valid access token is accepted at `path` only as its binding
/// requires. A bound token as `Bearer` is refused (§7.2: else DPoP protects nothing).
/// An unbound token with the `DPoP` scheme is refused too: §7.1 requires the token's
/// key to match the proof's, and a token with no key matches none; accepting it would
/// let a client believe its token is sender-constrained when it is not.
pub async fn at_resource(
    cx: &Ctx<'_>,
    claims: &Map<String, Value>,
    token: &str,
    path: &str,
    presented: &Presented<'_>,
) -> Result<(), OAuthError> {
    let bound = bound_key(claims);
    let jkt = match (presented.scheme, bound) {
        (Scheme::Bearer, None) => return Ok(()),
        (Scheme::Bearer, Some(_)) => {
            return Err(OAuthError::new(
                ErrorCode::InvalidToken,
                "a DPoP-bound access token must be sent with the DPoP scheme and a proof",
            ))
        }
        (Scheme::DPoP, None) => {
            return Err(OAuthError::new(
                ErrorCode::InvalidToken,
                "the access token is not DPoP-bound; send it as a Bearer token",
            ))
        }
        (Scheme::DPoP, Some(jkt)) => jkt,
    };
    let header = presented
        .proof
        .ok_or(invalid("a DPoP proof is required with this token"))?;
    let proof = verify(
        cx,
        header,
        &Expect {
            method: presented.method,
            path,
            access_token: Some(token),
        },
    )?;
    if proof.jkt != jkt {
        return Err(invalid("the DPoP proof's key is not the key the token is bound to"));
    }
    record_alone(cx, &proof).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn htu_is_compared_after_rfc_3986_normalisation() {
        let ours = normalised_htu("https://id.example/token");
        for same in [
            "https://id.example/token",
            "HTTPS://ID.EXAMPLE/token",
            "https://id.example:443/token",
            "https://id.example/token?x=1#f",
            "https://id.example/%74oken",
            "https://id.example/a/../token",
        ] {
            assert_eq!(normalised_htu(same), ours, "{same}");
        }
        for other in [
            "https://id.example/Token",
            "http://id.example/token",
            "https://id.example:8443/token",
            "https://other.example/token",
            "https://id.example/token/",
            "/token",
            "ftp://id.example/token",
        ] {
            assert_ne!(normalised_htu(other), ours, "{other}");
        }
        assert_eq!(normalise_percent("/a%2fb%7e%"), "/a%2Fb~%");
    }

    #[test]
    fn dpop_jkt_must_be_a_thumbprint() {
        assert_eq!(jkt_param(None), Ok(None));
        let t = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";
        assert_eq!(jkt_param(Some(t)), Ok(Some(t.to_string())));
        assert!(jkt_param(Some("short")).is_err());
        assert!(jkt_param(Some(&format!("{t}A"))).is_err());
    }
}
