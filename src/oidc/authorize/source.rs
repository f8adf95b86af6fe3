//! Where an authorization request's parameters come from: the URL or form itself, a
//! pushed request named by `request_uri` (RFC 9126 §4), or a signed request object in
//! `request` (RFC 9101 §5). Either of the latter replaces the outer parameters.

use super::error::AuthorizeError;
use super::response::AuthResponse;
use crate::db::clients::Client;
use crate::domain::RedirectUri;
use crate::oidc::par::{self, URN_PREFIX};
use crate::oidc::request_object::{self, ObjectError};
use crate::oidc::{unique_param, Ctx, ErrorCode, OAuthError};

type Params = Vec<(String, String)>;

/// How a request reached validation, and so which of the "only through" rules of its
/// client and of the server still apply (RFC 9126 §6, RFC 9101 §10.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// At the authorization endpoint; `signed`: the parameters came from a request object.
    Front { signed: bool },
    /// At the pushed authorization request endpoint, before it is stored.
    Push { signed: bool },
    /// At the authorization endpoint from a pushed request, checked when it was pushed.
    Pushed,
}

impl Via {
    /// Why this request may not come this way, if it may not.
    pub(super) fn refusal(self, client: &Client, server_requires_par: bool) -> Option<&'static str> {
        let signed = match self {
            Via::Front { signed } | Via::Push { signed } => signed,
            Via::Pushed => return None,
        };
        if !signed && client.require_signed_request_object {
            return Some("this client must send its authorization request as a signed request object");
        }
        if matches!(self, Via::Front { .. }) && (client.require_par || server_requires_par) {
            return Some("pushed authorization requests are required");
        }
        None
    }
}

/// The parameters to validate, and how they came.
pub async fn resolve(cx: &Ctx<'_>, outer: &[(String, String)]) -> Result<(Params, Via), AuthorizeError> {
    let repeated = |name: &str| AuthorizeError::Fatal(format!("The `{name}` parameter is repeated."));
    let request_uri = unique_param(outer, "request_uri").map_err(|_| repeated("request_uri"))?;
    let request = unique_param(outer, "request").map_err(|_| repeated("request"))?;
    if request_uri.is_none() && request.is_none() {
        return Ok((outer.to_vec(), Via::Front { signed: false }));
    }
    // Both need the client: its pushed requests, its keys.
    let client_id = unique_param(outer, "client_id").map_err(|_| repeated("client_id"))?;
    let client_id =
        client_id.ok_or_else(|| AuthorizeError::Fatal("The request names no client (client_id is missing).".into()))?;
    let client = cx.clients.get(cx.db, client_id, cx.now).await?;
    let client =
        client.ok_or_else(|| AuthorizeError::Fatal("The application that sent you here is not registered.".into()))?;
    let refuse = |code: ErrorCode, d: String| early_error(cx, &client, outer, OAuthError::new(code, d));
    match (request_uri, request) {
        (Some(_), Some(_)) => Err(refuse(
            ErrorCode::InvalidRequest,
            "send request or request_uri, not both".into(),
        )),
        (Some(uri), None) if !uri.starts_with(URN_PREFIX) => Err(refuse(
            ErrorCode::RequestUriNotSupported,
            "only request_uri values from this provider's pushed authorization request endpoint are accepted; \
             request objects are not fetched by reference"
                .into(),
        )),
        (Some(uri), None) => match par::take(cx, &client.client_id, uri)
            .await
            .map_err(AuthorizeError::Server)?
        {
            Some(params) => Ok((params, Via::Pushed)),
            None => Err(refuse(
                ErrorCode::InvalidRequestUri,
                "the request_uri is unknown, expired or already used".into(),
            )),
        },
        (None, request) => match request_object::expand(cx, &client, request.unwrap_or_default()).await {
            Ok(params) => Ok((params, Via::Front { signed: true })),
            Err(ObjectError::Invalid(d)) => Err(refuse(ErrorCode::InvalidRequestObject, d)),
            Err(ObjectError::Server(e)) => Err(AuthorizeError::Server(e)),
        },
    }
}

/// A request whose object or pushed request cannot be used has no verified redirect
/// URI (RFC 9101 §6.3). The outer one may carry the error only when it is registered
/// for the client, so this is no open redirector (RFC 9700 §4.11); else a page.
fn early_error(cx: &Ctx<'_>, client: &Client, outer: &[(String, String)], e: OAuthError) -> AuthorizeError {
    let one = |name: &str| unique_param(outer, name).ok().flatten();
    let redirect = one("redirect_uri")
        .filter(|r| client.redirect_uris.iter().any(|x| x == r))
        .and_then(|r| RedirectUri::parse(r).ok());
    match redirect {
        Some(redirect) => {
            let state = one("state").filter(|s| s.len() <= 4096);
            let form_post = one("response_mode") == Some("form_post");
            AuthorizeError::Respond(AuthResponse::error(cx.issuer, &redirect, state, form_post, &e))
        }
        None => AuthorizeError::Fatal(format!(
            "The application's sign-in request cannot be used: {} ({}).",
            e.description,
            e.code.as_str()
        )),
    }
}
