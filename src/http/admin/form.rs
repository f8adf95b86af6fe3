//! The administration form, written once: the checks every posted admin form passes
//! (same origin, an administrator, the session's CSRF token) as an extractor, and the
//! answer to a create or update (a redirect with its flash message, the page again
//! with the problems, or the error page).

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::web::{self, Bytes};
use actix_web::{FromRequest, HttpRequest, HttpResponse};

use super::error_page;
use crate::admin::{Actor, AdminError, Problems};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, guard, guard::ip_text, params};
use crate::state::AppState;

/// A submitted form that may repeat a name (checkbox groups).
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    }
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
    pub fn checked(&self, name: &str) -> bool {
        !self.get(name).is_empty()
    }
}

/// An administrator's form submission with a verified CSRF token (same origin, an
/// administrator), or the refusal.
pub async fn posted(req: &HttpRequest, state: &AppState, body: &Bytes) -> Result<(Viewer, Form, Actor), HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state) {
        return Err(refused);
    }
    let viewer = portal::require_admin(req, state).await?;
    let pairs = params::require_form(req)
        .and_then(|_| params::pairs(body))
        .map_err(|_| portal::csrf_refused())?;
    let form = Form(pairs);
    if !portal::csrf_ok(&viewer, form.get("csrf")) {
        return Err(portal::csrf_refused());
    }
    let actor = Actor {
        name: viewer.user.username.clone(),
        ip: Some(ip_text(req, state)),
        user_id: Some(viewer.user.id),
    };
    Ok((viewer, form, actor))
}

/// `posted`, plus the numeric id of the record the path names (`what` for the 404).
pub async fn posted_to(
    req: &HttpRequest,
    state: &AppState,
    body: &Bytes,
    raw_id: &str,
    what: &'static str,
) -> Result<(Viewer, Form, Actor, i64), HttpResponse> {
    let (v, form, actor) = posted(req, state, body).await?;
    let id = record_id(raw_id, what).map_err(|e| error_page(&e))?;
    Ok((v, form, actor, id))
}

/// The numeric id of the record the path names (`what` names it for the 404).
pub fn record_id(raw_id: &str, what: &'static str) -> Result<i64, AdminError> {
    raw_id.parse().map_err(|_| AdminError::NotFound(what))
}

/// A posted admin form that passed the checks of `posted`; a handler taking one
/// answers the refusal before its own code runs.
pub struct Posted {
    pub viewer: Viewer,
    pub form: Form,
    pub actor: Actor,
}

impl FromRequest for Posted {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let body = Bytes::from_request(&req, payload);
        Box::pin(async move {
            let body = body.await?;
            let Some(state) = req.app_data::<web::Data<AppState>>() else {
                return Err(actix_web::error::ErrorInternalServerError("no application state"));
            };
            match posted(&req, state, &body).await {
                Ok((viewer, form, actor)) => Ok(Posted { viewer, form, actor }),
                Err(refused) => Err(actix_web::error::InternalError::from_response("refused", refused).into()),
            }
        })
    }
}

/// The answer to a create or update: `ok`'s page when it went through, `again` (the
/// form once more, with what to correct) when the input was refused, else the error
/// page.
pub async fn answer<T, O, G>(
    result: Result<T, AdminError>,
    ok: impl FnOnce(T) -> O,
    again: impl FnOnce(Problems) -> G,
) -> HttpResponse
where
    O: Future<Output = HttpResponse>,
    G: Future<Output = HttpResponse>,
{
    match result {
        Ok(done) => ok(done).await,
        Err(AdminError::Invalid(problems)) => again(problems).await,
        Err(e) => error_page(&e),
    }
}

/// `answer`'s `ok` for a form that leads to a page: a redirect to `path` with the
/// flash message `code`.
pub fn done(path: &str, code: &str) -> HttpResponse {
    errors::redirect(&format!("{path}?done={code}"))
}
