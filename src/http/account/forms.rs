//! What every form of the signed-in pages starts with: the posted fields with the
//! viewer and a verified CSRF token, and the viewer as the account operations know it.

use std::collections::HashMap;

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};

use crate::http::signin::portal::{self, Viewer};
use crate::http::{guard, params};
use crate::state::AppState;

/// The viewer as the account operations know them.
pub(crate) fn me<'a>(req: &HttpRequest, state: &AppState, v: &'a Viewer) -> crate::account::Me<'a> {
    crate::account::Me {
        user: &v.user,
        sid: &v.session.sid,
        ip: crate::http::guard::ip_text(req, state),
    }
}

/// Form fields, the viewer and a verified CSRF token, or the response that refuses.
pub async fn posted(
    req: &HttpRequest,
    state: &AppState,
    body: &Bytes,
) -> Result<(Viewer, HashMap<String, String>), HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state) {
        return Err(refused);
    }
    let viewer = portal::require(req, state).await?;
    let form = params::require_form(req)
        .and_then(|_| params::unique_form(body))
        .map_err(|_| portal::csrf_refused())?;
    if !portal::csrf_ok(&viewer, form.get("csrf").map(String::as_str).unwrap_or_default()) {
        return Err(portal::csrf_refused());
    }
    Ok((viewer, form))
}
