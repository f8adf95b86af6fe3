//! Deleting one's own account: at once (`--account-deletion self`), or on an
//! administrator's approval of a request (`approval`). Either way every session ends
//! with back-channel logout, every grant is revoked, and the audit entry of the
//! deletion names the person only by a pseudonym; earlier entries are kept as they are
//! (the audit log holds names, not references, so nothing cascades into it). It lives
//! with the administration because the last-admin rule and the ending of sessions
//! (back-channel logout) are theirs to apply, whoever asks.

use serde_json::json;

use super::users::{leaves_an_admin, LAST_ADMIN};
use super::{Actor, AdminError};
use crate::audit::Event;
use crate::db::{self, users::User, DbError, Tx};
use crate::error::Internal;
use crate::oidc::logout;
use crate::oidc::Ctx;

/// What came of a deletion or of a request for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Deleted,
    Requested,
    /// The account is the last active administrator's: it may not go.
    LastAdmin,
    /// The account was gone already.
    Gone,
}

/// When the account asked to be deleted, if it has a request waiting.
pub async fn requested_at(cx: &Ctx<'_>, user_id: i64) -> Result<Option<i64>, DbError> {
    cx.db
        .read(move |c| Ok(db::users::lifecycle(c, user_id)?.deletion_requested_at))
        .await
}

/// Deletes the account: its sessions are ended first (back-channel logout queued
/// while the grants that name the clients still exist, as the admin deletion does),
/// then the account goes with its grants and tokens in one transaction with `audit`.
async fn remove(
    cx: &Ctx<'_>,
    user_id: i64,
    audit: impl FnOnce(&Tx<'_>, &User, i64) -> Result<(), DbError> + Send + 'static,
) -> Result<Outcome, Internal> {
    let now = cx.now;
    if !cx.db.read(move |c| leaves_an_admin(c, user_id)).await? {
        return Ok(Outcome::LastAdmin);
    }
    let live = cx
        .db
        .read(move |c| db::sessions::list_for_user(c, user_id, now))
        .await?;
    logout::end_listed(cx, &live).await?;
    cx.db
        .write(move |c| {
            let Some(user) = db::users::find_by_id(c, user_id)? else {
                return Ok(Outcome::Gone);
            };
            if !leaves_an_admin(c, user_id)? {
                return Ok(Outcome::LastAdmin);
            }
            // Offline grants outlive sessions: revoked too (and deleted with the account).
            db::grants::revoke_user_grants(c, user_id, None, now)?;
            db::users::delete(c, user_id)?;
            audit(c, &user, now)?;
            Ok(Outcome::Deleted)
        })
        .await
        .map_err(Internal::from)
}

/// The account page's deletion with the current password already confirmed: deleted
/// at once, or a request recorded for an administrator, as the settings say.
pub async fn delete_own(cx: &Ctx<'_>, user: &User, ip: String) -> Result<Outcome, Internal> {
    match cx.settings.account_deletion {
        crate::config::AccountDeletion::SelfService => {
            let pseudonym = cx.log_key.pseudonym(&user.username);
            remove(cx, user.id, move |c, u, now| {
                Event::new("account.deleted")
                    .actor(&pseudonym)
                    .target(&pseudonym)
                    .ip(Some(ip))
                    .detail(json!({"by": "self", "created_at": u.created_at}))
                    .write(c, now)
            })
            .await
        }
        crate::config::AccountDeletion::Approval => request(cx, user, ip).await,
    }
}

async fn request(cx: &Ctx<'_>, user: &User, ip: String) -> Result<Outcome, Internal> {
    let (id, name, now) = (user.id, user.username.clone(), cx.now);
    Ok(cx
        .db
        .write(move |c| {
            if !leaves_an_admin(c, id)? {
                return Ok(Outcome::LastAdmin);
            }
            if db::users::find_by_id(c, id)?.is_none() {
                return Ok(Outcome::Gone);
            }
            db::users::set_deletion_requested(c, id, Some(now))?;
            Event::new("account.deletion_requested")
                .actor(&name)
                .target(&name)
                .ip(Some(ip))
                .write(c, now)?;
            Ok(Outcome::Requested)
        })
        .await?)
}

/// Withdraws the account's deletion request; whether there was one.
pub async fn withdraw(cx: &Ctx<'_>, user: &User, ip: String) -> Result<bool, Internal> {
    let (id, name, now) = (user.id, user.username.clone(), cx.now);
    Ok(cx
        .db
        .write(move |c| {
            if db::users::lifecycle(c, id)?.deletion_requested_at.is_none() {
                return Ok(false);
            }
            db::users::set_deletion_requested(c, id, None)?;
            Event::new("account.deletion_withdrawn")
                .actor(&name)
                .target(&name)
                .ip(Some(ip))
                .write(c, now)?;
            Ok(true)
        })
        .await?)
}

/// The pending request of user `id`, or the refusal an administrator gets.
async fn pending_request(cx: &Ctx<'_>, id: i64) -> Result<(User, i64), AdminError> {
    let found = cx
        .db
        .read(move |c| {
            let Some(u) = db::users::find_by_id(c, id)? else {
                return Ok(None);
            };
            Ok(Some((u, db::users::lifecycle(c, id)?.deletion_requested_at)))
        })
        .await?;
    match found {
        None => Err(AdminError::NotFound("user")),
        Some((_, None)) => Err(AdminError::NotFound("deletion request")),
        Some((u, Some(at))) => Ok((u, at)),
    }
}

/// An administrator approves a deletion request: the account is deleted as a
/// self-deletion is, and the entry names the administrator and the pseudonym.
pub async fn approve(cx: &Ctx<'_>, actor: &Actor, id: i64) -> Result<(), AdminError> {
    let (user, requested_at) = pending_request(cx, id).await?;
    if actor.user_id == Some(id) {
        return Err(AdminError::Conflict(
            "you cannot approve the deletion of your own account".into(),
        ));
    }
    let (pseudonym, actor) = (cx.log_key.pseudonym(&user.username), actor.clone());
    let outcome = remove(cx, id, move |c, u, now| {
        actor
            .event("account.deleted")
            .target(&pseudonym)
            .detail(json!({"by": "approval", "requested_at": requested_at, "created_at": u.created_at}))
            .write(c, now)
    })
    .await?;
    match outcome {
        Outcome::LastAdmin => Err(AdminError::Conflict(LAST_ADMIN.into())),
        Outcome::Gone => Err(AdminError::NotFound("user")),
        Outcome::Deleted | Outcome::Requested => Ok(()),
    }
}

/// An administrator rejects a deletion request: the account stays, the request goes.
pub async fn reject(cx: &Ctx<'_>, actor: &Actor, id: i64) -> Result<(), AdminError> {
    let (user, requested_at) = pending_request(cx, id).await?;
    let (now, actor) = (cx.now, actor.clone());
    cx.db
        .write(move |c| {
            db::users::set_deletion_requested(c, id, None)?;
            actor
                .event("admin.deletion_rejected")
                .target(&user.username)
                .detail(json!({"requested_at": requested_at}))
                .write(c, now)
        })
        .await?;
    Ok(())
}
