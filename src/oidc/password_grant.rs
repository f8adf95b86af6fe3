//! The resource owner password credentials grant (RFC 6749 §4.3), off unless a client
//! opts in: the login form's limits, lockout and audit, and never past a second factor.
//!
//! RFC 9700 §2.4 says this grant MUST NOT be used: the client sees the password and no
//! second factor can be asked. It exists for clients that cannot be changed; the admin
//! pages say so where it is switched on. The per-address and per-account rate limits
//! of the login form are applied by the HTTP layer before this runs (they live with the
//! server's other limiters); here are the password check, lockout and audit.

use super::dpop::Proof;
use super::grant::{access_ttl, active_user, client_alg, maps_groups, param, refresh_ttl, required, Form};
use super::issue::{mint, Binding, Mint, TokenResponse};
use super::{ErrorCode, OAuthError};
use crate::audit::Event;
use crate::auth::login::{authenticate, LoginError, Outcome};
use crate::db::{self, clients::Client, grants::Grant};
use crate::domain::Scope;
use crate::domain::Secret;
use crate::oidc::Ctx;

/// The one answer for an unknown name, a wrong password, a disabled or a locked
/// account: the login form does not tell them apart either.
const INVALID: &str = "invalid username or password";

/// Why a right password still gets no token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// TOTP, codes by mail or passkeys: a second factor or a phishing-resistant
    /// credential that this grant cannot ask for, so it must not be bypassed.
    StrongerSignIn,
    /// An open sign-up whose address is not confirmed yet signs in nowhere.
    Unverified,
}

/// RFC 6749 §4.3.2: `username`, `password`, optional `scope`.
/// `proof` is the request's checked DPoP proof (RFC 9449 §5), if any.
pub async fn exchange(
    cx: &Ctx<'_>,
    client: &Client,
    form: &Form,
    ip: &str,
    proof: Option<&Proof>,
) -> Result<TokenResponse, OAuthError> {
    let username = required(form, "username")?;
    // An empty password is a wrong password, not a malformed request: it must count.
    let password = form.get("password").map(String::as_str).unwrap_or_default();
    let requested = Scope::parse(param(form, "scope").unwrap_or("openid"))
        .map_err(|e| OAuthError::new(ErrorCode::InvalidScope, e.0))?;
    // As at the device endpoint: scopes the client cannot be given are dropped (RFC 6749
    // §3.3 lets the server issue less than asked, and says so in `scope`).
    let scope = requested.filter(|s| super::claims::client_supports(client, s));
    // RFC 8707 §2.2: with no authorization request before it (as for client
    // credentials), any registered resource; checked before the password is.
    let targets = super::resource::registered_now(cx, super::resource::form_values(form)).await?;
    let scope = super::resource::narrow(&scope, &targets);
    let (result, outcome) = authenticate(cx.db, cx.hasher, username, password, cx.settings.lockout, cx.now).await;
    let user = match result {
        Ok(user) => user,
        Err(LoginError::InvalidCredentials) => {
            let event = if outcome == Outcome::Locked {
                "login.locked"
            } else {
                "login.failed"
            };
            let attempted = match outcome {
                Outcome::Unknown => cx.log_key.pseudonym(username.trim()),
                _ => username.trim().chars().take(64).collect(),
            };
            audit(cx, Event::new(event).actor(attempted), client, ip).await?;
            return Err(OAuthError::invalid_grant(INVALID));
        }
        Err(LoginError::Server(e)) => return Err(e.into()),
    };
    let uid = user.id;
    let held = cx
        .db
        .read(move |c| {
            let life = db::users::lifecycle(c, uid)?;
            Ok(
                if db::mfa::enabled(c, uid)? || life.email_mfa || db::passkeys::count_for_user(c, uid)? > 0 {
                    Some(Held::StrongerSignIn)
                } else if life.must_verify {
                    Some(Held::Unverified)
                } else {
                    None
                },
            )
        })
        .await?;
    if let Some(held) = held {
        let event = Event::new("login.password_grant_refused").actor(&user.username).detail(
            serde_json::json!({"client": client.client_id, "reason": match held {
                Held::StrongerSignIn => "second_factor",
                Held::Unverified => "unverified",
            }}),
        );
        audit(cx, event, client, ip).await?;
        return Err(OAuthError::invalid_grant(match held {
            Held::StrongerSignIn => {
                "this account signs in with a second factor or a passkey, which the password grant cannot ask for; sign in through the browser"
            }
            Held::Unverified => "this account cannot sign in until its email address is confirmed",
        }));
    }
    if !client.allowed_groups.is_empty() {
        let cid = client.client_id.clone();
        if !cx.db.read(move |c| db::clients::group_allowed(c, &cid, uid)).await? {
            return Err(OAuthError::invalid_grant("this account may not use this application"));
        }
    }
    let bound = Bound {
        audience: super::resource::audience(&targets),
        proof,
    };
    issue(cx, client, &scope, uid, ip, &bound).await
}

/// What the tokens are restricted to: RFC 8707 resources, and the DPoP key.
struct Bound<'a> {
    audience: Vec<String>,
    proof: Option<&'a Proof>,
}

/// The grant and its tokens, like a code exchange but with no SSO session (`sid` is
/// `None`): a refresh token only with `offline_access`. Core §11 ties a refresh token
/// without offline_access to the session it came from, and here there is none to end
/// it, so such a token would outlive every sign-out; the client asks for
/// `offline_access` when it means to keep access.
async fn issue(
    cx: &Ctx<'_>,
    client: &Client,
    scope: &Scope,
    uid: i64,
    ip: &str,
    bound: &Bound<'_>,
) -> Result<TokenResponse, OAuthError> {
    let now = cx.now;
    let refresh = Secret::generate();
    let refresh_hash = refresh.hash();
    let allowed = client.allows_grant("refresh_token") && scope.contains("offline_access");
    let grant = Grant {
        id: crate::crypto::random::random_id(),
        client_id: client.client_id.clone(),
        user_id: Some(uid),
        scope: scope.to_string(),
        sid: None,
        auth_time: Some(now),
        nonce: None,
        expires_at: now + refresh_ttl(cx, client),
        revoked_at: None,
        claims_request: None,
        // RFC 8176 §2: a password, and nothing more.
        amr: Some("pwd".into()),
        created_at: now,
        resource: (!bound.audience.is_empty()).then(|| bound.audience.join(" ")),
        // A public client's refresh token is bound to the key it proved (RFC 9449 §5).
        dpop_jkt: super::dpop::grant_binding(client, bound.proof),
    };
    let (stored, ip, mapped) = (grant.clone(), ip.to_string(), maps_groups(&client.claim_rules));
    let replay = bound.proof.cloned();
    let user = cx
        .db
        .write(move |c| {
            // RFC 9449 §11.1: a proof is good for one request, on whichever node.
            if let Some(p) = &replay {
                if !super::dpop::record(c, p)? {
                    return Ok(Err(super::dpop::replayed()));
                }
            }
            let Some(user) = active_user(c, uid, &stored.scope, None, mapped)? else {
                return Ok(Err(OAuthError::invalid_grant(INVALID)));
            };
            db::grants::insert_grant(c, &stored, now)?;
            if allowed {
                db::grants::insert_refresh(c, &refresh_hash, &stored.id, &stored.scope, now, stored.expires_at)?;
            }
            crate::audit::token("token.issued", &stored.client_id, "password", &stored.id, &ip)
                .target(&user.username)
                .write(c, now)?;
            Event::new("login.ok")
                .actor(&user.username)
                .ip(Some(ip.as_str()))
                .detail(serde_json::json!({"amr": "pwd", "client": stored.client_id, "grant_type": "password"}))
                .write(c, now)?;
            Ok(Ok(user))
        })
        .await??;
    mint(
        cx,
        &Mint {
            grant: &grant,
            user: &user,
            scope,
            nonce: None,
            refresh_token: allowed.then_some(&refresh),
            alg: client_alg(client),
            access_ttl: access_ttl(cx, client),
            rules: &client.claim_rules,
            binding: &Binding {
                audience: bound.audience.clone(),
                jkt: bound.proof.map(|p| p.jkt.clone()),
            },
        },
    )
}

/// An audit row of its own for a refused attempt (nothing else is written for it).
async fn audit(cx: &Ctx<'_>, event: Event, client: &Client, ip: &str) -> Result<(), OAuthError> {
    let now = cx.now;
    let event = event.ip(Some(ip)).target(format!("client:{}", client.client_id));
    cx.db.write(move |c| event.write(c, now)).await?;
    Ok(())
}
