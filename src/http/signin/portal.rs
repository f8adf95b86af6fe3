//! Tessera's own signed-in pages (`/account`, `/admin`): the viewer behind the session
//! cookie, the login form when there is none, and the CSRF token every form and API
//! call from a session carries.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use subtle::ConstantTimeEq;

use crate::crypto::TokenHash;
use crate::db::{sessions::Session, users::User};
use crate::http::cookies::{browser_cookie, set_browser};
use crate::http::signin::login_form::login_form;
use crate::http::{cookies, errors, guard, pages, params};
use crate::signin::portal::{Entry, Login};
use crate::state::AppState;

/// The signed-in person looking at a page.
pub struct Viewer {
    pub session: Session,
    pub user: User,
    /// The CSRF token for this session's forms.
    pub csrf: String,
}

/// The CSRF token of a session: derived from the secret cookie, so it needs no
/// storage and a page from another site cannot know it.
pub fn csrf_for(cookie: &str) -> String {
    crate::crypto::sha256_b64(format!("tessera-csrf:{cookie}").as_bytes())
}

/// Whether `presented` is this viewer's CSRF token.
pub fn csrf_ok(viewer: &Viewer, presented: &str) -> bool {
    !presented.is_empty() && bool::from(presented.as_bytes().ct_eq(viewer.csrf.as_bytes()))
}

/// Whether a script's request carries this viewer's CSRF token in `X-CSRF-Token`.
pub fn csrf_header_ok(req: &HttpRequest, viewer: &Viewer) -> bool {
    let presented = req.headers().get("x-csrf-token").and_then(|v| v.to_str().ok());
    csrf_ok(viewer, presented.unwrap_or_default())
}

/// The viewer, if the request carries a live session.
pub async fn viewer(req: &HttpRequest, state: &AppState) -> Result<Option<Viewer>, HttpResponse> {
    let cookie = params::cookie(req, cookies::session_name(state));
    match crate::signin::portal::viewer(&state.ctx(), cookie.as_deref()).await {
        Ok(found) => Ok(found.map(|(session, user)| seen(session, user, cookie.as_deref()))),
        Err(e) => Err(errors::server_page(e)),
    }
}

/// The viewer of a session, with the CSRF token its cookie gives.
fn seen(session: Session, user: User, cookie: Option<&str>) -> Viewer {
    Viewer {
        session,
        user,
        csrf: csrf_for(cookie.unwrap_or_default()),
    }
}

/// Pages may only come back to Tessera's own portal paths after sign-in (and to the
/// page confirming a change of address, which needs the account signed in).
pub(crate) fn return_path(req: &HttpRequest) -> String {
    let path = req.path();
    let ok = (path == "/account"
        || path.starts_with("/account/")
        || path == "/admin"
        || path.starts_with("/admin/")
        || path == "/email/verify")
        && !path.contains("//");
    if !ok {
        return "/account".into();
    }
    match req.query_string() {
        "" => path.to_string(),
        q if q.len() <= 512 => format!("{path}?{q}"),
        _ => path.to_string(),
    }
}

/// The viewer, or the login form that leads back here (GET) / an expired page (POST).
pub async fn require(req: &HttpRequest, state: &AppState) -> Result<Viewer, HttpResponse> {
    let cookie = params::cookie(req, cookies::session_name(state));
    let back = (req.method() == actix_web::http::Method::GET).then(|| return_path(req));
    let (binding, new_cookie) = browser_cookie(req, state);
    let from = (guard::client_ip(req, state), &TokenHash::of(&binding));
    let entry = crate::signin::portal::enter(&state.limits, &state.ctx(), cookie.as_deref(), from, back).await;
    let t = crate::i18n::t();
    match entry {
        Ok(Entry::SignedIn(found)) => {
            let (session, user) = *found;
            Ok(seen(session, user, cookie.as_deref()))
        }
        Ok(Entry::SignIn(login)) => {
            let purpose = t.fill(t.acct_portal_purpose, "org", crate::http::branding::shown().org_name);
            Err(sign_in_page(state, login, &purpose, new_cookie).await)
        }
        Ok(Entry::SignedOut) => Err(pages::error_page(
            StatusCode::UNAUTHORIZED,
            t.acct_signed_out_title,
            t.acct_signed_out,
            t.acct_signed_out_hint,
        )),
        Err(e) => Err(errors::server_page(e)),
    }
}

/// The login form parked before one of Tessera's own pages (`purpose` names what the
/// sign-in is for), with the browser cookie it is bound to when new; or the wait.
pub(crate) async fn sign_in_page(
    state: &AppState,
    login: Login,
    purpose: &str,
    new_cookie: Option<String>,
) -> HttpResponse {
    match login {
        Login::Parked(parked, pending) => {
            let mut resp = login_form(state, &parked, &pending, purpose, "").await;
            set_browser(&mut resp, state, new_cookie);
            resp
        }
        Login::Limited(wait) => guard::too_many_page(wait),
    }
}

/// An administrator, or 403 for anyone else.
pub async fn require_admin(req: &HttpRequest, state: &AppState) -> Result<Viewer, HttpResponse> {
    let v = require(req, state).await?;
    if v.user.is_admin {
        Ok(v)
    } else {
        Err(forbidden())
    }
}

pub fn forbidden() -> HttpResponse {
    let t = crate::i18n::t();
    pages::error_page(
        StatusCode::FORBIDDEN,
        t.acct_admins_only_title,
        t.acct_admins_only,
        t.acct_admins_only_hint,
    )
}

/// The refusal for a form whose CSRF token is missing or wrong.
pub fn csrf_refused() -> HttpResponse {
    let t = crate::i18n::t();
    pages::error_page(
        StatusCode::FORBIDDEN,
        t.acct_refused_title,
        t.acct_refused,
        t.acct_refused_hint,
    )
}

/// Unix seconds as `YYYY-MM-DD HH:MM UTC`, the form a date input and the audit
/// filter read (people see `Messages::datetime`).
pub fn when(unix: i64) -> String {
    let (y, m, d) = crate::i18n::civil(unix.div_euclid(86_400));
    let secs = unix.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", secs / 3600, secs % 3600 / 60)
}

/// Unix seconds at 00:00 UTC of a `YYYY-MM-DD` date (a date input's value).
pub fn parse_date(text: &str) -> Option<i64> {
    let mut parts = text.trim().splitn(3, '-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let d: i64 = parts.next()?.parse().ok()?;
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Howard Hinnant's days-from-civil, the inverse of `when`.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let unix = days * 86_400;
    // Refuse dates that do not exist (31 February): they do not come back unchanged.
    when(unix).starts_with(text.trim()).then_some(unix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dates_back_to_unix_midnight() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2000-02-29"), Some(951_782_400));
        assert_eq!(parse_date("2027-01-15"), Some(1_800_000_000 - 8 * 3600));
        assert_eq!(parse_date("2023-02-31"), None);
        assert_eq!(parse_date("yesterday"), None);
        assert_eq!(parse_date("2023-13-01"), None);
    }

    #[test]
    fn formats_dates_in_utc() {
        assert_eq!(when(0), "1970-01-01 00:00 UTC");
        assert_eq!(when(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(when(1_800_000_000), "2027-01-15 08:00 UTC");
    }
}
