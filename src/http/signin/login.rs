//! The sign-in forms' targets: password (or a link or code by mail, `signin_link`),
//! then the second factor when the account has one and the browser is not trusted to
//! skip it (an authenticator app, or a code by mail with "Send a new code"), then the
//! step the sign-in was for (an authorization, a device, Tessera's own pages), which
//! records the browser (`lifecycle::devices`); and the consent form.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::auth::login::{authenticate, LoginError, Outcome};
use crate::auth::mfa::{self, Kind, MfaError};
use crate::crypto::{Secret, TokenHash};
use crate::db::users::User;
use crate::http::guard::{ip_text, user_agent};
use crate::http::protocol::authorize::{bad_request_page, client_name, denied, respond, show_consent};
use crate::http::{cookies, errors, guard, pages, params};
use crate::lifecycle::email_mfa::{self, Sent};
use crate::lifecycle::second_factor::{self, SecondFactor};
use crate::lifecycle::{devices, signin};
use crate::oidc::interaction::{
    self, AfterLogin, Federated, Pending, ResumeError, SignIn, AMR_PASSWORD, AMR_PASSWORD_OTP,
};
use crate::oidc::Ctx;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "mfa.html")]
struct MfaPage<'a> {
    request_id: &'a str,
    csrf: &'a str,
    error: Option<&'a str>,
    /// The last code was wrong (the words depend on the factor).
    wrong: bool,
    /// Codes by mail: where they go (masked); `None` for an authenticator app.
    email_to: Option<String>,
    /// After "Send a new code".
    notice: Option<&'a str>,
    /// Why no code was mailed just now.
    mail_error: Option<String>,
    remember: bool,
}

impl<'a> MfaPage<'a> {
    fn new(request_id: &'a str, csrf: &'a str) -> Self {
        Self {
            request_id,
            csrf,
            error: None,
            wrong: false,
            email_to: None,
            notice: None,
            mail_error: None,
            remember: false,
        }
    }

    /// Fills in what the account's factor needs, and renders.
    async fn show(mut self, state: &AppState, status: StatusCode, user_id: i64) -> HttpResponse {
        match mfa::kind(state, user_id).await {
            Ok(Some(Kind::Email)) => match email_mfa::destination(&state.ctx(), user_id).await {
                Ok(to) => self.email_to = Some(to.unwrap_or_else(|| crate::i18n::t().mfa_no_address.into())),
                Err(e) => return errors::server_page(e),
            },
            Ok(_) => {}
            Err(e) => return errors::server_page(e),
        }
        if self.wrong {
            self.error = Some(match self.email_to {
                Some(_) => crate::i18n::t().mfa_wrong_mailed,
                None => crate::i18n::t().mfa_wrong_app,
            });
        }
        pages::render(status, &self)
    }
}

/// Why no code went out, in words; `None` when one did.
fn mail_problem(sent: Sent) -> Option<String> {
    match sent {
        Sent::Yes => None,
        Sent::TooSoon(wait) => Some(crate::i18n::t().fill(crate::i18n::t().mfa_too_soon, "seconds", wait)),
        Sent::Limited => Some(crate::i18n::t().mfa_limited.into()),
        Sent::Unverified => Some(crate::i18n::t().mfa_unverified.into()),
        Sent::Off => Some(crate::i18n::t().mfa_mail_off.into()),
    }
}

fn read_form(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    params::require_form(req).and_then(|_| params::unique_form(body)).ok()
}

/// What the login form says the sign-in is for (also `signup`'s forms).
pub(crate) async fn purpose(state: &AppState, pending: &Pending) -> String {
    match pending {
        Pending::Login(r) => {
            crate::http::branding::for_client(&r.client_id);
            client_name(state, &r.client_id).await
        }
        Pending::Portal(_) => {
            let t = crate::i18n::t();
            t.fill(t.signin_for_account, "org", crate::http::branding::shown().org_name)
        }
        _ => crate::i18n::t().signin_for_device.to_string(),
    }
}

pub async fn login(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page(crate::i18n::t().err_signin_form);
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let pending = match interaction::resume(&cx, request_id, csrf, browser.as_ref()).await {
        Ok(p @ (Pending::Login(_) | Pending::DeviceLogin(_) | Pending::Portal(_))) => p,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let username = params::field(&form, "username");
    // Per-account limits come before any password is hashed.
    if let Some(limited) = guard::limit_account(&state, username) {
        return limited;
    }
    let (result, outcome) = authenticate(
        &state.db,
        &state.hasher,
        username,
        params::field(&form, "password"),
        state.settings.lockout,
        cx.now,
    )
    .await;
    // A correct password counts as a sign-in only once any second factor is passed.
    let (counter, event) = match outcome {
        Outcome::Ok => (None, "login.password_ok"),
        Outcome::Failed | Outcome::Unknown => (Some(&state.metrics.logins_failed), "login.failed"),
        Outcome::Locked => (Some(&state.metrics.logins_locked), "login.locked"),
    };
    if let Some(c) = counter {
        c.fetch_add(1, Ordering::Relaxed);
    }
    let ip = ip_text(&req, &state);
    let attempted = match outcome {
        Outcome::Unknown => state.log_key.pseudonym(username.trim()),
        _ => username.trim().chars().take(64).collect(),
    };
    let user = match result {
        Ok(user) => user,
        Err(LoginError::InvalidCredentials) => {
            Event::new(event).actor(attempted).ip(Some(ip)).log(&state).await;
            let step = match pages::LoginStep::first(&state.settings) {
                pages::LoginStep::Both => pages::LoginStep::Both,
                _ => match crate::auth::passkeys::named(&state, username).await {
                    Ok(named) => pages::LoginStep::named(named),
                    Err(e) => return errors::server_page(e),
                },
            };
            let page = pages::LoginPage {
                about: crate::http::protocol::registered_logo::about(&state, &pending).await,
                client_name: &purpose(&state, &pending).await,
                request_id,
                csrf,
                username,
                error: Some(crate::i18n::t().signin_invalid),
                mail: state.settings.smtp.is_some(),
                signup: crate::lifecycle::signup::open(&state.settings),
                providers: crate::http::signin::federation::buttons(&state).await,
                cancel: None,
                step,
            };
            return pages::render(StatusCode::UNAUTHORIZED, &page);
        }
        Err(LoginError::Server(e)) => return errors::server_page(e),
    };
    // An open sign-up signs in only once its address is confirmed (a new link is mailed).
    if let Some(held) = crate::http::signin::signup::unverified(&req, &state, &user, request_id).await {
        return held;
    }
    let Some(browser) = browser else {
        return resume_error(ResumeError::Forged);
    };
    let (pending, amr) = match second_step(&req, &state, request_id, pending, &browser, &user, First::Password).await {
        Ok(next) => next,
        Err(resp) => return resp,
    };
    let who = SignIn {
        user_id: user.id,
        amr: amr.into(),
        user_agent: user_agent(&req),
        ip: Some(ip),
        federated: None,
    };
    let resumed = Resumed {
        request_id,
        pending,
        browser: &browser,
    };
    complete_sign_in(&req, &state, &cx, resumed, &who, &user.username).await
}

/// The factor a sign-in began with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    Password,
    /// A link or code sent by mail (`lifecycle::signin`).
    Mail,
    /// An upstream provider's sign-in (`federation`); its `amr` is the upstream's.
    Upstream,
}

impl First {
    fn amr(self) -> &'static str {
        match self {
            First::Password => AMR_PASSWORD,
            First::Mail => signin::AMR_EMAIL,
            First::Upstream => "fed",
        }
    }
}

/// After a first factor: the second-factor page when the account has one and this
/// browser is not trusted to skip it (`Err`, the response to send); else the parked
/// step back with the `amr` to complete the sign-in with. A sign-in by mail skips
/// codes by mail: a second code to the same mailbox would prove nothing more.
pub async fn second_step(
    req: &HttpRequest,
    state: &AppState,
    request_id: &str,
    pending: Pending,
    browser: &TokenHash,
    user: &User,
    first: First,
) -> Result<(Pending, &'static str), HttpResponse> {
    second_step_after(req, state, request_id, pending, browser, user, first, None).await
}

/// `second_step`, remembering the upstream account a federated first factor came
/// from for the step after the code (the session records it).
#[allow(clippy::too_many_arguments)]
pub async fn second_step_after(
    req: &HttpRequest,
    state: &AppState,
    request_id: &str,
    pending: Pending,
    browser: &TokenHash,
    user: &User,
    first: First,
    fed: Option<Federated>,
) -> Result<(Pending, &'static str), HttpResponse> {
    let cx = state.ctx();
    let ip = ip_text(req, state);
    let kind = match mfa::kind(state, user.id).await {
        Ok(Some(Kind::Email)) if first == First::Mail => None,
        Ok(kind) => kind,
        Err(e) => return Err(errors::server_page(e)),
    };
    let Some(kind) = kind else {
        return Ok((pending, first.amr()));
    };
    let device = params::cookie(req, cookies::device_name(state));
    match devices::is_trusted(&state.ctx(), user.id, device.as_deref()).await {
        Ok(true) => {
            Event::new("login.trusted_device")
                .actor(&user.username)
                .ip(Some(ip))
                .log(state)
                .await;
            return Ok((pending, first.amr()));
        }
        Ok(false) => {}
        Err(e) => return Err(errors::server_page(e)),
    }
    let event = match first {
        First::Mail => "login.email_ok",
        First::Upstream => "login.upstream_ok",
        First::Password => "login.password_ok",
    };
    Event::new(event)
        .actor(&user.username)
        .ip(Some(ip.clone()))
        .log(state)
        .await;
    let by_mail = first == First::Mail;
    let parked = match interaction::park_mfa(&cx, request_id, user.id, pending, browser, by_mail, fed).await {
        Ok(parked) => parked,
        Err(e) => return Err(resume_error(e)),
    };
    let mut page = MfaPage::new(parked.request_id.expose(), parked.csrf.expose());
    if kind == Kind::Email {
        // A code mailed under a minute ago (a second try at the password) still works.
        match email_mfa::send_code(&state.ctx(), user.id, &ip).await {
            Ok(Sent::TooSoon(_)) => {}
            Ok(sent) => page.mail_error = mail_problem(sent),
            Err(e) => return Err(errors::server_page(e)),
        }
    }
    Err(page.show(state, StatusCode::OK, user.id).await)
}

/// The parked request a sign-in resumes: its id, what it was for, and the browser
/// binding it was parked with.
pub struct Resumed<'a> {
    pub request_id: &'a str,
    pub pending: Pending,
    pub browser: &'a TokenHash,
}

/// Counts and audits a completed sign-in, then continues with what it was for.
pub async fn complete_sign_in(
    req: &HttpRequest,
    state: &AppState,
    cx: &Ctx<'_>,
    resumed: Resumed<'_>,
    who: &SignIn,
    username: &str,
) -> HttpResponse {
    finish_sign_in(req, state, cx, resumed, who, username, false).await
}

/// `complete_sign_in`, trusting this browser when `remember` (ticked on the
/// second-factor page, which was passed): the browser is recorded once the session is
/// open, and its device cookie set or renewed.
async fn finish_sign_in(
    req: &HttpRequest,
    state: &AppState,
    cx: &Ctx<'_>,
    resumed: Resumed<'_>,
    who: &SignIn,
    username: &str,
    remember: bool,
) -> HttpResponse {
    state.metrics.logins_ok.fetch_add(1, Ordering::Relaxed);
    Event::new("login.ok")
        .actor(username)
        .ip(who.ip.clone())
        .detail(match &who.federated {
            Some(f) => serde_json::json!({"amr": who.amr, "provider": f.provider, "upstream_sub": f.subject}),
            None => serde_json::json!({"amr": who.amr}),
        })
        .log(state)
        .await;
    let mut resp = match complete(req, state, cx, resumed, who).await {
        Ok(resp) => resp,
        Err(refused) => return refused,
    };
    let cookie = params::cookie(req, cookies::device_name(state))
        .filter(|v| devices::cookie_digest(Some(v)).is_some())
        .unwrap_or_else(|| Secret::generate().expose().to_string());
    let seen = devices::SignedIn {
        user_id: who.user_id,
        cookie: &cookie,
        user_agent: who.user_agent.as_deref(),
        ip: who.ip.as_deref().unwrap_or_default(),
        at: &crate::i18n::t().datetime(cx.now),
        trust: remember,
    };
    // The session is open: a failure to record the browser is logged, never undoes it.
    if let Err(e) = devices::signed_in(&state.ctx(), &seen).await {
        tracing::warn!(error = %e, user_id = who.user_id, "the sign-in's browser was not recorded");
    }
    let _ = resp.add_cookie(&cookies::device(state, cookie));
    resp
}

/// The second factor (RFC 6238, or a code sent by mail): a wrong code counts toward
/// the account's lockout like a wrong password, and a locked account must start over.
pub async fn mfa(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page(crate::i18n::t().err_verification_form);
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let Step {
        user_id,
        then,
        browser,
        by_mail,
        fed,
    } = match resume_mfa(&req, &state, request_id, csrf).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    if let Some(limited) = guard::limit_second_factor(&state, user_id) {
        return limited;
    }
    let remember = params::field(&form, "remember") == "on";
    let ip = ip_text(&req, &state);
    let user = match second_factor::second_factor(&state.ctx(), user_id, params::field(&form, "code"), &ip).await {
        Ok(SecondFactor::Passed { user, .. }) => user,
        Ok(SecondFactor::Wrong { .. }) => {
            state.metrics.logins_failed.fetch_add(1, Ordering::Relaxed);
            let mut page = MfaPage::new(request_id, csrf);
            (page.wrong, page.remember) = (true, remember);
            return page.show(&state, StatusCode::UNAUTHORIZED, user_id).await;
        }
        Ok(SecondFactor::Locked { user, by_this_code }) => {
            if by_this_code {
                state.metrics.logins_failed.fetch_add(1, Ordering::Relaxed);
            }
            return locked_out(&state, request_id, &user.username, ip).await;
        }
        Ok(SecondFactor::Gone) => return resume_error(ResumeError::Expired),
        Err(MfaError::Server(e)) => return errors::server_page(e),
        Err(e) => {
            tracing::error!(error = %e, user_id, "second factor could not be checked");
            return errors::server_page(crate::error::Internal::Failed);
        }
    };
    // The parked step says what the first factor was. After a password, the mailed
    // code is a one-time password too (RFC 8176 `otp`; no value names mail), a second
    // factor beside it; after a link by mail, only an authenticator app is asked.
    let amr = match &fed {
        // The upstream's methods, then the local code (RFC 8176 `otp`, `mfa`).
        Some(f) => crate::federation::with_local_code(&f.amr).into(),
        None if by_mail => signin::AMR_EMAIL_TOTP.into(),
        None => AMR_PASSWORD_OTP.into(),
    };
    let who = SignIn {
        user_id,
        amr,
        user_agent: user_agent(&req),
        ip: Some(ip),
        federated: fed,
    };
    let resumed = Resumed {
        request_id,
        pending: then,
        browser: &browser,
    };
    finish_sign_in(&req, &state, &cx, resumed, &who, &user.username, remember).await
}

/// A resumed second-factor step.
struct Step {
    user_id: i64,
    /// The step after it.
    then: Pending,
    /// The browser binding.
    browser: TokenHash,
    /// The first factor was a link or code by mail.
    by_mail: bool,
    /// The first factor was an upstream provider's sign-in.
    fed: Option<Federated>,
}

/// The second-factor step a form names, for this browser.
async fn resume_mfa(req: &HttpRequest, state: &AppState, request_id: &str, csrf: &str) -> Result<Step, HttpResponse> {
    let browser = params::cookie(req, cookies::browser_name(state)).map(|v| TokenHash::of(&v));
    match interaction::resume(&state.ctx(), request_id, csrf, browser.as_ref()).await {
        Ok(Pending::Mfa {
            user_id,
            then,
            by_mail,
            fed,
        }) => match browser {
            Some(browser) => Ok(Step {
                user_id,
                then: *then,
                browser,
                by_mail,
                fed,
            }),
            None => Err(resume_error(ResumeError::Forged)),
        },
        Ok(_) => Err(resume_error(ResumeError::Expired)),
        Err(e) => Err(resume_error(e)),
    }
}

/// The login form's own posts that show it again (the picker, the username step):
/// the form, after the origin and rate checks, and its parked sign-in, peeked, not
/// used up.
async fn reposted(
    req: &HttpRequest,
    state: &AppState,
    body: &Bytes,
) -> Result<(HashMap<String, String>, Pending), HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state).or_else(|| guard::limit_page(req, state, Bucket::Login)) {
        return Err(refused);
    }
    let form = read_form(req, body).ok_or_else(|| bad_request_page(crate::i18n::t().err_signin_form))?;
    let browser = params::cookie(req, cookies::browser_name(state)).map(|v| TokenHash::of(&v));
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    match interaction::resume(&state.ctx(), request_id, csrf, browser.as_ref()).await {
        Ok(p @ (Pending::Login(_) | Pending::DeviceLogin(_) | Pending::Portal(_))) => Ok((form, p)),
        Ok(_) => Err(resume_error(ResumeError::Expired)),
        Err(e) => Err(resume_error(e)),
    }
}

/// The login page again for a parked sign-in, at `step`.
async fn login_form(
    state: &AppState,
    form: &HashMap<String, String>,
    pending: &Pending,
    username: &str,
    step: pages::LoginStep,
) -> HttpResponse {
    let page = pages::LoginPage {
        about: crate::http::protocol::registered_logo::about(state, pending).await,
        client_name: &purpose(state, pending).await,
        request_id: params::field(form, "request_id"),
        csrf: params::field(form, "csrf"),
        username,
        error: None,
        mail: state.settings.smtp.is_some(),
        signup: crate::lifecycle::signup::open(&state.settings),
        providers: crate::http::signin::federation::buttons(state).await,
        cancel: None,
        step,
    };
    pages::render(StatusCode::OK, &page)
}

/// The login page's language picker: the same parked sign-in shown again in the
/// picked language, which this browser then keeps (a cookie that outranks the
/// application's `ui_locales` and the browser's `Accept-Language`).
pub async fn language(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (form, pending) = match reposted(&req, &state, &body).await {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    let Some(picked) = crate::i18n::Locale::from_tag(params::field(&form, "lang")) else {
        return bad_request_page(crate::i18n::t().err_language);
    };
    crate::i18n::prefer(Some(picked), crate::i18n::Source::Picked);
    let mut resp = login_form(&state, &form, &pending, "", pages::LoginStep::first(&state.settings)).await;
    let _ = resp.add_cookie(&crate::http::lang::cookie(&state, picked));
    resp
}

/// `--passkey-mode username-first` (and `passkey-only`): the username alone, then the
/// step for that account: its passkey first when it has one (its password remaining
/// the alternative when it has one), else its password. An empty username (another account) asks for the username again.
pub async fn username(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (form, pending) = match reposted(&req, &state, &body).await {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    let username = params::field(&form, "username").trim();
    let step = if username.is_empty() {
        pages::LoginStep::Username
    } else {
        match crate::auth::passkeys::named(&state, username).await {
            Ok(named) => pages::LoginStep::named(named),
            Err(e) => return errors::server_page(e),
        }
    };
    login_form(&state, &form, &pending, username, step).await
}

/// "Send a new code" on the second-factor page: at most one code a minute (and the
/// mail limits of `mail::outbox::queue`); a refusal says how long to wait.
pub async fn resend(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page(crate::i18n::t().err_form);
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let user_id = match resume_mfa(&req, &state, request_id, csrf).await {
        Ok(step) => step.user_id,
        Err(resp) => return resp,
    };
    let mut page = MfaPage::new(request_id, csrf);
    let status = match email_mfa::send_code(&state.ctx(), user_id, &ip_text(&req, &state)).await {
        Ok(Sent::Yes) => {
            page.notice = Some(crate::i18n::t().mfa_resent);
            StatusCode::OK
        }
        Ok(sent) => {
            page.mail_error = mail_problem(sent);
            match sent {
                Sent::Unverified => StatusCode::CONFLICT,
                _ => StatusCode::TOO_MANY_REQUESTS,
            }
        }
        Err(e) => return errors::server_page(e),
    };
    page.show(&state, status, user_id).await
}

async fn locked_out(state: &AppState, request_id: &str, username: &str, ip: String) -> HttpResponse {
    let cx = state.ctx();
    state.metrics.logins_locked.fetch_add(1, Ordering::Relaxed);
    Event::new("login.locked").actor(username).ip(Some(ip)).log(state).await;
    let _ = interaction::consume(&cx, request_id).await;
    pages::error_page(
        StatusCode::TOO_MANY_REQUESTS,
        crate::i18n::t().err_too_many_title,
        crate::i18n::t().mfa_locked,
        crate::i18n::t().mfa_locked_hint,
    )
}

/// Opens the session and continues with what the sign-in was for; `Err` when the
/// parked request could not be finished (no session was opened).
async fn complete(
    req: &HttpRequest,
    state: &AppState,
    cx: &Ctx<'_>,
    resumed: Resumed<'_>,
    who: &SignIn,
) -> Result<HttpResponse, HttpResponse> {
    let Resumed {
        request_id,
        pending,
        browser,
    } = resumed;
    let previous = params::cookie(req, cookies::session_name(state)).map(|v| TokenHash::of(&v));
    let request = match pending {
        Pending::Login(r) => r,
        Pending::DeviceLogin(code) => {
            let (cookie, _) = interaction::finish_session_only(cx, request_id, who, previous)
                .await
                .map_err(resume_error)?;
            return Ok(with_session(
                state,
                crate::http::protocol::device::after_login(&code),
                cookie.expose(),
            ));
        }
        Pending::Portal(path) => {
            let (cookie, _) = interaction::finish_session_only(cx, request_id, who, previous)
                .await
                .map_err(resume_error)?;
            return Ok(with_session(state, errors::redirect(&path), cookie.expose()));
        }
        _ => return Err(resume_error(ResumeError::Expired)),
    };
    let done = interaction::finish(cx, request_id, &request, who, previous, browser)
        .await
        .map_err(resume_error)?;
    let resp = match &done.next {
        AfterLogin::Respond(r) if !r.form_post => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, r.url()))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        AfterLogin::Respond(r) => respond(r),
        AfterLogin::Consent(parked) => show_consent(state, &request, who.user_id, parked).await,
        AfterLogin::Denied(r) => denied(state, &request.client_id, r).await,
    };
    Ok(with_session(state, resp, done.session_cookie.expose()))
}

fn with_session(state: &AppState, mut resp: HttpResponse, cookie: &str) -> HttpResponse {
    let _ = resp.add_cookie(&cookies::session(state, cookie.to_string()));
    resp
}

pub async fn consent(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state) {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page(crate::i18n::t().err_consent_form);
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let request = match interaction::resume(&cx, request_id, csrf, browser.as_ref()).await {
        Ok(Pending::Consent(r)) => r,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let approve = match params::field(&form, "decision") {
        "allow" => true,
        "deny" => false,
        _ => return bad_request_page(crate::i18n::t().err_consent_choice),
    };
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let session = match interaction::current_session(&cx, cookie.as_deref()).await {
        Ok(Some(s)) => s,
        Ok(None) => return resume_error(ResumeError::Expired),
        Err(e) => return errors::server_page(e),
    };
    match interaction::decide_consent(&cx, request_id, &request, &session, approve).await {
        Ok(r) => {
            // The consent is stored: whatever happens now, the user goes on.
            let name = crate::account::actor_name(&state.ctx(), session.user_id).await;
            Event::new(if approve { "consent.granted" } else { "consent.denied" })
                .actor(name)
                .target(format!("client:{}", request.client_id))
                .ip(Some(ip_text(&req, &state)))
                .detail(serde_json::json!({"scope": request.scope}))
                .log(&state)
                .await;
            respond(&r)
        }
        Err(e) => resume_error(e),
    }
}

pub use crate::http::errors::resume_page as resume_error;
