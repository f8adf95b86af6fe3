//! Token, introspection and revocation endpoints: form in, client authenticated,
//! one protocol call, JSON out with `no-store`.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use super::{errors, guard, params};
use crate::auth::limits::Bucket;
use crate::db::clients::Client;
use crate::oidc::{client_auth, introspect as inspect, token as grants, Ctx, OAuthError};
use crate::state::AppState;

pub async fn authenticated(
    req: &HttpRequest,
    cx: &Ctx<'_>,
    body: &Bytes,
) -> Result<(Arc<Client>, HashMap<String, String>), OAuthError> {
    params::require_form(req)?;
    let form = params::unique_form(body)?;
    let presented = params::client_credentials(req, &form)?;
    guard::tag_client(req, &presented.client_id);
    let client = client_auth::authenticate(cx, presented).await?;
    Ok((client, form))
}

fn ok_json(value: &impl serde::Serialize) -> HttpResponse {
    let mut b = HttpResponse::Ok();
    errors::no_store(&mut b);
    b.json(value)
}

pub async fn token(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Token) {
        return limited;
    }
    let result = async {
        let (client, form) = authenticated(&req, &cx, &body).await?;
        let resp = grants::grant(&cx, &client, &form, &super::guard::ip_text(&req, &state)).await?;
        state
            .metrics
            .token_issued(form.get("grant_type").map(String::as_str).unwrap_or_default());
        Ok(resp)
    }
    .await;
    match result {
        Ok(resp) => ok_json(&resp),
        Err(e) => errors::oauth_json(&e),
    }
}

pub async fn introspect(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Introspect) {
        return limited;
    }
    let result = async {
        let (client, form) = authenticated(&req, &cx, &body).await?;
        inspect::introspect(&cx, &client, form.get("token").map(String::as_str)).await
    }
    .await;
    match result {
        Ok(v) => ok_json(&v),
        Err(e) => errors::oauth_json(&e),
    }
}

pub async fn revoke(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Revoke) {
        return limited;
    }
    let result = async {
        let (client, form) = authenticated(&req, &cx, &body).await?;
        let token = form
            .get("token")
            .ok_or_else(|| OAuthError::invalid_request("token is required"))?;
        let ip = super::guard::ip_text(&req, &state);
        inspect::revoke(
            &cx,
            &client,
            token,
            form.get("token_type_hint").map(String::as_str),
            &ip,
        )
        .await
    }
    .await;
    match result {
        Ok(()) => {
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.finish()
        }
        Err(e) => errors::oauth_json(&e),
    }
}
