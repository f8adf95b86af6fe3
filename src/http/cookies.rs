//! The cookies Tessera sets: the SSO session, the browser binding that ties a login
//! form to the browser it was shown to, and the long-lived device cookie. `__Host-`
//! prefixed on https issuers. The picked language's cookie is `http::lang`'s; the
//! forward-auth cookie is `http::signin::forward_auth`'s, removed here at sign-out.

use actix_web::cookie::{time::Duration, Cookie, SameSite};
use actix_web::{HttpRequest, HttpResponse};

use crate::domain::Secret;
use crate::state::AppState;

pub fn session_name(state: &AppState) -> &'static str {
    if state.secure_cookies() {
        "__Host-tessera_session"
    } else {
        "tessera_session"
    }
}

pub fn browser_name(state: &AppState) -> &'static str {
    if state.secure_cookies() {
        "__Host-tessera_browser"
    } else {
        "tessera_browser"
    }
}

/// One per browser, long-lived: names the browser for the new-sign-in notice and for
/// "Remember this device" (`lifecycle::devices`).
pub fn device_name(state: &AppState) -> &'static str {
    if state.secure_cookies() {
        "__Host-tessera_device"
    } else {
        "tessera_device"
    }
}

pub(super) fn build(state: &AppState, name: &'static str, value: String, max_age: i64) -> Cookie<'static> {
    Cookie::build(name, value)
        .path("/")
        .http_only(true)
        .secure(state.secure_cookies())
        .same_site(SameSite::Lax)
        .max_age(Duration::seconds(max_age))
        .finish()
}

pub fn session(state: &AppState, value: String) -> Cookie<'static> {
    build(state, session_name(state), value, state.settings.lifetimes.session)
}

pub fn browser(state: &AppState, value: String) -> Cookie<'static> {
    // Outlives sessions so a login form stays valid while the page is open.
    build(state, browser_name(state), value, 30 * 24 * 3600)
}

/// The browser-binding cookie's value, and a new value to set when there was none.
pub fn browser_cookie(req: &HttpRequest, state: &AppState) -> (String, Option<String>) {
    match single(req, browser_name(state)).filter(|v| v.len() >= 32 && v.len() <= 128) {
        Some(v) => (v, None),
        None => {
            let v = Secret::generate().expose().to_string();
            (v.clone(), Some(v))
        }
    }
}

pub fn set_browser(resp: &mut HttpResponse, state: &AppState, new: Option<String>) {
    if let Some(v) = new {
        let _ = resp.add_cookie(&browser(state, v));
    }
}

pub fn device(state: &AppState, value: String) -> Cookie<'static> {
    let max_age = crate::lifecycle::devices::COOKIE_MAX_AGE;
    build(state, device_name(state), value, max_age)
}

/// The forward-auth cookie's own name, domain and path, expired: what sign-out sends.
pub fn forward_auth_removal(state: &AppState) -> Cookie<'static> {
    let mut cookie = Cookie::build(crate::forward_auth::COOKIE, "")
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .max_age(Duration::ZERO)
        .finish();
    if let Some(domain) = &state.settings.forward_auth_cookie_domain {
        cookie.set_domain(domain.clone());
    }
    cookie
}

/// How many cookies of one name a request carries. A host may set a cookie for its
/// parent domain (RFC 6265 §5.3, step 6) with another path, and the browser then sends
/// both under one name, in an order the server cannot trust (§5.4, step 2): picking
/// one would let a sibling host choose the session ("cookie tossing").
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    Absent,
    One(String),
    /// Two or more: none is believed, and the request is treated as carrying none.
    Several,
}

/// The cookies named `name` in every `Cookie` header of the request.
pub fn sent(req: &HttpRequest, name: &str) -> Sent {
    let Ok(all) = req.cookies() else {
        return Sent::Absent;
    };
    let mut values = all.iter().filter(|c| c.name() == name).map(|c| c.value());
    match (values.next(), values.next()) {
        (None, _) => Sent::Absent,
        (Some(v), None) => Sent::One(v.to_string()),
        (Some(_), Some(_)) => Sent::Several,
    }
}

/// The value of the one cookie named `name`; none when absent or sent more than once
/// (logged, since a second cookie of Tessera's names is someone else's doing).
pub fn single(req: &HttpRequest, name: &str) -> Option<String> {
    match sent(req, name) {
        Sent::One(v) => Some(v),
        Sent::Absent => None,
        Sent::Several => {
            tracing::warn!(cookie = name, "several cookies of one name sent: treated as none");
            None
        }
    }
}
