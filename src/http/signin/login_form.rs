//! The login form of a parked sign-in and what it shows: what the sign-in is for, the
//! application's name and links, the upstream buttons, and why an upstream sign-in
//! did not happen. Shared by every front that shows the form.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use crate::db::providers::Provider;
use crate::federation::{self as fed, Button};
use crate::http::pages;
use crate::signin::{Parked, Pending};
use crate::state::AppState;

pub async fn client_name(state: &AppState, client_id: &str) -> String {
    match state.clients.get(&state.db, client_id, state.clock.now()).await {
        Ok(Some(c)) => c.name.clone(),
        _ => client_id.to_string(),
    }
}

/// What the login form says the sign-in is for (also `signup`'s forms).
pub(crate) async fn purpose(state: &AppState, pending: &Pending) -> String {
    match pending {
        Pending::Login(r) => {
            crate::http::branding::for_client(&r.client_id);
            client_name(state, &r.client_id).await
        }
        Pending::Portal(_) => {
            let t = crate::i18n::t();
            t.fill(t.signin_for_account, "org", crate::http::branding::shown().org_name)
        }
        _ => crate::i18n::t().signin_for_device.to_string(),
    }
}

/// The registered client's logo, policy and terms for a sign-in's login page
/// (nothing for other sign-ins, or when the client cannot be read).
pub(crate) async fn about(state: &AppState, pending: &Pending) -> crate::oidc::client_about::About {
    let Pending::Login(r) = pending else {
        return Default::default();
    };
    crate::oidc::client_about::about_id(&state.ctx(), &r.client_id)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read what a client shows about itself");
            Default::default()
        })
}

/// The login page's upstream buttons; a storage failure shows none rather than no page.
pub async fn buttons(state: &AppState) -> Vec<Button> {
    match fed::buttons(&state.ctx()).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = ?e, "cannot list upstream providers for the login page");
            Vec::new()
        }
    }
}

/// The login form for a parked step.
pub async fn login_form(
    state: &AppState,
    parked: &Parked,
    pending: &Pending,
    client_name: &str,
    hint: &str,
) -> HttpResponse {
    let page = pages::LoginPage {
        about: about(state, pending).await,
        client_name,
        request_id: parked.request_id.expose(),
        csrf: parked.csrf.expose(),
        username: hint,
        error: None,
        mail: state.settings.smtp.is_some(),
        signup: crate::lifecycle::signup::open(&state.settings),
        providers: buttons(state).await,
        cancel: None,
        step: pages::LoginStep::first(&state.settings),
    };
    pages::render(StatusCode::OK, &page)
}

/// The login form again for a parked step, with why the upstream sign-in did not
/// happen and, for an authorization, the way back to the application.
pub(crate) async fn login_again(
    state: &AppState,
    parked: &Parked,
    pending: &Pending,
    status: StatusCode,
    message: &str,
    unavailable: bool,
) -> HttpResponse {
    let page = pages::LoginPage {
        about: about(state, pending).await,
        client_name: &purpose(state, pending).await,
        request_id: parked.request_id.expose(),
        csrf: parked.csrf.expose(),
        username: "",
        error: Some(message),
        mail: state.settings.smtp.is_some(),
        signup: crate::lifecycle::signup::open(&state.settings),
        providers: buttons(state).await,
        cancel: matches!(pending, Pending::Login(_)).then_some(if unavailable { "unavailable" } else { "denied" }),
        step: pages::LoginStep::first(&state.settings),
    };
    pages::render(status, &page)
}

/// The login form when the upstream an authorization's `idp` names cannot be reached
/// (503): it says so and offers the other ways in.
pub(crate) async fn unreachable(state: &AppState, parked: &Parked, pending: &Pending, p: &Provider) -> HttpResponse {
    let msg = unreachable_text(&p.name);
    login_again(state, parked, pending, StatusCode::SERVICE_UNAVAILABLE, &msg, true).await
}

pub(crate) fn unreachable_text(name: &str) -> String {
    let t = crate::i18n::t();
    t.fill(t.federation_unreachable, "provider", name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_unreachable_text_names_the_provider() {
        assert!(super::unreachable_text("Company SSO").starts_with("Company SSO cannot be reached"));
    }
}
