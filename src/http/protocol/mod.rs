//! The OAuth 2.0 and OpenID Connect endpoints relying parties and resource servers call.

pub mod authorize;
pub mod credentials;
pub mod device;
pub mod discovery;
pub mod logout;
pub mod par;
pub mod register;
pub mod registered_logo;
pub mod token;
pub mod userinfo;
pub mod webfinger;
