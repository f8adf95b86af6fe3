//! A person's password, sessions, second factor and consents, as an administrator sets,
//! ends or resets them (all audited, the back-channel logouts queued with the change).

use serde_json::json;

use super::{act_on, get, load, UserView};
use crate::admin::{invalid, Actor, AdminError};
use crate::context::Ctx;
use crate::db::{self, sessions::SessionInfo};
use crate::domain::NewPassword;

pub async fn sessions(cx: &Ctx<'_>, id: i64) -> Result<Vec<SessionInfo>, AdminError> {
    get(cx, id).await?;
    let now = cx.now;
    Ok(cx.db.read(move |c| db::sessions::list_for_user(c, id, now)).await?)
}

/// Ends one session of the user (`sid`) or all of them, with back-channel logout.
pub async fn end_sessions(
    cx: &crate::oidc::Ctx<'_>,
    actor: &Actor,
    id: i64,
    sid: Option<&str>,
) -> Result<usize, AdminError> {
    let user = get(cx, id).await?;
    let live = sessions(cx, id).await?;
    let chosen: Vec<_> = live
        .into_iter()
        .filter(|s| sid.is_none_or(|want| s.sid == want))
        .collect();
    if sid.is_some() && chosen.is_empty() {
        return Err(AdminError::NotFound("session"));
    }
    crate::oidc::logout::end_listed(cx, &chosen).await?;
    let mut count = chosen.len();
    // The list stops at a page of sessions: ending all goes on until none is left
    // (bounded, should sessions keep being opened meanwhile).
    for _ in 0..100 {
        if sid.is_some() {
            break;
        }
        let more = sessions(cx, id).await?;
        if more.is_empty() {
            break;
        }
        crate::oidc::logout::end_listed(cx, &more).await?;
        count += more.len();
    }
    // Logged on its own, after the fact: the sessions have already ended.
    actor
        .event("admin.sessions_ended")
        .target(&user.username)
        .detail(json!({"count": count, "sid": sid}))
        .log(cx.db, cx.now)
        .await;
    Ok(count)
}

/// Removes the user's authenticator app, recovery codes and passkeys (a lost phone).
pub async fn reset_mfa(cx: &Ctx<'_>, actor: &Actor, id: i64) -> Result<UserView, AdminError> {
    act_on(cx, actor, id, "admin.mfa_reset", |c, id| {
        db::mfa::disable(c, id)?;
        db::passkeys::delete_all(c, id)?;
        Ok(())
    })
    .await
}

/// Withdraws the user's consent for a client and revokes the client's grants for them;
/// `false` when there was no consent to withdraw (the grants are revoked all the same).
pub async fn revoke_consent(cx: &Ctx<'_>, actor: &Actor, id: i64, client_id: &str) -> Result<bool, AdminError> {
    let (now, actor, client_id) = (cx.now, actor.clone(), client_id.to_string());
    cx.db
        .write(move |c| {
            let Some(user) = load(c, id)? else {
                return Ok(Err(AdminError::NotFound("user")));
            };
            let had = db::consents::revoke(c, id, &client_id, now)?;
            actor
                .event("admin.consent_revoked")
                .target(&user.username)
                .detail(json!({"client_id": client_id, "had_consent": had}))
                .write(c, now)?;
            Ok(Ok(had))
        })
        .await?
}

/// Sets a new password. Whoever knew the old one is out: every session of the user
/// ends (back-channel logout sent) and every grant is revoked, offline ones included.
pub async fn set_password(cx: &crate::oidc::Ctx<'_>, actor: &Actor, id: i64, password: &str) -> Result<(), AdminError> {
    let new = NewPassword::parse(password).map_err(|e| invalid("password", e.0))?;
    let hash = cx.hasher.hash(new.expose()).await?;
    let live = sessions(cx, id).await?;
    let now = cx.now;
    let mail = crate::mail::outbox::Mail::new(cx.settings);
    act_on(cx, actor, id, "admin.password_set", move |c, id| {
        db::users::set_password_by_id(c, id, &hash, now)?;
        db::users::clear_failures(c, id)?;
        // As after a reset by mail: earlier links and codes die, trusted browsers must
        // pass the second factor again, and the owner is told.
        db::email_tokens::void_for_user(
            c,
            id,
            &[db::email_tokens::RESET, db::email_tokens::SIGNIN, db::email_tokens::MFA],
            now,
        )?;
        crate::lifecycle::devices::untrust_all(c, id)?;
        if let Some(user) = db::users::find_by_id(c, id)? {
            crate::mail::outbox::notify(
                c,
                &mail,
                &user,
                mail.t.mail_password_changed_subject,
                &mail
                    .t
                    .fill(mail.t.mail_password_set_by_admin, "username", &user.username),
                now,
            )?;
        }
        Ok(())
    })
    .await?;
    cx.mail_wakeup.notify_one();
    crate::oidc::logout::end_listed(cx, &live).await?;
    cx.db
        .write(move |c| db::grants::revoke_user_grants(c, id, None, now))
        .await?;
    Ok(())
}
