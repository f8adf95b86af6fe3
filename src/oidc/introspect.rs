//! Looking at tokens: introspection (RFC 7662), revocation (RFC 7009) and the bearer
//! check behind userinfo (RFC 6750). An access token is verified by signature and
//! expiry, then one indexed read tells whether it was revoked.

use serde_json::{json, Map, Value};

use super::{ErrorCode, OAuthError};
use crate::crypto::TokenHash;
use crate::db::{self, clients::Client};
use crate::oidc::Ctx;

/// The claims of an access token that is valid right now.
#[derive(Debug)]
pub struct AccessToken {
    pub claims: Map<String, Value>,
}

impl AccessToken {
    pub fn str_claim(&self, name: &str) -> &str {
        self.claims.get(name).and_then(Value::as_str).unwrap_or_default()
    }
}

fn looks_like_jwt(token: &str) -> bool {
    token.bytes().filter(|b| *b == b'.').count() == 2
}

/// Verifies an access token fully: signature, type, issuer, expiry, and revocation.
pub async fn check_access_token(cx: &Ctx<'_>, token: &str) -> Result<Option<AccessToken>, OAuthError> {
    if !looks_like_jwt(token) {
        return Ok(None);
    }
    let Ok(signed) = super::keys::verify(cx, token).await else {
        return Ok(None);
    };
    let now = cx.now;
    let claims = signed.claims;
    let exp = claims.get("exp").and_then(Value::as_i64).unwrap_or(0);
    let iss_ok = claims.get("iss").and_then(Value::as_str) == Some(cx.issuer);
    // RFC 9068 §4: the `typ` header tells access tokens from ID tokens.
    if signed.typ.as_deref() != Some("at+jwt") || !iss_ok || exp <= now {
        return Ok(None);
    }
    let gid = claims
        .get("gid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let jti = claims
        .get("jti")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let active = cx
        .db
        .read(move |c| db::grants::access_token_active(c, &gid, &jti))
        .await?;
    Ok(active.then_some(AccessToken { claims }))
}

fn inactive() -> Value {
    json!({ "active": false })
}

/// Whether `caller` may learn about an access token with these claims (RFC 7662 §4:
/// the server decides who may introspect what): one marked `introspect_any`, the
/// client it was issued to, or a client its `aud` names.
fn may_see_access(caller: &Client, claims: &Map<String, Value>) -> bool {
    let me = caller.client_id.as_str();
    let named = match claims.get("aud") {
        Some(Value::String(a)) => a == me,
        Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(me)),
        _ => false,
    };
    caller.introspect_any || named || claims.get("client_id").and_then(Value::as_str) == Some(me)
}

/// RFC 7662 §2.2. An authenticated confidential client may introspect the tokens
/// issued to it or naming it in `aud`, and one marked `introspect_any` (a resource
/// server) every token; a public client cannot prove who asks (§2.1) and is refused.
/// A token that is unknown, expired, revoked or not the caller's to see is just
/// `active: false`, so the answer does not tell which of these it is.
pub async fn introspect(cx: &Ctx<'_>, caller: &Client, token: Option<&str>) -> Result<Value, OAuthError> {
    if caller.is_public() {
        return Err(OAuthError::invalid_client("public clients cannot introspect"));
    }
    let token = token.ok_or_else(|| OAuthError::invalid_request("token is required"))?;
    if token.is_empty() || token.len() > 16 * 1024 {
        return Ok(inactive());
    }
    if let Some(at) = check_access_token(cx, token).await? {
        if !may_see_access(caller, &at.claims) {
            return Ok(inactive());
        }
        let mut out = Map::new();
        out.insert("active".into(), Value::Bool(true));
        for name in [
            "scope",
            "client_id",
            "sub",
            "exp",
            "iat",
            "iss",
            "aud",
            "jti",
            "auth_time",
        ] {
            if let Some(v) = at.claims.get(name) {
                out.insert(name.into(), v.clone());
            }
        }
        // RFC 9449 §6.2: a bound token's key and type, so a resource server can check
        // the proof it was sent with.
        match super::dpop::bound_key(&at.claims) {
            Some(jkt) => {
                out.insert("cnf".into(), json!({ "jkt": jkt }));
                out.insert("token_type".into(), Value::from("DPoP"));
            }
            None => {
                out.insert("token_type".into(), Value::from("Bearer"));
            }
        }
        return Ok(Value::Object(out));
    }
    introspect_refresh(cx, caller, token).await
}

/// A refresh token names no audience: only the client it was issued to, or one marked
/// `introspect_any`, sees it active.
async fn introspect_refresh(cx: &Ctx<'_>, caller: &Client, token: &str) -> Result<Value, OAuthError> {
    let hash = TokenHash::of(token);
    let now = cx.now;
    let found = cx
        .db
        .read(move |c| {
            let Some(r) = db::grants::find_refresh(c, &hash)? else {
                return Ok(None);
            };
            let user = match r.grant.user_id {
                Some(id) => db::users::find_by_id(c, id)?,
                None => None,
            };
            Ok(Some((r, user)))
        })
        .await?;
    let seen = |client_id: &str| caller.introspect_any || client_id == caller.client_id;
    match found {
        Some((r, Some(user)))
            if r.used_at.is_none()
                && r.expires_at > now
                && r.grant.revoked_at.is_none()
                && !user.disabled
                && seen(&r.grant.client_id) =>
        {
            let mut out = json!({
                "active": true,
                "token_type": "refresh_token",
                "client_id": r.grant.client_id,
                "sub": user.sub,
                "username": user.username,
                "iss": cx.issuer,
                "exp": r.expires_at,
                "iat": r.created_at,
            });
            // RFC 7662 §2.2: `scope` is OPTIONAL; an empty one is left out.
            if !r.scope.is_empty() {
                out["scope"] = Value::from(r.scope);
            }
            Ok(out)
        }
        _ => Ok(inactive()),
    }
}

/// RFC 7009 §2.1: revokes a token the client holds. Unknown tokens are not an error
/// (§2.2); a token issued to another client is refused.
pub async fn revoke(
    cx: &Ctx<'_>,
    client: &Client,
    token: &str,
    hint: Option<&str>,
    ip: &str,
) -> Result<(), OAuthError> {
    let ip = ip.to_string();
    match hint {
        None | Some("access_token") | Some("refresh_token") => {}
        Some(_) => {
            return Err(OAuthError::new(
                ErrorCode::UnsupportedTokenType,
                "token_type_hint must be access_token or refresh_token",
            ))
        }
    }
    if token.is_empty() || token.len() > 16 * 1024 {
        return Ok(());
    }
    let not_yours = || OAuthError::new(ErrorCode::UnauthorizedClient, "the token was not issued to this client");
    let now = cx.now;
    if looks_like_jwt(token) {
        let Ok(signed) = super::keys::verify(cx, token).await else {
            return Ok(());
        };
        if signed.typ.as_deref() != Some("at+jwt") {
            return Ok(());
        }
        if signed.claims.get("client_id").and_then(Value::as_str) != Some(client.client_id.as_str()) {
            return Err(not_yours());
        }
        let jti = signed
            .claims
            .get("jti")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let exp = signed.claims.get("exp").and_then(Value::as_i64).unwrap_or(now);
        if !jti.is_empty() && exp > now {
            let event = crate::audit::token("token.revoked", &client.client_id, "access_token", &jti, &ip);
            cx.db
                .write(move |c| {
                    db::grants::revoke_jti(c, &jti, exp)?;
                    event.write(c, now)
                })
                .await?;
        }
        return Ok(());
    }
    let hash = TokenHash::of(token);
    let client_id = client.client_id.clone();
    let mine = cx
        .db
        .write(move |c| match db::grants::find_refresh(c, &hash)? {
            None => Ok(true),
            Some(r) if r.grant.client_id == client_id => {
                // Revoking a refresh token revokes its whole grant (§2.1 SHOULD).
                db::grants::revoke_grant(c, &r.grant.id, now)?;
                crate::audit::token("token.revoked", &client_id, "refresh_token", &r.grant.id, &ip).write(c, now)?;
                Ok(true)
            }
            Some(_) => Ok(false),
        })
        .await?;
    if mine {
        Ok(())
    } else {
        Err(not_yours())
    }
}

/// OpenID Connect Core §5.3: the claims the access token's scope releases, and those
/// the client's claim mapping sends to userinfo (`claims::release`, as for the tokens);
/// a DPoP-bound token only with a proof of its key (RFC 9449 §7).
pub async fn userinfo(
    cx: &Ctx<'_>,
    token: &str,
    presented: &super::dpop::Presented<'_>,
) -> Result<(String, Value), OAuthError> {
    let invalid = || OAuthError::new(ErrorCode::InvalidToken, "the access token is invalid or expired");
    let at = check_access_token(cx, token).await?.ok_or_else(invalid)?;
    super::dpop::at_resource(cx, &at.claims, token, "/userinfo", presented).await?;
    let client_id = at.str_claim("client_id").to_string();
    let scope = crate::domain::Scope::parse(at.str_claim("scope")).unwrap_or_default();
    if !scope.contains("openid") {
        return Err(OAuthError::new(
            ErrorCode::InvalidToken,
            "the token was not issued for openid",
        ));
    }
    let (sub, gid) = (at.str_claim("sub").to_string(), at.str_claim("gid").to_string());
    let found = cx
        .db
        .read(move |c| {
            let Some(mut user) = db::users::find_by_sub(c, &sub)? else {
                return Ok(None);
            };
            db::users::load_groups(c, &mut user)?;
            Ok(Some((user, db::grants::find_grant(c, &gid)?)))
        })
        .await?;
    let Some((user, Some(grant))) = found.filter(|(u, _)| !u.disabled) else {
        return Err(invalid());
    };
    // A deleted client's grants are gone with it, so the grant found means a client.
    let client = cx.clients.get(cx.db, &client_id, cx.now).await?.ok_or_else(invalid)?;
    let released = super::claims::release(&user, &client.claim_rules, &scope, &super::issue::requested(&grant));
    Ok((client_id, Value::Object(released.userinfo.claims)))
}

/// RFC 9701 §5: the introspection answer as a JWT the caller can keep as evidence:
/// `iss`, `aud` (the calling client), `iat` and `token_introspection` (the ordinary
/// answer, `{"active": false}` included), `typ: token-introspection+jwt`, signed with
/// the server's current key. RS256 is what discovery advertises in
/// `introspection_signing_alg_values_supported`, and what every resource server can
/// verify.
pub fn as_jwt(cx: &Ctx<'_>, caller: &Client, introspection: Value) -> Result<String, OAuthError> {
    let mut claims = Map::new();
    claims.insert("iss".into(), Value::from(cx.issuer));
    claims.insert("aud".into(), Value::from(caller.client_id.clone()));
    claims.insert("iat".into(), Value::from(cx.now));
    claims.insert("token_introspection".into(), introspection);
    let keys = cx.keys.current();
    Ok(crate::crypto::jwt::sign(
        &keys,
        crate::crypto::keys::Alg::Rs256,
        "token-introspection+jwt",
        claims,
        cx.now,
    )?)
}
