//! The sign-up form's page: the view `/signup` renders, and the form an authorization
//! request with `prompt=create` opens (Initiating User Registration via OpenID Connect
//! 1.0 §4.1).

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use askama::Template;

use crate::domain::Problems;
use crate::http::pages;
use crate::http::signin::login_form::client_name;
use crate::oidc::authorize::AuthRequest;
use crate::signin::Parked;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "signup.html")]
pub(crate) struct SignupPage<'a> {
    pub(crate) sent: bool,
    pub(crate) client_name: Option<&'a str>,
    pub(crate) request_id: &'a str,
    pub(crate) csrf: &'a str,
    pub(crate) username: &'a str,
    pub(crate) email: &'a str,
    pub(crate) name: &'a str,
    pub(crate) domains: String,
    pub(crate) problems: Problems,
    /// `--passkey-mode passkey-only`: no password fields.
    pub(crate) passkey_only: bool,
    /// The person asked for a passkey instead of a password.
    pub(crate) passkey: bool,
}

impl<'a> SignupPage<'a> {
    pub(crate) fn empty(state: &AppState, client_name: Option<&'a str>, request_id: &'a str, csrf: &'a str) -> Self {
        Self {
            sent: false,
            client_name,
            request_id,
            csrf,
            username: "",
            email: "",
            name: "",
            domains: state.settings.signup_domains.join(", "),
            problems: Problems::default(),
            passkey_only: state.settings.passkey_mode.passkey_only(),
            passkey: false,
        }
    }
}

/// Initiating User Registration via OpenID Connect 1.0 §4.1: an authorization request
/// with `prompt=create` opens the sign-up form, its request parked as for the login
/// form, so that the new account's first sign-in answers the client.
pub async fn create(state: &AppState, request: &AuthRequest, parked: &Parked) -> HttpResponse {
    let name = client_name(state, &request.client_id).await;
    let page = SignupPage::empty(state, Some(&name), parked.request_id.expose(), parked.csrf.expose());
    pages::render(StatusCode::OK, &page)
}
