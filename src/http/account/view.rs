//! The account page as it is shown: its rows and sections, the messages after a
//! change, and the page rendered from the account's overview.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use askama::Template;

use crate::db::{self, sessions::SessionInfo};
use crate::domain::Problems;
use crate::http::signin::portal::Viewer;
use crate::http::{errors, pages};
use crate::i18n::t;
use crate::state::AppState;

/// A sentence as HTML with its `{name}` placeholder filled by `value` in an element of
/// its own (`<tag id="id">`), for a value that tests and scripts find by its id:
/// `fill_strong` with the element named. Rendered with `|safe`.
pub fn fill_tag(text: &str, name: &str, value: impl std::fmt::Display, tag: &str, id: &str) -> String {
    crate::i18n::markup(text, &format!("{tag} id=\"{id}\""), &[(name, &value)])
}

/// A sentence as HTML with two placeholders filled by values in bold (`fill_strong`
/// for two). Rendered with `|safe`.
pub fn fill_strong2(
    text: &str,
    a: &str,
    a_value: impl std::fmt::Display,
    b: &str,
    b_value: impl std::fmt::Display,
) -> String {
    crate::i18n::markup(text, "strong", &[(a, &a_value), (b, &b_value)])
}

/// A session as one table row.
pub struct SessionRow {
    pub sid: String,
    pub device: String,
    pub ip: String,
    pub when: String,
    pub amr: String,
    pub current: bool,
}

/// How a session was signed in, in words.
fn method_label(amr: &str) -> &str {
    match amr {
        crate::signin::AMR_PASSWORD => t().acct_method_password,
        crate::signin::AMR_PASSWORD_OTP => t().acct_method_password_code,
        crate::signin::AMR_PASSKEY => t().acct_method_passkey,
        crate::signin::link::AMR_EMAIL => t().acct_method_email,
        crate::signin::link::AMR_EMAIL_TOTP => t().acct_method_email_code,
        other => other,
    }
}

impl SessionRow {
    pub fn of(s: &SessionInfo, current_sid: &str) -> Self {
        Self {
            sid: s.sid.clone(),
            device: s.user_agent.clone().unwrap_or_else(|| t().acct_unknown.into()),
            ip: s.ip.clone().unwrap_or_default(),
            when: t().datetime(s.created_at),
            amr: method_label(&s.amr).to_string(),
            current: s.sid == current_sid,
        }
    }
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    user: &'a db::users::User,
    csrf: &'a str,
    name: &'a str,
    email: &'a str,
    problems: Problems,
    totp_on: bool,
    /// When the authenticator app was added.
    totp_since: String,
    recovery_left: i64,
    signin: SignInSection,
    sessions: Vec<SessionRow>,
    passkeys: Vec<PasskeyRow>,
    apps: Vec<AppRow>,
    deletion: DeletionSection,
    /// A new address waiting for its link to be confirmed.
    pending_email: Option<String>,
    /// Upstream providers, linked or not.
    links: Vec<LinkRow>,
    /// A federated-only account has none (a reset by mail sets one).
    has_password: bool,
    /// Mail is on (a reset can set a password).
    mail: bool,
}

/// An upstream provider on the account page.
struct LinkRow {
    id: String,
    name: String,
    /// The address it reported and since when, when linked.
    linked: Option<(String, String)>,
}

/// The "Delete your account" section: whether deleting needs an administrator's
/// approval, and when this account asked, if it has a request waiting.
struct DeletionSection {
    approval: bool,
    requested: Option<String>,
}

/// An application the user allowed: its name, what it may see, and since when.
struct AppRow {
    client_id: String,
    name: String,
    scopes: String,
    since: String,
}

struct PasskeyRow {
    id: i64,
    name: String,
    added: String,
    used: String,
}

/// Codes by mail at sign-in, trusted browsers and the new-browser notice.
struct SignInSection {
    mail: bool,
    email_mfa: bool,
    /// Why codes by mail cannot be turned on now, if they cannot.
    email_mfa_blocked: Option<&'static str>,
    notify_new_device: bool,
    devices: Vec<DeviceRow>,
}

/// A browser trusted to skip the second factor.
struct DeviceRow {
    id: i64,
    label: String,
    first_seen: String,
    until: String,
}

impl SignInSection {
    fn new(
        state: &AppState,
        user: &db::users::User,
        c: crate::account::security::Choices,
        totp: bool,
        passkeys: bool,
    ) -> Self {
        let email_mfa_blocked = if state.settings.smtp.is_none() {
            Some(t().acct_email_mfa_blocked_mail)
        } else if totp {
            Some(t().acct_email_mfa_blocked_totp)
        } else if passkeys {
            Some(t().acct_email_mfa_blocked_passkey)
        } else if !user.email_verified || user.email.as_deref().is_none_or(|e| e.trim().is_empty()) {
            Some(t().acct_email_mfa_blocked_unverified)
        } else {
            None
        };
        Self {
            mail: state.settings.smtp.is_some(),
            email_mfa: c.lifecycle.email_mfa,
            email_mfa_blocked,
            notify_new_device: c.lifecycle.notify_new_device,
            devices: c
                .trusted
                .into_iter()
                .map(|d| DeviceRow {
                    id: d.id,
                    label: crate::lifecycle::devices::shown(&d.label),
                    first_seen: t().datetime(d.created_at),
                    until: t().datetime(d.trusted_until),
                })
                .collect(),
        }
    }
}

/// Messages after a successful change, named in the redirect so a reload repeats nothing.
pub(super) fn flash_text(code: &str) -> Option<&'static str> {
    let t = t();
    Some(match code {
        "profile" => t.acct_done_profile,
        "profile-verify" => t.acct_done_profile_verify,
        "confirmed-email" => t.acct_done_confirmed_email,
        "password" => t.acct_done_password,
        "session" => t.acct_done_session,
        "others" => t.acct_done_others,
        "totp-off" => t.acct_done_totp_off,
        "passkey" => t.acct_done_passkey,
        "passkey-removed" => t.acct_done_passkey_removed,
        "app-removed" => t.acct_done_app_removed,
        "email-mfa-on" => t.acct_done_email_mfa_on,
        "email-mfa-off" => t.acct_done_email_mfa_off,
        "device-removed" => t.acct_done_device_removed,
        "notifications" => t.acct_done_notifications,
        "deletion-requested" => t.acct_done_deletion_requested,
        "deletion-withdrawn" => t.acct_done_deletion_withdrawn,
        "linked" => t.acct_done_linked,
        "unlinked" => t.acct_done_unlinked,
        "link-elsewhere" => t.acct_done_link_elsewhere,
        "link-already" => t.acct_done_link_already,
        "link-failed" => t.acct_done_link_failed,
        "link-unavailable" => t.acct_done_link_unavailable,
        "link-reauth" => t.acct_done_link_reauth,
        "unlink-last" => t.acct_done_unlink_last,
        _ => return None,
    })
}

impl LinkRow {
    fn of(l: crate::federation::AccountLink) -> Self {
        LinkRow {
            linked: l
                .linked
                .map(|i| (i.email.unwrap_or_default(), t().datetime(i.created_at))),
            id: l.id,
            name: l.name,
        }
    }
}

impl PasskeyRow {
    fn of(p: db::passkeys::Passkey) -> Self {
        PasskeyRow {
            id: p.id,
            name: p.name,
            added: t().datetime(p.created_at),
            used: p
                .last_used_at
                .map(|at| t().datetime(at))
                .unwrap_or_else(|| t().acct_never.into()),
        }
    }
}

impl AppRow {
    fn of(g: db::consents::Granted) -> Self {
        AppRow {
            scopes: g
                .scope
                .split(' ')
                .filter_map(pages::describe_scope)
                .collect::<Vec<_>>()
                .join("; "),
            since: t().datetime(g.granted_at),
            client_id: g.client_id,
            name: g.client_name,
        }
    }
}

pub(crate) async fn render(
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    flash: Option<&str>,
    problems: Problems,
    fields: Option<(&str, &str)>,
) -> HttpResponse {
    let crate::account::Overview {
        sessions,
        totp,
        recovery_left,
        passkeys,
        apps,
        pending_email,
    } = match crate::account::overview(&state.ctx(), v.user.id).await {
        Ok(o) => o,
        Err(e) => return errors::server_page(e),
    };
    let signin = match crate::account::security::choices(&state.ctx(), v.user.id).await {
        Ok(c) => SignInSection::new(state, &v.user, c, totp.is_some(), !passkeys.is_empty()),
        Err(e) => return errors::server_page(e),
    };
    let (name, email) = fields.unwrap_or((
        v.user.name.as_deref().unwrap_or_default(),
        v.user.email.as_deref().unwrap_or_default(),
    ));
    let deletion = match crate::admin::deletion::requested_at(&state.ctx(), v.user.id).await {
        Ok(at) => DeletionSection {
            approval: state.settings.account_deletion == crate::config::AccountDeletion::Approval,
            requested: at.map(|at| t().datetime(at)),
        },
        Err(e) => return errors::server_page(e),
    };
    let links = match crate::federation::account_links(&state.ctx(), v.user.id).await {
        Ok(l) => l.into_iter().map(LinkRow::of).collect(),
        Err(e) => return errors::server_page(e),
    };
    let page = AccountPage {
        links,
        has_password: crate::crypto::password::has_password(&v.user.password_hash),
        mail: state.settings.smtp.is_some(),
        deletion,
        pending_email,
        is_admin: v.user.is_admin,
        flash,
        user: &v.user,
        csrf: &v.csrf,
        name,
        email,
        problems,
        totp_on: totp.is_some(),
        totp_since: totp
            .and_then(|totp| totp.confirmed_at)
            .map(|at| t().datetime(at))
            .unwrap_or_default(),
        recovery_left,
        signin,
        sessions: sessions.iter().map(|s| SessionRow::of(s, &v.session.sid)).collect(),
        passkeys: passkeys.into_iter().map(PasskeyRow::of).collect(),
        apps: apps.into_iter().map(AppRow::of).collect(),
    };
    pages::render(status, &page)
}

pub(crate) fn back(flash: &str) -> HttpResponse {
    errors::redirect(&format!("/account?done={flash}"))
}
