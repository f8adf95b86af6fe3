//! People's credentials and sessions: the bcrypt pool, sign-in, SSO session cookies.

pub mod login;
pub mod password;

pub use password::{HashError, Hasher};
