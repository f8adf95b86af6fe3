//! The password, the first factor of the login form: the per-account limit before any
//! hashing, the lockout (`auth::login`), the audit and counters, an open sign-up's
//! confirmation, then the second factor or the end of the sign-in.

use std::sync::atomic::Ordering;

use crate::audit::Event;
use crate::auth::login::{authenticate, LoginError, Outcome};
use crate::auth::passkeys::Named;
use crate::db::users::User;
use crate::lifecycle::verify::{self, Held};
use crate::oidc::Ctx;
use crate::signin::complete::{complete, Resumed};
use crate::signin::second::{after_first, AfterFirst, Refused};
use crate::signin::{Browser, Federated, First, Next, Pending, ResumeError, SignIn};

/// The login form.
pub struct PasswordForm<'a> {
    pub request_id: &'a str,
    pub csrf: &'a str,
    pub username: &'a str,
    pub password: &'a str,
}

/// Why a password sign-in did not go on, beyond the refusals of every step.
pub enum NotSignedIn {
    /// Wrong name or password, an unknown or locked account alike: the form again,
    /// for the parked sign-in; `named` is what the account offers (username-first).
    Invalid {
        pending: Box<Pending>,
        named: Option<Named>,
    },
    /// An open sign-up whose address is not confirmed: a new link was mailed (`true`)
    /// or not (the hourly limit, or mail is off).
    Unverified {
        sent: bool,
    },
    Refused(Refused),
}

impl From<Refused> for NotSignedIn {
    fn from(e: Refused) -> Self {
        NotSignedIn::Refused(e)
    }
}

impl From<ResumeError> for NotSignedIn {
    fn from(e: ResumeError) -> Self {
        NotSignedIn::Refused(e.into())
    }
}

/// The login form's password sign-in, for the request it names.
pub async fn password(
    limits: &crate::auth::limits::RateLimits,
    cx: &Ctx<'_>,
    form: &PasswordForm<'_>,
    browser: &Browser,
) -> Result<Next, NotSignedIn> {
    let names = (form.request_id, form.csrf);
    let pending = crate::signin::resume_login(cx, names, browser.binding.as_ref()).await?;
    // Per-account limits come before any password is hashed.
    if let Err(wait) = limits.check_account(form.username) {
        cx.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
        return Err(Refused::Limited(wait).into());
    }
    let (result, outcome) = authenticate(
        cx.db,
        cx.hasher,
        form.username,
        form.password,
        cx.settings.lockout,
        cx.now,
    )
    .await;
    let user = match result {
        Ok(user) => user,
        Err(LoginError::InvalidCredentials) => return Err(invalid(cx, form, browser, outcome, pending).await),
        Err(LoginError::Server(e)) => return Err(Refused::Server(e).into()),
    };
    // An open sign-up signs in only once its address is confirmed (a new link is mailed).
    match verify::hold_unverified(cx, &user, form.request_id, &browser.ip).await {
        Ok(None) => {}
        Ok(Some(held)) => {
            return Err(NotSignedIn::Unverified {
                sent: held == Held::Sent,
            })
        }
        Err(e) => return Err(Refused::Server(e).into()),
    }
    Ok(after_factor(cx, form.request_id, pending, &user, First::Password, None, browser).await?)
}

/// After a first factor (the form's password, a mailed link or code, an upstream's
/// sign-in for `fed`): the second factor, or the end of the sign-in.
#[allow(clippy::too_many_arguments)]
pub async fn after_factor(
    cx: &Ctx<'_>,
    request_id: &str,
    pending: Pending,
    user: &User,
    first: First,
    fed: Option<Federated>,
    browser: &Browser,
) -> Result<Next, Refused> {
    let Some(binding) = browser.binding.as_ref() else {
        return Err(ResumeError::Forged.into());
    };
    let step = after_first(cx, request_id, pending, binding, user, first, fed.clone(), browser);
    let (pending, amr) = match step.await? {
        AfterFirst::Continue(pending, amr) => (*pending, amr),
        AfterFirst::Ask(page) => return Ok(Next::SecondFactor(page)),
    };
    let who = SignIn {
        user_id: user.id,
        // An upstream's sign-in keeps the upstream's methods (RFC 8176 `fed`).
        amr: match &fed {
            Some(f) => f.amr.clone().into(),
            None => amr.into(),
        },
        user_agent: browser.user_agent.clone(),
        ip: Some(browser.ip.clone()),
        federated: fed,
    };
    let resumed = Resumed {
        request_id,
        pending,
        browser: binding,
    };
    let done = complete(cx, resumed, &who, &user.username, browser, false).await?;
    Ok(Next::Done(Box::new(done)))
}

/// A refused password: counted and audited (an unknown name under a pseudonym), and
/// the form again, at the step the passkey mode gives the account.
async fn invalid(
    cx: &Ctx<'_>,
    form: &PasswordForm<'_>,
    browser: &Browser,
    outcome: Outcome,
    pending: Pending,
) -> NotSignedIn {
    let (counter, event) = match outcome {
        Outcome::Ok => (None, "login.password_ok"),
        Outcome::Failed | Outcome::Unknown => (Some(&cx.metrics.logins_failed), "login.failed"),
        Outcome::Locked => (Some(&cx.metrics.logins_locked), "login.locked"),
    };
    if let Some(c) = counter {
        c.fetch_add(1, Ordering::Relaxed);
    }
    let attempted = match outcome {
        Outcome::Unknown => cx.log_key.pseudonym(form.username.trim()),
        _ => form.username.trim().chars().take(64).collect(),
    };
    Event::new(event)
        .actor(attempted)
        .ip(Some(browser.ip.clone()))
        .log(cx.db, cx.now)
        .await;
    let named = match cx.settings.passkey_mode {
        crate::config::PasskeyMode::Offer => None,
        _ => match crate::auth::passkeys::named(cx, form.username).await {
            Ok(named) => Some(named),
            Err(e) => return NotSignedIn::Refused(Refused::Server(e.into())),
        },
    };
    NotSignedIn::Invalid {
        pending: Box::new(pending),
        named,
    }
}
