//! What a request presents to the protocol endpoints: the client's credentials with
//! its form (RFC 6749 §2.3), the access token of an `Authorization` header with the
//! `Bearer` or `DPoP` scheme (RFC 6750 §2.1, RFC 9449 §7.1), and the `DPoP` proof header.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::header;
use actix_web::web::Bytes;
use actix_web::HttpRequest;

use crate::db::clients::Client;
use crate::http::{guard, params};
use crate::oidc::dpop::Scheme;
use crate::oidc::{client_auth, Ctx, ErrorCode, OAuthError};

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

/// The token of an `Authorization: Bearer` header.
pub fn header_token(req: &HttpRequest) -> Result<Option<String>, OAuthError> {
    match header_credentials(req)? {
        None => Ok(None),
        Some((Scheme::Bearer, token)) => Ok(Some(token)),
        Some((Scheme::DPoP, _)) => Err(not_bearer()),
    }
}

fn not_bearer() -> OAuthError {
    OAuthError::invalid_request("the Authorization header is not a Bearer token")
}

/// The request's `DPoP` header: at most one (RFC 9449 §4.3 step 1), else
/// `invalid_dpop_proof`.
pub fn dpop_header(req: &HttpRequest) -> Result<Option<String>, OAuthError> {
    let bad = |d: &'static str| OAuthError::new(ErrorCode::InvalidDpopProof, d);
    let mut values = req.headers().get_all("dpop");
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(bad("send one DPoP header"));
    }
    let proof = first.to_str().map_err(|_| bad("the DPoP header is not a JWS"))?;
    Ok(Some(proof.trim().to_string()))
}

/// The token of an `Authorization` header with the `Bearer` or `DPoP` scheme.
pub(crate) fn header_credentials(req: &HttpRequest) -> Result<Option<(Scheme, String)>, OAuthError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| OAuthError::invalid_request("malformed Authorization header"))?;
    let (scheme, token) = match value.split_once(' ') {
        Some((scheme, token)) if !token.trim().is_empty() => (scheme, token.trim().to_string()),
        _ => return Err(not_bearer()),
    };
    if scheme.eq_ignore_ascii_case("dpop") {
        Ok(Some((Scheme::DPoP, token)))
    } else if scheme.eq_ignore_ascii_case("bearer") {
        Ok(Some((Scheme::Bearer, token)))
    } else {
        Err(not_bearer())
    }
}
