//! The language of each request: the person's pick on the login page (a cookie), else
//! the browser's `Accept-Language` (RFC 9110 §12.5.4), else `--default-locale`. The
//! resumed sign-in may refine it with its application's `ui_locales` (OpenID Connect
//! Core §3.1.2.1; `oidc::interaction`), which only the person's pick outranks.

use actix_web::dev::ServiceRequest;
use actix_web::http::header;

use crate::i18n::{self, Locale, Source};
use crate::state::AppState;

/// How long the picked language is remembered.
const MAX_AGE: i64 = 365 * 24 * 3600;

pub fn cookie_name(state: &AppState) -> &'static str {
    if state.secure_cookies() {
        "__Host-tessera_lang"
    } else {
        "tessera_lang"
    }
}

/// Remembers a person's pick in this browser.
pub fn cookie(state: &AppState, locale: Locale) -> actix_web::cookie::Cookie<'static> {
    crate::http::cookies::build(state, cookie_name(state), locale.tag().to_string(), MAX_AGE)
}

/// The language `req` is answered in, and what chose it.
pub fn choose(state: &AppState, req: &ServiceRequest) -> (Locale, Source) {
    let headers = req.headers();
    // Only a request that carries the cookie pays for parsing its cookies.
    let has_cookie = headers
        .get_all(header::COOKIE)
        .any(|v| v.to_str().is_ok_and(|v| v.contains("tessera_lang=")));
    if has_cookie {
        if let Some(locale) = req.cookie(cookie_name(state)).and_then(|c| Locale::from_tag(c.value())) {
            return (locale, Source::Picked);
        }
    }
    let browser = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .and_then(i18n::from_accept_language);
    match browser {
        Some(locale) => (locale, Source::Browser),
        None => (state.settings.default_locale, Source::Default),
    }
}
