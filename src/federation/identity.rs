//! Which local account an upstream account signs in as: a linked identity; else, with
//! `--link-by-email`, the account whose verified address the upstream confirms; else,
//! with `--jit`, a new account. Group mappings are applied on each sign-in, in the
//! same transaction.

use serde_json::json;

use super::Profile;
use crate::audit::Event;
use crate::context::Ctx;
use crate::crypto::password::NO_PASSWORD;
use crate::crypto::random::random_id;
use crate::db::{self, providers::Provider, users::User, DbError, Tx};
use crate::error::Internal;
use crate::mail::outbox::{self, Mail};

/// The outcome of matching an upstream account to a local one.
#[derive(Debug)]
pub enum Resolved {
    /// Sign in as this account (linked before, linked now by address, or just made).
    User(User),
    /// Linked to the signed-in account that asked for it.
    Linked(User),
    /// No account is linked and none may be made: an administrator must link one.
    NotLinked,
    /// The linked account is disabled.
    Disabled,
    /// Linking: this upstream account is linked to another local account.
    LinkedElsewhere,
    /// Linking: the account is linked to another account of this provider already.
    AlreadyLinked,
    /// The provider requires a local second factor, which an account made now could
    /// not have: no account is made.
    NeedsFactor,
}

/// Matches `profile` to a local account (or links it to `link_to`), records the use
/// and applies the provider's group mapping, in one transaction.
pub async fn resolve(
    cx: &Ctx<'_>,
    p: &Provider,
    profile: &Profile,
    link_to: Option<i64>,
) -> Result<Resolved, Internal> {
    let mut tries = 0;
    loop {
        let (p, profile, now, mail) = (p.clone(), profile.clone(), cx.now, Mail::new(cx.settings));
        let result = cx
            .db
            .write(move |c| {
                let mut newly = false;
                let resolved = match link_to {
                    Some(uid) => link(c, &p, &profile, uid, now, &mut newly)?,
                    None => sign_in(c, &p, &profile, now, &mut newly)?,
                };
                if let Resolved::User(u) | Resolved::Linked(u) = &resolved {
                    sync_groups(c, &p, u, profile.groups.as_deref(), now)?;
                }
                // The owner hears of a new way into an account that existed before.
                if let (Resolved::User(u) | Resolved::Linked(u), true) = (&resolved, newly) {
                    let t = mail.t;
                    let what = t.fill(t.mail_linked, "provider", &p.name);
                    outbox::notify(c, &mail, u, t.mail_linked_subject, &what, now)?;
                }
                Ok(resolved)
            })
            .await;
        match result {
            // Two first sign-ins at once chose the same username: the next try sees it.
            Err(DbError::Conflict) if tries < 3 => tries += 1,
            Err(e) => return Err(e.into()),
            Ok(r) => {
                crate::lifecycle::wake(cx);
                return Ok(r);
            }
        }
    }
}

/// `newly` is set when an account that existed before gets a link.
fn sign_in(c: &Tx<'_>, p: &Provider, profile: &Profile, now: i64, newly: &mut bool) -> Result<Resolved, DbError> {
    let email = profile.email.as_deref();
    if let Some(found) = db::identities::find(c, &p.id, &profile.subject)? {
        let Some(user) = db::users::find_by_id(c, found.user_id)? else {
            return Ok(Resolved::NotLinked);
        };
        if user.disabled {
            return Ok(Resolved::Disabled);
        }
        db::identities::used(c, &p.id, &profile.subject, email, now)?;
        return Ok(Resolved::User(user));
    }
    // Only a confirmed address on both sides links: an unverified one on either side
    // would let whoever typed it take the account over.
    if p.link_by_email && profile.email_verified {
        if let Some(user) = email.map(|e| db::users::find_by_email(c, e)).transpose()?.flatten() {
            if user.email_verified && !user.disabled {
                let r = linked_now(c, p, profile, user, now, "email")?;
                *newly = matches!(r, Resolved::User(_));
                return Ok(r);
            }
            if user.disabled {
                return Ok(Resolved::Disabled);
            }
        }
    }
    if !p.jit {
        return Ok(Resolved::NotLinked);
    }
    if p.require_local_mfa {
        return Ok(Resolved::NeedsFactor);
    }
    let user = create_user(c, p, profile, now)?;
    linked_now(c, p, profile, user, now, "jit")
}

fn linked_now(
    c: &Tx<'_>,
    p: &Provider,
    profile: &Profile,
    user: User,
    now: i64,
    how: &str,
) -> Result<Resolved, DbError> {
    match db::identities::link(c, &p.id, &profile.subject, user.id, profile.email.as_deref(), now) {
        Ok(()) => {}
        // The account has another identity of this provider: not this one's to take.
        Err(DbError::Conflict) => return Ok(Resolved::NotLinked),
        Err(e) => return Err(e),
    }
    Event::new("federation.linked")
        .actor(&user.username)
        .target(format!("provider:{}", p.id))
        .detail(json!({"how": how}))
        .write(c, now)?;
    Ok(Resolved::User(user))
}

fn link(
    c: &Tx<'_>,
    p: &Provider,
    profile: &Profile,
    uid: i64,
    now: i64,
    newly: &mut bool,
) -> Result<Resolved, DbError> {
    let Some(user) = db::users::find_by_id(c, uid)? else {
        return Ok(Resolved::NotLinked);
    };
    if let Some(found) = db::identities::find(c, &p.id, &profile.subject)? {
        return Ok(if found.user_id == uid {
            Resolved::Linked(user)
        } else {
            Resolved::LinkedElsewhere
        });
    }
    match db::identities::link(c, &p.id, &profile.subject, uid, profile.email.as_deref(), now) {
        Ok(()) => {}
        Err(DbError::Conflict) => return Ok(Resolved::AlreadyLinked),
        Err(e) => return Err(e),
    }
    Event::new("federation.linked")
        .actor(&user.username)
        .target(format!("provider:{}", p.id))
        .detail(json!({"how": "account"}))
        .write(c, now)?;
    *newly = true;
    Ok(Resolved::Linked(user))
}

/// A username from the upstream's, else the address's local part, else the provider
/// and a number; made unique with a number suffix.
fn create_user(c: &Tx<'_>, p: &Provider, profile: &Profile, now: i64) -> Result<User, DbError> {
    let base = [
        profile.preferred_username.as_deref(),
        profile.email.as_deref().and_then(|e| e.split('@').next()),
    ]
    .into_iter()
    .flatten()
    .map(clean_username)
    .find(|u| !u.is_empty() && crate::domain::Username::parse(u).is_ok())
    .unwrap_or_else(|| format!("{}-user", p.id));
    let mut username = base.clone();
    let mut n = 1;
    while db::users::find_by_username(c, &username)?.is_some() || db::users::lookalike_taken(c, &username)? {
        n += 1;
        username = format!("{base}{n}");
        if n > 1000 {
            username = format!("{base}-{}", random_id());
            break;
        }
    }
    // Only an address the upstream verified is copied: mail sent to the account (a
    // reset, a sign-in link) would otherwise reach whoever owns an address someone
    // merely typed upstream. A verified address another account holds stays with
    // that account.
    let email = profile
        .email
        .as_deref()
        .filter(|e| profile.email_verified && crate::domain::Email::parse(e).is_ok() && e.len() <= 254);
    let email = match email {
        Some(e) if db::users::email_taken(c, e)? => None,
        other => other,
    };
    let name = profile.name.as_deref().map(|n| n.chars().take(128).collect::<String>());
    let id = db::users::insert(
        c,
        &db::users::NewUser {
            sub: &random_id(),
            username: &username,
            email,
            name: name.as_deref(),
            password_hash: NO_PASSWORD,
            is_admin: false,
            now,
        },
    )?;
    if email.is_some() {
        db::users::set_email_verified(c, id, true)?;
    }
    Event::new("federation.user_created")
        .actor(&username)
        .target(format!("provider:{}", p.id))
        .write(c, now)?;
    db::users::find_by_id(c, id)?.ok_or(DbError::NotFound)
}

/// Letters, digits and `._-` of the upstream's name, at most 48 characters (no `@`:
/// a username with one would pass for an email address).
fn clean_username(raw: &str) -> String {
    // In NFKC first, as `Username::parse` stores names; names it refuses (mixed scripts)
    // are passed over by the caller.
    crate::domain::nfkc(raw.trim())
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(48)
        .collect()
}

/// Adds and removes the provider's mapped groups as the upstream's claim says; groups
/// it does not map are never touched, and an absent claim changes nothing.
fn sync_groups(c: &Tx<'_>, p: &Provider, user: &User, upstream: Option<&[String]>, now: i64) -> Result<(), DbError> {
    let Some(values) = upstream else {
        return Ok(());
    };
    let mapped = db::providers::mapped_groups(c, &p.id)?;
    let mut want: Vec<i64> = mapped
        .iter()
        .filter(|(_, up)| values.iter().any(|v| v == up))
        .map(|(g, _)| *g)
        .collect();
    want.dedup();
    let mut all: Vec<i64> = mapped.iter().map(|(g, _)| *g).collect();
    all.dedup();
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for g in all {
        let should = want.contains(&g);
        if db::groups::set_member(c, g, user.id, should)? {
            if should {
                added.push(g);
            } else {
                removed.push(g);
            }
        }
    }
    if !added.is_empty() || !removed.is_empty() {
        db::grants::revoke_outside_allowed_groups(c, Some(user.id), None, now)?;
        Event::new("federation.groups_synced")
            .actor(&user.username)
            .target(format!("provider:{}", p.id))
            .detail(json!({"added": added, "removed": removed}))
            .write(c, now)?;
    }
    Ok(())
}

/// The providers linked to an account, with the address each last reported.
pub async fn linked(cx: &Ctx<'_>, user_id: i64) -> Result<Vec<db::identities::Identity>, Internal> {
    Ok(cx.db.read(move |c| db::identities::of_user(c, user_id)).await?)
}

/// Why an unlink was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Unlink {
    Done,
    NotLinked,
    /// It is the account's only way to sign in (no password, no passkey, no other link).
    LastWay,
}

/// Removes the account's link to a provider, unless nothing else could sign it in.
pub async fn unlink(cx: &Ctx<'_>, user_id: i64, provider_id: &str) -> Result<Unlink, Internal> {
    let (pid, now) = (provider_id.to_string(), cx.now);
    Ok(cx
        .db
        .write(move |c| {
            // Two unlinks at once must not each leave the other as the way in.
            db::users::lock(c, user_id)?;
            let Some(user) = db::users::find_by_id(c, user_id)? else {
                return Ok(Unlink::NotLinked);
            };
            let links = db::identities::of_user(c, user_id)?;
            if !links.iter().any(|i| i.provider_id == pid) {
                return Ok(Unlink::NotLinked);
            }
            let other_way = crate::crypto::password::has_password(&user.password_hash)
                || links.len() > 1
                || db::passkeys::count_for_user(c, user_id)? > 0;
            if !other_way {
                return Ok(Unlink::LastWay);
            }
            db::identities::unlink(c, &pid, user_id)?;
            Event::new("federation.unlinked")
                .actor(&user.username)
                .target(format!("provider:{pid}"))
                .write(c, now)?;
            Ok(Unlink::Done)
        })
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_name_never_brings_an_at_sign_into_a_username() {
        // A username with `@` would pass for an address (see `domain::username_address_problem`).
        for raw in ["erin@example.org", "@erin", "a@b@c"] {
            let name = clean_username(raw);
            assert!(
                crate::domain::username_address_problem(&name, None).is_none(),
                "{raw} -> {name}"
            );
        }
    }
}
