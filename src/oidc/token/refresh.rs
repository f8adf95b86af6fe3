//! Rotating a refresh token (RFC 6749 §6, RFC 9700 §4.14.2): the token is checked and
//! spent and its successor stored in one write transaction; the tokens are signed
//! after it.

use super::{mint_issued, Issued, Outcome, REFRESH_RETRY_GRACE};
use crate::audit;
use crate::crypto::TokenHash;
use crate::db::grants::Refresh;
use crate::db::{self, clients::Client};
use crate::domain::Scope;
use crate::domain::Secret;
use crate::oidc::dpop::{self, Proof};
use crate::oidc::grant::{active_user, maps_groups, param, refresh_ttl, required, Form};
use crate::oidc::issue::TokenResponse;
use crate::oidc::{Ctx, ErrorCode, OAuthError};

/// What a refresh must know of its client, copied into the write transaction.
struct RefreshRules {
    client_id: String,
    /// RFC 9700 §4.14.2: a public client's replay is never taken for a retry.
    grace: bool,
    restricted: bool,
    grant_lifetime: i64,
    ttl: i64,
}

/// What the refresh knows before its transaction, moved into it.
struct Rotate {
    ip: String,
    presented: TokenHash,
    requested: Option<Scope>,
    rules: RefreshRules,
    now: i64,
    next_hash: TokenHash,
    mapped_groups: bool,
    replay: Option<Proof>,
    asked_resources: Vec<String>,
}

pub(super) async fn refresh(
    cx: &Ctx<'_>,
    client: &Client,
    form: &Form,
    ip: &str,
    proof: Option<&Proof>,
) -> Result<TokenResponse, OAuthError> {
    let presented = TokenHash::of(required(form, "refresh_token")?);
    let requested = match param(form, "scope") {
        Some(s) => Some(Scope::parse(s).map_err(|e| OAuthError::new(ErrorCode::InvalidScope, e.0))?),
        None => None,
    };
    let next = Secret::generate();
    let rotate = Rotate {
        ip: ip.to_string(),
        presented,
        requested,
        rules: RefreshRules {
            client_id: client.client_id.clone(),
            grace: !client.is_public(),
            restricted: !client.allowed_groups.is_empty(),
            grant_lifetime: client.grant_lifetime.unwrap_or(cx.settings.lifetimes.grant),
            ttl: refresh_ttl(cx, client),
        },
        now: cx.now,
        next_hash: next.hash(),
        mapped_groups: maps_groups(&client.claim_rules),
        replay: proof.cloned(),
        asked_resources: crate::oidc::resource::form_values(form),
    };
    match cx.db.write(move |c| rotate_in(c, rotate)).await? {
        (Outcome::Refused(e), _) => Err(e),
        (Outcome::Issued(issued), scope) => mint_issued(cx, client, proof, &issued, &scope.unwrap_or_default(), &next),
    }
}

/// The refresh's transaction: the proof recorded, the token checked and spent, its
/// successor stored; with the scope of this response.
fn rotate_in(c: &db::Tx<'_>, r: Rotate) -> Result<(Outcome, Option<Scope>), db::DbError> {
    let refuse = |d: &'static str| Ok((Outcome::Refused(OAuthError::invalid_grant(d)), None));
    let (client_id, now) = (r.rules.client_id.as_str(), r.now);
    if let Some(p) = &r.replay {
        if !dpop::record(c, p)? {
            return Ok((Outcome::Refused(dpop::replayed()), None));
        }
    }
    db::grants::lock_family(c, &r.presented)?;
    // Checked before use, so another client cannot burn a token it was not issued.
    let row = match db::grants::find_refresh(c, &r.presented)? {
        Some(row) if row.grant.client_id == client_id => row,
        _ => return refuse("the refresh token is not valid"),
    };
    // RFC 9449 §5: a bound refresh token is used only with a proof of its key,
    // refused before anything about it changes.
    let bound = row.grant.dpop_jkt.is_some();
    if bound && r.replay.as_ref().map(|p| &p.jkt) != row.grant.dpop_jkt.as_ref() {
        return refuse("the refresh token is bound to a DPoP key; send a proof of that key");
    }
    // RFC 8707 §2.2, checked before the token is used so a refusal keeps it.
    let targets = match crate::oidc::resource::select(c, &r.asked_resources, row.grant.resource.as_deref())? {
        Ok(t) => t,
        Err(e) => return Ok((Outcome::Refused(e), None)),
    };
    if let Some(why) = spend(c, &row, &r, bound)? {
        return refuse(why);
    }
    let granted = Scope::parse(&row.scope).unwrap_or_default();
    // However often it is refreshed, a grant ends this long after its sign-in.
    let ends = row.grant.created_at.saturating_add(r.rules.grant_lifetime);
    if let Some(why) = ended(c, &row, &granted, ends, now)? {
        return refuse(why);
    }
    let scope = match r.requested {
        Some(s) if !s.is_subset_of(&granted) => {
            return Ok((
                Outcome::Refused(OAuthError::new(
                    ErrorCode::InvalidScope,
                    "the requested scope exceeds the original grant",
                )),
                None,
            ))
        }
        Some(s) => s,
        None => granted.clone(),
    };
    let user_id = row.grant.user_id.unwrap_or_default();
    let Some(user) = active_user(
        c,
        user_id,
        &row.scope,
        row.grant.claims_request.as_deref(),
        r.mapped_groups,
    )?
    else {
        return refuse("the user is no longer active");
    };
    if r.rules.restricted && !db::clients::group_allowed(c, client_id, user_id)? {
        db::grants::revoke_grant(c, &row.grant.id, now)?;
        return refuse("the user is no longer in a group allowed to use this client");
    }
    // The new token keeps the grant's scope; only this response is narrowed.
    let expires = (now + r.rules.ttl).min(ends);
    if !bound {
        db::grants::insert_refresh(c, &r.next_hash, &row.grant.id, &row.scope, now, expires)?;
    }
    audit::token("token.issued", client_id, "refresh_token", &row.grant.id, &r.ip)
        .target(&user.username)
        .write(c, now)?;
    let issued = Issued {
        grant: row.grant,
        user,
        nonce: None,
        // RFC 6749 §6: the client keeps its (bound) refresh token.
        with_refresh: !bound,
        targets,
    };
    Ok((Outcome::Issued(Box::new(issued)), Some(scope)))
}

/// Uses the presented token up (or takes its replay for a retry); why it cannot be
/// used, if it cannot.
fn spend(c: &db::Tx<'_>, row: &Refresh, r: &Rotate, bound: bool) -> Result<Option<&'static str>, db::DbError> {
    let now = r.now;
    match row.used_at {
        // RFC 9700 §4.14.2: sender-constrained, so not rotated and never used up.
        None if bound => {}
        None => {
            if !db::grants::use_refresh(c, &r.presented, now)?.won() {
                return Ok(Some("the refresh token is not valid"));
            }
        }
        // A confidential client that lost the response to its refresh may retry
        // briefly. The successors minted before die first, so only the newest
        // branch of the family lives.
        Some(used) if r.rules.grace && now - used <= REFRESH_RETRY_GRACE && row.grant.revoked_at.is_none() => {
            db::grants::retire_live_refresh(c, &row.grant.id)?;
        }
        Some(_) => {
            // RFC 9700 §4.14.2: reuse of a rotated token revokes the family.
            db::grants::revoke_grant(c, &row.grant.id, now)?;
            audit::token(
                "token.reuse_detected",
                &r.rules.client_id,
                "refresh_token",
                &row.grant.id,
                &r.ip,
            )
            .write(c, now)?;
            return Ok(Some("the refresh token was already used"));
        }
    }
    Ok(None)
}

/// Why the token's grant no longer refreshes, if it does not: the token expired or
/// was revoked, the grant outlived its sign-in (`ends`), or its session ended. The
/// last two revoke the grant.
fn ended(
    c: &db::Tx<'_>,
    row: &Refresh,
    granted: &Scope,
    ends: i64,
    now: i64,
) -> Result<Option<&'static str>, db::DbError> {
    if row.expires_at <= now || row.grant.revoked_at.is_some() {
        return Ok(Some("the refresh token has expired or was revoked"));
    }
    if now >= ends {
        db::grants::revoke_grant(c, &row.grant.id, now)?;
        return Ok(Some("the sign-in behind this refresh token is too old; sign in again"));
    }
    // Without offline_access a grant lives only as long as its session (Core §11):
    // once the person signed out, or the session expired, it ends.
    let session_bound = !granted.contains("offline_access");
    if let Some(sid) = row.grant.sid.as_deref().filter(|_| session_bound) {
        if !db::sessions::sid_active(c, sid, now)? {
            db::grants::revoke_grant(c, &row.grant.id, now)?;
            return Ok(Some("the session this refresh token belongs to has ended"));
        }
    }
    Ok(None)
}
