//! Forward-auth as a front of the journey (docs/FORWARD_AUTH.md): a proxy's question
//! whether a browser may pass (`check`), and `/authz/sign-in` (`sign_in`), where the
//! browser signs in at Tessera and gets the `tessera_fa` token for the app's domain.

use std::net::IpAddr;

use crate::auth::limits::RateLimits;
use crate::crypto::TokenHash;
use crate::domain::Secret;
use crate::error::Internal;
use crate::forward_auth::{self as fa, Decision, Refusal, Seen, Target};
use crate::oidc::Ctx;
use crate::signin::portal::{sign_in_first, viewer, Login};
use crate::signin::Pending;

/// The `tessera_fa` cookies a browser sent.
pub enum Presented<'a> {
    Absent,
    One(&'a str),
    /// More than one: audited, and answered as for a browser that carries none.
    Several,
}

/// A proxy's question for `target` (pinned to the app `pinned` names, if any): the
/// answer for the browser behind it, from `ip`.
pub async fn check(
    cx: &Ctx<'_>,
    seen: &Seen,
    (target, pinned): (&Target, Option<&str>),
    cookie: Presented<'_>,
    ip: &str,
) -> Result<Decision, Internal> {
    let token = match cookie {
        Presented::One(v) => Some(v),
        Presented::Absent => None,
        Presented::Several => {
            fa::several_cookies(cx, target, ip).await;
            None
        }
    };
    fa::decide(cx, seen, target, pinned, token, ip).await
}

/// Where `/authz/sign-in` sends the browser.
pub enum SignIn {
    /// `rd` is not a protected app's URL the cookie can reach.
    Refused(Refusal),
    /// Sign in first (the login form parked to come back to `/authz/sign-in`, or the
    /// limit on parking), for the app with this id.
    First(Login, String),
    /// Signed in: the token to set as the cookie (for `max_age` seconds, `secure` for
    /// an https app), then back to `target`.
    Back {
        token: Secret,
        max_age: i64,
        secure: bool,
        target: Target,
    },
}

/// The browser's cookies on `/authz/sign-in`: its SSO session and the forward-auth
/// token it holds (renewed when it is for that session).
pub struct Cookies<'a> {
    pub session: Option<&'a str>,
    pub forward_auth: Option<&'a str>,
}

/// `/authz/sign-in?rd=URL` from the browser bound to `binding`: `back` is that page
/// again, where the login form comes back to.
pub async fn sign_in(
    limits: &RateLimits,
    cx: &Ctx<'_>,
    (rd, back): (&str, String),
    cookies: &Cookies<'_>,
    (ip, binding): (IpAddr, &TokenHash),
) -> Result<SignIn, Internal> {
    let (target, app) = match fa::return_target(cx, rd).await? {
        Ok(found) => found,
        Err(refusal) => return Ok(SignIn::Refused(refusal)),
    };
    let Some((session, _)) = viewer(cx, cookies.session).await? else {
        let login = sign_in_first(limits, cx, (ip, binding), Pending::Portal(back)).await?;
        return Ok(SignIn::First(login, app.id));
    };
    let (token, max_age) = fa::issue(cx, &session, cookies.forward_auth).await?;
    Ok(SignIn::Back {
        token,
        max_age,
        secure: fa::app_is_https(&app),
        target,
    })
}
