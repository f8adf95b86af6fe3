//! Proving who someone is: the bcrypt pool, sign-in with its lockout, second factors
//! (TOTP, recovery codes, passkeys), re-authentication, the first-run setup link, and
//! the rate limits and client addresses those checks rely on.

pub mod client_ip;
pub mod limits;
pub mod login;
pub mod mfa;
pub mod passkeys;

pub mod setup;
pub mod totp;
