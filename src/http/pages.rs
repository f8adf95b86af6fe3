//! The pages people see around sign-in (login, consent, device approval, form post,
//! errors): one view struct per askama template, words for scopes and claims, and
//! the headers every page gets.

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;
use askama::Template;

#[derive(Template)]
#[template(path = "login.html")]
pub struct LoginPage<'a> {
    /// The registered client's logo, policy and terms (`client_about.html`).
    pub about: crate::oidc::client_about::About,
    pub client_name: &'a str,
    pub request_id: &'a str,
    pub csrf: &'a str,
    pub username: &'a str,
    pub error: Option<&'a str>,
    /// Mail is on: the reset and sign-in-link choices are shown.
    pub mail: bool,
    /// Sign-up is open: "Create an account" is shown.
    pub signup: bool,
    /// A "Sign in with …" button per upstream provider.
    pub providers: Vec<crate::federation::Button>,
    /// After an upstream failed: offer to return to the application, telling it
    /// `access_denied` or (`unavailable`) `temporarily_unavailable`.
    pub cancel: Option<&'a str>,
    pub step: LoginStep,
}

/// What the login form asks for (`--passkey-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginStep {
    /// Username and password together (`offer`).
    Both,
    /// The username alone (`username-first`), posted to `/login/username`.
    Username,
    /// The named account's step: its passkey first when it has one, and its password
    /// (left out for an account that has a passkey and no password).
    Password { passkey: bool, password: bool },
}

impl LoginStep {
    /// Where a login page starts under `settings`.
    pub fn first(settings: &crate::config::Settings) -> Self {
        match settings.passkey_mode {
            crate::config::PasskeyMode::Offer => LoginStep::Both,
            crate::config::PasskeyMode::UsernameFirst | crate::config::PasskeyMode::PasskeyOnly => LoginStep::Username,
        }
    }

    /// The step after the username for an account with these credentials.
    pub fn named(c: crate::auth::passkeys::Named) -> Self {
        LoginStep::Password {
            passkey: c.passkey,
            password: c.password || !c.passkey,
        }
    }

    fn asks_username(self) -> bool {
        matches!(self, LoginStep::Both | LoginStep::Username)
    }

    fn asks_password(self) -> bool {
        matches!(self, LoginStep::Both | LoginStep::Password { password: true, .. })
    }

    /// Whether the page has the username and password form at all.
    fn has_form(self) -> bool {
        self.asks_username() || self.asks_password()
    }

    fn passkey_first(self) -> bool {
        matches!(self, LoginStep::Password { passkey: true, .. })
    }

    fn is_username(self) -> bool {
        self == LoginStep::Username
    }

    fn is_password(self) -> bool {
        matches!(self, LoginStep::Password { .. })
    }
}

#[derive(Template)]
#[template(path = "device.html")]
pub struct DevicePage<'a> {
    pub approve: bool,
    pub client_name: &'a str,
    pub user_code: &'a str,
    pub scopes: Vec<&'static str>,
    /// Claims asked for by name (none for a device request).
    pub claims: Vec<String>,
    pub request_id: &'a str,
    pub csrf: &'a str,
    pub error: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "consent.html")]
pub struct ConsentPage<'a> {
    /// The registered client's logo, policy and terms (`client_about.html`).
    pub about: crate::oidc::client_about::About,
    pub client_name: &'a str,
    pub username: &'a str,
    pub scopes: Vec<&'static str>,
    /// Claims asked for one by one, beyond what the scopes show.
    pub claims: Vec<String>,
    /// What the client's claim mapping releases (`roles: your groups mapped to …`).
    pub mapped: Vec<String>,
    pub request_id: &'a str,
    pub csrf: &'a str,
}

/// OAuth 2.0 Form Post Response Mode: the response as a self-submitting form.
#[derive(Template)]
#[template(path = "form_post.html")]
pub struct FormPostPage<'a> {
    pub action: &'a str,
    pub fields: Vec<(&'a str, &'a str)>,
}

/// The form post page's one script, allowed by its hash rather than 'unsafe-inline'.
const FORM_POST_CSP: &str = "default-src 'none'; style-src 'self'; \
    script-src 'sha256-8lDeP0UDwCO6/RhblgeH/ctdBzjVpJxrXizsnIk3cEQ='; base-uri 'none'; frame-ancestors 'none'";

pub fn form_post(page: &FormPostPage<'_>) -> HttpResponse {
    let mut b = html(StatusCode::OK);
    b.insert_header((header::CONTENT_SECURITY_POLICY, FORM_POST_CSP));
    render_with(b, page)
}

/// Words for a person, per scope, on the consent page.
pub fn describe_scope(scope: &str) -> Option<&'static str> {
    let t = crate::i18n::t();
    Some(match scope {
        "openid" => t.scope_openid,
        "profile" => t.scope_profile,
        "email" => t.scope_email,
        "address" => t.scope_address,
        "phone" => t.scope_phone,
        "groups" => t.scope_groups,
        "offline_access" => t.scope_offline_access,
        _ => return None,
    })
}

/// Words for a person for one claim asked for by name, with its name in brackets.
pub fn describe_claim(claim: &str) -> String {
    let t = crate::i18n::t();
    let words = match claim {
        "name" | "given_name" | "family_name" | "middle_name" | "nickname" => t.claim_name,
        "preferred_username" => t.claim_username,
        "email" => t.claim_email,
        "email_verified" => t.claim_email_verified,
        "phone_number" | "phone_number_verified" => t.claim_phone,
        "address" => t.claim_address,
        "groups" => t.claim_groups,
        "birthdate" => t.claim_birthdate,
        "picture" | "profile" | "website" => t.claim_links,
        _ => t.claim_detail,
    };
    t.fill2(t.claim_see, "what", words, "claim", claim)
}

/// The page for a user outside a client's allowed groups, with the way back.
#[derive(Template)]
#[template(path = "denied.html")]
pub struct DeniedPage<'a> {
    pub client_name: &'a str,
    pub form_post: bool,
    pub action: &'a str,
    pub fields: Vec<(&'a str, &'a str)>,
}

#[derive(Template)]
#[template(path = "error.html")]
pub struct ErrorPage<'a> {
    pub title: &'a str,
    pub message: &'a str,
    pub hint: &'a str,
}

/// No scripts, no framing, no referrer: the login page is the front door.
/// The one script is /static/passkey.js (progressive enhancement for passkeys). No
/// `form-action`: browsers apply it to the redirect after a form, and a sign-in ends
/// in a redirect to the client.
const CSP: &str = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; \
    base-uri 'none'; frame-ancestors 'none'";

/// A response builder for an HTML page with the security headers set.
pub fn html(status: StatusCode) -> actix_web::HttpResponseBuilder {
    let mut b = HttpResponse::build(status);
    b.content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "same-origin"));
    b
}

/// The signed-out page with Front-Channel Logout 1.0 iframes (§3): the default policy
/// with `frame-src` for exactly the origins of those iframes, on that page only.
/// `origins` are serialized `scheme://host[:port]` (no spaces or `;`).
pub fn render_with_frames(status: StatusCode, page: &impl Template, origins: &[String]) -> HttpResponse {
    let mut b = html(status);
    if !origins.is_empty() {
        b.insert_header((header::CONTENT_SECURITY_POLICY, frames_csp(origins)));
    }
    render_with(b, page)
}

fn frames_csp(origins: &[String]) -> String {
    format!("{CSP}; frame-src {}", origins.join(" "))
}

/// Renders a template into a finished response; a rendering failure (a bug, not
/// input) is logged and answered with a plain page.
pub fn render(status: StatusCode, page: &impl Template) -> HttpResponse {
    render_with(html(status), page)
}

pub fn render_with(mut builder: actix_web::HttpResponseBuilder, page: &impl Template) -> HttpResponse {
    match page.render() {
        Ok(body) => builder.body(body),
        Err(e) => {
            tracing::error!(error = %e, "template rendering failed");
            html(StatusCode::INTERNAL_SERVER_ERROR).body("Internal error")
        }
    }
}

pub fn error_page(status: StatusCode, title: &str, message: &str, hint: &str) -> HttpResponse {
    render(status, &ErrorPage { title, message, hint })
}

/// A request from a page that cannot be read (a form sent wrong, a missing choice).
pub fn bad_request_page(message: &str) -> HttpResponse {
    error_page(
        StatusCode::BAD_REQUEST,
        crate::i18n::t().err_request_rejected,
        message,
        crate::i18n::t().err_return_try_again,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn the_password_is_left_out_only_for_an_account_with_a_passkey_and_no_password() {
        use crate::auth::passkeys::Named;
        let step = |passkey, password| LoginStep::named(Named { passkey, password });
        assert!(step(true, false).passkey_first() && !step(true, false).asks_password());
        assert!(!step(true, false).has_form());
        assert!(step(true, true).passkey_first() && step(true, true).asks_password());
        // No passkey and no password (an upstream-only account): the password step, as
        // for any account, so the step tells nothing more.
        assert!(step(false, false).asks_password() && !step(false, false).passkey_first());
    }

    #[test]
    fn the_frames_csp_adds_frame_src_to_the_default() {
        let csp = frames_csp(&["https://a.example".into(), "http://127.0.0.1:9".into()]);
        assert_eq!(csp, format!("{CSP}; frame-src https://a.example http://127.0.0.1:9"));
        assert!(!CSP.contains("frame-src"));
    }

    #[test]
    fn the_form_post_csp_allows_exactly_its_script() {
        let template = include_str!("../../templates/form_post.html");
        let script = template
            .split("<script>")
            .nth(1)
            .and_then(|s| s.split("</script>").next())
            .unwrap();
        let digest = crate::crypto::sha256(script.as_bytes());
        let hash = base64::engine::general_purpose::STANDARD.encode(digest);
        assert!(FORM_POST_CSP.contains(&format!("'sha256-{hash}'")));
    }
}
