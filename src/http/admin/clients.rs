//! `/admin/clients`: registering and editing relying parties (the secret shown once),
//! and the route table of every admin page.

use std::future::ready;

use actix_web::http::StatusCode;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, clients::ClientSpec, AdminError, ListQuery, Problems};
use crate::db::{clients::Client, groups::Group};
use crate::http::admin::{answer, done, error_page, flash, pager, Form, Posted};
use crate::http::pages;
use crate::http::signin::portal::{self, Viewer};
use crate::i18n::t;
use crate::state::AppState;

/// A catalogue `text` as HTML, for `|safe`: escaped, with each `{name}` of `values`
/// replaced by its value, escaped, in `<code>` (the pages of clients, apps, providers
/// and registration tokens set URLs, options and headers as code inside sentences).
fn coded(text: &str, values: &[(&str, &str)]) -> String {
    crate::http::admin::with_code(text, values)
}

/// `coded` with one value.
pub(crate) fn code(text: &str, name: &str, value: &str) -> String {
    coded(text, &[(name, value)])
}

/// `coded` with two values.
pub(crate) fn code2(text: &str, a: &str, a_value: &str, b: &str, b_value: &str) -> String {
    coded(text, &[(a, a_value), (b, b_value)])
}

/// `coded` with three values.
pub(crate) fn code3(text: &str, a: &str, a_value: &str, b: &str, b_value: &str, c: &str, c_value: &str) -> String {
    coded(text, &[(a, a_value), (b, b_value), (c, c_value)])
}

/// The text before and after the `{name}` of a catalogue text, for a template that puts
/// an element of its own (a link, code with an id) in its place.
pub(crate) fn around<'a>(text: &'a str, name: &str) -> (&'a str, &'a str) {
    text.split_once(&format!("{{{name}}}")).unwrap_or((text, ""))
}

#[derive(Template)]
#[template(path = "admin_clients.html")]
struct ClientsPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    q: &'a str,
    clients: Vec<Client>,
    total: i64,
    prev: Option<String>,
    next: Option<String>,
}

pub async fn clients(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = portal::require_admin(&req, &state).await {
        return resp;
    }
    let q = match ListQuery::parse(req.query_string()) {
        Ok(q) => q,
        Err(e) => return error_page(&e),
    };
    let text = q.q.clone().unwrap_or_default();
    let (limit, offset) = (q.limit, q.offset);
    let (clients, total) = match admin::clients::page(&state.ctx(), &q).await {
        Ok(f) => f,
        Err(e) => return error_page(&e),
    };
    let (prev, next) = pager("/admin/clients", &[("q", &text)], limit, offset, total);
    pages::render(
        StatusCode::OK,
        &ClientsPage {
            is_admin: true,
            flash: flash(&req),
            q: &text,
            clients,
            total,
            prev,
            next,
        },
    )
}

/// The grant types the form offers, with their labels in the current language.
fn grant_labels() -> [(&'static str, &'static str); 5] {
    let t = t();
    [
        ("authorization_code", t.apps_grant_authorization_code),
        ("refresh_token", t.apps_grant_refresh_token),
        ("client_credentials", t.apps_grant_client_credentials),
        ("urn:ietf:params:oauth:grant-type:device_code", t.apps_grant_device_code),
        ("password", t.apps_grant_password),
    ]
}

#[derive(Template)]
#[template(path = "admin_client.html")]
struct ClientPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    editing: bool,
    spec: ClientSpec,
    secret: Option<String>,
    access_ttl: String,
    refresh_ttl: String,
    grant_lifetime: String,
    groups: Vec<Group>,
    grant_types: Vec<(&'static str, &'static str, bool)>,
    /// The password grant is on: the page warns (RFC 9700 §2.4).
    password_grant: bool,
    algs: &'static [&'static str],
    problems: Problems,
    /// The claim mapping section (templates/admin_client_claims.html).
    claim_rules: Vec<admin::claims::RuleSpec>,
    claim_sources: &'static [&'static str],
}

struct ClientView<'a> {
    editing: bool,
    spec: ClientSpec,
    secret: Option<String>,
    problems: Problems,
    flash: Option<&'a str>,
}

impl ClientView<'_> {
    /// The form once more with what `problems` says to correct.
    fn again(editing: bool, spec: ClientSpec, problems: Problems) -> Self {
        ClientView {
            editing,
            spec,
            secret: None,
            problems,
            flash: None,
        }
    }
}

async fn client_page(state: &AppState, v: &Viewer, status: StatusCode, view: ClientView<'_>) -> HttpResponse {
    let groups = match admin::groups::list(&state.ctx()).await {
        Ok(g) => g,
        Err(e) => return error_page(&e),
    };
    let claim_rules = if view.editing {
        match admin::claims::list(&state.ctx(), &view.spec.client_id).await {
            Ok(rules) => rules.iter().map(admin::claims::RuleSpec::of).collect(),
            Err(e) => return error_page(&e),
        }
    } else {
        Vec::new()
    };
    let ttl = |t: Option<i64>| t.map(|n| n.to_string()).unwrap_or_default();
    pages::render(
        status,
        &ClientPage {
            is_admin: true,
            flash: view.flash,
            csrf: &v.csrf,
            editing: view.editing,
            access_ttl: ttl(view.spec.access_token_ttl),
            grant_types: grant_labels()
                .into_iter()
                .map(|(v, l)| (v, l, view.spec.grant_types.iter().any(|g| g == v)))
                .collect(),
            password_grant: view.spec.grant_types.iter().any(|g| g == "password"),
            refresh_ttl: ttl(view.spec.refresh_token_ttl),
            grant_lifetime: ttl(view.spec.grant_lifetime),
            spec: view.spec,
            secret: view.secret,
            groups,
            algs: admin::clients::ALGS,
            problems: view.problems,
            claim_rules,
            claim_sources: crate::db::claim_rules::SOURCES,
        },
    )
}

pub async fn client_new(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match portal::require_admin(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let spec = ClientSpec {
        grant_types: admin::clients::DEFAULT_GRANT_TYPES
            .iter()
            .map(|g| g.to_string())
            .collect(),
        ..ClientSpec::default()
    };
    let view = ClientView {
        editing: false,
        spec,
        secret: None,
        problems: Problems::new(),
        flash: None,
    };
    client_page(&state, &v, StatusCode::OK, view).await
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// A text field left empty is a setting not given.
fn optional(form: &Form, field: &str) -> Option<String> {
    Some(form.get(field).trim().to_string()).filter(|u| !u.is_empty())
}

/// The form as a specification; number fields that are not numbers are problems.
fn spec_from(form: &Form, base: ClientSpec) -> (ClientSpec, Problems) {
    let mut problems = Problems::new();
    let mut number = |field: &str| -> Option<i64> {
        let text = form.get(field).trim();
        if text.is_empty() {
            return None;
        }
        text.parse()
            .map_err(|_| problems.insert(field.into(), t().apps_whole_seconds.into()))
            .ok()
    };
    let access = number("access_token_ttl");
    let refresh = number("refresh_token_ttl");
    let grant_lifetime = number("grant_lifetime");
    let spec = ClientSpec {
        name: Some(form.get("name").to_string()),
        redirect_uris: lines(form.get("redirect_uris")),
        post_logout_redirect_uris: lines(form.get("post_logout_redirect_uris")),
        grant_types: form.all("grant_types"),
        consent_required: form.checked("consent_required"),
        allowed_groups: form.all("allowed_groups"),
        access_token_ttl: access,
        refresh_token_ttl: refresh,
        id_token_signed_response_alg: Some(form.get("id_token_signed_response_alg").to_string()),
        refresh_tokens: Some(form.get("refresh_tokens").to_string()),
        backchannel_logout_uri: optional(form, "backchannel_logout_uri"),
        admin: form.checked("admin"),
        client_scopes: form.get("client_scopes").split_whitespace().map(String::from).collect(),
        web_origins: lines(form.get("web_origins")),
        grant_lifetime,
        require_pushed_authorization_requests: form.checked("require_pushed_authorization_requests"),
        require_signed_request_object: form.checked("require_signed_request_object"),
        dpop_bound_access_tokens: form.checked("dpop_bound_access_tokens"),
        jwks_uri: optional(form, "jwks_uri"),
        frontchannel_logout_uri: optional(form, "frontchannel_logout_uri"),
        frontchannel_logout_session_required: form.checked("frontchannel_logout_session_required"),
        introspect_any: form.checked("introspect_any"),
        initiate_login_uri: optional(form, "initiate_login_uri"),
        ..base
    };
    (spec, problems)
}

/// The form's own problems together with the specification's, so every field that
/// is wrong is marked at once.
fn all_problems(spec: &ClientSpec, mut problems: Problems) -> AdminError {
    if let Err(more) = admin::clients::build(spec, 0) {
        for (k, v) in more {
            problems.entry(k).or_insert(v);
        }
    }
    AdminError::Invalid(problems)
}

pub async fn client_create(state: web::Data<AppState>, post: Posted) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let base = ClientSpec {
        client_id: form.get("client_id").trim().to_string(),
        public: form.get("kind") == "public",
        ..ClientSpec::default()
    };
    let (spec, problems) = spec_from(&form, base);
    let result = if problems.is_empty() {
        admin::clients::create(&state.ctx(), &actor, &spec).await
    } else {
        Err(all_problems(&spec, problems))
    };
    answer(
        result,
        |(client, secret)| {
            // The secret exists only in this response.
            let view = ClientView {
                editing: true,
                spec: admin::clients::spec_of(&client),
                secret: secret.map(|s| s.expose().to_string()),
                problems: Problems::new(),
                flash: Some(t().apps_client_registered),
            };
            client_page(&state, &v, StatusCode::CREATED, view)
        },
        |problems| {
            client_page(
                &state,
                &v,
                StatusCode::BAD_REQUEST,
                ClientView::again(false, spec, problems),
            )
        },
    )
    .await
}

pub async fn client(req: HttpRequest, state: web::Data<AppState>, id: web::Path<String>) -> HttpResponse {
    let v = match portal::require_admin(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    match admin::clients::get(&state.ctx(), &id).await {
        Ok(c) => {
            let view = ClientView {
                editing: true,
                spec: admin::clients::spec_of(&c),
                secret: None,
                problems: Problems::new(),
                flash: flash(&req),
            };
            client_page(&state, &v, StatusCode::OK, view).await
        }
        Err(e) => error_page(&e),
    }
}

pub async fn client_update(state: web::Data<AppState>, id: web::Path<String>, post: Posted) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let existing = match admin::clients::get(&state.ctx(), &id).await {
        Ok(c) => c,
        Err(e) => return error_page(&e),
    };
    let (spec, problems) = spec_from(&form, admin::clients::spec_of(&existing));
    let result = if problems.is_empty() {
        admin::clients::update(&state.ctx(), &state.clients, &actor, &id, &spec).await
    } else {
        Err(all_problems(&spec, problems))
    };
    answer(
        result,
        |_| ready(done(&format!("/admin/clients/{}", existing.client_id), "saved")),
        |problems| {
            client_page(
                &state,
                &v,
                StatusCode::BAD_REQUEST,
                ClientView::again(true, spec, problems),
            )
        },
    )
    .await
}

pub async fn client_action(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    post: Posted,
) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let (id, action) = path.into_inner();
    match action.as_str() {
        "secret" => match admin::clients::rotate_secret(&state.ctx(), &state.clients, &actor, &id).await {
            Ok(secret) => match admin::clients::get(&state.ctx(), &id).await {
                Ok(c) => {
                    let view = ClientView {
                        editing: true,
                        spec: admin::clients::spec_of(&c),
                        secret: Some(secret.expose().to_string()),
                        problems: Problems::new(),
                        flash: Some(t().apps_secret_rotated),
                    };
                    client_page(&state, &v, StatusCode::OK, view).await
                }
                Err(e) => error_page(&e),
            },
            Err(e) => error_page(&e),
        },
        "delete" if !form.checked("confirm") => error_page(&admin::invalid("confirm", t().apps_tick_to_confirm)),
        "delete" => match admin::clients::delete(&state.ctx(), &state.clients, &actor, &id).await {
            Ok(()) => done("/admin/clients", "deleted"),
            Err(e) => error_page(&e),
        },
        _ => error_page(&AdminError::NotFound("action")),
    }
}

/// Registers the admin pages.
pub fn routes(cfg: &mut web::ServiceConfig) {
    use crate::http::{admin as ui, admin::groups, admin::users};
    cfg.route("/admin", web::get().to(ui::dashboard))
        .route("/admin/users", web::get().to(users::users))
        .route("/admin/users", web::post().to(users::user_create))
        .route("/admin/users/{id}", web::get().to(users::user))
        .route("/admin/users/{id}", web::post().to(users::user_update))
        .route(
            "/admin/users/{id}/sessions/end",
            web::post().to(users::user_sessions_end),
        )
        .route("/admin/users/{id}/{action}", web::post().to(users::user_action))
        .route("/admin/keys", web::get().to(ui::keys))
        .route("/admin/keys/rotate", web::post().to(ui::keys_rotate))
        .route("/admin/audit", web::get().to(ui::audit))
        .route("/admin/mail", web::get().to(ui::mail))
        .route("/admin/clients", web::get().to(clients))
        .route("/admin/clients", web::post().to(client_create))
        .route("/admin/clients/new", web::get().to(client_new))
        .route("/admin/clients/{id}", web::get().to(client))
        .route("/admin/clients/{id}", web::post().to(client_update))
        .route("/admin/clients/{id}/{action}", web::post().to(client_action))
        .route("/admin/groups", web::get().to(groups::groups))
        .route("/admin/groups", web::post().to(groups::group_create))
        .route("/admin/groups/{id}", web::get().to(groups::group))
        .route("/admin/groups/{id}", web::post().to(groups::group_rename))
        .route(
            "/admin/groups/{id}/members/{action}",
            web::post().to(groups::group_action),
        )
        .route("/admin/groups/{id}/{action}", web::post().to(groups::group_action));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_escapes_the_text_and_sets_the_values_as_code() {
        assert_eq!(
            code2("Send {iss} & {sid} <now>", "iss", "iss", "sid", "s'd"),
            "Send <code>iss</code> &amp; <code>s&#x27;d</code> &lt;now&gt;"
        );
        assert_eq!(code("a {b} {c}.", "c", "<x>"), "a {b} <code>&lt;x&gt;</code>.");
        assert_eq!(around("{link}: why", "link"), ("", ": why"));
        assert_eq!(around("no link", "link"), ("no link", ""));
    }
}
