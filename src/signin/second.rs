//! The second factor: after a first factor, asked when the account has one and this
//! browser is not trusted to skip it (an authenticator app, RFC 6238, or a code by
//! mail); a wrong code counts toward the account's lockout like a wrong password.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::audit::Event;
use crate::auth::mfa::{self, Kind, MfaError};
use crate::crypto::TokenHash;
use crate::db::users::User;
use crate::error::Internal;
use crate::lifecycle::devices;
use crate::lifecycle::email_mfa::{self, Sent};
use crate::lifecycle::second_factor::{second_factor, SecondFactor};
use crate::oidc::Ctx;
use crate::signin::complete::{complete, Resumed};
use crate::signin::link as by_mail;
use crate::signin::{Browser, Federated, First, Next, Pending, ResumeError, SignIn, AMR_PASSWORD_OTP};

/// Why a step of the sign-in did not go on.
#[derive(Debug)]
pub enum Refused {
    /// The parked sign-in is gone, used or not this browser's.
    Resume(ResumeError),
    /// Too many attempts for this account just now; try again after this long.
    Limited(Duration),
    /// Too many wrong codes: the account is locked for now and the sign-in is over.
    Locked,
    Server(Internal),
}

impl From<ResumeError> for Refused {
    fn from(e: ResumeError) -> Self {
        Refused::Resume(e)
    }
}

impl From<Internal> for Refused {
    fn from(e: Internal) -> Self {
        Refused::Server(e)
    }
}

/// Where the codes of the second factor come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Factor {
    /// An authenticator app.
    App,
    /// Codes by mail, to this (masked) address; `None` when the account has none.
    Mail(Option<String>),
}

/// The second-factor page: the sign-in parked under these names.
#[derive(Debug)]
pub struct Page {
    pub request_id: String,
    pub csrf: String,
    pub factor: Factor,
    /// The last code was wrong.
    pub wrong: bool,
    /// A new code was just mailed ("Send a new code").
    pub resent: bool,
    /// Why no code was mailed just now; `None` when one was, or none was due.
    pub unsent: Option<Sent>,
    pub remember: bool,
}

impl Page {
    async fn new(cx: &Ctx<'_>, request_id: &str, csrf: &str, user_id: i64) -> Result<Self, Internal> {
        let factor = match mfa::kind(cx, user_id).await? {
            Some(Kind::Email) => Factor::Mail(email_mfa::destination(cx, user_id).await?),
            _ => Factor::App,
        };
        Ok(Self {
            request_id: request_id.to_string(),
            csrf: csrf.to_string(),
            factor,
            wrong: false,
            resent: false,
            unsent: None,
            remember: false,
        })
    }
}

/// After a first factor, either the sign-in goes on with the parked step and the
/// `amr` of the factors passed, or the second factor is asked.
pub enum AfterFirst {
    Continue(Box<Pending>, &'static str),
    Ask(Page),
}

/// After a first factor: the second-factor page when the account has one and this
/// browser is not trusted to skip it; else the parked step back with the `amr` to
/// complete the sign-in with. A sign-in by mail skips codes by mail: a second code to
/// the same mailbox would prove nothing more. `fed` is the upstream account a
/// federated first factor came from (the session records it).
#[allow(clippy::too_many_arguments)]
pub async fn after_first(
    cx: &Ctx<'_>,
    request_id: &str,
    pending: Pending,
    binding: &TokenHash,
    user: &User,
    first: First,
    fed: Option<Federated>,
    browser: &Browser,
) -> Result<AfterFirst, Refused> {
    let kind = match mfa::kind(cx, user.id).await.map_err(Internal::from)? {
        Some(Kind::Email) if first == First::Mail => None,
        kind => kind,
    };
    let Some(kind) = kind else {
        return Ok(AfterFirst::Continue(Box::new(pending), first.amr()));
    };
    let ip = Some(browser.ip.clone());
    if devices::is_trusted(cx, user.id, browser.device.as_deref()).await? {
        Event::new("login.trusted_device")
            .actor(&user.username)
            .ip(ip)
            .log(cx.db, cx.now)
            .await;
        return Ok(AfterFirst::Continue(Box::new(pending), first.amr()));
    }
    Event::new(first.event())
        .actor(&user.username)
        .ip(ip)
        .log(cx.db, cx.now)
        .await;
    let by_mail = first == First::Mail;
    let parked = crate::signin::park_mfa(cx, request_id, user.id, pending, binding, by_mail, fed).await?;
    let mut page = Page::new(cx, parked.request_id.expose(), parked.csrf.expose(), user.id).await?;
    if kind == Kind::Email {
        // A code mailed under a minute ago (a second try at the password) still works.
        match email_mfa::send_code(cx, user.id, &browser.ip).await? {
            Sent::TooSoon(_) | Sent::Yes => {}
            sent => page.unsent = Some(sent),
        }
    }
    Ok(AfterFirst::Ask(page))
}

/// A resumed second-factor step.
struct Step {
    user_id: i64,
    /// The step after it.
    then: Pending,
    /// The browser binding.
    binding: TokenHash,
    /// The first factor was a link or code by mail.
    by_mail: bool,
    /// The first factor was an upstream provider's sign-in.
    fed: Option<Federated>,
}

/// The second-factor step a form names, for this browser.
async fn resume(cx: &Ctx<'_>, request_id: &str, csrf: &str, browser: &Browser) -> Result<Step, ResumeError> {
    match crate::signin::resume(cx, request_id, csrf, browser.binding.as_ref()).await? {
        Pending::Mfa {
            user_id,
            then,
            by_mail,
            fed,
        } => match browser.binding {
            Some(binding) => Ok(Step {
                user_id,
                then: *then,
                binding,
                by_mail,
                fed,
            }),
            None => Err(ResumeError::Forged),
        },
        _ => Err(ResumeError::Expired),
    }
}

/// The second-factor form.
pub struct CodeForm<'a> {
    pub request_id: &'a str,
    pub csrf: &'a str,
    pub code: &'a str,
    /// "Trust this browser": skip the second factor here next time.
    pub remember: bool,
}

/// The second-factor form's answer: signed in, or the page again after a wrong code.
pub async fn check_code(
    limits: &crate::auth::limits::RateLimits,
    cx: &Ctx<'_>,
    form: &CodeForm<'_>,
    browser: &Browser,
) -> Result<Next, Refused> {
    let step = resume(cx, form.request_id, form.csrf, browser).await?;
    let user_id = step.user_id;
    if let Err(wait) = limits.check_second_factor(user_id) {
        cx.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
        return Err(Refused::Limited(wait));
    }
    let user = match second_factor(cx, user_id, form.code, &browser.ip).await {
        Ok(SecondFactor::Passed { user, .. }) => user,
        Ok(SecondFactor::Wrong { .. }) => {
            cx.metrics.logins_failed.fetch_add(1, Ordering::Relaxed);
            let mut page = Page::new(cx, form.request_id, form.csrf, user_id).await?;
            (page.wrong, page.remember) = (true, form.remember);
            return Ok(Next::WrongCode(page));
        }
        Ok(SecondFactor::Locked { user, by_this_code }) => {
            if by_this_code {
                cx.metrics.logins_failed.fetch_add(1, Ordering::Relaxed);
            }
            return Err(locked_out(cx, form.request_id, &user.username, &browser.ip).await);
        }
        Ok(SecondFactor::Gone) => return Err(ResumeError::Expired.into()),
        Err(MfaError::Server(e)) => return Err(e.into()),
        Err(e) => {
            tracing::error!(error = %e, user_id, "second factor could not be checked");
            return Err(Internal::Failed.into());
        }
    };
    // The parked step says what the first factor was. After a password, the mailed
    // code is a one-time password too (RFC 8176 `otp`; no value names mail), a second
    // factor beside it; after a link by mail, only an authenticator app is asked.
    let amr = match &step.fed {
        // The upstream's methods, then the local code (RFC 8176 `otp`, `mfa`).
        Some(f) => crate::federation::with_local_code(&f.amr).into(),
        None if step.by_mail => by_mail::AMR_EMAIL_TOTP.into(),
        None => AMR_PASSWORD_OTP.into(),
    };
    let who = SignIn {
        user_id,
        amr,
        user_agent: browser.user_agent.clone(),
        ip: Some(browser.ip.clone()),
        federated: step.fed,
    };
    let resumed = Resumed {
        request_id: form.request_id,
        pending: step.then,
        browser: &step.binding,
    };
    let done = complete(cx, resumed, &who, &user.username, browser, form.remember).await?;
    Ok(Next::Done(Box::new(done)))
}

/// The account locked on the second factor: counted, audited, and the parked sign-in
/// used up, so the person starts over once the lockout ends.
async fn locked_out(cx: &Ctx<'_>, request_id: &str, username: &str, ip: &str) -> Refused {
    cx.metrics.logins_locked.fetch_add(1, Ordering::Relaxed);
    Event::new("login.locked")
        .actor(username)
        .ip(Some(ip))
        .log(cx.db, cx.now)
        .await;
    let _ = crate::signin::consume(cx, request_id).await;
    Refused::Locked
}

/// "Send a new code" on the second-factor page: at most one code a minute (and the
/// mail limits of `lifecycle::queue`); the page says when none went out, and why.
pub async fn resend(cx: &Ctx<'_>, request_id: &str, csrf: &str, browser: &Browser) -> Result<Page, Refused> {
    let user_id = resume(cx, request_id, csrf, browser).await?.user_id;
    let mut page = Page::new(cx, request_id, csrf, user_id).await?;
    match email_mfa::send_code(cx, user_id, &browser.ip).await? {
        Sent::Yes => page.resent = true,
        sent => page.unsent = Some(sent),
    }
    Ok(page)
}
