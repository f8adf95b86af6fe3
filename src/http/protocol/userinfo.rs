//! The UserInfo endpoint (OpenID Connect Core §5.3), with the bearer token in the
//! header or, for POST, in the form body (RFC 6750 §2.1, §2.2) — never both; or a
//! DPoP-bound token with the `DPoP` scheme and its proof (RFC 9449 §7.1).

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::http::protocol::credentials::{dpop_header, header_credentials};
use crate::http::{errors, params};
use crate::oidc::dpop::{Presented, Scheme};
use crate::oidc::{introspect, ErrorCode, OAuthError};
use crate::state::AppState;

async fn answer(
    req: &HttpRequest,
    state: &AppState,
    token: Result<Option<(Scheme, String)>, OAuthError>,
) -> HttpResponse {
    let cx = state.ctx();
    let (scheme, token) = match token {
        Ok(Some(t)) => t,
        Ok(None) => return errors::bearer(None),
        Err(e) => return errors::bearer(Some(&e)),
    };
    let proof = match dpop_header(req) {
        Ok(p) => p,
        Err(e) => return errors::dpop_challenge(&e, None),
    };
    let presented = Presented {
        scheme,
        proof: proof.as_deref(),
        method: req.method().as_str(),
    };
    match introspect::userinfo(&cx, &token, &presented).await {
        Ok((client_id, claims)) => {
            // The token's client decides which browser origin may read the answer.
            crate::http::guard::tag_client(req, &client_id);
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.json(claims)
        }
        // RFC 9449 §7.1: a DPoP-bound token's errors come with the DPoP challenge.
        Err(e) if scheme == Scheme::DPoP || is_dpop_error(&e) => {
            errors::dpop_challenge(&e, crate::oidc::dpop::nonce(&cx).as_deref())
        }
        Err(e) => errors::bearer(Some(&e)),
    }
}

fn is_dpop_error(e: &OAuthError) -> bool {
    matches!(e.code, ErrorCode::InvalidDpopProof | ErrorCode::UseDpopNonce)
}

pub async fn userinfo_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    answer(&req, &state, header_credentials(&req)).await
}

pub async fn userinfo_post(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let from_header = header_credentials(&req);
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
        // A token in the body is a bearer token (RFC 6750 §2.2).
        (Ok(h), Ok(b)) => Ok(h.or(b.map(|t| (Scheme::Bearer, t)))),
    };
    answer(&req, &state, token).await
}
