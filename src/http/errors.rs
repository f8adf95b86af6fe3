//! The one place errors become HTTP responses: RFC 6749 §5.2 JSON for protocol
//! endpoints, RFC 6750 §3 for bearer-protected ones, pages for people.

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;

use super::pages;
use crate::oidc::authorize::AuthorizeError;
use crate::oidc::{ErrorCode, OAuthError};

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

/// Authorization errors: a page when the client cannot be trusted, otherwise a
/// redirect back to it (RFC 6749 §4.1.2.1).
pub fn authorize(e: AuthorizeError) -> HttpResponse {
    match e {
        AuthorizeError::Fatal(message) => pages::error_page(
            StatusCode::BAD_REQUEST,
            "Sign-in request rejected",
            &message,
            "Return to the application and try again. If this keeps happening, tell its administrator.",
        ),
        AuthorizeError::Respond(resp) => super::authorize::respond(&resp),
        AuthorizeError::Server(e) => server_page(&e),
    }
}

pub fn redirect(location: &str) -> HttpResponse {
    HttpResponse::Found()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// A server-side failure shown to a person.
pub fn server_page(e: &OAuthError) -> HttpResponse {
    if e.code == ErrorCode::TemporarilyUnavailable {
        let mut resp = pages::error_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Busy",
            "The sign-in service is busy right now.",
            "Wait a moment and try again.",
        );
        resp.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return resp;
    }
    pages::error_page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "The sign-in service could not complete your request.",
        "Try again later. The administrator can find the cause in the server log.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_has_its_status() {
        let rows = [
            (ErrorCode::InvalidRequest, 400),
            (ErrorCode::InvalidClient, 401),
            (ErrorCode::InvalidGrant, 400),
            (ErrorCode::UnauthorizedClient, 400),
            (ErrorCode::UnsupportedGrantType, 400),
            (ErrorCode::InvalidScope, 400),
            (ErrorCode::InvalidToken, 401),
            (ErrorCode::AccessDenied, 403),
            (ErrorCode::ServerError, 500),
            (ErrorCode::TemporarilyUnavailable, 503),
            (ErrorCode::UnsupportedTokenType, 400),
        ];
        for (code, status) in rows {
            assert_eq!(status_of(code).as_u16(), status, "{code:?}");
        }
    }

    #[test]
    fn invalid_client_carries_a_challenge_and_no_store() {
        let resp = oauth_json(&OAuthError::invalid_client("x"));
        assert_eq!(resp.status(), 401);
        assert!(resp.headers().contains_key(header::WWW_AUTHENTICATE));
        assert_eq!(resp.headers().get(header::CACHE_CONTROL).unwrap(), "no-store");
        assert_eq!(resp.headers().get(header::PRAGMA).unwrap(), "no-cache");
    }

    #[test]
    fn bearer_challenges_carry_no_request_text() {
        let e = OAuthError::invalid_request("the `a\r\nX-Evil: 1` parameter is repeated");
        let resp = bearer(Some(&e));
        assert_eq!(resp.status(), 400);
        assert_eq!(
            resp.headers().get(header::WWW_AUTHENTICATE).unwrap(),
            r#"Bearer realm="tessera", error="invalid_request""#
        );
    }

    #[test]
    fn busy_says_when_to_retry() {
        let resp = oauth_json(&OAuthError::unavailable());
        assert_eq!(resp.status(), 503);
        assert_eq!(resp.headers().get(header::RETRY_AFTER).unwrap(), "1");
    }
}
