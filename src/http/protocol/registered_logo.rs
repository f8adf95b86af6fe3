//! What a client that registered itself shows on the login and consent pages: its
//! links and logo (`about`), and `GET /branding/registered-logo?client_id=…`, its
//! `logo_uri` fetched by `oidc::client_about` through the outbound fetch policy and
//! served from this origin, so the pages' `img-src 'self'` holds and the client's
//! host never sees who is signing in.

use actix_web::http::header;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};

use crate::http::errors;
use crate::state::AppState;

async fn registered_logo(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let id = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "client_id")
        .map(|(_, v)| v.into_owned());
    let found = match id {
        Some(id) => crate::oidc::client_about::logo(&state.ctx(), &id).await,
        None => Ok(None),
    };
    match found {
        // The branding logo's headers: the type the bytes were checked to be, no
        // sniffing, and a sandbox that loads nothing should the image be opened.
        Ok(Some((bytes, kind))) => HttpResponse::Ok()
            .content_type(kind)
            .insert_header((
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; sandbox",
            ))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
            .body(bytes.to_vec()),
        Ok(None) => HttpResponse::NotFound()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        Err(e) => errors::server_page(e),
    }
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/branding/registered-logo", web::get().to(registered_logo));
}
