//! OAuth error codes (RFC 6749 §4.1.2.1, §5.2; RFC 6750 §3.1; RFC 7009 §2.2.1;
//! OpenID Connect Core §3.1.2.6). The text of each code is the RFC's own.

use std::borrow::Cow;

use crate::db::DbError;
use crate::error::Internal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    InvalidScope,
    AccessDenied,
    ServerError,
    TemporarilyUnavailable,
    LoginRequired,
    ConsentRequired,
    InteractionRequired,
    InvalidToken,
    UnsupportedTokenType,
    RequestNotSupported,
    RequestUriNotSupported,
    AuthorizationPending,
    SlowDown,
    ExpiredToken,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::InvalidGrant => "invalid_grant",
            Self::UnauthorizedClient => "unauthorized_client",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::UnsupportedResponseType => "unsupported_response_type",
            Self::InvalidScope => "invalid_scope",
            Self::AccessDenied => "access_denied",
            Self::ServerError => "server_error",
            Self::TemporarilyUnavailable => "temporarily_unavailable",
            Self::LoginRequired => "login_required",
            Self::ConsentRequired => "consent_required",
            Self::InteractionRequired => "interaction_required",
            Self::InvalidToken => "invalid_token",
            Self::UnsupportedTokenType => "unsupported_token_type",
            Self::RequestNotSupported => "request_not_supported",
            Self::RequestUriNotSupported => "request_uri_not_supported",
            Self::AuthorizationPending => "authorization_pending",
            Self::SlowDown => "slow_down",
            Self::ExpiredToken => "expired_token",
        }
    }
}

/// A protocol error: a code and a description safe to show the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    pub code: ErrorCode,
    pub description: Cow<'static, str>,
}

impl OAuthError {
    pub fn new(code: ErrorCode, description: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            description: description.into(),
        }
    }

    pub fn invalid_request(d: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::InvalidRequest, d)
    }

    pub fn invalid_grant(d: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::InvalidGrant, d)
    }

    pub fn invalid_client(d: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::InvalidClient, d)
    }

    pub fn server_error() -> Self {
        Self::new(ErrorCode::ServerError, "the server could not complete the request")
    }

    pub fn unavailable() -> Self {
        Self::new(ErrorCode::TemporarilyUnavailable, "the server is busy; retry shortly")
    }
}

impl std::fmt::Display for OAuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.description)
    }
}

impl std::error::Error for OAuthError {}

impl From<Internal> for OAuthError {
    fn from(e: Internal) -> Self {
        match e {
            Internal::Busy => Self::unavailable(),
            Internal::Failed => Self::server_error(),
        }
    }
}

/// Storage, hashing and signing failures on the protocol paths: logged once (in
/// `Internal`'s conversion), answered as opaque protocol errors.
impl From<DbError> for OAuthError {
    fn from(e: DbError) -> Self {
        Internal::from(e).into()
    }
}

impl From<crate::auth::HashError> for OAuthError {
    fn from(e: crate::auth::HashError) -> Self {
        Internal::from(e).into()
    }
}

impl From<crate::crypto::JwtError> for OAuthError {
    fn from(e: crate::crypto::JwtError) -> Self {
        Internal::from(e).into()
    }
}
