//! Pushed authorization requests (RFC 9126): the client posts its authorization
//! parameters, authenticated, and gets a `request_uri` to send the browser with.

use serde::Serialize;

use crate::crypto::TokenHash;
use crate::db::{self, clients::Client};
use crate::domain::Secret;
use crate::error::Internal;
use crate::oidc::authorize::{self, AuthResponse, AuthorizeError};
use crate::oidc::grant::Form;
use crate::oidc::request_object::{self, ObjectError};
use crate::oidc::{Ctx, ErrorCode, OAuthError};

/// RFC 9126 §2.2: the URN namespace of the `request_uri` values this provider makes.
pub const URN_PREFIX: &str = "urn:ietf:params:oauth:request_uri:";
/// Seconds a pushed request may wait for the browser (RFC 9126 §2.2 suggests a short
/// lifetime; it is used within seconds by a client that redirects at once).
pub const LIFETIME: i64 = 60;

/// The answer to a push (RFC 9126 §2.2).
#[derive(Debug, Serialize)]
pub struct Pushed {
    pub request_uri: String,
    pub expires_in: i64,
}

/// Client authentication travels in the body beside the request; it is no part of it.
const CREDENTIALS: &[&str] = &["client_secret", "client_assertion", "client_assertion_type"];

/// RFC 9126 §2.1: validates the pushed parameters as the authorization endpoint would
/// (a request object among them is verified and replaces them, RFC 9126 §3) and
/// stores them for one use by this client. A DPoP proof sent with the push binds the
/// code to come to its key, as `dpop_jkt` would (RFC 9449 §10.1).
pub async fn push(cx: &Ctx<'_>, client: &Client, form: &Form, dpop: Option<&str>) -> Result<Pushed, OAuthError> {
    if form.contains_key("request_uri") {
        return Err(OAuthError::invalid_request(
            "request_uri cannot be pushed (RFC 9126 §2.1)",
        ));
    }
    if form.get("client_id").is_some_and(|id| id != &client.client_id) {
        return Err(OAuthError::invalid_request(
            "client_id differs from the authenticated client",
        ));
    }
    // The proof is checked first: a client told to retry with a nonce (RFC 9449 §8)
    // sends the same request object again, whose `jti` must not be spent yet.
    let expect = crate::oidc::dpop::Expect {
        method: "POST",
        path: "/par",
        access_token: None,
    };
    let proof = dpop.map(|p| crate::oidc::dpop::verify(cx, p, &expect)).transpose()?;
    let (params, signed) = match form.get("request") {
        Some(token) => match request_object::expand(cx, client, token).await {
            Ok(params) => (params, true),
            Err(ObjectError::Invalid(d)) => return Err(OAuthError::new(ErrorCode::InvalidRequestObject, d)),
            Err(ObjectError::Server(e)) => return Err(e.into()),
        },
        None => (form_params(form, &client.client_id), false),
    };
    let params = match &proof {
        Some(proof) => bind_to_proof(cx, params, proof).await?,
        None => params,
    };
    authorize::validate_pushed(cx, &params, signed)
        .await
        .map_err(as_json_error)?;
    let handle = Secret::generate();
    let stored = serde_json::to_string(&params).map_err(|_| OAuthError::server_error())?;
    let (hash, client_id, now) = (handle.hash(), client.client_id.clone(), cx.now);
    cx.db
        .write(move |c| db::par::insert(c, &hash, &client_id, &stored, now, now + LIFETIME))
        .await?;
    Ok(Pushed {
        request_uri: format!("{URN_PREFIX}{}", handle.expose()),
        expires_in: LIFETIME,
    })
}

/// RFC 9449 §10.1: the pushed request names the proof's key as its `dpop_jkt`; one
/// it names already must be that key. The proof is used once, as at the token endpoint.
async fn bind_to_proof(
    cx: &Ctx<'_>,
    mut params: Vec<(String, String)>,
    proof: &crate::oidc::dpop::Proof,
) -> Result<Vec<(String, String)>, OAuthError> {
    match params.iter().find(|(k, _)| k == "dpop_jkt") {
        Some((_, jkt)) if *jkt != proof.jkt => {
            return Err(OAuthError::new(
                ErrorCode::InvalidDpopProof,
                "dpop_jkt is not the thumbprint of the DPoP proof's key",
            ))
        }
        Some(_) => {}
        None => params.push(("dpop_jkt".into(), proof.jkt.clone())),
    }
    crate::oidc::dpop::record_alone(cx, proof).await?;
    Ok(params)
}

/// The body as authorization parameters: a repeated `resource` (kept space-separated
/// by the form reader) spread out again, credentials left out, `client_id` set.
fn form_params(form: &Form, client_id: &str) -> Vec<(String, String)> {
    let mut params = vec![("client_id".to_string(), client_id.to_string())];
    let mut entries: Vec<(&String, &String)> = form.iter().collect();
    entries.sort();
    for (name, value) in entries {
        if name == "client_id" || CREDENTIALS.contains(&name.as_str()) {
            continue;
        }
        if name == "resource" {
            for uri in crate::oidc::resource::form_values(form) {
                params.push((name.clone(), uri));
            }
        } else {
            params.push((name.clone(), value.clone()));
        }
    }
    params
}

/// At the push endpoint every refusal is JSON (RFC 9126 §2.3), never a redirect.
fn as_json_error(e: AuthorizeError) -> OAuthError {
    match e {
        AuthorizeError::Fatal(d) => OAuthError::invalid_request(d),
        AuthorizeError::Respond(resp) => from_response(&resp),
        AuthorizeError::Server(e) => e.into(),
    }
}

/// The error an authorization response would have carried to the redirect URI.
fn from_response(resp: &AuthResponse) -> OAuthError {
    let field = |n: &str| {
        resp.params
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let name = field("error");
    let code = KNOWN
        .iter()
        .copied()
        .find(|c| c.as_str() == name)
        .unwrap_or(ErrorCode::InvalidRequest);
    OAuthError::new(code, field("error_description"))
}

/// The codes validation answers with.
const KNOWN: &[ErrorCode] = &[
    ErrorCode::InvalidRequest,
    ErrorCode::InvalidScope,
    ErrorCode::UnauthorizedClient,
    ErrorCode::UnsupportedResponseType,
    ErrorCode::InvalidTarget,
    ErrorCode::InvalidRequestObject,
    ErrorCode::AccessDenied,
];

/// Takes the parameters pushed by `client_id` under `request_uri`, once. `None` when
/// it is unknown, another client's, used or expired (RFC 9126 §4: one use; a replay on
/// any node fails, the claim being one conditional `UPDATE`).
pub async fn take(cx: &Ctx<'_>, client_id: &str, request_uri: &str) -> Result<Option<Vec<(String, String)>>, Internal> {
    let Some(handle) = request_uri.strip_prefix(URN_PREFIX) else {
        return Ok(None);
    };
    if handle.is_empty() || handle.len() > 128 {
        return Ok(None);
    }
    let (hash, client_id, now) = (TokenHash::of(handle), client_id.to_string(), cx.now);
    let stored = cx
        .db
        .write(move |c| db::par::consume(c, &hash, &client_id, now))
        .await?;
    // What this provider stored itself; unreadable text would be a bug, not a request.
    Ok(stored.and_then(|text| serde_json::from_str(&text).ok()))
}
