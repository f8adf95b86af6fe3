//! OpenID Connect and OAuth 2.0 protocol rules, free of any web framework.

pub mod authorize;
pub mod claims;
pub mod client_auth;
pub mod client_cache;
pub mod device;
pub mod discovery;
pub mod error;
pub mod introspect;
pub mod issue;
pub mod keys;
pub mod login;
pub mod logout;
pub mod pkce;
pub mod token;

pub use error::{ErrorCode, OAuthError};
