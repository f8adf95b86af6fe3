//! `/setup`: the first-run page that creates the first administrator through the
//! one-time link printed on the console.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::auth::limits::Bucket;
use crate::auth::setup::{self, Outcome};
use crate::domain::Problems;
use crate::http::{errors, guard, pages, params};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "setup.html")]
struct SetupPage<'a> {
    done: bool,
    token: &'a str,
    username: &'a str,
    email: &'a str,
    problems: Problems,
}

fn dead_link() -> HttpResponse {
    let t = crate::i18n::t();
    pages::error_page(
        StatusCode::GONE,
        t.acct_setup_dead_title,
        t.acct_setup_dead,
        t.acct_setup_dead_hint,
    )
}

pub async fn page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Authorize) {
        return limited;
    }
    let token = params::link_token(&req);
    match setup::usable(&state.ctx(), &token).await {
        Ok(true) => pages::render(
            StatusCode::OK,
            &SetupPage {
                done: false,
                token: &token,
                username: "",
                email: "",
                problems: Problems::default(),
            },
        ),
        Ok(false) => dead_link(),
        Err(e) => errors::server_page(e),
    }
}

pub async fn submit(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Ok(form) = params::require_form(&req).and_then(|_| params::unique_form(&body)) else {
        return dead_link();
    };
    let get = |n: &str| params::field(&form, n);
    let (token, username, email) = (get("token"), get("username"), get("email"));
    match setup::finish(&state.ctx(), token, username, email, get("password"), get("confirm")).await {
        Ok(Outcome::Created) => {
            tracing::info!(
                username = username.trim(),
                "first administrator created through the setup link"
            );
            crate::audit::Event::new("setup.completed")
                .actor("setup-link")
                .target(username.trim())
                .ip(Some(crate::http::guard::ip_text(&req, &state)))
                .log(&state.db, state.clock.now())
                .await;
            let page = SetupPage {
                done: true,
                token: "",
                username: username.trim(),
                email,
                problems: Problems::default(),
            };
            pages::render(StatusCode::OK, &page)
        }
        Ok(Outcome::Invalid(problems)) => pages::render(
            StatusCode::BAD_REQUEST,
            &SetupPage {
                done: false,
                token,
                username,
                email,
                problems,
            },
        ),
        Ok(Outcome::Expired) => dead_link(),
        Err(e) => errors::server_page(e),
    }
}
