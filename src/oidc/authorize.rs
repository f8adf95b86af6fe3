//! The authorization endpoint (RFC 6749 §4.1.1, OpenID Connect Core §3.1.2): validating
//! a request, deciding between a code and the login page, and issuing the code.

use serde::{Deserialize, Serialize};

use super::claims::ClaimsRequest;
use super::{pkce, ErrorCode, OAuthError};
use crate::crypto::random::random_id;
use crate::crypto::{Secret, TokenHash};
use crate::db::{self, sessions::Session};
use crate::domain::{RedirectUri, Scope};
use crate::state::AppState;

/// A validated authorization request; parked server-side while the user signs in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuthRequest {
    pub client_id: String,
    pub redirect_uri: String,
    pub scope: String,
    pub state: Option<String>,
    pub nonce: Option<String>,
    pub code_challenge: Option<String>,
    pub prompt: Prompt,
    pub max_age: Option<i64>,
    pub login_hint: Option<String>,
    /// The `claims` parameter (Core §5.5), as the JSON this provider re-serialised.
    pub claims: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Prompt {
    #[default]
    Default,
    None,
    Login,
}

/// Why a request failed, and so where the answer goes.
#[derive(Debug)]
pub enum AuthorizeError {
    /// The client or its redirect URI cannot be trusted: tell the person, never redirect
    /// (RFC 6749 §4.1.2.1, RFC 9700 §4.11 on open redirectors).
    Fatal(String),
    /// Everything else goes back to the registered redirect URI.
    Redirect {
        redirect_uri: RedirectUri,
        state: Option<String>,
        error: OAuthError,
    },
    /// The server itself failed (storage busy or broken).
    Server(OAuthError),
}

impl From<db::DbError> for AuthorizeError {
    fn from(e: db::DbError) -> Self {
        AuthorizeError::Server(e.into())
    }
}

const MAX_PARAM: usize = 4096;

/// Looks up a single-valued parameter; a repeated one is an error (RFC 6749 §3.1).
fn single<'a>(params: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, String> {
    let mut values = params.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let first = values.next();
    if values.next().is_some() {
        return Err(format!("the `{name}` parameter is repeated"));
    }
    match first {
        Some(v) if v.len() > MAX_PARAM => Err(format!("the `{name}` parameter is too long")),
        Some("") => Ok(None),
        other => Ok(other),
    }
}

pub async fn validate(state: &AppState, params: &[(String, String)]) -> Result<AuthRequest, AuthorizeError> {
    let client_id = single(params, "client_id").map_err(AuthorizeError::Fatal)?;
    let Some(client_id) = client_id else {
        return Err(AuthorizeError::Fatal(
            "The request names no client (client_id is missing).".into(),
        ));
    };
    let id = client_id.to_string();
    let client = state.db.read(move |c| db::clients::find(c, &id)).await?;
    let Some(client) = client else {
        return Err(AuthorizeError::Fatal(
            "The application that sent you here is not registered.".into(),
        ));
    };
    let redirect = single(params, "redirect_uri").map_err(AuthorizeError::Fatal)?;
    let Some(redirect) = redirect else {
        return Err(AuthorizeError::Fatal("The request has no redirect_uri.".into()));
    };
    // Exact string comparison with a registered URI (RFC 9700 §4.1.3).
    if !client.redirect_uris.iter().any(|r| r == redirect) {
        return Err(AuthorizeError::Fatal(
            "The redirect URI in the request is not registered for this application.".into(),
        ));
    }
    let redirect_uri = RedirectUri::parse(redirect).map_err(|e| AuthorizeError::Fatal(e.to_string()))?;
    // A repeated `state` is refused below, but cannot be echoed: which one is genuine?
    let (state_param, state_repeated) = match single(params, "state") {
        Ok(v) => (v.map(str::to_string), false),
        Err(_) => (None, true),
    };
    let fail = |code: ErrorCode, description: String| AuthorizeError::Redirect {
        redirect_uri: redirect_uri.clone(),
        state: state_param.clone(),
        error: OAuthError::new(code, description),
    };
    let get = |name: &str| single(params, name).map_err(|d| fail(ErrorCode::InvalidRequest, d));
    if state_repeated {
        return Err(fail(
            ErrorCode::InvalidRequest,
            "the `state` parameter is repeated".into(),
        ));
    }

    if get("request")?.is_some() {
        return Err(fail(
            ErrorCode::RequestNotSupported,
            "request objects are not supported".into(),
        ));
    }
    if get("request_uri")?.is_some() {
        return Err(fail(
            ErrorCode::RequestUriNotSupported,
            "request_uri is not supported".into(),
        ));
    }
    match get("response_type")? {
        Some("code") => {}
        None => return Err(fail(ErrorCode::InvalidRequest, "response_type is required".into())),
        Some(_) => {
            return Err(fail(
                ErrorCode::UnsupportedResponseType,
                "only response_type=code is supported".into(),
            ))
        }
    }
    if !client.allows_grant("authorization_code") {
        return Err(fail(
            ErrorCode::UnauthorizedClient,
            "the client is not registered for the authorization code flow".into(),
        ));
    }
    match get("response_mode")? {
        None | Some("query") => {}
        Some(_) => {
            return Err(fail(
                ErrorCode::InvalidRequest,
                "only response_mode=query is supported".into(),
            ))
        }
    }
    let scope = Scope::parse(get("scope")?.unwrap_or("")).map_err(|e| fail(ErrorCode::InvalidScope, e.0))?;
    if !scope.contains("openid") {
        return Err(fail(ErrorCode::InvalidScope, "the openid scope is required".into()));
    }
    let scope = scope.filter(|s| super::claims::SUPPORTED_SCOPES.contains(&s));

    let code_challenge = match (get("code_challenge")?, get("code_challenge_method")?) {
        (Some(c), Some("S256")) if pkce::valid_challenge(c) => Some(c.to_string()),
        (Some(_), Some("S256")) => {
            return Err(fail(
                ErrorCode::InvalidRequest,
                "code_challenge is not a S256 challenge".into(),
            ))
        }
        (Some(_), _) => {
            return Err(fail(
                ErrorCode::InvalidRequest,
                "code_challenge_method must be S256".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(fail(
                ErrorCode::InvalidRequest,
                "code_challenge_method without code_challenge".into(),
            ))
        }
        (None, None) if client.is_public() => {
            return Err(fail(
                ErrorCode::InvalidRequest,
                "PKCE (S256) is required for public clients".into(),
            ))
        }
        (None, None) => None,
    };
    let claims = match get("claims")? {
        None => None,
        Some(text) => {
            let parsed = ClaimsRequest::parse(text).map_err(|d| fail(ErrorCode::InvalidRequest, d))?;
            (!parsed.is_empty()).then(|| serde_json::to_string(&parsed).unwrap_or_default())
        }
    };
    let prompt = match get("prompt")? {
        None => Prompt::Default,
        Some("none") => Prompt::None,
        Some("login") => Prompt::Login,
        Some(other) if other.split(' ').any(|p| p == "none") => {
            return Err(fail(ErrorCode::InvalidRequest, "prompt=none cannot be combined".into()))
        }
        Some(other) if other.split(' ').any(|p| p == "login") => Prompt::Login,
        Some(_) => Prompt::Default,
    };
    let max_age = match get("max_age")? {
        None => None,
        Some(v) => match v.parse::<i64>() {
            Ok(n) if n >= 0 => Some(n),
            _ => {
                return Err(fail(
                    ErrorCode::InvalidRequest,
                    "max_age is not a non-negative integer".into(),
                ))
            }
        },
    };
    Ok(AuthRequest {
        client_id: client.client_id,
        redirect_uri: redirect_uri.as_str().to_string(),
        scope: scope.to_string(),
        state: state_param.clone(),
        nonce: get("nonce")?.map(str::to_string),
        code_challenge,
        prompt,
        max_age,
        login_hint: get("login_hint")?.map(|h| h.chars().take(256).collect()),
        claims,
    })
}

/// What to do with a valid request.
pub enum Next {
    /// Show the login page for this request.
    Login,
    /// Redirect to the client with this URL.
    Redirect(String),
}

/// Whether an existing session can answer this request without the login form
/// (OpenID Connect Core §3.1.2.1 on prompt and max_age).
pub async fn decide(state: &AppState, req: &AuthRequest, session: Option<Session>) -> Result<Next, AuthorizeError> {
    let now = state.clock.now();
    let usable = session.filter(|s| req.max_age.is_none_or(|max| now - s.auth_time <= max));
    match (req.prompt, usable) {
        (Prompt::None, None) => Err(redirect_error(
            req,
            OAuthError::new(ErrorCode::LoginRequired, "the user is not signed in"),
        )?),
        (Prompt::Login, _) | (Prompt::Default, None) => Ok(Next::Login),
        (_, Some(session)) => Ok(Next::Redirect(issue_code(state, req, &session).await?)),
    }
}

pub fn redirect_error(req: &AuthRequest, error: OAuthError) -> Result<AuthorizeError, AuthorizeError> {
    let redirect_uri = RedirectUri::parse(&req.redirect_uri).map_err(|e| AuthorizeError::Fatal(e.to_string()))?;
    Ok(AuthorizeError::Redirect {
        redirect_uri,
        state: req.state.clone(),
        error,
    })
}

/// The URL that carries an error back to the client, with `iss` (RFC 9207).
pub fn error_url(issuer: &str, redirect_uri: &RedirectUri, state: Option<&str>, error: &OAuthError) -> String {
    let mut params = vec![
        ("error", error.code.as_str()),
        ("error_description", error.description.as_ref()),
    ];
    if let Some(s) = state {
        params.push(("state", s));
    }
    params.push(("iss", issuer));
    redirect_uri.with_query(&params)
}

/// Stores a fresh code for `session` and returns the redirect that delivers it.
pub async fn issue_code(state: &AppState, req: &AuthRequest, session: &Session) -> Result<String, AuthorizeError> {
    let code = Secret::generate();
    let (record, now) = code_record(state, req, session, &code);
    state.db.write(move |c| record.insert(c, now)).await?;
    Ok(success_url(state, req, &code))
}

/// The data of a code about to be stored; kept apart so the login path can store it in
/// the same transaction as the session.
pub struct CodeRecord {
    hash: TokenHash,
    grant_id: String,
    req: AuthRequest,
    user_id: i64,
    sid: String,
    auth_time: i64,
    expires_at: i64,
}

impl CodeRecord {
    pub fn insert(&self, conn: &db::Conn, now: i64) -> Result<(), db::DbError> {
        db::grants::insert_code(
            conn,
            &db::grants::NewCode {
                code_hash: &self.hash,
                grant_id: &self.grant_id,
                client_id: &self.req.client_id,
                user_id: self.user_id,
                redirect_uri: &self.req.redirect_uri,
                scope: &self.req.scope,
                nonce: self.req.nonce.as_deref(),
                code_challenge: self.req.code_challenge.as_deref(),
                claims_request: self.req.claims.as_deref(),
                sid: &self.sid,
                auth_time: self.auth_time,
                now,
                expires_at: self.expires_at,
            },
        )
    }
}

pub fn code_record(state: &AppState, req: &AuthRequest, session: &Session, code: &Secret) -> (CodeRecord, i64) {
    let now = state.clock.now();
    let record = CodeRecord {
        hash: code.hash(),
        grant_id: random_id(),
        req: req.clone(),
        user_id: session.user_id,
        sid: session.sid.clone(),
        auth_time: session.auth_time,
        expires_at: now + state.settings.lifetimes.code,
    };
    (record, now)
}

/// RFC 6749 §4.1.2 with RFC 9207's `iss`.
pub fn success_url(state: &AppState, req: &AuthRequest, code: &Secret) -> String {
    let mut params = vec![("code", code.expose())];
    if let Some(s) = &req.state {
        params.push(("state", s.as_str()));
    }
    params.push(("iss", &state.issuer));
    match RedirectUri::parse(&req.redirect_uri) {
        Ok(uri) => uri.with_query(&params),
        Err(_) => req.redirect_uri.clone(),
    }
}
