//! A sign-in completed, whatever its factors: counted and audited, the parked request
//! used up, the session opened, and the browser recorded (trusted for the second
//! factor when the person asked), then what the sign-in was for.

use std::sync::atomic::Ordering;

use crate::audit::Event;
use crate::crypto::TokenHash;
use crate::domain::Secret;
use crate::lifecycle::devices;
use crate::oidc::authorize::{AuthRequest, AuthResponse};
use crate::oidc::Ctx;
use crate::signin::{AfterLogin, Browser, Parked, Pending, ResumeError, SignIn};

/// The parked request a sign-in resumes: its id, what it was for, and the browser
/// binding it was parked with.
pub struct Resumed<'a> {
    pub request_id: &'a str,
    pub pending: Pending,
    pub browser: &'a TokenHash,
}

/// A signed-in browser: the cookies to set and where it goes.
pub struct Done {
    /// The new SSO session's cookie value.
    pub session_cookie: Secret,
    /// The device cookie to set or renew (`lifecycle::devices`).
    pub device_cookie: String,
    pub then: Then,
}

/// What the sign-in was for.
pub enum Then {
    /// The authorization's answer: a redirect, or a form post (`response_mode`).
    Respond(AuthResponse),
    /// Consent is needed first; the consent page is parked under `parked`.
    Consent {
        request: Box<AuthRequest>,
        user_id: i64,
        parked: Parked,
    },
    /// Signed in, but not allowed to use this client.
    Denied { client_id: String, response: AuthResponse },
    /// The device approval page for this user code (RFC 8628 §3.3).
    Device(String),
    /// Tessera's own page the sign-in was for.
    Portal(String),
}

/// Counts and audits a completed sign-in, then continues with what it was for,
/// trusting this browser for the second factor when `remember`. `Err` when the parked
/// request could not be finished (no session was opened).
pub async fn complete(
    cx: &Ctx<'_>,
    resumed: Resumed<'_>,
    who: &SignIn,
    username: &str,
    browser: &Browser,
    remember: bool,
) -> Result<Done, ResumeError> {
    cx.metrics.logins_ok.fetch_add(1, Ordering::Relaxed);
    Event::new("login.ok")
        .actor(username)
        .ip(who.ip.clone())
        .detail(match &who.federated {
            Some(f) => serde_json::json!({"amr": who.amr, "provider": f.provider, "upstream_sub": f.subject}),
            None => serde_json::json!({"amr": who.amr}),
        })
        .log(cx.db, cx.now)
        .await;
    let (session_cookie, then) = open(cx, resumed, who, browser.session).await?;
    let device_cookie = browser
        .device
        .clone()
        .filter(|v| devices::cookie_digest(Some(v)).is_some())
        .unwrap_or_else(|| Secret::generate().expose().to_string());
    let seen = devices::SignedIn {
        user_id: who.user_id,
        cookie: &device_cookie,
        user_agent: who.user_agent.as_deref(),
        ip: who.ip.as_deref().unwrap_or_default(),
        at: &crate::i18n::t().datetime(cx.now),
        trust: remember,
    };
    // The session is open: a failure to record the browser is logged, never undoes it.
    if let Err(e) = devices::signed_in(cx, &seen).await {
        tracing::warn!(error = %e, user_id = who.user_id, "the sign-in's browser was not recorded");
    }
    Ok(Done {
        session_cookie,
        device_cookie,
        then,
    })
}

/// Opens the session (ending `previous`) and says what comes after it.
async fn open(
    cx: &Ctx<'_>,
    resumed: Resumed<'_>,
    who: &SignIn,
    previous: Option<TokenHash>,
) -> Result<(Secret, Then), ResumeError> {
    let Resumed {
        request_id,
        pending,
        browser,
    } = resumed;
    let request = match pending {
        Pending::Login(r) => r,
        Pending::DeviceLogin(code) => {
            let (cookie, _) = crate::signin::finish_session_only(cx, request_id, who, previous).await?;
            return Ok((cookie, Then::Device(code)));
        }
        Pending::Portal(path) => {
            let (cookie, _) = crate::signin::finish_session_only(cx, request_id, who, previous).await?;
            return Ok((cookie, Then::Portal(path)));
        }
        _ => return Err(ResumeError::Expired),
    };
    let done = crate::signin::finish(cx, request_id, &request, who, previous, browser).await?;
    let then = match done.next {
        AfterLogin::Respond(r) => Then::Respond(r),
        AfterLogin::Consent(parked) => Then::Consent {
            user_id: who.user_id,
            request: Box::new(request),
            parked,
        },
        AfterLogin::Denied(response) => Then::Denied {
            client_id: request.client_id,
            response,
        },
    };
    Ok((done.session_cookie, then))
}
