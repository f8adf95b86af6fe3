//! Authorization responses (RFC 6749 §4.1.2 with RFC 9207's `iss`), by redirect or by
//! form post, and the codes they carry.

use super::auth_request::AuthRequest;
use crate::crypto::random::random_id;
use crate::crypto::TokenHash;
use crate::db::{self, sessions::Session};
use crate::domain::RedirectUri;
use crate::domain::Secret;
use crate::oidc::Ctx;
use crate::oidc::OAuthError;

/// What goes back to the client: parameters for its redirect URI.
#[derive(Debug, Clone)]
pub struct AuthResponse {
    pub redirect_uri: RedirectUri,
    pub params: Vec<(&'static str, String)>,
    pub form_post: bool,
}

impl AuthResponse {
    pub fn error(
        issuer: &str,
        redirect_uri: &RedirectUri,
        state: Option<&str>,
        form_post: bool,
        e: &OAuthError,
    ) -> Self {
        let mut params = vec![
            ("error", e.code.as_str().to_string()),
            ("error_description", e.description.to_string()),
        ];
        if let Some(s) = state {
            params.push(("state", s.to_string()));
        }
        params.push(("iss", issuer.to_string()));
        Self {
            redirect_uri: redirect_uri.clone(),
            params,
            form_post,
        }
    }

    /// An error for a request already validated (its redirect URI is registered).
    pub fn error_for(issuer: &str, req: &AuthRequest, e: &OAuthError) -> Self {
        Self::error(issuer, &registered(req), req.state.as_deref(), req.form_post, e)
    }

    pub fn code(issuer: &str, req: &AuthRequest, code: &Secret) -> Self {
        let mut params = vec![("code", code.expose().to_string())];
        if let Some(s) = &req.state {
            params.push(("state", s.clone()));
        }
        params.push(("iss", issuer.to_string()));
        Self {
            redirect_uri: registered(req),
            params,
            form_post: req.form_post,
        }
    }

    /// The redirect URI with the parameters in its query.
    pub fn url(&self) -> String {
        let pairs: Vec<(&str, &str)> = self.params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.redirect_uri.with_query(&pairs)
    }
}

/// The request's redirect URI was checked against the registration when it was parsed.
fn registered(req: &AuthRequest) -> RedirectUri {
    RedirectUri::parse(&req.redirect_uri).unwrap_or_else(|_| RedirectUri::unchecked(&req.redirect_uri))
}

/// The data of a code about to be stored; kept apart so the login path can store it in
/// the same transaction as the session.
pub struct CodeRecord {
    hash: TokenHash,
    grant_id: String,
    req: AuthRequest,
    user_id: i64,
    sid: String,
    auth_time: i64,
    amr: String,
    expires_at: i64,
}

impl CodeRecord {
    pub fn insert(&self, conn: &db::Tx<'_>, now: i64) -> Result<(), db::DbError> {
        db::grants::insert_code(
            conn,
            &db::grants::NewCode {
                code_hash: &self.hash,
                grant_id: &self.grant_id,
                client_id: &self.req.client_id,
                user_id: self.user_id,
                redirect_uri: &self.req.redirect_uri,
                scope: &self.req.scope,
                nonce: self.req.nonce.as_deref(),
                code_challenge: self.req.code_challenge.as_deref(),
                claims_request: self.req.claims.as_deref(),
                sid: &self.sid,
                auth_time: self.auth_time,
                amr: &self.amr,
                now,
                expires_at: self.expires_at,
                resource: (!self.req.resource.is_empty())
                    .then(|| self.req.resource.join(" "))
                    .as_deref(),
                dpop_jkt: self.req.dpop_jkt.as_deref(),
            },
        )
    }
}

pub fn code_record(cx: &Ctx<'_>, req: &AuthRequest, session: &Session, code: &Secret) -> CodeRecord {
    CodeRecord {
        hash: code.hash(),
        grant_id: random_id(),
        req: req.clone(),
        user_id: session.user_id,
        sid: session.sid.clone(),
        auth_time: session.auth_time,
        amr: session.amr.clone(),
        expires_at: cx.now + cx.settings.lifetimes.code,
    }
}
