//! "Test sign-in" for a client: a real authorization for the signed-in administrator,
//! through the code issuance of `/authorize` and the code exchange of `/token`, to
//! Tessera's own redirect `ISSUER/admin/clients/{id}/test` with PKCE S256 and a nonce.
//! The tokens are then checked as a relying party checks them (OpenID Connect Core
//! §3.1.3.7, §3.1.3.8) and revoked at once. Tessera runs the exchange itself, so the
//! client counts as authenticated; no consent is asked, since nothing leaves Tessera.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{Map, Value};

use super::authorize::{issue_code, AuthRequest, AuthorizeError, Prompt};
use super::{ErrorCode, OAuthError};
use crate::audit::Event;
use crate::crypto::keys::Alg;
use crate::crypto::random::random_id;
use crate::crypto::{assertion, jwt, sha256_b64};
use crate::db::{self, clients::Client, sessions::Session};
use crate::domain::Secret;
use crate::error::Internal;
use crate::oidc::Ctx;

/// The scope a test sign-in asks for: what nearly every relying party asks, plus the
/// custom scopes of the client's claim mapping, so that every rule shows.
pub fn test_scope(client: &Client) -> String {
    let mut scope = vec!["openid", "profile", "email"];
    for s in client.claim_rules.iter().filter_map(|r| r.scope.as_deref()) {
        if !scope.contains(&s) {
            scope.push(s);
        }
    }
    scope.join(" ")
}

/// One check a relying party makes, passed or not, with what was compared.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// A token as the page shows it: header and claims, pretty-printed.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub header: String,
    pub claims: String,
}

/// What a test sign-in did.
#[derive(Debug, Default)]
pub struct TestRun {
    /// Why no token was issued (allowed groups, grant types, the token endpoint's refusal).
    pub refused: Option<String>,
    pub redirect_uri: String,
    pub scope: String,
    pub id_token: Option<Decoded>,
    pub access_token: Option<Decoded>,
    pub checks: Vec<Check>,
    /// Whether the grant was revoked afterwards, checked by reading it back.
    pub revoked: bool,
}

impl TestRun {
    pub fn all_passed(&self) -> bool {
        self.refused.is_none() && !self.checks.is_empty() && self.checks.iter().all(|c| c.passed)
    }
}

fn decode_part(token: &str, index: usize) -> Option<Map<String, Value>> {
    let part = token.split('.').nth(index)?;
    match serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

fn decoded(token: &str) -> Decoded {
    let pretty = |m: Option<Map<String, Value>>| {
        serde_json::to_string_pretty(&Value::Object(m.unwrap_or_default())).unwrap_or_default()
    };
    Decoded {
        header: pretty(decode_part(token, 0)),
        claims: pretty(decode_part(token, 1)),
    }
}

fn check(name: &'static str, passed: bool, detail: impl Into<String>) -> Check {
    Check {
        name,
        passed,
        detail: detail.into(),
    }
}

/// The checks of Core §3.1.3.7 items 2, 3, 6, 9, 11 and §3.1.3.8 (at_hash), with the
/// signatures verified against the JWK set `/jwks` publishes, as an RP would.
fn rp_checks(cx: &Ctx<'_>, client_id: &str, nonce: &str, id_token: &str, access_token: &str) -> Vec<Check> {
    let jwks = cx.keys.current().jwks_json().to_string();
    let mut out = Vec::new();
    let id = assertion::verify_with_jwks(&jwks, id_token);
    out.push(check(
        "ID token signature",
        id.is_ok(),
        "verified with a key of the published JWKS",
    ));
    let at = assertion::verify_with_jwks(&jwks, access_token);
    out.push(check(
        "access token signature",
        at.is_ok(),
        "verified with a key of the published JWKS",
    ));
    let claims = id.unwrap_or_default();
    let text = |k: &str| claims.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    out.push(check(
        "iss",
        text("iss") == cx.issuer,
        format!("{} = {}", text("iss"), cx.issuer),
    ));
    let aud_ok = match claims.get("aud") {
        Some(Value::String(a)) => a == client_id,
        Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(client_id)),
        _ => false,
    };
    out.push(check("aud", aud_ok, format!("contains {client_id}")));
    let exp = claims.get("exp").and_then(Value::as_i64).unwrap_or(0);
    out.push(check("exp", exp > cx.now, format!("{exp} is after now ({})", cx.now)));
    out.push(check("nonce", text("nonce") == nonce, "equals the nonce sent"));
    let header_alg = decode_part(id_token, 0).and_then(|h| h.get("alg").and_then(Value::as_str).and_then(Alg::parse));
    let at_hash_ok = header_alg.is_some_and(|alg| jwt::half_hash(alg, access_token) == text("at_hash"));
    out.push(check(
        "at_hash",
        at_hash_ok,
        "left half of the access token's hash, with the ID token's algorithm",
    ));
    out
}

/// Runs the test sign-in for `session`'s user; `event` (`client.test_sign_in`, with
/// actor and address) is written with the revocation.
pub async fn run(
    cx: &Ctx<'_>,
    client: &Client,
    session: &Session,
    ip: &str,
    event: Event,
) -> Result<TestRun, Internal> {
    let mut out = TestRun {
        redirect_uri: cx.url(&format!("/admin/clients/{}/test", client.client_id)),
        scope: test_scope(client),
        ..TestRun::default()
    };
    out.refused = refusal(cx, client, session).await?;
    if out.refused.is_some() {
        return Ok(out);
    }
    let verifier = Secret::generate();
    let nonce = random_id();
    let code = code_for(cx, client, session, &out, &verifier, &nonce).await?;
    let form: super::grant::Form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", out.redirect_uri.as_str()),
        ("code_verifier", verifier.expose()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let tokens = match super::token::grant(cx, client, &form, ip, None).await {
        Ok(t) => t,
        Err(OAuthError {
            code: ErrorCode::ServerError,
            ..
        }) => return Err(Internal::Failed),
        Err(OAuthError {
            code: ErrorCode::TemporarilyUnavailable,
            ..
        }) => return Err(Internal::Busy),
        Err(e) => {
            out.refused = Some(format!("the token endpoint refused the code: {e}"));
            return Ok(out);
        }
    };
    let id_token = tokens.id_token.clone().unwrap_or_default();
    out.checks = rp_checks(cx, &client.client_id, &nonce, &id_token, &tokens.access_token);
    out.id_token = Some(decoded(&id_token));
    out.access_token = Some(decoded(&tokens.access_token));
    out.revoked = revoke(cx, client, &tokens.access_token, event).await?;
    Ok(out)
}

/// Why a sign-in of this user to this client would be refused before any code, if it
/// would.
async fn refusal(cx: &Ctx<'_>, client: &Client, session: &Session) -> Result<Option<String>, Internal> {
    let (cid, uid) = (client.client_id.clone(), session.user_id);
    if !cx.db.read(move |c| db::clients::group_allowed(c, &cid, uid)).await? {
        return Ok(Some(format!(
            "you are not a member of a group allowed to use this client ({}); a sign-in would be refused",
            client.allowed_groups.join(", ")
        )));
    }
    if !client.allows_grant("authorization_code") {
        return Ok(Some(
            "the client is not registered for the authorization code flow".into(),
        ));
    }
    Ok(None)
}

/// A real code for the test run's request, issued as the authorization endpoint would
/// (PKCE S256 with `verifier`, `nonce`).
async fn code_for(
    cx: &Ctx<'_>,
    client: &Client,
    session: &Session,
    out: &TestRun,
    verifier: &Secret,
    nonce: &str,
) -> Result<String, Internal> {
    let req = AuthRequest {
        client_id: client.client_id.clone(),
        redirect_uri: out.redirect_uri.clone(),
        scope: out.scope.clone(),
        state: None,
        nonce: Some(nonce.to_string()),
        code_challenge: Some(sha256_b64(verifier.expose().as_bytes())),
        prompt: Prompt::default(),
        max_age: None,
        login_hint: None,
        claims: None,
        hint_sub: None,
        form_post: false,
        idp: None,
        resource: Vec::new(),
        dpop_jkt: None,
        ui_locales: None,
    };
    let response = issue_code(cx, &req, session).await.map_err(|e| match e {
        AuthorizeError::Server(e) => e,
        _ => Internal::Failed,
    })?;
    response
        .params
        .iter()
        .find(|(k, _)| *k == "code")
        .map(|(_, v)| v.clone())
        .ok_or(Internal::Failed)
}

/// Revokes the grant behind the test's access token, writing `event` with it; whether
/// the token is no longer active.
async fn revoke(cx: &Ctx<'_>, client: &Client, access_token: &str, event: Event) -> Result<bool, Internal> {
    let at = decode_part(access_token, 1).unwrap_or_default();
    let field = |k: &str| at.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let (gid, jti, now) = (field("gid"), field("jti"), cx.now);
    let target = format!("client:{}", client.client_id);
    Ok(cx
        .db
        .write(move |c| {
            db::grants::revoke_grant(c, &gid, now)?;
            event
                .target(target)
                .detail(serde_json::json!({ "grant": gid }))
                .write(c, now)?;
            Ok(!db::grants::access_token_active(c, &gid, &jti)?)
        })
        .await?)
}
