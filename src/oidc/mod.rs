//! OpenID Connect and OAuth 2.0 protocol rules, free of any web framework.

pub mod authorize;
pub mod claims;
pub mod client_about;
pub mod client_auth;
pub mod client_cache;
pub mod client_keys;
pub mod client_spec;
pub mod context;
pub mod cors;
pub mod device;
pub mod discovery;
pub mod dpop;
pub mod error;
pub mod fetch;
pub mod frontchannel;
pub mod grant;
pub mod introspect;
pub mod issue;
pub mod keys;
pub mod logout;
pub mod metadata_document;
pub mod par;
pub mod password_grant;
pub mod pkce;
pub mod preview;
pub mod registration;
pub mod request_object;
pub mod resource;
pub mod self_test;
pub mod token;
pub mod webfinger;

pub use context::Ctx;
pub use error::{ErrorCode, OAuthError};

/// A parameter sent more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeated;

/// A request parameter that may appear at most once (RFC 6749 §3.1: "parameters MUST
/// NOT be included more than once"): `Ok(None)` when absent or empty.
pub fn unique_param<'a>(params: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, Repeated> {
    let mut values = params.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let first = values.next().filter(|v| !v.is_empty());
    if values.next().is_some() {
        return Err(Repeated);
    }
    Ok(first)
}
