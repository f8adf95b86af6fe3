//! The cookies Tessera sets: the SSO session, the browser binding that ties a login
//! form to the browser it was shown to, and the long-lived device cookie. `__Host-`
//! prefixed on https issuers. The picked language's cookie is `http::lang`'s.

use actix_web::cookie::{time::Duration, Cookie, SameSite};

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

pub fn device(state: &AppState, value: String) -> Cookie<'static> {
    let max_age = crate::lifecycle::devices::COOKIE_MAX_AGE;
    build(state, device_name(state), value, max_age)
}
