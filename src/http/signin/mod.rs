//! The sign-in fronts: the login forms, sign-in links, passkeys, upstream providers,
//! sign-up, the portal of Tessera's own pages, and forward-auth for reverse proxies.

pub mod federation;
pub mod forward_auth;
pub mod link;
pub mod login;
pub mod login_form;
pub mod passkey_forms;
pub mod passkeys;
pub mod portal;
pub mod signup;
pub mod signup_form;
pub mod steps;
