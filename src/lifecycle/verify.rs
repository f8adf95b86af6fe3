//! Email verification: a single-use link (24 h, only its digest stored) mailed on
//! sign-up, on every change of address and when an unverified sign-up tries to sign
//! in; pressing "Confirm" on it (never a GET: mail scanners prefetch links) is the only
//! way `email_verified` becomes true besides an administrator's say-so. The live links
//! to one address all work until one is used, which spends the others; none is sent
//! within `RESEND_AFTER` of the last; a link to another address is dead.
//!
//! A change of address on the account page is only pending until confirmed: the account
//! keeps its old address (where resets and sign-in links still go) and the link to the
//! new one confirms only in a browser signed in as the account, so whoever owns a
//! mistyped address cannot take the account over with it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use crate::audit::Event;
use crate::auth::passkeys::{self, Made, PasskeyError};
use crate::context::Ctx;
use crate::crypto::TokenHash;
use crate::db::{self, email_tokens, users::User, DbError, Tx};
use crate::error::Internal;
use crate::mail::message::Message;
use crate::mail::outbox::{self, greeting, queue, Mail, Queued};

use super::{link_token, wake};

/// How long a verification link works.
pub const LINK_TTL: i64 = 24 * 3600;
/// Seconds after a link during which no other link to the same address is sent.
pub const RESEND_AFTER: i64 = 60;

/// A verification link, made before the write transaction that mails it (its URL is
/// built from the issuer, never from the request's Host header).
pub struct Link {
    digest: TokenHash,
    url: String,
}

impl Link {
    pub fn new(cx: &Ctx<'_>) -> Self {
        let (secret, digest) = link_token();
        Self {
            digest,
            url: cx.url(&format!("/email/verify?token={}", secret.expose())),
        }
    }
}

/// Why the link is sent, which is what the mail says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    SignUp,
    Changed,
    SignIn,
}

fn message(mail: &Mail, reason: Reason, user: &User, url: &str) -> Message {
    let t = mail.t;
    let (subject, why) = match reason {
        Reason::SignUp => (t.mail_verify_signup_subject, t.mail_verify_signup),
        Reason::Changed => (t.mail_verify_change_subject, t.mail_verify_change),
        Reason::SignIn => (t.mail_verify_signin_subject, t.mail_verify_signin),
    };
    Message::new(subject, greeting(t, user))
        .paragraph(t.fill(why, "username", &user.username))
        .action(t.mail_verify_action, url)
        .after(t.mail_verify_after)
}

/// The parked request a sign-up came from, as kept in the token's `data`: its digest
/// only, so the token table holds nothing that opens the request.
fn data(request: Option<&TokenHash>) -> String {
    json!({ "request": request.map(|r| URL_SAFE_NO_PAD.encode(r.as_bytes())) }).to_string()
}

/// A pending change's `data`: the address it replaces (`null` when the account had
/// none), so that the link dies when the account's address changes another way.
fn change_data(from: Option<&str>) -> String {
    json!({ "change": true, "from": from }).to_string()
}

/// The address a change token replaces, when the token is a change (`Some(None)`: the
/// account had no address).
fn change_of(data: &str) -> Option<Option<String>> {
    let value: serde_json::Value = serde_json::from_str(data).ok()?;
    if value.get("change")?.as_bool() != Some(true) {
        return None;
    }
    Some(value.get("from").and_then(|f| f.as_str()).map(str::to_string))
}

fn request_of(data: &str) -> Option<TokenHash> {
    let value: serde_json::Value = serde_json::from_str(data).ok()?;
    let bytes = URL_SAFE_NO_PAD.decode(value.get("request")?.as_str()?).ok()?;
    TokenHash::from_slice(&bytes)
}

/// Queues the verification mail to `to` for `user` inside the caller's transaction and
/// stores the link's digest beside the live links to `to`, voiding those to another.
/// Within the hourly limit and past `RESEND_AFTER` only: else nothing is stored.
#[allow(clippy::too_many_arguments)]
pub fn send_in(
    conn: &Tx<'_>,
    mail: &Mail,
    link: &Link,
    user: &User,
    to: &str,
    reason: Reason,
    request: Option<&TokenHash>,
    now: i64,
) -> Result<Queued, DbError> {
    store(conn, mail, link, user, to, reason, request, &data(request), now)
}

/// Queues the link to a pending new address `to` (the record keeps the old one until then).
pub fn send_change_in(
    conn: &Tx<'_>,
    mail: &Mail,
    link: &Link,
    user: &User,
    to: &str,
    now: i64,
) -> Result<Queued, DbError> {
    let data = change_data(user.email.as_deref());
    store(conn, mail, link, user, to, Reason::Changed, None, &data, now)
}

#[allow(clippy::too_many_arguments)]
fn store(
    conn: &Tx<'_>,
    mail: &Mail,
    link: &Link,
    user: &User,
    to: &str,
    reason: Reason,
    request: Option<&TokenHash>,
    data: &str,
    now: i64,
) -> Result<Queued, DbError> {
    let last = email_tokens::newest_to(conn, user.id, email_tokens::VERIFY, to, now)?;
    if last.is_some_and(|at| now - at < RESEND_AFTER) {
        return Ok(Queued::Limited);
    }
    let queued = queue(
        conn,
        mail,
        to,
        Some(user.id),
        "verify",
        &message(mail, reason, user, &link.url),
        now,
    )?;
    if queued == Queued::Yes {
        email_tokens::create_beside(
            conn,
            &email_tokens::NewToken {
                digest: &link.digest,
                purpose: email_tokens::VERIFY,
                user_id: Some(user.id),
                email: to,
                data,
                code: None,
                request,
                expires_at: now + LINK_TTL,
            },
            now,
        )?;
    }
    Ok(queued)
}

/// A live link's account, when the account still has the address it was sent to or,
/// for a pending change, still has the address the change replaces.
fn live(conn: &Tx<'_>, digest: &TokenHash, now: i64) -> Result<Option<(email_tokens::Token, User)>, DbError> {
    let Some(t) = email_tokens::find(conn, digest, email_tokens::VERIFY, now)? else {
        return Ok(None);
    };
    let Some(user) = t
        .user_id
        .map(|id| db::users::find_by_id(conn, id))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    let has = |address: Option<&str>| match (user.email.as_deref(), address) {
        (Some(e), Some(a)) => e.eq_ignore_ascii_case(a),
        (None, None) => true,
        _ => false,
    };
    let ok = match change_of(&t.data) {
        Some(from) => has(from.as_deref()),
        None => has(Some(&t.email)),
    };
    Ok(ok.then_some((t, user)))
}

/// The new address waiting for confirmation on the account page, if a change is
/// pending (its link is live and the account still has the address it replaces).
pub fn pending_in(conn: &Tx<'_>, user: &User, now: i64) -> Result<Option<String>, DbError> {
    let Some(t) = email_tokens::find_for_user(conn, user.id, email_tokens::VERIFY, now)? else {
        return Ok(None);
    };
    let Some(from) = change_of(&t.data) else {
        return Ok(None);
    };
    let same = match (user.email.as_deref(), from.as_deref()) {
        (Some(e), Some(a)) => e.eq_ignore_ascii_case(a),
        (None, None) => true,
        _ => false,
    };
    Ok(same.then_some(t.email))
}

fn well_formed(token: &str) -> bool {
    !token.is_empty() && token.len() <= 128
}

/// What the confirmation page names about a live link.
#[derive(Debug, Clone)]
pub struct Usable {
    pub username: String,
    pub email: String,
    /// For a pending change of address: the account that must be signed in to confirm.
    pub change_for: Option<i64>,
    /// The account has no way to sign in yet (a sign-up without a password): confirming
    /// makes its passkey.
    pub needs_passkey: bool,
}

/// Whether an account has no credential at all: no password, no passkey, no upstream
/// account. Such an account comes from a sign-up with a passkey instead of a password,
/// and its address is confirmed by making the passkey.
fn needs_passkey(conn: &Tx<'_>, user: &User) -> Result<bool, DbError> {
    Ok(!crate::crypto::password::has_password(&user.password_hash)
        && db::passkeys::count_for_user(conn, user.id)? == 0
        && db::identities::of_user(conn, user.id)?.is_empty())
}

/// What the confirmation page names, or `None` for an unknown, used, voided or expired
/// link, or one sent to an address the account no longer has.
pub async fn usable(cx: &Ctx<'_>, token: &str) -> Result<Option<Usable>, Internal> {
    if !well_formed(token) {
        return Ok(None);
    }
    let (digest, now) = (TokenHash::of(token), cx.now);
    let found = cx
        .db
        .read(move |c| match live(c, &digest, now)? {
            Some((t, u)) => Ok(Some((needs_passkey(c, &u)?, t, u))),
            None => Ok(None),
        })
        .await?;
    Ok(found.map(|(needs_passkey, t, u)| Usable {
        change_for: change_of(&t.data).map(|_| u.id),
        needs_passkey: needs_passkey && change_of(&t.data).is_none(),
        username: u.username,
        email: t.email,
    }))
}

/// The options of the passkey that confirms a sign-up made without a password.
pub async fn passkey_options(cx: &Ctx<'_>, token: &str) -> Result<Option<Value>, PasskeyError> {
    if !well_formed(token) {
        return Ok(None);
    }
    let (digest, now) = (TokenHash::of(token), cx.now);
    let found = cx
        .db
        .read(move |c| match live(c, &digest, now)? {
            Some((t, u)) if change_of(&t.data).is_none() && needs_passkey(c, &u)? => Ok(Some(u)),
            _ => Ok(None),
        })
        .await?;
    let Some(user) = found else {
        return Ok(None);
    };
    let who = passkeys::Enrolee {
        link: &digest,
        sub: &user.sub,
        username: &user.username,
        user_id: Some(user.id),
    };
    Ok(Some(passkeys::enrolment_options(cx, &who).await?))
}

/// What pressing "Confirm" came to.
#[derive(Debug)]
pub enum Confirmed {
    /// Unknown, used, voided, expired, or for an address the account no longer has.
    Dead,
    /// The address is verified; `resume` names the parked sign-in the sign-up came from
    /// (its digest), which the sign-in journey takes up again if it is still waiting.
    Verified {
        username: String,
        resume: Option<TokenHash>,
    },
    /// A pending change took effect: the account's address is now the new one, verified.
    Changed { username: String },
    /// A change confirms only in a browser signed in as its account: nobody is signed in.
    SignInFirst,
    /// A change confirms only in a browser signed in as its account: another is.
    OtherAccount,
    /// The account has no credential yet and confirms by making its passkey; the
    /// message says what to do.
    Passkey(&'static str),
}

/// Spends the link (of two parallel uses one wins), marks the address verified, lets
/// an open sign-up's account sign in, and writes `account.email_verified`, in one
/// transaction. A pending change needs `viewer`, the account signed in in this
/// browser, to be the link's account; then the account takes the new address, its
/// unused reset, sign-in and second-factor mail (sent to the old address) is void,
/// `account.email_changed` is written and the old address is told.
///
/// An account with no credential yet (a sign-up without a password) confirms only
/// with `made`, the passkey made through this link, stored in the same transaction.
pub async fn confirm(
    cx: &Ctx<'_>,
    token: &str,
    ip: &str,
    viewer: Option<i64>,
    made: Option<Made>,
) -> Result<Confirmed, Internal> {
    if !well_formed(token) {
        return Ok(Confirmed::Dead);
    }
    let (digest, now, ip) = (TokenHash::of(token), cx.now, ip.to_string());
    let mail = Mail::new(cx.settings);
    let done = cx
        .db
        .write(move |c| {
            let Some((t, user)) = live(c, &digest, now)? else {
                return Ok(Confirmed::Dead);
            };
            let change = change_of(&t.data).is_some();
            if change {
                match viewer {
                    None => return Ok(Confirmed::SignInFirst),
                    Some(id) if id != user.id => return Ok(Confirmed::OtherAccount),
                    Some(_) => {}
                }
            }
            let made = match (change, needs_passkey(c, &user)?, &made) {
                (false, true, None) => return Ok(Confirmed::Passkey(mail.t.acct_verify_needs_passkey)),
                (false, true, Some(made)) => {
                    if passkeys::spend_enrolment(c, made, &digest, now)?.as_deref() != Some(user.sub.as_str()) {
                        return Ok(Confirmed::Passkey(mail.t.acct_passkey_expired));
                    }
                    if db::passkeys::find_by_credential(c, &made.credential.id)?.is_some() {
                        return Ok(Confirmed::Passkey(mail.t.acct_passkey_registered));
                    }
                    Some(made)
                }
                _ => None,
            };
            if !email_tokens::claim(c, t.id, now)?.won() {
                return Ok(Confirmed::Dead);
            }
            email_tokens::void_for_address(c, user.id, email_tokens::VERIFY, &t.email, now)?;
            if let Some(made) = made {
                passkeys::store_in(c, user.id, &user.username, made, now)?;
            }
            if change {
                use email_tokens::{MFA, RESET, SIGNIN, VERIFY};
                db::users::set_email(c, user.id, &t.email, now)?;
                // The old address's links (and codes) die with it.
                email_tokens::void_for_user(c, user.id, &[RESET, SIGNIN, MFA, VERIFY], now)?;
                Event::new("account.email_changed")
                    .actor(&user.username)
                    .target(&user.username)
                    .ip(Some(ip.as_str()))
                    .detail(json!({ "before": user.email, "after": t.email }))
                    .write(c, now)?;
            }
            db::users::set_email_verified(c, user.id, true)?;
            db::users::set_must_verify(c, user.id, false)?;
            Event::new("account.email_verified")
                .actor(&user.username)
                .target(&user.username)
                .ip(Some(ip.as_str()))
                .detail(json!({ "email": t.email }))
                .write(c, now)?;
            if change {
                // `user` still has the old address: the notice goes there, without the new one.
                let t = mail.t;
                let what = t.fill(t.mail_email_changed, "username", &user.username);
                outbox::notify(c, &mail, &user, t.mail_email_changed_subject, &what, now)?;
                return Ok(Confirmed::Changed {
                    username: user.username,
                });
            }
            Ok(Confirmed::Verified {
                resume: request_of(&t.data),
                username: user.username,
            })
        })
        .await?;
    if matches!(done, Confirmed::Changed { .. }) {
        wake(cx);
    }
    Ok(done)
}

/// What happened to a correct password for an account that still owes verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// A new link was mailed.
    Sent,
    /// No new link now: the hourly limit was reached (the last link still works), or
    /// mail is off.
    NotSent,
}

/// An account from an open sign-up whose address is not verified yet may not sign in
/// (an administrator marking the address verified releases it too). Called only after
/// a correct password; mails a new link bound to the sign-in's parked request, within
/// the hourly limit. `None`: the account may go on.
pub async fn hold_unverified(cx: &Ctx<'_>, user: &User, request_id: &str, ip: &str) -> Result<Option<Held>, Internal> {
    if user.email_verified {
        return Ok(None);
    }
    let uid = user.id;
    if !cx.db.read(move |c| db::users::lifecycle(c, uid)).await?.must_verify {
        return Ok(None);
    }
    let link = Link::new(cx);
    let (request, now, ip) = (TokenHash::of(request_id), cx.now, ip.to_string());
    let (mail, user) = (Mail::new(cx.settings), user.clone());
    let queued = cx
        .db
        .write(move |c| {
            Event::new("login.unverified")
                .actor(&user.username)
                .ip(Some(ip.as_str()))
                .write(c, now)?;
            match user.email.as_deref().filter(|e| !e.is_empty()) {
                Some(to) => send_in(c, &mail, &link, &user, to, Reason::SignIn, Some(&request), now),
                None => Ok(Queued::Off),
            }
        })
        .await?;
    Ok(Some(if queued == Queued::Yes {
        wake(cx);
        Held::Sent
    } else {
        Held::NotSent
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parked_request_is_kept_as_its_digest_and_read_back() {
        let request = TokenHash::of("a parked request id");
        let kept = data(Some(&request));
        assert!(!kept.contains("a parked request id"));
        assert_eq!(request_of(&kept), Some(request));
        assert_eq!(request_of(&data(None)), None);
        assert_eq!(request_of("not json"), None);
        assert_eq!(request_of(r#"{"request":"c2hvcnQ"}"#), None);
    }

    #[test]
    fn a_change_is_told_from_a_sign_up_by_its_data() {
        assert_eq!(
            change_of(&change_data(Some("old@example.com"))),
            Some(Some("old@example.com".into()))
        );
        assert_eq!(change_of(&change_data(None)), Some(None));
        assert_eq!(change_of(&data(None)), None);
        assert_eq!(change_of(&data(Some(&TokenHash::of("r")))), None);
        assert_eq!(change_of("not json"), None);
        assert_eq!(change_of(r#"{"change":false,"from":"x"}"#), None);
        assert_eq!(request_of(&change_data(Some("old@example.com"))), None);
    }
}
