//! What the code, refresh and device grants share: the token request's form, the
//! user a grant is for, opening a grant with its first refresh token, and the
//! client's algorithm and lifetimes.

use std::collections::HashMap;

use super::OAuthError;
use crate::crypto::keys::Alg;
use crate::crypto::TokenHash;
use crate::db::{self, claim_rules::ClaimRule, clients::Client, grants::Grant, users::User};
use crate::domain::Scope;
use crate::oidc::Ctx;

/// A form whose parameters were each given at most once.
pub type Form = HashMap<String, String>;

/// Whether one of a client's claim mapping rules is built from the user's groups.
pub fn maps_groups(rules: &[ClaimRule]) -> bool {
    rules.iter().any(|r| r.source == "groups" || r.source == "group_values")
}

/// Group membership is read only when a token will carry it: through the scope, the
/// `claims` request, or the client's claim mapping (`maps_groups`).
fn wants_groups(scope: &str, claims_request: Option<&str>, mapped: bool) -> bool {
    mapped || scope.split(' ').any(|s| s == "groups") || claims_request.is_some_and(|c| c.contains("\"groups\""))
}

/// The user a grant is for, if still enabled, with what its tokens will carry.
pub fn active_user(
    c: &db::Tx<'_>,
    user_id: i64,
    scope: &str,
    claims_request: Option<&str>,
    mapped_groups: bool,
) -> Result<Option<User>, db::DbError> {
    let Some(mut user) = db::users::find_by_id(c, user_id)?.filter(|u| !u.disabled) else {
        return Ok(None);
    };
    if wants_groups(scope, claims_request, mapped_groups) {
        db::users::load_groups(c, &mut user)?;
    }
    Ok(Some(user))
}

/// Whether a new grant gets a refresh token (OpenID Connect Core §11): only with the
/// refresh_token grant registered, and then always or for offline_access alone.
#[derive(Clone, Copy)]
pub struct RefreshRule {
    allowed: bool,
    always: bool,
}

impl RefreshRule {
    pub fn of(client: &Client) -> Self {
        Self {
            allowed: client.allows_grant("refresh_token"),
            always: client.refresh == db::clients::RefreshPolicy::Always,
        }
    }
}

/// Stores a new grant and, when the rule gives one, its first refresh token
/// (valid until the grant expires); returns whether a refresh token was stored.
pub fn open_grant(
    c: &db::Tx<'_>,
    grant: &Grant,
    rule: RefreshRule,
    refresh: &TokenHash,
    now: i64,
) -> Result<bool, db::DbError> {
    db::grants::insert_grant(c, grant, now)?;
    let offline = Scope::parse(&grant.scope).is_ok_and(|s| s.contains("offline_access"));
    let with_refresh = rule.allowed && (rule.always || offline);
    if with_refresh {
        db::grants::insert_refresh(c, refresh, &grant.id, &grant.scope, now, grant.expires_at)?;
    }
    Ok(with_refresh)
}

pub fn client_alg(client: &Client) -> Alg {
    Alg::parse(&client.id_token_alg).unwrap_or(Alg::Rs256)
}

pub fn param<'a>(form: &'a Form, name: &str) -> Option<&'a str> {
    form.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

pub fn required<'a>(form: &'a Form, name: &'static str) -> Result<&'a str, OAuthError> {
    param(form, name).ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
}

pub const DEVICE_CODE: &str = crate::domain::GrantType::DeviceCode.as_str();

/// The client's own access-token lifetime, or the server's.
pub fn access_ttl(cx: &Ctx<'_>, client: &Client) -> i64 {
    client.access_token_ttl.unwrap_or(cx.settings.lifetimes.access_token)
}

/// The client's own refresh-token lifetime, or the server's.
pub fn refresh_ttl(cx: &Ctx<'_>, client: &Client) -> i64 {
    client.refresh_token_ttl.unwrap_or(cx.settings.lifetimes.refresh_token)
}
