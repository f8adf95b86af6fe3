//! The sign-in after a mailed code or link (`/login/email/code`, `/login/email/link`):
//! the code or link checked (`signin::link`), a failure audited and counted, a locked
//! account refused, and a right one goes on as after a password (`first::after_factor`:
//! the second factor, then what the sign-in was for). The fronts make this one call.

use std::sync::atomic::Ordering;

use super::link::{self, CodeCheck, LinkUse};
use super::second::Refused;
use super::{first, Browser, First, Next, ResumeError};
use crate::audit::Event;
use crate::oidc::Ctx;

/// What a mailed code or link came to.
pub enum Mailed {
    /// It was right: the journey's next step.
    Next(Box<Next>),
    /// A wrong code: the page asks again.
    Wrong,
    /// This wrong code was the last one allowed: a new code has to be asked for.
    Spent,
    /// No live code or link for this request: expired, used, or voided.
    Dead,
    /// The link was opened in a browser other than the one that asked for it.
    OtherBrowser,
    /// The account is locked for now.
    Locked,
}

/// The code typed on the page of the parked sign-in the form names (`names`: its
/// request id and CSRF token), resumed for this browser first.
pub async fn code(cx: &Ctx<'_>, names: (&str, &str), code: &str, browser: &Browser) -> Result<Mailed, Refused> {
    let pending = super::resume_login(cx, names, browser.binding.as_ref()).await?;
    if browser.binding.is_none() {
        return Err(ResumeError::Forged.into());
    }
    let request_id = names.0;
    match link::check_code(cx, request_id, code).await? {
        CodeCheck::Passed(user) => {
            let next = first::after_factor(cx, request_id, pending, &user, First::Mail, None, browser).await?;
            Ok(Mailed::Next(Box::new(next)))
        }
        CodeCheck::Wrong => {
            failed(cx, browser, "wrong code").await;
            Ok(Mailed::Wrong)
        }
        CodeCheck::Spent => {
            failed(cx, browser, "too many wrong codes").await;
            Ok(Mailed::Spent)
        }
        CodeCheck::Dead => Ok(Mailed::Dead),
        CodeCheck::Locked(user) => {
            locked(cx, browser, &user.username).await;
            Ok(Mailed::Locked)
        }
    }
}

/// The link's confirm button: the link spent in the browser that asked for it, and the
/// sign-in goes on with the request it was parked for.
pub async fn link(cx: &Ctx<'_>, token: &str, browser: &Browser) -> Result<Mailed, Refused> {
    let Some(binding) = browser.binding.as_ref() else {
        return Ok(Mailed::OtherBrowser);
    };
    match link::use_link(cx, token, Some(binding)).await? {
        LinkUse::Continue(c) => {
            let link::Continued { parked, pending, user } = *c;
            let request_id = parked.request_id.expose();
            let next = first::after_factor(cx, request_id, pending, &user, First::Mail, None, browser).await?;
            Ok(Mailed::Next(Box::new(next)))
        }
        LinkUse::OtherBrowser => Ok(Mailed::OtherBrowser),
        LinkUse::Locked(username) => {
            locked(cx, browser, &username).await;
            Ok(Mailed::Locked)
        }
        LinkUse::Dead => Ok(Mailed::Dead),
    }
}

/// A failed try, counted and audited like a wrong password (`login.failed`).
async fn failed(cx: &Ctx<'_>, browser: &Browser, reason: &'static str) {
    cx.metrics.logins_failed.fetch_add(1, Ordering::Relaxed);
    Event::new("login.failed")
        .ip(Some(browser.ip.clone()))
        .detail(serde_json::json!({"method": "email_code", "reason": reason}))
        .log(cx.db, cx.now)
        .await;
}

/// A locked account's try, counted and audited (`login.locked`).
async fn locked(cx: &Ctx<'_>, browser: &Browser, username: &str) {
    cx.metrics.logins_locked.fetch_add(1, Ordering::Relaxed);
    Event::new("login.locked")
        .actor(username)
        .ip(Some(browser.ip.clone()))
        .log(cx.db, cx.now)
        .await;
}
