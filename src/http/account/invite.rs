//! Invitations in the browser: `/invite`, the link's page where the invitee chooses a
//! username and a password or a passkey (GET shows it, only the POSTs act: mail
//! scanners follow links), and `/admin/invitations`, where administrators invite and revoke.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, invitations::InvitationInput, AdminError};
use crate::auth::limits::Bucket;
use crate::auth::passkeys::PasskeyError;
use crate::db::groups::Group;
use crate::domain::Problems;
use crate::http::admin::{error_page, posted, posted_to};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, guard, pages, params, signin::passkey_forms};
use crate::i18n::t;
use crate::lifecycle::invite::{self, Accepted, Choice, Created, Opened};
use crate::lifecycle::Queued;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "invite.html")]
struct InvitePage<'a> {
    org: &'a str,
    /// The username of the account just made; `None` while the form is shown.
    done: Option<&'a str>,
    token: &'a str,
    email: &'a str,
    admin: bool,
    username: &'a str,
    problems: Problems,
    /// `--passkey-mode passkey-only`: a passkey, no password fields.
    passkey_only: bool,
}

impl InvitePage<'_> {
    /// Why the passkey was refused, shown beside its button.
    fn passkey_error(&self) -> &str {
        self.problems.get("passkey").map(String::as_str).unwrap_or_default()
    }
}

fn dead_link() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::GONE,
        t.acct_invite_dead_title,
        t.acct_invite_dead,
        t.acct_invite_dead_hint,
    )
}

fn off() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::NOT_FOUND,
        t.acct_invite_off_title,
        t.acct_invite_off,
        t.acct_invite_off_hint,
    )
}

pub async fn page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Authorize) {
        return limited;
    }
    let token = params::link_token(&req);
    match invite::open(&state.ctx(), &token).await {
        Ok(Opened::Live {
            email,
            suggested,
            admin,
        }) => pages::render(
            StatusCode::OK,
            &InvitePage {
                org: &state.settings.org_name,
                done: None,
                token: &token,
                email: &email,
                admin,
                username: &suggested,
                problems: Problems::default(),
                passkey_only: state.settings.passkey_mode.passkey_only(),
            },
        ),
        Ok(Opened::Dead) => dead_link(),
        Ok(Opened::Off) => off(),
        Err(e) => errors::server_page(e),
    }
}

pub async fn accept(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Ok(form) = params::require_form(&req).and_then(|_| params::unique_form(&body)) else {
        return dead_link();
    };
    let get = |n: &str| params::field(&form, n);
    let choice = Choice {
        token: get("token"),
        username: get("username"),
        password: get("password"),
        confirm: get("confirm"),
        ip: guard::ip_text(&req, &state),
    };
    let result = invite::accept(&state.ctx(), &choice).await;
    answer(&state, &choice, result).await
}

/// `POST /invite/passkey/options`: the passkey an invitee makes instead of a password,
/// for the username typed on the page (the page's script asks).
pub async fn passkey_options(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_json(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = passkey_forms::link_form(&req, &body) else {
        return passkey_forms::bad_json();
    };
    let get = |n: &str| params::field(&form, n);
    match invite::passkey_options(&state.ctx(), get("token"), get("username")).await {
        Ok(Ok(options)) => passkey_forms::options_json(Some(options)),
        Ok(Err(Accepted::Invalid(problems))) => passkey_forms::problem_json(&problems),
        Ok(Err(_)) => passkey_forms::options_json(None),
        Err(e) => errors::passkey_json(e),
    }
}

/// `POST /invite/passkey`: the page's form with the passkey made: the account is made
/// with it and no password.
pub async fn accept_passkey(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = passkey_forms::link_form(&req, &body) else {
        return dead_link();
    };
    let get = |n: &str| params::field(&form, n);
    let choice = Choice {
        token: get("token"),
        username: get("username"),
        password: "",
        confirm: "",
        ip: guard::ip_text(&req, &state),
    };
    let result = match passkey_forms::made(&state, &form) {
        Ok(made) => invite::accept_with_passkey(&state.ctx(), &choice, made).await,
        Err(PasskeyError::Refused(why)) => Ok(Accepted::Invalid(Problems::from([(
            "passkey".to_string(),
            why.to_string(),
        )]))),
        Err(PasskeyError::Server(e)) => return errors::server_page(e),
    };
    answer(&state, &choice, result).await
}

/// The page after an acceptance: the account made, or the form again with what to
/// correct.
async fn answer(
    state: &AppState,
    choice: &Choice<'_>,
    result: Result<Accepted, crate::error::Internal>,
) -> HttpResponse {
    match result {
        Ok(Accepted::Created { username }) => pages::render(
            StatusCode::OK,
            &InvitePage {
                org: &state.settings.org_name,
                done: Some(&username),
                token: "",
                email: "",
                admin: false,
                username: "",
                problems: Problems::default(),
                passkey_only: false,
            },
        ),
        Ok(Accepted::Invalid(problems)) => {
            // The form again, as the link shows it, with what to correct.
            let (email, admin) = match invite::open(&state.ctx(), choice.token).await {
                Ok(Opened::Live { email, admin, .. }) => (email, admin),
                Ok(Opened::Dead) => return dead_link(),
                Ok(Opened::Off) => return off(),
                Err(e) => return errors::server_page(e),
            };
            let page = InvitePage {
                org: &state.settings.org_name,
                done: None,
                token: choice.token,
                email: &email,
                admin,
                username: choice.username,
                problems,
                passkey_only: state.settings.passkey_mode.passkey_only(),
            };
            pages::render(StatusCode::BAD_REQUEST, &page)
        }
        Ok(Accepted::Dead) => dead_link(),
        Ok(Accepted::Off) => off(),
        Err(e) => errors::server_page(e),
    }
}

/// A live invitation as one table row.
struct PendingRow {
    id: i64,
    email: String,
    groups: String,
    role: &'static str,
    created: String,
    expires: String,
}

#[derive(Template)]
#[template(path = "admin_invitations.html")]
struct AdminPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    enabled: bool,
    created: Option<Created>,
    created_expires: String,
    not_mailed: &'static str,
    email: &'a str,
    chosen: Vec<String>,
    admin: bool,
    groups: Vec<Group>,
    pending: Vec<PendingRow>,
    problems: Problems,
}

/// What the admin page's form held, to show it again.
#[derive(Default)]
struct Asked {
    email: String,
    groups: Vec<String>,
    admin: bool,
}

async fn admin_page(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    created: Option<Created>,
    asked: Asked,
    problems: Problems,
) -> HttpResponse {
    let loaded = async {
        Ok::<_, AdminError>((
            admin::invitations::list(&state.ctx()).await?,
            admin::groups::list(&state.ctx()).await?,
        ))
    };
    let (pending, groups) = match loaded.await {
        Ok(l) => l,
        Err(e) => return error_page(&e),
    };
    let revoked =
        url::form_urlencoded::parse(req.query_string().as_bytes()).any(|(k, v)| k == "done" && v == "revoked");
    let not_mailed = match created.as_ref().map(|c| c.queued) {
        Some(Queued::Limited) => t().acct_invite_not_mailed_limited,
        _ => t().acct_invite_not_mailed_off,
    };
    let page = AdminPage {
        is_admin: true,
        flash: revoked.then_some(t().acct_invite_revoked),
        csrf: &v.csrf,
        enabled: invite::enabled(&state.settings),
        created_expires: created.as_ref().map(|c| t().datetime(c.expires_at)).unwrap_or_default(),
        created,
        not_mailed,
        email: &asked.email,
        chosen: asked.groups,
        admin: asked.admin,
        groups,
        pending: pending
            .into_iter()
            .map(|p| PendingRow {
                id: p.id,
                email: p.email,
                groups: p.groups.join(", "),
                role: if p.admin {
                    t().acct_invite_role_admin
                } else {
                    t().acct_invite_role_user
                },
                created: t().datetime(p.created_at),
                expires: t().datetime(p.expires_at),
            })
            .collect(),
        problems,
    };
    pages::render(status, &page)
}

pub async fn admin_list(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match portal::require_admin(&req, &state).await {
        Ok(v) => {
            admin_page(
                &req,
                &state,
                &v,
                StatusCode::OK,
                None,
                Asked::default(),
                Problems::new(),
            )
            .await
        }
        Err(resp) => resp,
    }
}

pub async fn admin_create(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form, actor) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let input = InvitationInput {
        email: form.get("email").trim().to_string(),
        groups: form.all("groups"),
        admin: form.checked("admin"),
    };
    let asked = Asked {
        email: input.email.clone(),
        groups: input.groups.clone(),
        admin: input.admin,
    };
    match admin::invitations::create(&state.ctx(), &actor, input).await {
        // The link is shown on this answer only: it is not stored.
        Ok(c) => {
            admin_page(
                &req,
                &state,
                &v,
                StatusCode::OK,
                Some(c),
                Asked::default(),
                Problems::new(),
            )
            .await
        }
        Err(AdminError::Invalid(p)) => admin_page(&req, &state, &v, StatusCode::BAD_REQUEST, None, asked, p).await,
        Err(AdminError::Conflict(msg)) => {
            let p = Problems::from([("action".to_string(), msg)]);
            admin_page(&req, &state, &v, StatusCode::CONFLICT, None, asked, p).await
        }
        Err(e) => error_page(&e),
    }
}

pub async fn admin_revoke(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: Bytes,
) -> HttpResponse {
    let (_, _, actor, id) = match posted_to(&req, &state, &body, &id, "invitation").await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    match admin::invitations::revoke(&state.ctx(), &actor, id).await {
        Ok(()) => errors::redirect("/admin/invitations?done=revoked"),
        Err(e) => error_page(&e),
    }
}
