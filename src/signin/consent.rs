//! The consent page's answer (OpenID Connect Core §3.1.2.4): approval is remembered
//! and a code issued; refusal is `access_denied` (RFC 6749 §4.1.2.1). Audited once
//! stored, for the session's user.

use crate::audit::Event;
use crate::oidc::authorize::AuthResponse;
use crate::oidc::Ctx;
use crate::signin::{Browser, Pending, ResumeError};

/// The consent form.
pub struct Decision<'a> {
    pub request_id: &'a str,
    pub csrf: &'a str,
    pub approve: bool,
}

/// The person's decision for the parked consent step, in the session that parked it.
pub async fn decide(
    cx: &Ctx<'_>,
    form: &Decision<'_>,
    browser: &Browser,
    session_cookie: Option<&str>,
) -> Result<AuthResponse, ResumeError> {
    let request = match crate::signin::resume(cx, form.request_id, form.csrf, browser.binding.as_ref()).await? {
        Pending::Consent(r) => r,
        _ => return Err(ResumeError::Expired),
    };
    let session = crate::signin::current_session(cx, session_cookie)
        .await?
        .ok_or(ResumeError::Expired)?;
    let answer = crate::signin::decide_consent(cx, form.request_id, &request, &session, form.approve).await?;
    // The consent is stored: whatever happens now, the user goes on.
    let name = crate::account::actor_name(cx, session.user_id).await;
    Event::new(if form.approve {
        "consent.granted"
    } else {
        "consent.denied"
    })
    .actor(name)
    .target(format!("client:{}", request.client_id))
    .ip(Some(browser.ip.clone()))
    .detail(serde_json::json!({"scope": request.scope}))
    .log(cx.db, cx.now)
    .await;
    Ok(answer)
}
