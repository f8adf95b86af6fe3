//! Tessera's own pages (`/account`, `/admin`, a change of address) as a front of the
//! journey: the person signed in behind the session cookie, or, for a page asked for
//! with GET, the login form parked to lead back to it.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::auth::limits::{Bucket, RateLimits};
use crate::crypto::TokenHash;
use crate::db::{sessions::Session, users::User};
use crate::error::Internal;
use crate::oidc::Ctx;
use crate::signin::{Parked, Pending};

/// Where a visit to one of Tessera's own pages goes.
pub enum Entry {
    /// Signed in: the session and its account.
    SignedIn(Box<(Session, User)>),
    /// Sign in first.
    SignIn(Login),
    /// Nobody is signed in and the request cannot be taken up after a sign-in (a form
    /// post): the page says so.
    SignedOut,
}

/// A sign-in to do before the page.
pub enum Login {
    /// The login form, parked under these names for this step.
    Parked(Parked, Box<Pending>),
    /// The per-address limit on parking sign-ins was reached: wait this long.
    Limited(Duration),
}

/// The live session behind the cookie and its account (`None`: nobody, or an account
/// that is disabled or gone).
pub async fn viewer(cx: &Ctx<'_>, cookie: Option<&str>) -> Result<Option<(Session, User)>, Internal> {
    let Some(session) = crate::signin::current_session(cx, cookie).await? else {
        return Ok(None);
    };
    let user = crate::account::signed_in_user(cx, session.user_id).await?;
    Ok(user.map(|user| (session, user)))
}

/// A visit from the browser bound to `binding`, from `ip`: the person signed in, else
/// the login form that comes back to `back` (the page asked for with GET; `None` for
/// a form post).
pub async fn enter(
    limits: &RateLimits,
    cx: &Ctx<'_>,
    cookie: Option<&str>,
    (ip, binding): (IpAddr, &TokenHash),
    back: Option<String>,
) -> Result<Entry, Internal> {
    if let Some(found) = viewer(cx, cookie).await? {
        return Ok(Entry::SignedIn(Box::new(found)));
    }
    let Some(back) = back else {
        return Ok(Entry::SignedOut);
    };
    let login = sign_in_first(limits, cx, (ip, binding), Pending::Portal(back)).await?;
    Ok(Entry::SignIn(login))
}

/// The login form parked for `pending`. Showing it parks a login request (a write),
/// so it is limited per address like `/authorize`.
pub async fn sign_in_first(
    limits: &RateLimits,
    cx: &Ctx<'_>,
    (ip, binding): (IpAddr, &TokenHash),
    pending: Pending,
) -> Result<Login, Internal> {
    if limits.enabled() {
        if let Err(wait) = limits.check_ip(Bucket::Authorize, ip) {
            cx.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
            return Ok(Login::Limited(wait));
        }
    }
    let parked = crate::signin::park(cx, &pending, binding).await?;
    Ok(Login::Parked(parked, Box::new(pending)))
}
