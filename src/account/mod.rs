//! The signed-in user's own account: what the account pages show and every change a
//! user makes to their own profile, password, sessions and allowed applications. The
//! account pages call these, as the admin pages call `admin`; each change is one
//! transaction with its audit entry.

pub mod security;

use serde_json::json;

use crate::audit::Event;
use crate::context::Ctx;
use crate::db::{self, consents::Granted, mfa::Totp, passkeys::Passkey, sessions::SessionInfo, users::User, DbError};
use crate::lifecycle::{self, verify};
use crate::mail::outbox::{self, Mail, Queued};

/// Who acts on their own account, and from where.
pub struct Me<'a> {
    pub user: &'a User,
    /// The session the request came with.
    pub sid: &'a str,
    pub ip: String,
}

impl Me<'_> {
    fn event(&self, name: &'static str) -> Event {
        Event::new(name)
            .actor(&self.user.username)
            .target(&self.user.username)
            .ip(Some(self.ip.clone()))
    }
}

/// Everything the account page lists.
pub struct Overview {
    pub sessions: Vec<SessionInfo>,
    /// The confirmed authenticator app, if any.
    pub totp: Option<Totp>,
    pub recovery_left: i64,
    pub passkeys: Vec<Passkey>,
    pub apps: Vec<Granted>,
    /// A new address waiting for its link to be confirmed (the account keeps its
    /// current one until then).
    pub pending_email: Option<String>,
}

pub async fn overview(cx: &Ctx<'_>, user_id: i64) -> Result<Overview, DbError> {
    let now = cx.now;
    cx.db
        .read(move |c| {
            Ok(Overview {
                sessions: db::sessions::list_for_user(c, user_id, now)?,
                totp: db::mfa::find(c, user_id)?.filter(|t| t.confirmed),
                recovery_left: db::mfa::recovery_left(c, user_id)?,
                passkeys: db::passkeys::list_for_user(c, user_id)?,
                apps: db::consents::list_named(c, user_id)?,
                pending_email: match db::users::find_by_id(c, user_id)? {
                    Some(u) => verify::pending_in(c, &u, now)?,
                    None => None,
                },
            })
        })
        .await
}

/// The enabled user behind a session, with their groups (for the portal pages).
pub async fn signed_in_user(cx: &Ctx<'_>, user_id: i64) -> Result<Option<User>, DbError> {
    cx.db
        .read(move |c| {
            let Some(mut u) = db::users::find_by_id(c, user_id)? else {
                return Ok(None);
            };
            db::users::load_groups(c, &mut u)?;
            Ok(Some(u))
        })
        .await
}

/// A user's name for pages and audit entries; `None` when the account is gone.
pub async fn username(cx: &Ctx<'_>, user_id: i64) -> Result<Option<String>, DbError> {
    Ok(cx
        .db
        .read(move |c| db::users::find_by_id(c, user_id))
        .await?
        .map(|u| u.username))
}

/// A name for an audit entry written after the action it records has committed: a
/// failing lookup must not undo the answer, so it is logged and the entry names the
/// account by id instead.
pub async fn actor_name(cx: &Ctx<'_>, user_id: i64) -> String {
    match username(cx, user_id).await {
        Ok(Some(name)) => name,
        Ok(None) => format!("user:{user_id}"),
        Err(e) => {
            tracing::error!(error = %e, user_id, "cannot read a username for the audit log");
            format!("user:{user_id}")
        }
    }
}

/// The user's live sessions, newest first.
pub async fn sessions(cx: &Ctx<'_>, user_id: i64) -> Result<Vec<SessionInfo>, DbError> {
    let now = cx.now;
    cx.db.read(move |c| db::sessions::list_for_user(c, user_id, now)).await
}

/// Saves the name and email (`None` clears them); both were checked by the caller.
///
/// With mail on, a new address is only pending: the account keeps its current address
/// (and whether it is verified) until the link mailed to the new one is confirmed in a
/// browser signed in as the account (`verify::confirm`), so that a mistyped address's
/// owner cannot take the account over with the link. The old address is told that a
/// change was asked for (not to what); a newer request voids the earlier link, and
/// saving the current address again withdraws a pending change. Returns whether a link
/// was queued.
///
/// Without mail (or when the address is removed), the change is made at once and is
/// unverified, and every unused link or code mailed to the old address (verification,
/// reset, sign-in, second factor) is void: they were the old mailbox's to use.
pub async fn update_profile(
    cx: &Ctx<'_>,
    me: &Me<'_>,
    name: Option<String>,
    email: Option<String>,
) -> Result<bool, DbError> {
    // The same comparison as the storage's: any change, case included, counts.
    let changed = email != me.user.email;
    let mail_on = cx.settings.smtp.is_some();
    let pending = if changed && mail_on { email.clone() } else { None };
    let stored = if pending.is_some() {
        me.user.email.clone()
    } else {
        email
    };
    let before = json!({"name": me.user.name, "email": me.user.email});
    let after = json!({"name": name, "email": stored});
    let event = me
        .event("account.profile_changed")
        .detail(json!({"before": before, "after": after, "pending_email": pending.is_some()}));
    let (uid, now) = (me.user.id, cx.now);
    let (link, owner, mail) = (verify::Link::new(cx), me.user.clone(), Mail::new(cx.settings));
    let requested = me.event("account.email_change_requested");
    let sent = cx
        .db
        .write(move |c| {
            db::users::update_profile(c, uid, name.as_deref(), stored.as_deref(), now)?;
            event.write(c, now)?;
            use db::email_tokens::{MFA, RESET, SIGNIN, VERIFY};
            if let Some(to) = pending {
                requested.write(c, now)?;
                let sent = verify::send_change_in(c, &mail, &link, &owner, &to, now)?;
                let t = mail.t;
                let what = t.fill(t.mail_email_change_requested, "username", &owner.username);
                let subject = t.mail_email_change_requested_subject;
                outbox::notify(c, &mail, &owner, subject, &what, now)?;
                return Ok(sent == Queued::Yes);
            }
            if !changed {
                if verify::pending_in(c, &owner, now)?.is_some() {
                    db::email_tokens::void_for_user(c, uid, &[VERIFY], now)?;
                }
                return Ok(false);
            }
            db::email_tokens::void_for_user(c, uid, &[VERIFY, RESET, SIGNIN, MFA], now)?;
            if mail_on {
                // Only a removal gets here with mail on; `owner` still has the old address.
                let t = mail.t;
                let what = t.fill(t.mail_email_removed, "username", &owner.username);
                outbox::notify(c, &mail, &owner, t.mail_email_changed_subject, &what, now)?;
            }
            Ok(false)
        })
        .await?;
    if mail_on && changed {
        lifecycle::wake(cx);
    }
    Ok(sent)
}

/// Stores a new password hash. Whoever knew the old password may hold tokens from
/// another sign-in, offline ones included: only this session's grants survive, no
/// browser stays trusted to skip the second factor; the passkeys go too when asked.
/// The caller then ends the other sessions.
pub async fn change_password(cx: &Ctx<'_>, me: &Me<'_>, hash: String, remove_passkeys: bool) -> Result<(), DbError> {
    let (uid, now, sid) = (me.user.id, cx.now, me.sid.to_string());
    let event = me
        .event("account.password_changed")
        .detail(json!({"passkeys_removed": remove_passkeys}));
    let (mail, owner) = (Mail::new(cx.settings), me.user.clone());
    cx.db
        .write(move |c| {
            db::users::set_password_by_id(c, uid, &hash, now)?;
            db::grants::revoke_user_grants(c, uid, Some(&sid), now)?;
            // A browser trusted by whoever knew the old password must pass the second factor again.
            crate::lifecycle::devices::untrust_all(c, uid)?;
            if remove_passkeys {
                db::passkeys::delete_all(c, uid)?;
            }
            event.write(c, now)?;
            let t = mail.t;
            outbox::notify(
                c,
                &mail,
                &owner,
                t.mail_password_changed_subject,
                &t.fill(t.mail_password_changed, "username", &owner.username),
                now,
            )?;
            Ok(())
        })
        .await?;
    crate::lifecycle::wake(cx);
    Ok(())
}

/// Withdraws consent for an application and ends its grants; `false` when there was
/// none to withdraw.
pub async fn revoke_consent(cx: &Ctx<'_>, me: &Me<'_>, client_id: &str) -> Result<bool, DbError> {
    let (uid, now) = (me.user.id, cx.now);
    let event = me.event("consent.revoked").target(format!("client:{client_id}"));
    let client_id = client_id.to_string();
    cx.db
        .write(move |c| {
            let had = db::consents::revoke(c, uid, &client_id, now)?;
            if had {
                event.write(c, now)?;
            }
            Ok(had)
        })
        .await
}

/// Records that the user confirmed their password again in this session.
pub async fn mark_reauthenticated(cx: &Ctx<'_>, me: &Me<'_>) -> Result<(), DbError> {
    let (sid, now) = (me.sid.to_string(), cx.now);
    let event = me.event("account.reauthenticated");
    cx.db
        .write(move |c| {
            db::sessions::mark_reauthenticated(c, &sid, now)?;
            event.write(c, now)
        })
        .await
}
