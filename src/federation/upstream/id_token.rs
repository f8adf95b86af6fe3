//! An upstream's ID token (OpenID Connect Core §3.1.3.7: signature with the cached
//! key set, refetched once for an unknown key; issuer, audience, `azp`, nonce, age),
//! userinfo merged into the profile (§5.3), the group claim, and the signature of
//! an upstream's logout token.

use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use openidconnect::core::{CoreJsonWebKey, CoreJsonWebKeySet, CoreJwsSigningAlgorithm, CoreProviderMetadata};
use openidconnect::{
    ClaimsVerificationError, ClientId, ClientSecret, IdTokenVerifier, JsonWebKey, Nonce, SignatureVerificationError,
};
use serde_json::{Map, Value};

use super::{Discovered, UpstreamIdToken, Upstreams, ALGS, MAX_TOKEN_AGE, SKEW};
use crate::db::providers::Provider;
use crate::federation::{Profile, UpstreamError};

pub(super) async fn verify_id_token(
    ups: &Upstreams,
    p: &Provider,
    secret: &str,
    d: &Arc<Discovered>,
    raw: &str,
    nonce: (&str, Option<i64>),
    now: i64,
) -> Result<Profile, UpstreamError> {
    let issuer = p.issuer.as_deref().unwrap_or_default();
    match check_id_token(p, secret, &d.metadata, &d.jwks, raw, nonce, now) {
        Err(ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey)) => {
            match ups.refresh_keys(issuer, d, now).await {
                Some(fresh) => check_id_token(p, secret, &fresh.metadata, &fresh.jwks, raw, nonce, now),
                None => Err(ClaimsVerificationError::SignatureVerification(
                    SignatureVerificationError::NoMatchingKey,
                )),
            }
        }
        other => other,
    }
    .map_err(|e| UpstreamError::Refused(format!("the upstream's ID token is not valid: {e}")))
}

fn check_id_token(
    p: &Provider,
    secret: &str,
    metadata: &CoreProviderMetadata,
    jwks: &CoreJsonWebKeySet,
    raw: &str,
    (nonce, max_age): (&str, Option<i64>),
    now: i64,
) -> Result<Profile, ClaimsVerificationError> {
    let token = UpstreamIdToken::from_str(raw).map_err(|e| ClaimsVerificationError::Other(e.to_string()))?;
    let at = |t: i64| DateTime::<Utc>::from_timestamp(t, 0).unwrap_or_default();
    let verifier = IdTokenVerifier::new_confidential_client(
        ClientId::new(p.client_id.clone()),
        ClientSecret::new(secret.to_string()),
        metadata.issuer().clone(),
        jwks.clone(),
    )
    .set_allowed_algs(ALGS)
    // Tolerates an upstream clock ahead of ours: a token is taken as expired only
    // SKEW seconds after its `exp`.
    .set_time_fn(move || at(now - SKEW))
    .set_issue_time_verifier_fn(move |iat| {
        let iat = iat.timestamp();
        if iat > now + SKEW {
            Err(format!("issued in the future ({iat})"))
        } else if iat < now - MAX_TOKEN_AGE {
            Err(format!("issued too long ago ({iat})"))
        } else {
            Ok(())
        }
    })
    .set_auth_time_verifier_fn(move |auth_time| match (max_age, auth_time) {
        (None, _) => Ok(()),
        (Some(m), Some(t)) if now - t.timestamp() <= m + SKEW => Ok(()),
        (Some(_), Some(_)) => Err("the upstream sign-in is older than max_age".into()),
        (Some(_), None) => Err("max_age was asked and the token has no auth_time".into()),
    });
    let claims = token.into_claims(&verifier, &Nonce::new(nonce.to_string()))?;
    // Core §3.1.3.7 items 4 and 5: with several audiences the authorized party must be
    // named, and when named it must be this client (openidconnect leaves azp to us).
    let client = p.client_id.as_str();
    match claims.authorized_party() {
        Some(azp) if azp.as_str() != client => {
            return Err(ClaimsVerificationError::InvalidAudience(format!(
                "azp is {}",
                azp.as_str()
            )));
        }
        None if claims.audiences().len() > 1 => {
            return Err(ClaimsVerificationError::InvalidAudience(
                "several audiences and no azp".into(),
            ));
        }
        _ => {}
    }
    let extra = &claims.additional_claims().rest;
    Ok(Profile {
        subject: claims.subject().as_str().to_string(),
        preferred_username: claims.preferred_username().map(|u| u.as_str().to_string()),
        name: claims.name().and_then(|n| n.get(None)).map(|n| n.as_str().to_string()),
        email: claims.email().map(|e| e.as_str().to_string()),
        email_verified: claims.email_verified().unwrap_or(false),
        groups: p
            .group_claim
            .as_deref()
            .and_then(|c| groups_of(&Value::Object(extra.clone()), c)),
        amr: claims
            .auth_method_refs()
            .map(|v| v.iter().map(|a| a.as_str().to_string()).collect())
            .unwrap_or_default(),
        sid: extra.get("sid").and_then(Value::as_str).map(str::to_string),
    })
}

/// Userinfo fills in what the ID token left out (Core §5.3.2: its `sub` must be the
/// ID token's, else the answer is not about this person).
pub(super) fn merge_userinfo(
    profile: &mut Profile,
    info: &Value,
    group_claim: Option<&str>,
) -> Result<(), UpstreamError> {
    if info.get("sub").and_then(Value::as_str) != Some(profile.subject.as_str()) {
        return Err(UpstreamError::Refused(
            "the upstream's userinfo is about another subject".into(),
        ));
    }
    let text = |k: &str| info.get(k).and_then(Value::as_str).map(str::to_string);
    if profile.preferred_username.is_none() {
        profile.preferred_username = text("preferred_username");
    }
    if profile.name.is_none() {
        profile.name = text("name");
    }
    if profile.email.is_none() {
        profile.email = text("email");
        profile.email_verified = info.get("email_verified") == Some(&Value::Bool(true));
    }
    if profile.groups.is_none() {
        profile.groups = group_claim.and_then(|c| groups_of(info, c));
    }
    Ok(())
}

/// The values of a group claim, by name or dotted path: an array of strings, or one
/// string; `None` when the claim is absent.
pub fn groups_of(claims: &Value, path: &str) -> Option<Vec<String>> {
    let mut at = claims;
    for part in path.split('.') {
        at = at.get(part)?;
    }
    match at {
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .take(1000)
                .map(str::to_string)
                .collect(),
        ),
        Value::String(one) => Some(vec![one.clone()]),
        _ => None,
    }
}

/// A logout token's claims once its signature is checked with the upstream's keys
/// (refetched once for an unknown `kid`). The claims themselves are `logout`'s to check.
pub async fn verified_claims(ups: &Upstreams, p: &Provider, raw: &str, now: i64) -> Result<Map<String, Value>, String> {
    let issuer = p.issuer.as_deref().unwrap_or_default();
    let d = ups.discover(issuer, now).await.map_err(|e| e.to_string())?;
    match signed_claims(&d.jwks, raw) {
        Err(Unsigned::NoKey) => match ups.refresh_keys(issuer, &d, now).await {
            Some(fresh) => signed_claims(&fresh.jwks, raw),
            None => Err(Unsigned::NoKey),
        },
        other => other,
    }
    .map_err(|e| match e {
        Unsigned::NoKey => "no upstream key matches the token".to_string(),
        Unsigned::Bad(m) => m,
    })
}

enum Unsigned {
    NoKey,
    Bad(String),
}

/// The claims of a compact JWS whose signature one key of `jwks` (by `kid`) verifies
/// with an asymmetric algorithm.
fn signed_claims(jwks: &CoreJsonWebKeySet, raw: &str) -> Result<Map<String, Value>, Unsigned> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use base64::Engine;
    let bad = |m: &str| Unsigned::Bad(m.to_string());
    let mut parts = raw.split('.');
    let (Some(h), Some(c), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad("not a signed JWT"));
    };
    let header: Value = B64
        .decode(h)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| bad("the JWT header is not JSON"))?;
    let alg: CoreJwsSigningAlgorithm = header
        .get("alg")
        .cloned()
        .and_then(|a| serde_json::from_value(a).ok())
        .filter(|a| ALGS.contains(a))
        .ok_or_else(|| bad("the JWT's algorithm is not accepted"))?;
    let kid = header.get("kid").and_then(Value::as_str);
    let candidates: Vec<&CoreJsonWebKey> = jwks
        .keys()
        .iter()
        .filter(|k| kid.is_none() || k.key_id().map(|id| id.as_str()) == kid)
        .collect();
    let signature = B64.decode(s).map_err(|_| bad("the JWT signature is not base64url"))?;
    let input = format!("{h}.{c}");
    let mut matched = false;
    for key in candidates {
        match key.verify_signature(&alg, input.as_bytes(), &signature) {
            Ok(()) => {
                let claims: Value = B64
                    .decode(c)
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .ok_or_else(|| bad("the JWT claims are not JSON"))?;
                return match claims {
                    Value::Object(m) => Ok(m),
                    _ => Err(bad("the JWT claims are not an object")),
                };
            }
            Err(SignatureVerificationError::CryptoError(_)) => matched = true,
            Err(_) => {}
        }
    }
    if matched {
        Err(bad("the JWT signature does not verify"))
    } else {
        Err(Unsigned::NoKey)
    }
}
