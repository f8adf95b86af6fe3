//! A passkey as the sign-in (WebAuthn assertion with user verification: two factors,
//! RFC 8176 `swk user mfa`): verified for the parked request, then the end of the
//! sign-in like any other.

use crate::audit::Event;
use crate::auth::passkeys::{self, Assertion, PasskeyError};
use crate::error::Internal;
use crate::oidc::Ctx;
use crate::signin::complete::{complete, Done, Resumed};
use crate::signin::{Browser, ResumeError, SignIn, AMR_PASSKEY};

/// Why a passkey did not sign in.
#[derive(Debug)]
pub enum Refusal {
    Resume(ResumeError),
    /// The assertion does not hold up (audited as a failed sign-in); why, in words.
    Assertion(&'static str),
    /// The passkey's account is disabled or gone.
    Account,
    Server(Internal),
}

impl From<ResumeError> for Refusal {
    fn from(e: ResumeError) -> Self {
        Refusal::Resume(e)
    }
}

/// The passkey form's sign-in for the parked request it names.
pub async fn sign_in(
    cx: &Ctx<'_>,
    (request_id, csrf): (&str, &str),
    assertion: &Assertion<'_>,
    browser: &Browser,
) -> Result<Done, Refusal> {
    let pending = crate::signin::resume_login(cx, (request_id, csrf), browser.binding.as_ref()).await?;
    let Some(binding) = browser.binding.as_ref() else {
        return Err(ResumeError::Forged.into());
    };
    let user_id = match passkeys::authenticate(cx, request_id, assertion).await {
        Ok(uid) => uid,
        Err(PasskeyError::Refused(why)) => {
            Event::new("login.failed")
                .ip(Some(browser.ip.clone()))
                .detail(serde_json::json!({"method": "passkey", "reason": why}))
                .log(cx.db, cx.now)
                .await;
            return Err(Refusal::Assertion(why));
        }
        Err(PasskeyError::Server(e)) => return Err(Refusal::Server(e)),
    };
    let user = match crate::account::signed_in_user(cx, user_id).await {
        Ok(Some(u)) if !u.disabled => u,
        Ok(_) => return Err(Refusal::Account),
        Err(e) => return Err(Refusal::Server(e.into())),
    };
    let who = SignIn {
        user_id,
        amr: AMR_PASSKEY.into(),
        user_agent: browser.user_agent.clone(),
        ip: Some(browser.ip.clone()),
        federated: None,
    };
    let resumed = Resumed {
        request_id,
        pending,
        browser: binding,
    };
    complete(cx, resumed, &who, &user.username, browser, false)
        .await
        .map_err(Refusal::Resume)
}
