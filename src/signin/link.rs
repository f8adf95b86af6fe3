//! Signing in by mail: one mail holding a link and a 6-digit code, valid 15 minutes and
//! once, bound to the parked authorization request (and so to the browser that asked
//! for it). Whether or not an account matches, the same page follows and the same
//! writes are made: an unknown name gets a decoy token that no code opens.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use subtle::ConstantTimeEq;

use crate::audit::Event;
use crate::context::Ctx;
use crate::crypto::TokenHash;
use crate::db::{self, email_tokens, sessions::NewLoginRequest, users::User, DbError, Tx};
use crate::domain::Secret;
use crate::error::Internal;
use crate::lifecycle::codes::{code_matches, count_try, same_address, Try};
use crate::lifecycle::{link_token, six_digit_code, wake};
use crate::mail::message::Message;
use crate::mail::outbox::{greeting, queue_or_decoy, Mail, Queued};
use crate::signin::{Parked, Pending};

/// How long the link and the code work.
pub const TTL: i64 = 15 * 60;
/// Codes checked against one token, at most: the fifth wrong one voids it and the
/// person must start again (a right one among the first five signs in). With at most
/// `mail_per_hour` mails, a guesser gets 25 tries an hour at a million codes. Each try
/// is counted before its code is compared (`count_try`), so that parallel requests
/// cannot test more.
pub const MAX_ATTEMPTS: i64 = 5;

/// RFC 8176 registers no method for a secret sent by mail. `otp` (a one-time password)
/// is what it is: a single-use secret delivered out of band, and a value relying
/// parties understand, where an unregistered `email` would be ignored. Alone it is one
/// factor (what the mailbox holds), so no `mfa`.
pub const AMR_EMAIL: &str = "otp";
/// The mailbox and an authenticator app: two different things held, hence `mfa`.
pub const AMR_EMAIL_TOTP: &str = "otp mfa";

/// The names of a freshly parked record and the rows that make it, built before the
/// write transaction (no randomness under the writer).
struct Repark {
    parked: Parked,
    id_hash: TokenHash,
    csrf_hash: TokenHash,
}

impl Repark {
    fn new() -> Self {
        let parked = Parked {
            request_id: Secret::generate(),
            csrf: Secret::generate(),
        };
        Self {
            id_hash: parked.request_id.hash(),
            csrf_hash: parked.csrf.hash(),
            parked,
        }
    }

    fn insert(&self, c: &Tx<'_>, params: &str, browser: &TokenHash, now: i64, expires_at: i64) -> Result<(), DbError> {
        db::sessions::create_login_request(
            c,
            &NewLoginRequest {
                id_hash: &self.id_hash,
                csrf_hash: &self.csrf_hash,
                browser_hash: browser,
                params,
                now,
                expires_at,
            },
        )
    }
}

fn locked(c: &Tx<'_>, lockout: bool, user_id: i64, now: i64) -> Result<bool, DbError> {
    Ok(lockout && db::users::lock_state(c, user_id)?.locked_until.is_some_and(|t| t > now))
}

/// The account `who` names if it may be mailed a sign-in: enabled, with an address,
/// not locked, not waiting for verification. Text with an `@` is an address and is
/// looked up as one only: a username that looks like someone's address (made before
/// such names were refused) must not receive that person's links.
fn eligible(c: &Tx<'_>, lockout: bool, who: &str, now: i64) -> Result<Option<(User, String)>, DbError> {
    let user = if who.contains('@') {
        db::users::find_by_email(c, who)?
    } else {
        db::users::find_for_sign_in(c, who)?
    };
    let Some(user) = user.filter(|u| !u.disabled) else {
        return Ok(None);
    };
    let Some(email) = user.email.clone().filter(|e| !e.trim().is_empty()) else {
        return Ok(None);
    };
    if locked(c, lockout, user.id, now)? || db::users::lifecycle(c, user.id)?.must_verify {
        return Ok(None);
    }
    Ok(Some((user, email)))
}

/// What a link token carries: the digest of the parked request it completes (the
/// row's `request_hash` is not read back by the storage API).
fn bound_data(request: &TokenHash) -> String {
    serde_json::json!({ "request": URL_SAFE_NO_PAD.encode(request.as_bytes()) }).to_string()
}

fn bound_request(data: &str) -> Option<TokenHash> {
    let v: serde_json::Value = serde_json::from_str(data).ok()?;
    let bytes = URL_SAFE_NO_PAD.decode(v.get("request")?.as_str()?).ok()?;
    TokenHash::from_slice(&bytes)
}

/// A sign-in by mail, made before the write transaction: the link, the code and the
/// new parked record (no randomness under the writer), and what names the decoy.
pub struct Sending {
    who: String,
    ip: String,
    params: String,
    old: TokenHash,
    browser: TokenHash,
    repark: Repark,
    link: String,
    digest: TokenHash,
    code: String,
    /// Files a decoy token: voided only by a later decoy for the same typed name, as a
    /// real token is only by a later one for the same account.
    decoy_key: String,
    /// Names the decoy mail and the audit entry without keeping what was typed.
    pseudonym: String,
    /// The request's language and the outbox's settings.
    mail: Mail,
    /// `--lockout`: a locked account is not mailed.
    lockout: bool,
    /// How long a parked sign-in lives (`--login-request-lifetime`).
    login_request: i64,
    now: i64,
}

impl Sending {
    pub fn new(
        cx: &Ctx<'_>,
        request_id: &str,
        pending: &Pending,
        browser: &TokenHash,
        who: &str,
        ip: &str,
    ) -> Result<Self, Internal> {
        let who: String = who.trim().chars().take(256).collect();
        let (secret, digest) = link_token();
        Ok(Self {
            params: serde_json::to_string(pending).map_err(|_| Internal::Failed)?,
            old: TokenHash::of(request_id),
            browser: *browser,
            repark: Repark::new(),
            link: cx.url(&format!("/login/email/link?token={}", secret.expose())),
            digest,
            code: six_digit_code(),
            decoy_key: format!("unknown:{}", crate::crypto::sha256_b64(who.to_lowercase().as_bytes())),
            pseudonym: cx.log_key.pseudonym(&who),
            ip: ip.to_string(),
            mail: Mail::new(cx.settings),
            lockout: cx.settings.lockout,
            login_request: cx.settings.lifetimes.login_request,
            now: cx.now,
            who,
        })
    }
}

/// Mails a link and a code for `who`, and parks the sign-in anew (as long as the
/// token lives) under the names the code form carries. `None`: the parked request
/// was already used. The caller resumed `request_id` for this browser first.
pub async fn send(
    cx: &Ctx<'_>,
    request_id: &str,
    pending: &Pending,
    browser: &TokenHash,
    who: &str,
    ip: &str,
) -> Result<Option<Parked>, Internal> {
    let sending = Sending::new(cx, request_id, pending, browser, who, ip)?;
    let outcome = cx.db.write(move |c| send_in(c, sending)).await?;
    let Some((queued, parked)) = outcome else {
        return Ok(None);
    };
    if queued == Queued::Yes {
        wake(cx);
    }
    Ok(Some(parked))
}

/// The sign-in mail's one transaction. Whether or not an account matches, the same
/// page follows and the same writes are made: the mail is rendered and stored (for no
/// account, a decoy that is never sent: `queue_or_decoy`), a token is stored (for no
/// account, a decoy that no code opens) and an audit entry written.
pub fn send_in(c: &Tx<'_>, s: Sending) -> Result<Option<(Queued, Parked)>, DbError> {
    let now = s.now;
    if !db::sessions::consume_login_request(c, &s.old, now)?.won() {
        return Ok(None);
    }
    let expires_at = now + TTL.max(s.login_request);
    s.repark.insert(c, &s.params, &s.browser, now, expires_at)?;
    let account = eligible(c, s.lockout, &s.who, now)?;
    let t = s.mail.t;
    let (to, user_id, name, hello) = match &account {
        Some((user, email)) => (email.as_str(), Some(user.id), user.username.as_str(), greeting(t, user)),
        None => (
            s.pseudonym.as_str(),
            None,
            s.pseudonym.as_str(),
            t.fill(t.mail_greeting, "name", &s.pseudonym),
        ),
    };
    let message = Message::new(t.mail_signin_subject, hello)
        .paragraph(t.fill2(t.mail_signin, "ip", &s.ip, "username", name))
        .action(t.mail_signin_action, &s.link)
        .code(&s.code)
        .after(t.mail_signin_after)
        .after(t.mail_signin_ignore);
    let queued = queue_or_decoy(c, &s.mail, to, user_id, "signin", &message, account.is_some(), now)?;
    let owner = account.as_ref().filter(|_| queued == Queued::Yes);
    email_tokens::create(
        c,
        &email_tokens::NewToken {
            digest: &s.digest,
            purpose: email_tokens::SIGNIN,
            user_id: owner.map(|(u, _)| u.id),
            email: owner.map_or(s.decoy_key.as_str(), |(_, e)| e.as_str()),
            data: &bound_data(&s.repark.id_hash),
            code: Some(&TokenHash::of(&s.code)),
            request: Some(&s.repark.id_hash),
            expires_at: now + TTL,
        },
        now,
    )?;
    let (event, actor) = match owner {
        Some((user, _)) => ("login.email_link_sent", user.username.as_str()),
        None => ("login.email_link_not_sent", s.pseudonym.as_str()),
    };
    Event::new(event).actor(actor).ip(Some(s.ip.as_str())).write(c, now)?;
    Ok(Some((queued, s.repark.parked)))
}

/// What a typed sign-in code came to.
pub enum CodeCheck {
    /// The right code: the token is spent and the sign-in may go on.
    Passed(User),
    /// A wrong code (or no account behind the token: the same answer).
    Wrong,
    /// This wrong code was the last one allowed, or a parallel try was: the token is void.
    Spent,
    /// The account is locked for now.
    Locked(User),
    /// No live token for this request: expired, used, or voided.
    Dead,
}

/// Checks the code typed on the page of the parked request `request_id` (which the
/// caller resumed for this browser).
pub async fn check_code(cx: &Ctx<'_>, request_id: &str, code: &str) -> Result<CodeCheck, Internal> {
    let (request, now) = (TokenHash::of(request_id), cx.now);
    let (code, lockout) = (code.to_string(), cx.settings.lockout);
    let outcome = cx
        .db
        .write(move |c| {
            let Some(t) = email_tokens::find_by_request(c, &request, email_tokens::SIGNIN, now)? else {
                return Ok(CodeCheck::Dead);
            };
            let user = match t.user_id {
                Some(uid) => db::users::find_by_id(c, uid)?.filter(|u| !u.disabled),
                None => None,
            };
            // Mailed to an address the account no longer has: dead (a decoy has no
            // account and goes on to read as a wrong code).
            if user
                .as_ref()
                .is_some_and(|u| !same_address(&t.email, u.email.as_deref()))
            {
                return Ok(CodeCheck::Dead);
            }
            // Counted first, compared after: see `count_try`.
            let last = match count_try(c, t.id, email_tokens::SIGNIN, MAX_ATTEMPTS, now)? {
                Try::Allowed { last } => last,
                Try::Refused => return Ok(CodeCheck::Spent),
            };
            let Some(user) = user.filter(|_| code_matches(t.code.as_deref(), &code)) else {
                if last {
                    email_tokens::void(c, t.id, email_tokens::SIGNIN, now)?;
                    return Ok(CodeCheck::Spent);
                }
                return Ok(CodeCheck::Wrong);
            };
            if locked(c, lockout, user.id, now)? {
                return Ok(CodeCheck::Locked(user));
            }
            if !email_tokens::claim(c, t.id, now)?.won() {
                return Ok(CodeCheck::Dead);
            }
            Ok(CodeCheck::Passed(user))
        })
        .await?;
    Ok(outcome)
}

/// A link's token, the parked request it is bound to and its account.
struct Live {
    token_id: i64,
    request: TokenHash,
    params: String,
    browser: TokenHash,
    user: User,
}

/// Whether a link is live and bound to this browser.
enum Bound {
    Live(Box<Live>),
    /// Live, but this is not the browser that asked for it.
    OtherBrowser,
    Dead,
}

fn bound(c: &Tx<'_>, token: &TokenHash, browser: Option<&TokenHash>, now: i64) -> Result<Bound, DbError> {
    let Some(t) = email_tokens::find(c, token, email_tokens::SIGNIN, now)? else {
        return Ok(Bound::Dead);
    };
    let (Some(uid), Some(request)) = (t.user_id, bound_request(&t.data)) else {
        return Ok(Bound::Dead);
    };
    let Some(parked) = db::sessions::find_login_request(c, &request, now)? else {
        return Ok(Bound::Dead);
    };
    let Some(user) = db::users::find_by_id(c, uid)?.filter(|u| !u.disabled) else {
        return Ok(Bound::Dead);
    };
    if !same_address(&t.email, user.email.as_deref()) {
        return Ok(Bound::Dead);
    }
    let same = browser.is_some_and(|b| bool::from(b.as_bytes().ct_eq(parked.browser_hash.as_bytes())));
    if !same {
        return Ok(Bound::OtherBrowser);
    }
    Ok(Bound::Live(Box::new(Live {
        token_id: t.id,
        request,
        params: parked.params,
        browser: parked.browser_hash,
        user,
    })))
}

/// What opening a link shows (a GET acts on nothing: mail scanners fetch links).
pub enum LinkView {
    /// "Sign in as" this username.
    Confirm(String),
    OtherBrowser,
    Dead,
}

fn token_digest(token: &str) -> Option<TokenHash> {
    (!token.is_empty() && token.len() <= 128).then(|| TokenHash::of(token))
}

pub async fn open_link(cx: &Ctx<'_>, token: &str, browser: Option<&TokenHash>) -> Result<LinkView, Internal> {
    let Some(digest) = token_digest(token) else {
        return Ok(LinkView::Dead);
    };
    let (browser, now) = (browser.copied(), cx.now);
    let b = cx.db.read(move |c| bound(c, &digest, browser.as_ref(), now)).await?;
    Ok(match b {
        Bound::Live(live) => LinkView::Confirm(live.user.username),
        Bound::OtherBrowser => LinkView::OtherBrowser,
        Bound::Dead => LinkView::Dead,
    })
}

/// A spent link: the sign-in parked anew under these names, to go on exactly as
/// after a password.
pub struct Continued {
    pub parked: Parked,
    pub pending: Pending,
    pub user: User,
}

/// What confirming a link came to.
pub enum LinkUse {
    Continue(Box<Continued>),
    OtherBrowser,
    /// The account is locked for now; its username.
    Locked(String),
    Dead,
}

/// Spends a link opened in the browser that asked for it: the token is claimed and
/// the parked request swapped for a fresh one, in one transaction.
pub async fn use_link(cx: &Ctx<'_>, token: &str, browser: Option<&TokenHash>) -> Result<LinkUse, Internal> {
    let Some(digest) = token_digest(token) else {
        return Ok(LinkUse::Dead);
    };
    let (browser, now) = (browser.copied(), cx.now);
    let (lockout, login_request) = (cx.settings.lockout, cx.settings.lifetimes.login_request);
    let repark = Repark::new();
    let outcome = cx
        .db
        .write(move |c| {
            let Live {
                token_id,
                request,
                params,
                browser,
                user,
            } = match bound(c, &digest, browser.as_ref(), now)? {
                Bound::Live(live) => *live,
                Bound::OtherBrowser => return Ok(LinkUse::OtherBrowser),
                Bound::Dead => return Ok(LinkUse::Dead),
            };
            if locked(c, lockout, user.id, now)? {
                return Ok(LinkUse::Locked(user.username));
            }
            let Ok(pending) = serde_json::from_str::<Pending>(&params) else {
                return Ok(LinkUse::Dead);
            };
            if !email_tokens::claim(c, token_id, now)?.won()
                || !db::sessions::consume_login_request(c, &request, now)?.won()
            {
                return Ok(LinkUse::Dead);
            }
            repark.insert(c, &params, &browser, now, now + login_request)?;
            Ok(LinkUse::Continue(Box::new(Continued {
                parked: repark.parked,
                pending,
                user,
            })))
        })
        .await?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_by_digest_ignoring_spaces() {
        let stored = TokenHash::of("123456");
        assert!(code_matches(Some(stored.as_bytes()), " 123 456 "));
        assert!(!code_matches(Some(stored.as_bytes()), "123457"));
        assert!(!code_matches(Some(stored.as_bytes()), ""));
        assert!(!code_matches(None, "123456"));
    }

    #[test]
    fn a_token_belongs_to_the_address_it_was_mailed_to() {
        assert!(same_address("Ada@Example.com", Some("ada@example.com")));
        assert!(!same_address("ada@example.com", Some("ada@elsewhere.test")));
        assert!(!same_address("ada@example.com", None));
        assert!(!same_address("", Some(" ")));
    }

    #[test]
    fn the_bound_request_survives_its_data() {
        let h = TokenHash::of("request");
        assert_eq!(bound_request(&bound_data(&h)), Some(h));
        assert_eq!(bound_request("{}"), None);
        assert_eq!(bound_request("not json"), None);
    }
}
