//! People's credentials and sessions: the bcrypt pool, sign-in, SSO session cookies.

pub mod client_ip;
pub mod limits;
pub mod login;
pub mod mfa;
pub mod passkeys;
pub mod password;
pub mod setup;
pub mod totp;

pub use password::{HashError, Hasher};
