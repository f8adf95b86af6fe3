//! Device Authorization Grant (RFC 8628): the device asks for a pair of codes, a
//! person approves the user code on a signed-in browser, the device polls for tokens.

use crate::error::Internal;
use rand::Rng;
use serde_json::{json, Value};

use super::claims::client_supports;
use super::grant::{access_ttl, active_user, client_alg, open_grant, refresh_ttl, Form, RefreshRule, DEVICE_CODE};
use super::issue::{mint, Mint, TokenResponse};
use super::{ErrorCode, OAuthError};
use crate::crypto::random::random_id;
use crate::crypto::TokenHash;
use crate::db::{self, clients::Client, grants::Grant, sessions::Session, DbError};
use crate::domain::Scope;
use crate::domain::Secret;
use crate::oidc::Ctx;

/// Consonants only: no vowels (no words), no look-alikes (RFC 8628 §6.1).
const ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";
const CODE_LEN: usize = 8;
const LIFETIME: i64 = 600;
const INTERVAL: i64 = 5;

fn new_user_code() -> String {
    let mut rng = rand::rngs::OsRng;
    (0..CODE_LEN)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Shown to people as `BCDF-GHJK`.
pub fn display(code: &str) -> String {
    let (a, b) = code.split_at(code.len().min(CODE_LEN / 2));
    format!("{a}-{b}")
}

/// Accepts what a person types: any case, with dashes or spaces.
pub fn normalize(input: &str) -> Option<String> {
    let code: String = input
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (code.len() == CODE_LEN && code.bytes().all(|b| ALPHABET.contains(&b))).then_some(code)
}

/// RFC 8628 §3.1–3.2.
pub async fn start(cx: &Ctx<'_>, client: &Client, form: &Form) -> Result<Value, OAuthError> {
    if !client.allows_grant(DEVICE_CODE) {
        return Err(OAuthError::new(
            ErrorCode::UnauthorizedClient,
            "the client is not registered for the device flow",
        ));
    }
    let requested = Scope::parse(form.get("scope").map(String::as_str).unwrap_or("openid"))
        .map_err(|e| OAuthError::new(ErrorCode::InvalidScope, e.0))?;
    let scope = requested.filter(|s| client_supports(client, s)).to_string();
    let device_code = Secret::generate();
    let now = cx.now;
    for _ in 0..5 {
        let user_code = new_user_code();
        let (hash, code, client_id, scope) = (
            device_code.hash(),
            user_code.clone(),
            client.client_id.clone(),
            scope.clone(),
        );
        let stored = cx
            .db
            .write(move |c| {
                let d = db::device::NewDevice {
                    device_hash: &hash,
                    user_code: &code,
                    client_id: &client_id,
                    scope: &scope,
                    now,
                    expires_at: now + LIFETIME,
                    interval: INTERVAL,
                };
                match db::device::insert(c, &d) {
                    Ok(()) => Ok(true),
                    Err(DbError::Conflict) => Ok(false),
                    Err(e) => Err(e),
                }
            })
            .await?;
        if stored {
            let shown = display(&user_code);
            return Ok(json!({
                "device_code": device_code.expose(),
                "user_code": shown,
                "verification_uri": cx.url("/device"),
                "verification_uri_complete": format!("{}?user_code={shown}", cx.url("/device")),
                "expires_in": LIFETIME,
                "interval": INTERVAL,
            }));
        }
    }
    Err(OAuthError::unavailable())
}

/// The pending request behind a user code, if it can still be decided.
pub async fn pending(cx: &Ctx<'_>, user_code: &str) -> Result<Option<(db::device::DeviceRequest, Client)>, Internal> {
    let (code, now) = (user_code.to_string(), cx.now);
    Ok(cx
        .db
        .read(move |c| {
            let Some(d) = db::device::find_by_user_code(c, &code)? else {
                return Ok(None);
            };
            if d.expires_at <= now || d.approved.is_some() {
                return Ok(None);
            }
            Ok(db::clients::find(c, &d.client_id)?.map(|client| (d, client)))
        })
        .await?)
}

/// Records the signed-in person's decision; `false` when it can no longer be made.
pub async fn decide(cx: &Ctx<'_>, user_code: &str, session: &Session, approve: bool) -> Result<bool, Internal> {
    let (code, s, now) = (user_code.to_string(), session.clone(), cx.now);
    Ok(cx
        .db
        .write(move |c| {
            db::device::decide(
                c,
                &db::device::Decision {
                    user_code: &code,
                    user_id: s.user_id,
                    sid: &s.sid,
                    auth_time: s.auth_time,
                    amr: &s.amr,
                    approved: approve,
                    now,
                },
            )
        })
        .await?)
}

enum Polled {
    Refused(ErrorCode, &'static str),
    Issued(Box<Grant>, Box<db::users::User>, bool),
}

/// What a poll knows before its transaction, moved into it.
struct Poll {
    ip: String,
    hash: TokenHash,
    now: i64,
    client_id: String,
    rule: RefreshRule,
    refresh_hash: TokenHash,
    refresh_ttl: i64,
    mapped_groups: bool,
    replay: Option<super::dpop::Proof>,
    grant_jkt: Option<String>,
}

/// RFC 8628 §3.4–3.5: pending, slow down, expired, denied, or tokens — once.
pub async fn poll(
    cx: &Ctx<'_>,
    client: &Client,
    form: &Form,
    ip: &str,
    proof: Option<&super::dpop::Proof>,
) -> Result<TokenResponse, OAuthError> {
    let code = form
        .get("device_code")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OAuthError::invalid_request("device_code is required"))?;
    let refresh = Secret::generate();
    let p = Poll {
        ip: ip.to_string(),
        hash: TokenHash::of(code),
        now: cx.now,
        client_id: client.client_id.clone(),
        rule: RefreshRule::of(client),
        refresh_hash: refresh.hash(),
        refresh_ttl: refresh_ttl(cx, client),
        mapped_groups: super::grant::maps_groups(&client.claim_rules),
        replay: proof.cloned(),
        grant_jkt: super::dpop::grant_binding(client, proof),
    };
    match cx.db.write(move |c| poll_in(c, p)).await? {
        Polled::Refused(code, d) => Err(OAuthError::new(code, d)),
        Polled::Issued(grant, user, with_refresh) => {
            let scope = Scope::parse(&grant.scope).unwrap_or_default();
            mint(
                cx,
                &Mint {
                    grant: &grant,
                    user: &user,
                    scope: &scope,
                    nonce: None,
                    refresh_token: with_refresh.then_some(&refresh),
                    alg: client_alg(client),
                    access_ttl: access_ttl(cx, client),
                    rules: &client.claim_rules,
                    binding: &super::issue::Binding {
                        jkt: proof.map(|p| p.jkt.clone()),
                        ..super::issue::Binding::default()
                    },
                },
            )
        }
    }
}

/// The poll's transaction: the proof recorded, the device request read and answered.
fn poll_in(c: &db::Tx<'_>, p: Poll) -> Result<Polled, DbError> {
    use Polled::Refused;
    let now = p.now;
    // Every poll is a request of its own and needs a fresh proof (RFC 9449 §11.1).
    if let Some(proof) = &p.replay {
        if !super::dpop::record(c, proof)? {
            return Ok(Refused(ErrorCode::InvalidDpopProof, "the DPoP proof was already used"));
        }
    }
    db::device::lock(c, &p.hash)?;
    let d = match db::device::find_by_device(c, &p.hash)? {
        Some(d) if d.client_id == p.client_id => d,
        _ => return Ok(Refused(ErrorCode::InvalidGrant, "the device code is not valid")),
    };
    if d.used_at.is_some() {
        return Ok(Refused(ErrorCode::InvalidGrant, "the device code was already used"));
    }
    if d.expires_at <= now {
        return Ok(Refused(ErrorCode::ExpiredToken, "the device code has expired"));
    }
    match (d.approved, d.user_id) {
        (None, _) => {
            let too_fast = d.last_poll_at.is_some_and(|t| now - t < d.interval);
            let interval = if too_fast { d.interval + 5 } else { d.interval };
            db::device::record_poll(c, &p.hash, now, interval)?;
            Ok(if too_fast {
                Refused(ErrorCode::SlowDown, "poll less often")
            } else {
                Refused(ErrorCode::AuthorizationPending, "the user has not decided yet")
            })
        }
        (Some(false), _) | (Some(true), None) => {
            if !db::device::consume(c, &p.hash, now)?.won() {
                return Ok(Refused(ErrorCode::InvalidGrant, "the device code was already used"));
            }
            Ok(Refused(ErrorCode::AccessDenied, "the user denied the request"))
        }
        (Some(true), Some(uid)) => approved_in(c, &d, uid, p),
    }
}

/// An approved request: spent, and its grant opened for the user who approved it.
fn approved_in(c: &db::Tx<'_>, d: &db::device::DeviceRequest, uid: i64, p: Poll) -> Result<Polled, DbError> {
    let now = p.now;
    let Some(user) = active_user(c, uid, &d.scope, None, p.mapped_groups)? else {
        return Ok(Polled::Refused(ErrorCode::InvalidGrant, "the user is no longer active"));
    };
    // The conditional UPDATE decides: of two polls that both read an approved request,
    // only the one that consumes it gets tokens.
    if !db::device::consume(c, &p.hash, now)?.won() {
        return Ok(Polled::Refused(
            ErrorCode::InvalidGrant,
            "the device code was already used",
        ));
    }
    let grant = Grant {
        id: random_id(),
        client_id: d.client_id.clone(),
        user_id: Some(uid),
        scope: d.scope.clone(),
        sid: d.sid.clone(),
        auth_time: d.auth_time,
        nonce: None,
        expires_at: now + p.refresh_ttl,
        revoked_at: None,
        claims_request: None,
        amr: d.amr.clone(),
        created_at: now,
        resource: None,
        dpop_jkt: p.grant_jkt,
    };
    let with_refresh = open_grant(c, &grant, p.rule, &p.refresh_hash, now)?;
    crate::audit::token("token.issued", &grant.client_id, "device_code", &grant.id, &p.ip)
        .target(&user.username)
        .write(c, now)?;
    Ok(Polled::Issued(Box::new(grant), Box::new(user), with_refresh))
}

/// Whether the client's allowed groups admit the user approving a device (the same
/// rule as at authorization).
pub async fn admits(cx: &Ctx<'_>, client_id: &str, user_id: i64) -> Result<bool, Internal> {
    let cid = client_id.to_string();
    Ok(cx
        .db
        .read(move |c| db::clients::group_allowed(c, &cid, user_id))
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_are_typed_leniently_and_shown_with_a_dash() {
        let code = new_user_code();
        assert_eq!(normalize(&display(&code).to_lowercase()), Some(code.clone()));
        assert_eq!(normalize(" bcdf ghjk "), Some("BCDFGHJK".into()));
        assert_eq!(normalize("AEIO-UBCD"), None, "no vowels");
        assert_eq!(normalize("BCDF"), None);
    }
}
