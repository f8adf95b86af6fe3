//! Whether a request can be answered now, needs the login form, or needs consent.

use super::auth_request::AuthRequest;
use super::error::AuthorizeError;
use super::response::{code_record, AuthResponse};
use crate::db::{self, sessions::Session, DbError};
use crate::domain::Scope;
use crate::domain::Secret;
use crate::oidc::Ctx;
use crate::oidc::{ErrorCode, OAuthError};

/// What to do with a valid request.
pub enum Next {
    /// Show the login page for this request.
    Login,
    /// Show the consent page for the signed-in user.
    Consent,
    /// Answer the client.
    Respond(AuthResponse),
    /// The user may not use this client (its allowed groups): a page says why, and
    /// offers the `access_denied` response.
    Denied(AuthResponse),
}

/// The `access_denied` answer for a user outside the client's allowed groups.
pub fn denied_response(cx: &Ctx<'_>, req: &AuthRequest) -> AuthResponse {
    let e = OAuthError::new(
        ErrorCode::AccessDenied,
        "the user is not a member of a group allowed to use this client",
    );
    AuthResponse::error_for(cx.issuer, req, &e)
}

/// Whether the user must (again) approve this client for this scope and these
/// claims: always for `prompt=consent`, otherwise when the client asks for consent
/// and no remembered consent covers both.
pub fn consent_needed(conn: &db::Tx<'_>, req: &AuthRequest, user_id: i64) -> Result<bool, DbError> {
    if req.prompt.consent {
        return Ok(true);
    }
    // Read from the database, never from a cache: a client just switched to asking
    // for consent asks at once.
    if !db::clients::consent_required(conn, &req.client_id)?.unwrap_or(true) {
        return Ok(false);
    }
    let Some(granted) = db::consents::find(conn, user_id, &req.client_id)? else {
        return Ok(true);
    };
    let requested = Scope::parse(&req.scope).unwrap_or_default();
    let scope_ok = requested.is_subset_of(&Scope::parse(&granted.scope).unwrap_or_default());
    // Claims asked for by name are part of what the user approves (Core §5.5): a
    // claim not approved before asks again, even when the scope is unchanged.
    let approved: Vec<&str> = granted.claims.split(' ').collect();
    let claims_ok = claims_beyond_scope(req).iter().all(|c| approved.contains(&c.as_str()));
    Ok(!(scope_ok && claims_ok))
}

/// The claims the request names that its scope does not cover.
pub fn claims_beyond_scope(req: &AuthRequest) -> Vec<String> {
    let scope = Scope::parse(&req.scope).unwrap_or_default();
    crate::oidc::claims::stored(req.claims.as_deref()).beyond(&scope)
}

/// OpenID Connect Core §3.1.2.1 (prompt, max_age, id_token_hint) and §3.1.2.4.
pub async fn decide(cx: &Ctx<'_>, req: &AuthRequest, session: Option<Session>) -> Result<Next, AuthorizeError> {
    let now = cx.now;
    let fresh = session.filter(|s| req.max_age.is_none_or(|max| now - s.auth_time <= max));
    let checked = match (fresh, &req.hint_sub) {
        (Some(s), Some(sub)) => {
            let (uid, sub) = (s.user_id, sub.clone());
            let same = cx
                .db
                .read(move |c| Ok(db::users::find_by_id(c, uid)?.is_some_and(|u| u.sub == sub)))
                .await?;
            same.then_some(s)
        }
        (s, _) => s,
    };
    let respond_error = |code: ErrorCode, d: &'static str| {
        Err(AuthorizeError::Respond(AuthResponse::error_for(
            cx.issuer,
            req,
            &OAuthError::new(code, d),
        )))
    };
    let session = match checked {
        Some(s) if !req.prompt.login => s,
        _ if req.prompt.none => return respond_error(ErrorCode::LoginRequired, "the user is not signed in"),
        _ => return Ok(Next::Login),
    };
    let (cid, uid) = (req.client_id.clone(), session.user_id);
    // Most clients admit everyone: the cached registration says so without a query.
    let restricted = cx
        .clients
        .get(cx.db, &req.client_id, cx.now)
        .await?
        .is_none_or(|c| !c.allowed_groups.is_empty());
    if restricted && !cx.db.read(move |c| db::clients::group_allowed(c, &cid, uid)).await? {
        let denied = denied_response(cx, req);
        return if req.prompt.none {
            Err(AuthorizeError::Respond(denied))
        } else {
            Ok(Next::Denied(denied))
        };
    }
    let r = req.clone();
    if cx.db.read(move |c| consent_needed(c, &r, uid)).await? {
        if req.prompt.none {
            return respond_error(ErrorCode::ConsentRequired, "the user has not approved this application");
        }
        return Ok(Next::Consent);
    }
    Ok(Next::Respond(issue_code(cx, req, &session).await?))
}

/// Stores a fresh code for `session` and returns the response that delivers it.
pub async fn issue_code(cx: &Ctx<'_>, req: &AuthRequest, session: &Session) -> Result<AuthResponse, AuthorizeError> {
    let code = Secret::generate();
    let record = code_record(cx, req, session, &code);
    let now = cx.now;
    cx.db.write(move |c| record.insert(c, now)).await?;
    Ok(AuthResponse::code(cx.issuer, req, &code))
}
