//! The start of an authorization's sign-in (OpenID Connect Core §3.1.2): the request
//! validated, its language chosen, then answered at once (a live session with its
//! consent given, or an error for the client), or parked for the login form, the
//! consent page, sign-up (`prompt=create`), or the upstream `idp` names.

use crate::crypto::TokenHash;
use crate::db::providers::Provider;
use crate::oidc::authorize::{self as authz, AuthRequest, AuthResponse, AuthorizeError, Next};
use crate::oidc::Ctx;
use crate::signin::upstream::Begin;
use crate::signin::{Parked, Pending};

/// Where an authorization request goes.
pub enum Start {
    /// Answered now: a code or an error, back to the client.
    Respond(AuthResponse),
    /// Signed in, but not allowed to use this client.
    Denied(AuthResponse),
    /// Sign-up first (Initiating User Registration via OpenID Connect 1.0 §4.1): the
    /// sign-up form, the request parked under `parked` as for the login form, so that
    /// the new account's first sign-in answers the client.
    SignUp(Parked),
    /// Sign in first: the login form, parked under `parked`.
    Login(Parked),
    /// Straight to the upstream `idp` names: the browser goes to this URL.
    Upstream(String),
    /// The upstream `idp` names cannot be reached: the login form, parked under
    /// `parked`, says so.
    UpstreamDown { parked: Parked, provider: Box<Provider> },
    /// Consent first: the consent page, parked under `parked`, for `user_id`.
    Consent { user_id: i64, parked: Parked },
}

/// The authorization request `pairs` hold, for the browser bound to `binding` and its
/// SSO session cookie: the validated request and where it goes.
pub async fn start(
    upstreams: &crate::federation::Upstreams,
    cx: &Ctx<'_>,
    pairs: &[(String, String)],
    session_cookie: Option<&str>,
    binding: &TokenHash,
) -> Result<(Box<AuthRequest>, Start), AuthorizeError> {
    let request = authz::validate(cx, pairs).await?;
    // OpenID Connect Core §3.1.2.1: the application's `ui_locales` choose the language
    // of the sign-in's pages unless the person picked one.
    let asked = request.ui_locales.as_deref().and_then(crate::i18n::from_ui_locales);
    crate::i18n::prefer(asked, crate::i18n::Source::Application);
    // Without open sign-up the request goes on as if `create` were absent (discovery
    // does not offer it).
    if request.prompt.create && crate::lifecycle::signup::open(cx.settings) {
        let parked = crate::signin::park(cx, &Pending::Login(request.clone()), binding)
            .await
            .map_err(AuthorizeError::Server)?;
        return Ok((Box::new(request), Start::SignUp(parked)));
    }
    let session = crate::signin::current_session(cx, session_cookie)
        .await
        .map_err(AuthorizeError::Server)?;
    let user_id = session.as_ref().map(|s| s.user_id);
    let start = match authz::decide(cx, &request, session).await? {
        Next::Respond(resp) => Start::Respond(resp),
        Next::Denied(resp) => Start::Denied(resp),
        Next::Login => login(upstreams, cx, &request, binding).await?,
        Next::Consent => {
            let consent = Pending::Consent(request.clone());
            let parked = crate::signin::park(cx, &consent, binding)
                .await
                .map_err(AuthorizeError::Server)?;
            Start::Consent {
                user_id: user_id.unwrap_or_default(),
                parked,
            }
        }
    };
    Ok((Box::new(request), start))
}

/// A sign-in to do: straight to the upstream `idp=ID` names when it is registered (the
/// hint is advisory: an unknown one shows the login form), else the login form.
async fn login(
    upstreams: &crate::federation::Upstreams,
    cx: &Ctx<'_>,
    request: &AuthRequest,
    binding: &TokenHash,
) -> Result<Start, AuthorizeError> {
    let then = Pending::Login(request.clone());
    let provider = match &request.idp {
        Some(id) => crate::federation::find(cx, id).await.map_err(AuthorizeError::Server)?,
        None => None,
    };
    let Some(p) = provider else {
        let parked = crate::signin::park(cx, &then, binding)
            .await
            .map_err(AuthorizeError::Server)?;
        return Ok(Start::Login(parked));
    };
    match crate::signin::upstream::begin(cx, upstreams, &p, None, then.clone(), None, binding).await {
        Ok(url) => Ok(Start::Upstream(url)),
        Err(Begin::Unavailable(why)) => {
            tracing::warn!(provider = %p.id, reason = %why, "upstream sign-in could not start");
            Ok(Start::UpstreamDown {
                parked: crate::signin::park(cx, &then, binding)
                    .await
                    .map_err(AuthorizeError::Server)?,
                provider: Box::new(p),
            })
        }
        // Nothing was parked before `begin`: a record to lose cannot be missing.
        Err(Begin::Expired) => Err(AuthorizeError::Server(crate::error::Internal::Failed)),
        Err(Begin::Server(e)) => Err(AuthorizeError::Server(e)),
    }
}
