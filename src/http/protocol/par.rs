//! The pushed authorization request endpoint (RFC 9126 §2).

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::http::{errors, guard};
use crate::oidc::par;
use crate::state::AppState;

/// The routes of this file.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/par", web::post().to(push));
}

/// RFC 9126 §2.1: a form, the client authenticated as at the token endpoint; §2.2:
/// `201 Created` with the `request_uri`; §2.3: errors as at the token endpoint.
async fn push(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    // Pushing costs what an authorization request costs, before the browser comes.
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Authorize) {
        return limited;
    }
    let dpop = crate::http::protocol::credentials::dpop_header(&req);
    let result = async {
        let (client, form) = crate::http::protocol::credentials::authenticated(&req, &cx, &body).await?;
        let proof = dpop.as_ref().map_err(Clone::clone)?.as_deref();
        par::push(&cx, &client, &form, proof).await
    }
    .await;
    let answer = match result {
        Ok(pushed) => {
            let mut b = HttpResponse::Created();
            errors::no_store(&mut b);
            b.json(&pushed)
        }
        Err(e) => errors::oauth_json(&e),
    };
    // RFC 9449 §8: a client that sends proofs learns the nonce for its next one.
    match dpop {
        Ok(Some(_)) => errors::with_dpop_nonce(answer, crate::oidc::dpop::nonce(&cx).as_deref()),
        _ => answer,
    }
}
