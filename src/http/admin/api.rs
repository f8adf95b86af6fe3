//! `/admin/api/`: the admin JSON API (docs/ADMIN_API.md). A caller is an admin client
//! with a `tessera:admin` access token from its own client credentials, or a signed-in
//! administrator's browser session with the session's CSRF token in `X-CSRF-Token`
//! on every change.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use crate::admin::{self, clients::ClientSpec, users::UserInput, AdminError, ListQuery};
use crate::state::AppState;

pub(crate) use super::caller::{body, run};

fn user_id(raw: &str) -> Result<i64, AdminError> {
    raw.parse().map_err(|_| AdminError::NotFound("user"))
}

fn group_id(raw: &str) -> Result<i64, AdminError> {
    raw.parse().map_err(|_| AdminError::NotFound("group"))
}

fn list_query(req: &HttpRequest) -> Result<ListQuery, AdminError> {
    ListQuery::parse(req.query_string())
}

type Data = web::Data<AppState>;
type Id = web::Path<String>;

pub async fn stats(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::overview::stats(&state.ctx()).await
    })
    .await
}

pub async fn users_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::users::list(&state.ctx(), &list_query(&req)?).await
    })
    .await
}

pub async fn users_create(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        admin::users::create(&s.ctx(), &a, body::<UserInput>(&bytes)?).await
    })
    .await
}

pub async fn user_get(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::users::get(&state.ctx(), user_id(&id)?).await
    })
    .await
}

pub async fn user_patch(req: HttpRequest, state: Data, id: Id, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        admin::users::update(&s.ctx(), &a, user_id(&id)?, body::<UserInput>(&bytes)?).await
    })
    .await
}

pub async fn user_delete(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        admin::users::delete(&s.ctx(), &a, user_id(&id)?).await
    })
    .await
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PasswordBody {
    password: String,
}

pub async fn user_password(req: HttpRequest, state: Data, id: Id, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        let b: PasswordBody = body(&bytes)?;
        admin::users::set_password(&s.ctx(), &a, user_id(&id)?, &b.password).await
    })
    .await
}

pub async fn user_disable(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        admin::users::set_disabled(&s.ctx(), &a, user_id(&id)?, true).await
    })
    .await
}

pub async fn user_enable(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        admin::users::set_disabled(&s.ctx(), &a, user_id(&id)?, false).await
    })
    .await
}

pub async fn user_unlock(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        admin::users::unlock(&s.ctx(), &a, user_id(&id)?).await
    })
    .await
}

pub async fn user_mfa_reset(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        admin::users::reset_mfa(&s.ctx(), &a, user_id(&id)?).await
    })
    .await
}

pub async fn user_sessions(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::users::sessions(&state.ctx(), user_id(&id)?).await
    })
    .await
}

pub async fn user_sessions_end(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        let n = admin::users::end_sessions(&s.ctx(), &a, user_id(&id)?, None).await?;
        Ok(json!({"ended": n}))
    })
    .await
}

pub async fn user_session_end(req: HttpRequest, state: Data, path: web::Path<(String, String)>) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        let (id, sid) = path.into_inner();
        let n = admin::users::end_sessions(&s.ctx(), &a, user_id(&id)?, Some(&sid)).await?;
        Ok(json!({"ended": n}))
    })
    .await
}

pub async fn clients_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::clients::list(&state.ctx(), &list_query(&req)?).await
    })
    .await
}

fn with_secret(client: &crate::db::clients::Client, secret: Option<&crate::domain::Secret>) -> Value {
    let mut v = admin::clients::view(client);
    if let Some(s) = secret {
        v["client_secret"] = json!(s.expose());
    }
    v
}

pub async fn clients_create(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        let (client, secret) = admin::clients::create(&s.ctx(), &a, &body::<ClientSpec>(&bytes)?).await?;
        Ok(with_secret(&client, secret.as_ref()))
    })
    .await
}

pub async fn client_get(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        Ok(admin::clients::view(&admin::clients::get(&state.ctx(), &id).await?))
    })
    .await
}

/// A JSON merge patch (RFC 7396) over the client's current specification.
pub async fn client_patch(req: HttpRequest, state: Data, id: Id, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        let existing = admin::clients::get(&s.ctx(), &id).await?;
        let patch: Value = body(&bytes)?;
        let Value::Object(patch) = patch else {
            return Err(admin::invalid("body", "a JSON object"));
        };
        let mut current = serde_json::to_value(admin::clients::spec_of(&existing))
            .map_err(|_| AdminError::Server(crate::error::Internal::Failed))?;
        for (k, v) in patch {
            current[k] = v;
        }
        let spec: ClientSpec = serde_json::from_value(current)
            .map_err(|e| admin::invalid("body", format!("not valid for a client: {e}")))?;
        Ok(admin::clients::view(
            &admin::clients::update(&s.ctx(), &s.clients, &a, &id, &spec).await?,
        ))
    })
    .await
}

pub async fn client_delete(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        admin::clients::delete(&s.ctx(), &s.clients, &a, &id).await
    })
    .await
}

pub async fn client_secret(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        let secret = admin::clients::rotate_secret(&s.ctx(), &s.clients, &a, &id).await?;
        Ok(json!({"client_id": id.as_str(), "client_secret": secret.expose()}))
    })
    .await
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NameBody {
    name: String,
}

pub async fn groups_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::groups::list(&state.ctx()).await
    })
    .await
}

pub async fn groups_create(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        admin::groups::create(&s.ctx(), &a, &body::<NameBody>(&bytes)?.name).await
    })
    .await
}

pub async fn group_get(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::groups::get(&state.ctx(), group_id(&id)?).await
    })
    .await
}

pub async fn group_patch(req: HttpRequest, state: Data, id: Id, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        admin::groups::rename(&s.ctx(), &a, group_id(&id)?, &body::<NameBody>(&bytes)?.name).await
    })
    .await
}

pub async fn group_delete(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        admin::groups::delete(&s.ctx(), &a, group_id(&id)?).await
    })
    .await
}

pub async fn group_member_put(req: HttpRequest, state: Data, path: web::Path<(String, String)>) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        let (id, username) = path.into_inner();
        admin::groups::set_member(&s.ctx(), &a, group_id(&id)?, &username, true).await
    })
    .await
}

pub async fn group_member_delete(req: HttpRequest, state: Data, path: web::Path<(String, String)>) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        let (id, username) = path.into_inner();
        admin::groups::set_member(&s.ctx(), &a, group_id(&id)?, &username, false).await
    })
    .await
}

pub async fn keys_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::overview::keys(&state.ctx()).await
    })
    .await
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct RotateBody {
    alg: Option<String>,
}

pub async fn keys_rotate(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        let b: RotateBody = if bytes.is_empty() {
            RotateBody::default()
        } else {
            body(&bytes)?
        };
        admin::overview::rotate_key(&s.ctx(), &a, b.alg.as_deref().unwrap_or("RS256")).await
    })
    .await
}

pub async fn audit(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::overview::audit(&state.ctx(), &list_query(&req)?).await
    })
    .await
}

pub async fn mail_queue(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::mail::queue(&state.ctx(), &list_query(&req)?).await
    })
    .await
}

pub async fn invitations_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::invitations::list(&state.ctx()).await
    })
    .await
}

pub async fn invitations_create(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        admin::invitations::create(&s.ctx(), &a, body(&bytes)?).await
    })
    .await
}

pub async fn invitation_delete(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        let id = id.parse().map_err(|_| AdminError::NotFound("invitation"))?;
        admin::invitations::revoke(&s.ctx(), &a, id).await
    })
    .await
}

/// An administrator approves a user's request to delete their account (204).
pub async fn user_deletion_approve(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        crate::admin::deletion::approve(&s.ctx(), &a, user_id(&id)?).await
    })
    .await
}

/// An administrator rejects a user's deletion request: the account stays (204).
pub async fn user_deletion_reject(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        crate::admin::deletion::reject(&s.ctx(), &a, user_id(&id)?).await
    })
    .await
}

/// Any other path under the API: a JSON 404, after the same authorisation (so the
/// API's shape is not revealed to strangers).
pub async fn unknown(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        Err::<(), _>(AdminError::NotFound("route"))
    })
    .await
}

/// Registers the API under `/admin/api`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/admin/api")
            // Public, unlike the rest: the document reveals only the documented API.
            .route("/openapi.json", web::get().to(crate::http::admin::openapi::serve))
            .route("/stats", web::get().to(stats))
            .route("/users", web::get().to(users_list))
            .route("/users", web::post().to(users_create))
            .route("/users/{id}", web::get().to(user_get))
            .route("/users/{id}", web::patch().to(user_patch))
            .route("/users/{id}", web::delete().to(user_delete))
            .route("/users/{id}/password", web::post().to(user_password))
            .route("/users/{id}/disable", web::post().to(user_disable))
            .route("/users/{id}/enable", web::post().to(user_enable))
            .route("/users/{id}/unlock", web::post().to(user_unlock))
            .route("/users/{id}/mfa/reset", web::post().to(user_mfa_reset))
            .route("/users/{id}/sessions", web::get().to(user_sessions))
            .route("/users/{id}/sessions", web::delete().to(user_sessions_end))
            .route("/users/{id}/sessions/{sid}", web::delete().to(user_session_end))
            .route("/clients", web::get().to(clients_list))
            .route("/clients", web::post().to(clients_create))
            .route("/clients/{id}", web::get().to(client_get))
            .route("/clients/{id}", web::patch().to(client_patch))
            .route("/clients/{id}", web::delete().to(client_delete))
            .route("/clients/{id}/secret", web::post().to(client_secret))
            .route("/groups", web::get().to(groups_list))
            .route("/groups", web::post().to(groups_create))
            .route("/groups/{id}", web::get().to(group_get))
            .route("/groups/{id}", web::patch().to(group_patch))
            .route("/groups/{id}", web::delete().to(group_delete))
            .route("/groups/{id}/members/{username}", web::put().to(group_member_put))
            .route("/groups/{id}/members/{username}", web::delete().to(group_member_delete))
            .route("/keys", web::get().to(keys_list))
            .route("/keys/rotate", web::post().to(keys_rotate))
            .route("/audit", web::get().to(audit))
            .route("/mail", web::get().to(mail_queue))
            .route("/invitations", web::get().to(invitations_list))
            .route("/invitations", web::post().to(invitations_create))
            .route("/invitations/{id}", web::delete().to(invitation_delete))
            .route("/users/{id}/deletion/approve", web::post().to(user_deletion_approve))
            .route("/users/{id}/deletion", web::delete().to(user_deletion_reject))
            .default_service(web::to(unknown)),
    );
}
