//! Proving again who one is before a credential is added or the address changed: the
//! current password checked as a sign-in checks it, the window a confirmation holds
//! for, the confirmation page's address, and the typed profile a change of address
//! carries through it.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use crate::http::signin::portal::Viewer;
use crate::http::{errors, guard, pages};
use crate::i18n::t;
use crate::state::AppState;

/// Seconds after a sign-in or a password confirmation during which credentials may
/// be added.
pub const REAUTH_WINDOW: i64 = 300;

/// The profile a change of address was typed with, carried through the confirmation
/// so that nothing typed is lost.
#[derive(Debug, Default, Clone)]
pub struct Carried {
    pub name: String,
    pub email: String,
}

impl Carried {
    /// The values named `name` and `email` among `pairs` (a query or a form).
    pub fn read<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Self {
        let mut carried = Self::default();
        for (k, v) in pairs {
            match k {
                "name" => carried.name = v.chars().take(256).collect(),
                "email" => carried.email = v.chars().take(256).collect(),
                _ => {}
            }
        }
        carried
    }

    fn query(&self) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("name", &self.name)
            .append_pair("email", &self.email)
            .finish()
    }

    /// The confirmation page for this change of address.
    pub fn confirm_url(&self) -> String {
        format!("/account/confirm?next=email&{}", self.query())
    }

    /// The account page with the profile form filled in again, to be saved.
    pub(crate) fn back(&self) -> String {
        format!("/account?done=confirmed-email&{}#profile-h", self.query())
    }
}

/// Whether the viewer proved who they are recently enough to add a credential.
pub fn recently_authenticated(state: &AppState, v: &Viewer) -> bool {
    state.clock.now() - v.session.last_authenticated() <= REAUTH_WINDOW
}

/// The confirmation page's address for a step (`totp`, `link` or `passkey`).
pub fn confirm_url(next: &str) -> String {
    format!(
        "/account/confirm?next={}",
        match next {
            "totp" | "link" => next,
            _ => "passkey",
        }
    )
}

/// Checks the account's current password as a sign-in does: the per-account limit
/// first, and a wrong password counted toward the lockout, so that a stolen session
/// is no password oracle.
pub(crate) async fn password_ok(state: &AppState, v: &Viewer, password: &str) -> Result<bool, HttpResponse> {
    if let Some(limited) = guard::limit_account(state, &v.user.username) {
        return Err(limited);
    }
    use crate::auth::login::{reauthenticate, LoginError, Reauth};
    let (lockout, now) = (state.settings.lockout, state.clock.now());
    match reauthenticate(&state.db, &state.hasher, &v.user, password, lockout, now).await {
        Ok(Reauth::Confirmed) => Ok(true),
        Ok(Reauth::Wrong) => Ok(false),
        Ok(Reauth::Locked) => Err(pages::error_page(
            StatusCode::TOO_MANY_REQUESTS,
            t().acct_locked_title,
            t().acct_locked,
            t().acct_locked_hint,
        )),
        Err(LoginError::Server(e)) => Err(errors::server_page(e)),
        Err(LoginError::InvalidCredentials) => Err(errors::server_page(crate::error::Internal::Failed)),
    }
}
