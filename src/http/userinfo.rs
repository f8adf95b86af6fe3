//! The UserInfo endpoint (OpenID Connect Core §5.3), with the bearer token in the
//! header or, for POST, in the form body (RFC 6750 §2.1, §2.2) — never both.

use actix_web::http::header;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use super::{errors, params};
use crate::oidc::{introspect, OAuthError};
use crate::state::AppState;

pub fn header_token(req: &HttpRequest) -> Result<Option<String>, OAuthError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| OAuthError::invalid_request("malformed Authorization header"))?;
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => {
            Ok(Some(token.trim().to_string()))
        }
        _ => Err(OAuthError::invalid_request(
            "the Authorization header is not a Bearer token",
        )),
    }
}

async fn answer(req: &HttpRequest, state: &AppState, token: Result<Option<String>, OAuthError>) -> HttpResponse {
    let cx = state.ctx();
    let token = match token {
        Ok(Some(t)) => t,
        Ok(None) => return errors::bearer(None),
        Err(e) => return errors::bearer(Some(&e)),
    };
    match introspect::userinfo(&cx, &token).await {
        Ok((client_id, claims)) => {
            // The token's client decides which browser origin may read the answer.
            super::guard::tag_client(req, &client_id);
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.json(claims)
        }
        Err(e) => errors::bearer(Some(&e)),
    }
}

pub async fn userinfo_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    answer(&req, &state, header_token(&req)).await
}

pub async fn userinfo_post(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let from_header = header_token(&req);
    let from_body = if body.is_empty() {
        Ok(None)
    } else {
        params::require_form(&req)
            .and_then(|_| params::unique_form(&body))
            .map(|f| f.get("access_token").cloned())
    };
    let token = match (from_header, from_body) {
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(Some(_)), Ok(Some(_))) => Err(OAuthError::invalid_request("send the token one way only")),
        (Ok(h), Ok(b)) => Ok(h.or(b)),
    };
    answer(&req, &state, token).await
}
