//! OAuth error codes (RFC 6749 §4.1.2.1, §5.2; RFC 6750 §3.1; RFC 7009 §2.2.1;
//! OpenID Connect Core §3.1.2.6; RFC 9101 §6.3; RFC 9126 §2.3; RFC 9449 §12.2; RFC 7591
//! §3.2.2; RFC 8707 §2). The text of each code is the RFC's own.

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
    /// RFC 9101 §6.3 / Core §3.1.2.6: the request object is not acceptable.
    InvalidRequestObject,
    /// RFC 9126 §2.3 / Core §3.1.2.6: the `request_uri` is unknown, used or expired.
    InvalidRequestUri,
    /// RFC 9449 §5: the DPoP proof is missing, malformed or does not match.
    InvalidDpopProof,
    /// RFC 9449 §8: the proof must carry the nonce in the `DPoP-Nonce` header.
    UseDpopNonce,
    /// RFC 7591 §3.2.2.
    InvalidRedirectUri,
    InvalidClientMetadata,
    InvalidSoftwareStatement,
    UnapprovedSoftwareStatement,
    /// RFC 8707 §2: the resource is unknown or not allowed.
    InvalidTarget,
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
            Self::InvalidRequestObject => "invalid_request_object",
            Self::InvalidRequestUri => "invalid_request_uri",
            Self::InvalidDpopProof => "invalid_dpop_proof",
            Self::UseDpopNonce => "use_dpop_nonce",
            Self::InvalidRedirectUri => "invalid_redirect_uri",
            Self::InvalidClientMetadata => "invalid_client_metadata",
            Self::InvalidSoftwareStatement => "invalid_software_statement",
            Self::UnapprovedSoftwareStatement => "unapproved_software_statement",
            Self::InvalidTarget => "invalid_target",
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

impl From<crate::crypto::password::HashError> for OAuthError {
    fn from(e: crate::crypto::password::HashError) -> Self {
        Internal::from(e).into()
    }
}

impl From<crate::crypto::JwtError> for OAuthError {
    fn from(e: crate::crypto::JwtError) -> Self {
        Internal::from(e).into()
    }
}
