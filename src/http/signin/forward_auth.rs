//! Forward-auth for reverse proxies (docs/FORWARD_AUTH.md): `/authz/forward-auth`
//! (Traefik ForwardAuth, Caddy `forward_auth`, HAProxy), `/authz/auth-request`
//! (nginx `auth_request`), and `/authz/sign-in`, where a browser signs in and gets the
//! `tessera_fa` cookie on the apps' domain before going back to the app.

use actix_web::cookie::{time::Duration, Cookie, SameSite};
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};

use crate::crypto::TokenHash;
use crate::domain::Secret;
use crate::forward_auth::{self as fa, Decision, Refusal, Target};
use crate::http::cookies::browser_cookie;
use crate::http::{cookies, errors, guard, pages, params, signin::portal};
use crate::signin::forward::{Cookies, Presented, SignIn};
use crate::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    // Any method: proxies differ in the method of the question they ask.
    cfg.route("/authz/forward-auth", web::route().to(forward_auth))
        .route("/authz/auth-request", web::route().to(auth_request))
        .route("/authz/sign-in", web::get().to(sign_in));
}

/// How the two endpoints tell the proxy to send a browser to sign in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavour {
    /// 302 to the sign-in page (the proxy passes the answer on).
    Redirect,
    /// 401 with the sign-in URL in `Location`, for nginx's `error_page 401`.
    Unauthorized,
}

pub async fn forward_auth(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    answer(&req, &state, Flavour::Redirect).await
}

pub async fn auth_request(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    answer(&req, &state, Flavour::Unauthorized).await
}

/// The one value of header `name`: `Ok(None)` when absent, `Err` when sent twice.
fn single<'a>(req: &'a HttpRequest, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = req.headers().get_all(name);
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("{name} was sent more than once"));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| format!("{name} is not plain text"))
}

/// The URL the proxied request was for: `X-Original-URL` (nginx) or the
/// `X-Forwarded-Proto/Host/Uri` set (Traefik, Caddy, HAProxy), preferring the one
/// the endpoint's proxy sends.
fn original(req: &HttpRequest, flavour: Flavour) -> Result<Target, String> {
    let method = match single(req, "x-forwarded-method")? {
        Some(m) => m,
        None => single(req, "x-original-method")?.unwrap_or("GET"),
    };
    let url = single(req, "x-original-url")?;
    let forwarded = (
        single(req, "x-forwarded-proto")?,
        single(req, "x-forwarded-host")?,
        single(req, "x-forwarded-uri")?,
    );
    let from_forwarded = |(proto, host, uri): (Option<&str>, Option<&str>, Option<&str>)| match (proto, host, uri) {
        (Some(p), Some(h), Some(u)) => Target::forwarded(p, h, u, method).map_err(str::to_string),
        _ => Err("the proxy sent neither X-Original-URL nor X-Forwarded-Proto, -Host and -Uri".to_string()),
    };
    match (flavour, url) {
        (Flavour::Unauthorized, Some(u)) => Target::parse(u, method).map_err(|e| format!("X-Original-URL: {e}")),
        (Flavour::Redirect, _) if forwarded.2.is_some() => from_forwarded(forwarded),
        (_, Some(u)) => Target::parse(u, method).map_err(|e| format!("X-Original-URL: {e}")),
        (_, None) => from_forwarded(forwarded),
    }
}

fn plain(status: StatusCode, text: &str) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .content_type("text/plain; charset=utf-8")
        .body(format!("{text}\n"))
}

async fn answer(req: &HttpRequest, state: &AppState, flavour: Flavour) -> HttpResponse {
    // The X-Forwarded-* headers decide who passes: only a trusted proxy may send them.
    let trusted = req
        .peer_addr()
        .is_some_and(|p| state.settings.trusted_proxies.iter().any(|c| c.contains(p.ip())));
    if !trusted {
        return plain(
            StatusCode::FORBIDDEN,
            "forward-auth answers only the proxies named in --trusted-proxies",
        );
    }
    let target = match original(req, flavour) {
        Ok(t) => t,
        Err(why) => return plain(StatusCode::BAD_REQUEST, &format!("refused: {why}")),
    };
    // `?app=ID` ties the proxy's site to one app (docs/FORWARD_AUTH.md); given twice,
    // which one was meant is unknown.
    let pinned: Vec<String> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .filter(|(k, _)| k == "app")
        .map(|(_, v)| v.into_owned())
        .collect();
    if pinned.len() > 1 {
        return plain(StatusCode::BAD_REQUEST, "refused: app was given more than once");
    }
    let ip = guard::ip_text(req, state);
    // Two `tessera_fa` cookies: the answer is the one for a browser that carries none.
    let sent = cookies::sent(req, fa::COOKIE);
    let cookie = match &sent {
        cookies::Sent::One(v) => Presented::One(v),
        cookies::Sent::Absent => Presented::Absent,
        cookies::Sent::Several => Presented::Several,
    };
    let asked = (&target, pinned.first().map(String::as_str));
    match crate::signin::forward::check(&state.ctx(), &state.forward_auth, asked, cookie, &ip).await {
        Ok(Decision::Allow(headers)) => {
            let mut resp = HttpResponse::Ok();
            resp.insert_header((header::CACHE_CONTROL, "no-store"));
            for (name, value) in headers {
                let (Ok(n), Ok(v)) = (
                    header::HeaderName::try_from(name),
                    header::HeaderValue::from_bytes(value.as_bytes()),
                ) else {
                    continue;
                };
                resp.insert_header((n, v));
            }
            resp.finish()
        }
        Ok(Decision::SignIn(url)) => match flavour {
            Flavour::Redirect => errors::redirect(&url),
            Flavour::Unauthorized => HttpResponse::Unauthorized()
                .insert_header((header::LOCATION, url))
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .finish(),
        },
        Ok(Decision::Forbidden(why)) => {
            let mut resp = pages::error_page(
                StatusCode::FORBIDDEN,
                crate::i18n::t().fwd_refused_title,
                &crate::i18n::t().fill(crate::i18n::t().fwd_refused, "why", why),
                crate::i18n::t().fwd_refused_hint,
            );
            resp.headers_mut()
                .insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
            resp
        }
        Err(e) => errors::server_page(e),
    }
}

fn refused_page(why: &str) -> HttpResponse {
    pages::error_page(
        StatusCode::BAD_REQUEST,
        crate::i18n::t().fwd_bad_title,
        why,
        crate::i18n::t().fwd_bad_hint,
    )
}

/// `GET /authz/sign-in?rd=URL`: signs the browser in at Tessera if it is not, then
/// sets the forward-auth cookie and sends it back to `rd`.
pub async fn sign_in(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let rd = web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
        .ok()
        .and_then(|q| q.get("rd").cloned())
        .unwrap_or_default();
    if rd.is_empty() {
        return refused_page(crate::i18n::t().fwd_no_target);
    }
    // The whole query is parked with the login form: no more than `rd` needs.
    if req.query_string().len() > 3 * 4096 {
        return refused_page(crate::i18n::t().fwd_too_long);
    }
    let session = params::cookie(&req, cookies::session_name(&state));
    // With two cookies, neither is renewed: a fresh token is issued.
    let presented = params::cookie(&req, fa::COOKIE);
    let held = Cookies {
        session: session.as_deref(),
        forward_auth: presented.as_deref(),
    };
    let back = format!("/authz/sign-in?{}", req.query_string());
    let (binding, new_cookie) = browser_cookie(&req, &state);
    let from = (guard::client_ip(&req, &state), &TokenHash::of(&binding));
    let t = crate::i18n::t();
    match crate::signin::forward::sign_in(&state.limits, &state.ctx(), (&rd, back), &held, from).await {
        Ok(SignIn::Refused(Refusal::Malformed(why))) => refused_page(&t.fill(t.fwd_malformed, "why", why)),
        Ok(SignIn::Refused(Refusal::Unregistered)) => refused_page(t.fwd_unknown),
        Ok(SignIn::Refused(Refusal::OtherScheme)) => refused_page(t.fwd_scheme),
        Ok(SignIn::Refused(Refusal::OutsideCookieDomain)) => refused_page(t.fwd_domain),
        Ok(SignIn::First(login, app)) => portal::sign_in_page(&state, login, &app, new_cookie).await,
        Ok(SignIn::Back {
            token,
            max_age,
            secure,
            target,
        }) => back_to_app(&state, &token, max_age, secure, target.as_str()),
        Err(e) => errors::server_page(e),
    }
}

/// The forward-auth cookie set on the apps' domain, and the browser back to the app.
fn back_to_app(state: &AppState, token: &Secret, max_age: i64, secure: bool, target: &str) -> HttpResponse {
    let mut cookie = Cookie::build(fa::COOKIE, token.expose().to_string())
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(Duration::seconds(max_age))
        .finish();
    if let Some(domain) = &state.settings.forward_auth_cookie_domain {
        cookie.set_domain(domain.clone());
    }
    let mut resp = errors::redirect(target);
    let _ = resp.add_cookie(&cookie);
    resp
}
