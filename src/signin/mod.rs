//! The sign-in journey, one for every front: the parked request and its resume
//! (`parked`), the steps (first factor with its lockout, second factor or trusted
//! browser, the round trip to an upstream provider), and the end (`session`: the
//! session, the code or consent). Each front — `/authorize`, `/login`, sign-in links,
//! passkeys, upstream callbacks, sign-up, device approval, forward-auth — extracts its
//! input, makes one call here and renders the typed answer.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub mod authorize;
pub mod complete;
pub mod consent;
pub mod device;
pub mod first;
pub mod forward;
pub mod link;
pub mod mailed;
pub mod parked;
pub mod passkey;
pub mod portal;
pub mod second;
pub mod session;
pub mod signup;
pub mod upstream;

pub use parked::{
    consume, park, park_mfa, park_named, park_next, resume, resume_login, resume_named, Parked, Pending, ResumeError,
};
pub use session::{
    cancel, current_session, decide_consent, finish, finish_session_only, new_session, store_session, AfterLogin,
    SignedIn,
};

/// Who signed in, how (RFC 8176 `amr`), and from where (shown on the account page).
#[derive(Debug, Clone)]
pub struct SignIn {
    pub user_id: i64,
    pub amr: Cow<'static, str>,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
    /// The upstream account the sign-in came through, if any.
    pub federated: Option<Federated>,
}

/// An upstream account behind a sign-in: its provider, subject and session id
/// (`sid`), which the upstream's back-channel logout names.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Federated {
    pub provider: String,
    pub subject: String,
    pub sid: Option<String>,
    /// The upstream's `amr` values with `fed` (RFC 8176 §2).
    pub amr: String,
}

/// `amr` for a password alone and for a password with a one-time code.
pub const AMR_PASSWORD: &str = "pwd";
pub const AMR_PASSWORD_OTP: &str = "pwd otp mfa";
/// A passkey with user verification: a key the device holds plus the PIN or biometric
/// that unlocked it (RFC 8176 `swk`, `user`; two factors).
pub const AMR_PASSKEY: &str = "swk user mfa";

/// What a front reads of the browser for the journey: its address and user agent,
/// and the cookies the steps check (the binding parked requests are tied to, the
/// device cookie of trusted browsers, the SSO session a new sign-in replaces).
#[derive(Debug, Clone, Default)]
pub struct Browser {
    pub ip: String,
    pub user_agent: Option<String>,
    /// The browser binding's digest; a parked request resumes only in its browser.
    pub binding: Option<crate::crypto::TokenHash>,
    /// The device cookie (`lifecycle::devices`), checked and renewed.
    pub device: Option<String>,
    /// The SSO session cookie's digest, ended when the sign-in opens a new one.
    pub session: Option<crate::crypto::TokenHash>,
}

/// The factor a sign-in began with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    Password,
    /// A link or code sent by mail (`signin::link`).
    Mail,
    /// An upstream provider's sign-in (`federation`); its `amr` is the upstream's.
    Upstream,
}

impl First {
    /// The `amr` of a sign-in with this factor alone (RFC 8176).
    pub fn amr(self) -> &'static str {
        match self {
            First::Password => AMR_PASSWORD,
            First::Mail => crate::signin::link::AMR_EMAIL,
            First::Upstream => "fed",
        }
    }

    /// The audit event of this factor passed, when a second factor follows.
    fn event(self) -> &'static str {
        match self {
            First::Mail => "login.email_ok",
            First::Upstream => "login.upstream_ok",
            First::Password => "login.password_ok",
        }
    }
}

/// The next step of a sign-in, for the front to render.
pub enum Next {
    /// The second-factor page, the sign-in parked under new names.
    SecondFactor(second::Page),
    /// The second-factor page again: the code was wrong.
    WrongCode(second::Page),
    /// Signed in: the cookies to set and what the sign-in was for.
    Done(Box<complete::Done>),
}
