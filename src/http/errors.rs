//! The one place errors become HTTP responses: RFC 6749 §5.2 JSON for protocol
//! endpoints, RFC 6750 §3 for bearer-protected ones, the same JSON shape for the admin
//! API and passkey ceremonies, pages for people. Each error type of the layers below
//! has one function here, and each of its variants a test.

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;

use crate::admin::{AdminError, Problems};
use crate::auth::passkeys::PasskeyError;
use crate::error::Internal;
use crate::http::pages;
use crate::oidc::authorize::{AuthResponse, AuthorizeError};
use crate::oidc::logout::LogoutError;
use crate::oidc::{ErrorCode, OAuthError};
use crate::signin::ResumeError;

pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::InvalidClient | ErrorCode::InvalidToken => StatusCode::UNAUTHORIZED,
        ErrorCode::AccessDenied => StatusCode::FORBIDDEN,
        ErrorCode::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    }
}

/// Headers every protocol response carries (RFC 6749 §5.1).
pub fn no_store(b: &mut actix_web::HttpResponseBuilder) {
    b.insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"));
}

fn json_body(e: &OAuthError) -> serde_json::Value {
    serde_json::json!({ "error": e.code.as_str(), "error_description": e.description })
}

/// An error from the token, introspection or revocation endpoint.
pub fn oauth_json(e: &OAuthError) -> HttpResponse {
    let mut b = HttpResponse::build(status_of(e.code));
    no_store(&mut b);
    match e.code {
        ErrorCode::InvalidClient => {
            b.insert_header((header::WWW_AUTHENTICATE, r#"Basic realm="tessera""#));
        }
        ErrorCode::TemporarilyUnavailable => {
            b.insert_header((header::RETRY_AFTER, "1"));
        }
        _ => {}
    }
    b.json(json_body(e))
}

/// An error from a bearer-protected resource (RFC 6750 §3): the details travel in
/// `WWW-Authenticate`; a request with no token at all gets no error code (§3.1).
pub fn bearer(e: Option<&OAuthError>) -> HttpResponse {
    let Some(e) = e else {
        let mut b = HttpResponse::Unauthorized();
        no_store(&mut b);
        b.insert_header((header::WWW_AUTHENTICATE, r#"Bearer realm="tessera""#));
        return b.finish();
    };
    if !matches!(e.code, ErrorCode::InvalidToken | ErrorCode::InvalidRequest) {
        return oauth_json(e);
    }
    // Only the fixed error code goes in the header: descriptions can quote the request
    // (a parameter name), and request text in a header is an injection (or a 500 when
    // it holds a control character). The description travels in the JSON body.
    let challenge = format!(r#"Bearer realm="tessera", error="{}""#, e.code.as_str());
    let mut b = HttpResponse::build(status_of(e.code));
    no_store(&mut b);
    b.insert_header((header::WWW_AUTHENTICATE, challenge))
        .json(json_body(e))
}

/// RFC 9449 §8.1: the nonce the client must put in its next DPoP proofs, on any
/// answer of an endpoint that checks proofs.
pub fn with_dpop_nonce(mut resp: HttpResponse, nonce: Option<&str>) -> HttpResponse {
    if let Some(v) = nonce.and_then(|n| header::HeaderValue::from_str(n).ok()) {
        resp.headers_mut()
            .insert(header::HeaderName::from_static("dpop-nonce"), v);
    }
    resp
}

/// An error at a resource for a DPoP-bound token, or a proof (RFC 9449 §7.1): the
/// challenge names the DPoP scheme, the algorithms a proof may use and only the fixed
/// error code (as in `bearer`); `use_dpop_nonce` answers 401 too (§9), with the nonce.
pub fn dpop_challenge(e: &OAuthError, nonce: Option<&str>) -> HttpResponse {
    let status = match e.code {
        ErrorCode::InvalidToken | ErrorCode::InvalidDpopProof | ErrorCode::UseDpopNonce => StatusCode::UNAUTHORIZED,
        ErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
        _ => return oauth_json(e),
    };
    let algs = crate::oidc::discovery::CLIENT_SIGNING_ALGS.join(" ");
    let challenge = format!(r#"DPoP algs="{algs}", error="{}""#, e.code.as_str());
    let mut b = HttpResponse::build(status);
    no_store(&mut b);
    b.insert_header((header::WWW_AUTHENTICATE, challenge));
    let nonce = nonce.filter(|_| e.code == ErrorCode::UseDpopNonce);
    with_dpop_nonce(b.json(json_body(e)), nonce)
}

/// Authorization errors: a page when the client cannot be trusted, otherwise a
/// redirect back to it (RFC 6749 §4.1.2.1).
pub fn authorize(e: AuthorizeError) -> HttpResponse {
    match e {
        AuthorizeError::Fatal(message) => pages::error_page(
            StatusCode::BAD_REQUEST,
            crate::i18n::t().err_request_rejected,
            &message,
            crate::i18n::t().err_rejected_hint,
        ),
        AuthorizeError::Respond(resp) => respond(&resp),
        AuthorizeError::Server(e) => server_page(e),
    }
}

/// Delivers an authorization response by redirect, or by form post when asked.
pub fn respond(resp: &AuthResponse) -> HttpResponse {
    if resp.form_post {
        let fields = resp.params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        return pages::form_post(&pages::FormPostPage {
            action: resp.redirect_uri.as_str(),
            fields,
        });
    }
    redirect(&resp.url())
}

pub fn redirect(location: &str) -> HttpResponse {
    HttpResponse::Found()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// A server-side failure shown to a person.
pub fn server_page(e: impl Into<Internal>) -> HttpResponse {
    match e.into() {
        Internal::Busy => {
            let mut resp = pages::error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                crate::i18n::t().err_busy_title,
                crate::i18n::t().err_busy,
                crate::i18n::t().err_busy_hint,
            );
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            resp
        }
        Internal::Failed => pages::error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            crate::i18n::t().err_failed_title,
            crate::i18n::t().err_failed,
            crate::i18n::t().err_failed_hint,
        ),
    }
}

/// A JSON error body outside the OAuth endpoints (admin API, passkey ceremonies), in
/// the same shape: `error`, `error_description`, and for forms the failing `fields`.
pub fn json_error(status: StatusCode, error: &str, description: &str, fields: Option<&Problems>) -> HttpResponse {
    let mut body = serde_json::json!({"error": error, "error_description": description});
    if let Some(f) = fields {
        body["fields"] = serde_json::json!(f);
    }
    let mut b = HttpResponse::build(status);
    no_store(&mut b);
    b.json(body)
}

/// An administration operation that failed, for the admin API.
pub fn admin_json(e: &AdminError) -> HttpResponse {
    match e {
        AdminError::NotFound(what) => json_error(StatusCode::NOT_FOUND, "not_found", &format!("no such {what}"), None),
        AdminError::Invalid(fields) => json_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "some fields are not valid",
            Some(fields),
        ),
        AdminError::Conflict(msg) => json_error(StatusCode::CONFLICT, "conflict", msg, None),
        AdminError::Server(e) => oauth_json(&OAuthError::from(*e)),
    }
}

/// An administration operation that failed, as a page (form errors are shown on the
/// form instead).
pub fn admin_page(e: &AdminError) -> HttpResponse {
    match e {
        AdminError::NotFound(what) => pages::error_page(
            StatusCode::NOT_FOUND,
            crate::i18n::t().err_not_found_title,
            &crate::i18n::t().fill(crate::i18n::t().err_not_found, "what", what),
            crate::i18n::t().err_not_found_hint,
        ),
        AdminError::Conflict(msg) => pages::error_page(
            StatusCode::CONFLICT,
            crate::i18n::t().err_conflict_title,
            msg,
            crate::i18n::t().err_conflict_hint,
        ),
        AdminError::Invalid(p) => {
            let msg = p
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join("; ");
            pages::error_page(
                StatusCode::BAD_REQUEST,
                crate::i18n::t().err_invalid_title,
                &msg,
                crate::i18n::t().err_invalid_hint,
            )
        }
        AdminError::Server(e) => server_page(*e),
    }
}

/// A parked sign-in, consent or device approval that cannot be resumed.
pub fn resume_page(e: ResumeError) -> HttpResponse {
    match e {
        ResumeError::Expired => pages::error_page(
            StatusCode::BAD_REQUEST,
            crate::i18n::t().err_expired_title,
            crate::i18n::t().err_expired,
            crate::i18n::t().err_expired_hint,
        ),
        ResumeError::Forged => pages::error_page(
            StatusCode::FORBIDDEN,
            crate::i18n::t().err_forged_title,
            crate::i18n::t().err_forged,
            crate::i18n::t().err_forged_hint,
        ),
        ResumeError::Server(e) => server_page(e),
    }
}

/// A passkey ceremony step that failed, for the page's script.
pub fn passkey_json(e: PasskeyError) -> HttpResponse {
    match e {
        PasskeyError::Refused(why) => json_error(StatusCode::BAD_REQUEST, "invalid_request", why, None),
        PasskeyError::Server(e) => oauth_json(&OAuthError::from(e)),
    }
}

/// A logout request that cannot be honoured as asked: a page, never a redirect
/// (RP-Initiated Logout §3); the person stays signed in.
pub fn logout_page(e: LogoutError) -> HttpResponse {
    match e {
        LogoutError::Invalid(message) => pages::error_page(
            StatusCode::BAD_REQUEST,
            crate::i18n::t().logout_rejected_title,
            message,
            crate::i18n::t().logout_still_signed_in,
        ),
        LogoutError::Server(e) => server_page(e),
    }
}

#[cfg(test)]
mod tests;
