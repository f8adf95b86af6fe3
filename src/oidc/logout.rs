//! Ending sessions: RP-Initiated Logout 1.0 (validating where the user may be sent
//! afterwards) and Back-Channel Logout 1.0 (signed logout tokens POSTed to each
//! client that holds a grant from the session, retried in the background).

use crate::error::Internal;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::OAuthError;
use crate::crypto::jwt;
use crate::crypto::keys::Alg;
use crate::crypto::random::random_id;
use crate::db::{self, sessions::Session};
use crate::domain::RedirectUri;
use crate::oidc::context::MakeCtx;
use crate::oidc::Ctx;

/// A logout request after validation.
#[derive(Debug, Clone, Default)]
pub struct LogoutRequest {
    /// Where to send the user afterwards, already matched against the registration.
    pub post_logout_redirect_uri: Option<RedirectUri>,
    pub state: Option<String>,
    /// The `sid` and `sub` of a valid `id_token_hint`.
    pub hint: Option<(Option<String>, String)>,
}

/// Why a logout request cannot be honoured as asked; shown as a page, never redirected.
#[derive(Debug)]
pub enum LogoutError {
    Invalid(&'static str),
    Server(Internal),
}

impl From<db::DbError> for LogoutError {
    fn from(e: db::DbError) -> Self {
        LogoutError::Server(e.into())
    }
}

fn one<'a>(params: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, LogoutError> {
    super::unique_param(params, name).map_err(|_| LogoutError::Invalid("a parameter is repeated"))
}

/// RP-Initiated Logout §2–3: the hint and client_id identify the client, whose
/// registered post-logout URIs are the only permitted destinations.
pub async fn validate(cx: &Ctx<'_>, params: &[(String, String)]) -> Result<LogoutRequest, LogoutError> {
    let mut client_id = one(params, "client_id")?.map(str::to_string);
    let mut hint = None;
    if let Some(token) = one(params, "id_token_hint")? {
        let signed = super::keys::verify(cx, token)
            .await
            .map_err(|_| LogoutError::Invalid("id_token_hint is not valid"))?;
        let is_id_token = signed.is_id_token();
        let claims = signed.claims;
        let iss_ok = claims.get("iss").and_then(Value::as_str) == Some(cx.issuer);
        let aud = claims.get("aud").and_then(Value::as_str).map(str::to_string);
        let sub = claims.get("sub").and_then(Value::as_str).map(str::to_string);
        let (true, Some(aud), Some(sub)) = (iss_ok && is_id_token, aud, sub) else {
            return Err(LogoutError::Invalid(
                "id_token_hint is not an ID token from this provider",
            ));
        };
        if client_id.as_deref().is_some_and(|c| c != aud) {
            return Err(LogoutError::Invalid("client_id does not match id_token_hint"));
        }
        client_id = Some(aud);
        hint = Some((claims.get("sid").and_then(Value::as_str).map(str::to_string), sub));
    }
    let post_logout_redirect_uri = match one(params, "post_logout_redirect_uri")? {
        None => None,
        Some(uri) => {
            let Some(id) = client_id else {
                return Err(LogoutError::Invalid(
                    "post_logout_redirect_uri needs client_id or id_token_hint",
                ));
            };
            let client = cx.db.read(move |c| db::clients::find(c, &id)).await?;
            let Some(client) = client.filter(|c| c.post_logout_redirect_uris.iter().any(|r| r == uri)) else {
                return Err(LogoutError::Invalid(
                    "post_logout_redirect_uri is not registered for this client",
                ));
            };
            // §3: without an id_token_hint the OP must not redirect "unless the OP has
            // other means of confirming the legitimacy of the post-logout redirection
            // target". An administrator's registration is such a means; a client that
            // registered itself is not, so the page is shown instead.
            let vouched = hint.is_some() || client.origin == db::clients::ORIGIN_ADMIN;
            vouched.then(|| RedirectUri::unchecked(uri))
        }
    };
    Ok(LogoutRequest {
        post_logout_redirect_uri,
        state: one(params, "state")?.map(|s| s.chars().take(2048).collect()),
        hint,
    })
}

/// Whether the request proves the relying party knows this session, so that no
/// confirmation is needed: a hint for the same session (or user).
pub async fn hint_matches(cx: &Ctx<'_>, req: &LogoutRequest, session: &Session) -> Result<bool, LogoutError> {
    let Some((sid, sub)) = &req.hint else {
        return Ok(false);
    };
    if sid.as_deref() == Some(session.sid.as_str()) {
        return Ok(true);
    }
    let (uid, sub) = (session.user_id, sub.clone());
    Ok(cx
        .db
        .read(move |c| Ok(db::users::find_by_id(c, uid)?.is_some_and(|u| u.sub == sub)))
        .await?)
}

/// The CSRF token of the logout confirmation form: derived from the session cookie,
/// so only a page shown to this browser can carry it.
pub fn confirmation_token(session_cookie: &str) -> String {
    crate::crypto::sha256_b64(format!("logout-confirm:{session_cookie}").as_bytes())
}

/// Ends the session: its grants that were not for offline use are revoked and every
/// client with a back-channel endpoint is queued a logout. The token itself is
/// signed when it is sent (by the server's deliverer, with its issuer), so that this
/// also works from the command line and every retry carries a fresh token.
pub async fn end_session(cx: &Ctx<'_>, session: &Session) -> Result<(), Internal> {
    let now = cx.now;
    let (sid, uid) = (session.sid.clone(), session.user_id);
    cx.db.write(move |c| db::logout::end_session(c, &sid, uid, now)).await?;
    cx.logout_wakeup.notify_one();
    Ok(())
}

/// Ends each listed session as `end_session` does, back-channel logout included.
pub async fn end_listed(cx: &Ctx<'_>, sessions: &[db::sessions::SessionInfo]) -> Result<(), Internal> {
    for s in sessions {
        end_session(cx, &s.as_session()).await?;
    }
    Ok(())
}

/// How long a deliverer holds the deliveries it claimed before another node may.
const DELIVERY_LEASE: i64 = 300;

pub const EVENT: &str = "http://schemas.openid.net/event/backchannel-logout";

/// Back-Channel Logout §2.4: a JWT with the logout event, never a nonce.
fn logout_token(cx: &Ctx<'_>, a: &db::logout::Audience, sub: Option<&str>, sid: &str) -> Result<String, OAuthError> {
    let now = cx.now;
    let mut claims = Map::new();
    claims.insert("iss".into(), Value::from(cx.issuer));
    claims.insert("aud".into(), Value::from(a.client_id.clone()));
    claims.insert("iat".into(), Value::from(now));
    claims.insert("exp".into(), Value::from(now + 120));
    claims.insert("jti".into(), Value::from(random_id()));
    claims.insert("events".into(), json!({ EVENT: {} }));
    if let Some(sub) = sub {
        claims.insert("sub".into(), Value::from(sub));
    }
    if a.wants_sid || sub.is_none() {
        claims.insert("sid".into(), Value::from(sid));
    }
    let keys = cx.keys.current();
    Ok(jwt::sign(
        &keys,
        Alg::parse(&a.alg).unwrap_or(Alg::Rs256),
        "logout+jwt",
        claims,
        cx.now,
    )?)
}

/// Sends queued logout tokens; failures are logged and retried with back-off, and
/// never hold up the person who logged out.
pub fn spawn_deliverer(state: impl MakeCtx) {
    tokio::spawn(async move {
        let wakeup = state.ctx().logout_wakeup;
        // Made on the first delivery: building a client loads the system's trusted
        // certificates (about a megabyte), which a server without back-channel
        // clients never needs.
        let mut http = None;
        loop {
            let _ = tokio::time::timeout(Duration::from_secs(5), wakeup.notified()).await;
            deliver_due(&state, &mut http).await;
        }
    });
}

fn delivery_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// POSTs one logout token; `None` when the client took it (2xx), else why not.
///
/// Only an administrator's client is sent to as its URI says. Any other client chose
/// its URI itself (registration, a metadata document), so the token goes through the
/// outbound fetch policy (`fetch.rs`): https, the name resolved now and every address
/// checked to be public, the connection made to those addresses only. A row queued
/// before its registration was checked, or a name that has since moved to a private
/// address, is refused here and never sent.
async fn send(cx: &Ctx<'_>, http: &reqwest::Client, a: &db::logout::Audience, token: &str) -> Option<String> {
    let id = a.client_id.clone();
    let chosen_by_admin = match cx.db.read(move |c| db::clients::find(c, &id)).await {
        Ok(found) => found.is_some_and(|c| c.origin == db::clients::ORIGIN_ADMIN),
        Err(e) => return Some(format!("cannot read the client: {e}")),
    };
    let form = [("logout_token", token)];
    let status = if chosen_by_admin {
        match http.post(&a.uri).form(&form).send().await {
            Ok(r) => r.status().as_u16(),
            Err(e) => return Some(e.to_string()),
        }
    } else {
        match cx.clients.fetcher().post_form(&a.uri, &form).await {
            Ok(s) => s,
            Err(e) => return Some(e.to_string()),
        }
    };
    (!(200..300).contains(&status)).then(|| format!("status {status}"))
}

/// One pass over the queue, under one context. Each token is signed under a fresh one,
/// so that its `iat` and `exp` are those of its sending even when the endpoints before
/// it in the pass were slow to answer.
async fn deliver_due(state: &impl MakeCtx, http: &mut Option<reqwest::Client>) {
    let cx = state.ctx();
    let now = cx.now;
    // Claimed for longer than a pass can take (50 sends of at most 5 s each).
    let lease = now + DELIVERY_LEASE;
    let due = match cx.db.write(move |c| db::logout::claim_due(c, now, lease, 50)).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read pending logout deliveries");
            return;
        }
    };
    if due.is_empty() {
        return;
    }
    let http = match http {
        Some(c) => &*c,
        None => match delivery_client() {
            Ok(c) => &*http.insert(c),
            Err(e) => {
                // The claims lapse with their lease and the next pass tries again.
                tracing::error!(error = %e, "cannot build the back-channel logout client");
                return;
            }
        },
    };
    for d in due {
        let token = match logout_token(&state.ctx(), &d.audience, d.sub.as_deref(), &d.sid) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(client_id = %d.audience.client_id, error = %e, "cannot sign a logout token");
                continue;
            }
        };
        let outcome = send(&cx, http, &d.audience, &token).await;
        let id = d.id;
        let result = match outcome {
            None => {
                tracing::info!(client_id = %d.audience.client_id, attempt = d.attempts + 1, "back-channel logout delivered");
                cx.db.write(move |c| db::logout::delivered(c, id)).await
            }
            Some(reason) => {
                let backoff = 2_i64.saturating_pow(d.attempts.clamp(0, 12) as u32).min(3600);
                tracing::warn!(client_id = %d.audience.client_id, attempt = d.attempts + 1, %reason,
                    retry_in_s = backoff, "back-channel logout delivery failed");
                cx.db
                    .write(move |c| db::logout::retry_later(c, id, now + backoff))
                    .await
            }
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "cannot record a logout delivery");
        }
    }
}
