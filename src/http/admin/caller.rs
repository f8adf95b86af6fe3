//! Who may call the admin JSON API (an admin client's `tessera:admin` token, or an
//! administrator's session with its CSRF header on changes), and the one way every
//! call of it answers.

use std::future::Future;

use actix_web::http::{Method, StatusCode};
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;

use crate::admin::{self, Actor, AdminError};
use crate::http::errors::{admin_json as admin_error, json_error};
use crate::http::{errors, guard::ip_text, protocol::credentials::header_token, signin::portal};
use crate::oidc::token::ADMIN_SCOPE;
use crate::oidc::{introspect, ErrorCode, OAuthError};
use crate::state::AppState;

fn forbidden(description: &str) -> HttpResponse {
    json_error(StatusCode::FORBIDDEN, "forbidden", description, None)
}

/// Who is calling, or the 401/403 that refuses them.
async fn caller(req: &HttpRequest, state: &AppState) -> Result<Actor, HttpResponse> {
    let cx = state.ctx();
    let ip = Some(ip_text(req, state));
    match header_token(req) {
        Err(e) => return Err(errors::bearer(Some(&e))),
        Ok(Some(token)) => {
            let invalid = || {
                errors::bearer(Some(&OAuthError::new(
                    ErrorCode::InvalidToken,
                    "the token is not valid",
                )))
            };
            let Some(at) = introspect::check_access_token(&cx, &token)
                .await
                .map_err(|e| errors::oauth_json(&e))?
            else {
                return Err(invalid());
            };
            // RFC 9449 §7.2: a DPoP-bound token is no bearer token, and this API
            // takes bearer tokens only.
            if crate::oidc::dpop::bound_key(&at.claims).is_some() {
                return Err(invalid());
            }
            let client_id = at.str_claim("client_id").to_string();
            let scoped = at.str_claim("scope").split(' ').any(|s| s == ADMIN_SCOPE);
            // Only a client's own token (client credentials) acts as an admin client.
            let own = at.str_claim("sub") == client_id;
            let admin_client = match state.clients.get(&state.db, &client_id, cx.now).await {
                Ok(c) => c.is_some_and(|c| c.admin),
                Err(e) => return Err(errors::oauth_json(&e.into())),
            };
            if !(scoped && own && admin_client) {
                return Err(forbidden(
                    "the token does not carry the tessera:admin scope of an admin client",
                ));
            }
            return Ok(Actor {
                name: format!("client:{client_id}"),
                ip,
                user_id: None,
            });
        }
        Ok(None) => {}
    }
    let Some(viewer) = portal::viewer(req, state).await? else {
        return Err(errors::bearer(None));
    };
    if !viewer.user.is_admin {
        return Err(forbidden("administrators only"));
    }
    if req.method() != Method::GET && !portal::csrf_header_ok(req, &viewer) {
        return Err(forbidden("a session needs its CSRF token in X-CSRF-Token for changes"));
    }
    Ok(Actor {
        name: viewer.user.username.clone(),
        ip,
        user_id: Some(viewer.user.id),
    })
}

/// Runs an operation for an authorised caller and answers with its JSON (also the
/// provider routes of `admin_providers`).
pub(crate) async fn run<T, F, Fut>(req: &HttpRequest, state: &AppState, status: StatusCode, op: F) -> HttpResponse
where
    T: Serialize,
    F: FnOnce(Actor) -> Fut,
    Fut: Future<Output = Result<T, AdminError>>,
{
    let actor = match caller(req, state).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    match op(actor).await {
        Ok(v) => {
            let mut b = HttpResponse::build(status);
            errors::no_store(&mut b);
            if status == StatusCode::NO_CONTENT {
                b.finish()
            } else {
                b.json(v)
            }
        }
        Err(e) => admin_error(&e),
    }
}

pub(crate) fn body<T: serde::de::DeserializeOwned>(bytes: &Bytes) -> Result<T, AdminError> {
    serde_json::from_slice(bytes).map_err(|e| admin::invalid("body", format!("not valid JSON for this call: {e}")))
}
