//! A test per row of each error mapping: status, headers, and whether a page or JSON.

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
fn dpop_challenges_name_the_scheme_and_carry_the_nonce_only_when_asked_for() {
    let resp = dpop_challenge(&OAuthError::new(ErrorCode::UseDpopNonce, "x"), Some("n1"));
    assert_eq!(resp.status(), 401);
    assert_eq!(
        resp.headers().get(header::WWW_AUTHENTICATE).unwrap(),
        r#"DPoP algs="RS256 PS256 ES256 EdDSA", error="use_dpop_nonce""#
    );
    assert_eq!(resp.headers().get("dpop-nonce").unwrap(), "n1");
    let resp = dpop_challenge(&OAuthError::new(ErrorCode::InvalidDpopProof, "x"), Some("n1"));
    assert_eq!(resp.status(), 401);
    assert!(resp.headers().get("dpop-nonce").is_none());
    assert_eq!(dpop_challenge(&OAuthError::invalid_request("x"), None).status(), 400);
    let resp = with_dpop_nonce(oauth_json(&OAuthError::new(ErrorCode::UseDpopNonce, "x")), Some("n2"));
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.headers().get("dpop-nonce").unwrap(), "n2");
}

#[test]
fn busy_says_when_to_retry() {
    let resp = oauth_json(&OAuthError::unavailable());
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers().get(header::RETRY_AFTER).unwrap(), "1");
}

fn body_of(resp: HttpResponse) -> String {
    let bytes = actix_web::rt::System::new()
        .block_on(actix_web::body::to_bytes(resp.into_body()))
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn is_page(resp: &HttpResponse) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/html"))
}

fn is_json(resp: &HttpResponse) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.to_str().unwrap_or("") == "application/json")
}

#[test]
fn server_failures_become_pages_that_name_no_cause() {
    let busy = server_page(Internal::Busy);
    assert_eq!(busy.status(), 503);
    assert_eq!(busy.headers().get(header::RETRY_AFTER).unwrap(), "1");
    assert!(is_page(&busy));
    let failed = server_page(Internal::Failed);
    assert_eq!(failed.status(), 500);
    assert!(is_page(&failed));
    assert!(body_of(failed).contains("server log"));
}

#[test]
fn internal_failures_become_rfc_6749_codes() {
    assert_eq!(OAuthError::from(Internal::Busy).code, ErrorCode::TemporarilyUnavailable);
    assert_eq!(OAuthError::from(Internal::Failed).code, ErrorCode::ServerError);
    assert_eq!(Internal::from(crate::db::DbError::Busy), Internal::Busy);
    assert_eq!(Internal::from(crate::db::DbError::Full), Internal::Busy);
    assert_eq!(Internal::from(crate::db::DbError::NotFound), Internal::Failed);
}

#[test]
fn each_admin_error_has_its_json_answer() {
    let fields = Problems::from([("name".to_string(), "is taken".to_string())]);
    let rows = [
        (AdminError::NotFound("user"), 404, "not_found", "no such user"),
        (
            AdminError::Invalid(fields),
            400,
            "invalid_request",
            "\"name\":\"is taken\"",
        ),
        (AdminError::Conflict("in use".into()), 409, "conflict", "in use"),
        (
            AdminError::Server(Internal::Failed),
            500,
            "server_error",
            "could not complete",
        ),
        (
            AdminError::Server(Internal::Busy),
            503,
            "temporarily_unavailable",
            "busy",
        ),
    ];
    for (e, status, code, text) in rows {
        let resp = admin_json(&e);
        assert_eq!(resp.status().as_u16(), status, "{e:?}");
        assert!(is_json(&resp), "{e:?}");
        assert_eq!(resp.headers().get(header::CACHE_CONTROL).unwrap(), "no-store");
        let body = body_of(resp);
        assert!(body.contains(&format!("\"error\":\"{code}\"")), "{e:?}: {body}");
        assert!(body.contains(text), "{e:?}: {body}");
    }
}

#[test]
fn each_admin_error_has_its_page() {
    let fields = Problems::from([("name".to_string(), "is taken".to_string())]);
    let rows = [
        (AdminError::NotFound("user"), 404, "There is no such user."),
        (AdminError::Invalid(fields), 400, "name: is taken"),
        (AdminError::Conflict("in use".into()), 409, "in use"),
        (
            AdminError::Server(Internal::Failed),
            500,
            crate::i18n::t().err_failed_title,
        ),
        (AdminError::Server(Internal::Busy), 503, "busy"),
    ];
    for (e, status, text) in rows {
        let resp = admin_page(&e);
        assert_eq!(resp.status().as_u16(), status, "{e:?}");
        assert!(is_page(&resp), "{e:?}");
        let body = body_of(resp);
        assert!(body.contains(text), "{e:?}: {body}");
    }
}

#[test]
fn each_resume_error_has_its_page() {
    let rows = [
        (ResumeError::Expired, 400, crate::i18n::t().err_expired_title),
        (ResumeError::Forged, 403, crate::i18n::t().err_forged_title),
        (
            ResumeError::Server(Internal::Failed),
            500,
            crate::i18n::t().err_failed_title,
        ),
        (ResumeError::Server(Internal::Busy), 503, "busy"),
    ];
    for (e, status, text) in rows {
        let label = format!("{e:?}");
        let resp = resume_page(e);
        assert_eq!(resp.status().as_u16(), status, "{label}");
        assert!(is_page(&resp), "{label}");
        assert!(body_of(resp).contains(text), "{label}");
    }
}

#[test]
fn each_passkey_error_has_its_json_answer() {
    let refused = passkey_json(PasskeyError::Refused("the ceremony expired; try again"));
    assert_eq!(refused.status(), 400);
    assert!(is_json(&refused));
    assert!(body_of(refused).contains("the ceremony expired; try again"));
    let failed = passkey_json(PasskeyError::Server(Internal::Failed));
    assert_eq!(failed.status(), 500);
    assert!(body_of(failed).contains("server_error"));
    let busy = passkey_json(PasskeyError::Server(Internal::Busy));
    assert_eq!(busy.status(), 503);
    assert_eq!(busy.headers().get(header::RETRY_AFTER).unwrap(), "1");
}

#[test]
fn each_logout_error_has_its_page() {
    let invalid = logout_page(LogoutError::Invalid("id_token_hint is not valid"));
    assert_eq!(invalid.status(), 400);
    assert!(is_page(&invalid));
    let body = body_of(invalid);
    assert!(body.contains("id_token_hint is not valid") && body.contains("still signed in"));
    assert_eq!(logout_page(LogoutError::Server(Internal::Failed)).status(), 500);
    assert_eq!(logout_page(LogoutError::Server(Internal::Busy)).status(), 503);
}

#[test]
fn each_authorize_error_goes_where_it_belongs() {
    let fatal = authorize(AuthorizeError::Fatal("redirect_uri is not registered".into()));
    assert_eq!(fatal.status(), 400);
    assert!(is_page(&fatal));
    assert!(!fatal.headers().contains_key(header::LOCATION));
    assert!(body_of(fatal).contains("redirect_uri is not registered"));
    let uri = crate::domain::RedirectUri::parse("https://rp.example/cb").expect("a valid URI");
    let e = OAuthError::new(ErrorCode::AccessDenied, "the user declined the request");
    let back = authorize(AuthorizeError::Respond(crate::oidc::authorize::AuthResponse::error(
        "https://id.example",
        &uri,
        Some("xyz"),
        false,
        &e,
    )));
    assert_eq!(back.status(), 302);
    let location = back.headers().get(header::LOCATION).unwrap().to_str().unwrap();
    assert!(
        location.starts_with("https://rp.example/cb?error=access_denied"),
        "{location}"
    );
    assert!(
        location.contains("state=xyz") && location.contains("iss="),
        "{location}"
    );
    assert_eq!(authorize(AuthorizeError::Server(Internal::Failed)).status(), 500);
    assert_eq!(authorize(AuthorizeError::Server(Internal::Busy)).status(), 503);
}
