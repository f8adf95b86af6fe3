//! Initial access tokens for dynamic client registration (RFC 7591 §3) in the admin
//! pages (`/admin/registration-tokens`: make one, shown once; list; revoke) and the
//! admin API (`/admin/api/registration-tokens`), through `admin::registration`.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, registration::Created, registration::TokenInput};
use crate::config::Registration;
use crate::domain::Problems;
use crate::http::admin::api::{body, run};
use crate::http::admin::{answer, error_page, Posted};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, pages};
use crate::i18n::t;
use crate::state::AppState;

type Data = web::Data<AppState>;

/// `GET /admin/api/registration-tokens`: the live tokens (never their values).
pub async fn api_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::registration::list(&state.ctx()).await
    })
    .await
}

/// `POST /admin/api/registration-tokens` with `{"ttl": "1h", "uses": 3}` (both
/// optional): 201 with the token, shown this once.
pub async fn api_create(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        let input: TokenInput = if bytes.is_empty() {
            TokenInput::default()
        } else {
            body(&bytes)?
        };
        admin::registration::create(&s.ctx(), &a, input).await
    })
    .await
}

/// `DELETE /admin/api/registration-tokens/{id}`: 204.
pub async fn api_revoke(req: HttpRequest, state: Data, id: web::Path<String>) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        admin::registration::revoke(&s.ctx(), &a, &id).await
    })
    .await
}

struct Row {
    id: String,
    created: String,
    expires: String,
    uses: String,
    created_by: String,
}

#[derive(Template)]
#[template(path = "admin_registration_tokens.html")]
struct Page<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    /// What `--registration` says, in words.
    mode: &'static str,
    created: Option<Created>,
    created_expires: String,
    ttl: &'a str,
    uses: &'a str,
    tokens: Vec<Row>,
    problems: Problems,
}

fn mode_text(m: Registration) -> &'static str {
    match m {
        Registration::Off => t().apps_reg_mode_off,
        Registration::Token => t().apps_reg_mode_token,
        Registration::Open => t().apps_reg_mode_open,
    }
}

#[allow(clippy::too_many_arguments)]
async fn page(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    created: Option<Created>,
    asked: (&str, &str),
    problems: Problems,
) -> HttpResponse {
    let tokens = match admin::registration::list(&state.ctx()).await {
        Ok(t) => t,
        Err(e) => return error_page(&e),
    };
    let revoked =
        url::form_urlencoded::parse(req.query_string().as_bytes()).any(|(k, v)| k == "done" && v == "revoked");
    let view = Page {
        is_admin: true,
        flash: revoked.then_some(t().apps_reg_revoked),
        csrf: &v.csrf,
        mode: mode_text(state.settings.protocol.registration),
        created_expires: created.as_ref().map(|c| t().datetime(c.expires_at)).unwrap_or_default(),
        created,
        ttl: asked.0,
        uses: asked.1,
        tokens: tokens
            .into_iter()
            .map(|token| Row {
                id: token.id,
                created: t().datetime(token.created_at),
                expires: t().datetime(token.expires_at),
                uses: token
                    .uses_left
                    .map_or(t().apps_reg_unlimited.to_string(), |n| t().number(n)),
                created_by: token.created_by,
            })
            .collect(),
        problems,
    };
    pages::render(status, &view)
}

/// `GET /admin/registration-tokens`.
pub async fn list_page(req: HttpRequest, state: Data) -> HttpResponse {
    match portal::require_admin(&req, &state).await {
        Ok(v) => page(&req, &state, &v, StatusCode::OK, None, ("1h", ""), Problems::new()).await,
        Err(resp) => resp,
    }
}

/// `POST /admin/registration-tokens`: makes a token and shows it once.
pub async fn create_page(req: HttpRequest, state: Data, post: Posted) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let (ttl, uses_text) = (form.get("ttl").trim().to_string(), form.get("uses").trim().to_string());
    let uses = match uses_text.as_str() {
        "" => None,
        n => match n.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => {
                let p = Problems::from([("uses".to_string(), t().apps_reg_whole_number.to_string())]);
                return page(&req, &state, &v, StatusCode::BAD_REQUEST, None, (&ttl, &uses_text), p).await;
            }
        },
    };
    let input = TokenInput {
        ttl: Some(if ttl.is_empty() { "1h".to_string() } else { ttl.clone() }),
        uses,
    };
    let result = admin::registration::create(&state.ctx(), &actor, input).await;
    answer(
        result,
        // The token is shown on this answer only: only its digest is stored.
        |c| page(&req, &state, &v, StatusCode::OK, Some(c), ("1h", ""), Problems::new()),
        |p| page(&req, &state, &v, StatusCode::BAD_REQUEST, None, (&ttl, &uses_text), p),
    )
    .await
}

/// `POST /admin/registration-tokens/{id}/revoke`.
pub async fn revoke_page(state: Data, id: web::Path<String>, post: Posted) -> HttpResponse {
    let Posted { actor, .. } = post;
    match admin::registration::revoke(&state.ctx(), &actor, &id).await {
        Ok(()) => errors::redirect("/admin/registration-tokens?done=revoked"),
        Err(e) => error_page(&e),
    }
}

/// The pages' routes and the API's, ahead of the admin API scope's catch-all.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/api/registration-tokens", web::get().to(api_list))
        .route("/admin/api/registration-tokens", web::post().to(api_create))
        .route("/admin/api/registration-tokens/{id}", web::delete().to(api_revoke))
        .route("/admin/registration-tokens", web::get().to(list_page))
        .route("/admin/registration-tokens", web::post().to(create_page))
        .route("/admin/registration-tokens/{id}/revoke", web::post().to(revoke_page));
}
