//! What the pages that make or use a passkey share: the signed-in viewer of a script's
//! call (CSRF in `X-CSRF-Token`), the forms of the pages reached by a mailed link, and
//! the JSON answers their scripts read.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use crate::auth::passkeys::{self, Made, PasskeyError};
use crate::domain::Problems;
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, guard, params};
use crate::state::AppState;

pub(crate) fn json_error(status: StatusCode, description: &str) -> HttpResponse {
    errors::json_error(status, "invalid_request", description, None)
}

/// The signed-in viewer of a JSON call with the session's CSRF token in the header.
pub(crate) async fn json_viewer(req: &HttpRequest, state: &AppState) -> Result<Viewer, HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state) {
        return Err(refused);
    }
    let Some(v) = portal::viewer(req, state).await? else {
        return Err(json_error(
            StatusCode::UNAUTHORIZED,
            "your session has ended; sign in again",
        ));
    };
    if !portal::csrf_header_ok(req, &v) {
        return Err(json_error(
            StatusCode::FORBIDDEN,
            "the request could not be verified; reload the page",
        ));
    }
    Ok(v)
}

/// The form of a page that makes a passkey through a mailed link.
pub fn link_form(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    form_of(req, body)
}

/// A link page's options request that was not a form.
pub fn bad_json() -> HttpResponse {
    json_error(
        StatusCode::BAD_REQUEST,
        "the form was not sent correctly; reload the page",
    )
}

/// Options for a passkey made through a mailed link, or `None` for a dead link.
pub fn options_json(options: Option<Value>) -> HttpResponse {
    match options {
        Some(o) => {
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.json(o)
        }
        None => json_error(StatusCode::GONE, crate::i18n::t().acct_passkey_link_dead),
    }
}

/// The first thing to correct before a passkey can be made (a username, say), for the
/// page's script to show.
pub fn problem_json(problems: &Problems) -> HttpResponse {
    let said = problems.values().next().map(String::as_str).unwrap_or_default();
    json_error(StatusCode::BAD_REQUEST, said)
}

/// The new credential a link page posted, verified (its challenge is spent with the
/// use case's own changes).
pub fn made(state: &AppState, form: &HashMap<String, String>) -> Result<Made, PasskeyError> {
    let get = |n: &str| params::field(form, n);
    passkeys::verify_creation(&state.ctx(), get("name"), get("client_data"), get("attestation_object"))
}

pub(crate) fn form_of(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    params::require_form(req).and_then(|_| params::unique_form(body)).ok()
}
