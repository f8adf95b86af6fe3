//! The token endpoint's grants (RFC 6749 §4.1.3, §4.4 and §6): exchanging a code
//! (`code.rs`), rotating a refresh token (`refresh.rs`) and a client's own token. Each
//! is one write transaction; signing happens after it.

mod code;
mod refresh;

use super::dpop::{self, Proof};
use super::grant::{access_ttl, client_alg, param, required, Form};
use super::issue::{mint, Mint, TokenResponse};
use super::{ErrorCode, OAuthError};
use crate::audit;
use crate::db::grants::Grant;
use crate::db::{self, clients::Client, users::User};
use crate::domain::Secret;
use crate::domain::{GrantType, Scope};
use crate::oidc::Ctx;

/// Seconds after a refresh token's use during which a confidential client presenting
/// it again is taken as retrying (a lost response) and answered with a new successor,
/// the earlier successors revoked, instead of revoking the family.
pub const REFRESH_RETRY_GRACE: i64 = 10;

/// Answers a token request; `ip` is the client's address, for the audit log; `dpop`
/// the request's one `DPoP` header (RFC 9449 §4.1).
pub async fn grant(
    cx: &Ctx<'_>,
    client: &Client,
    form: &Form,
    ip: &str,
    dpop: Option<&str>,
) -> Result<TokenResponse, OAuthError> {
    let grant_type = GrantType::parse(required(form, "grant_type")?)
        .map_err(|e| OAuthError::new(ErrorCode::UnsupportedGrantType, e.0))?;
    if !client.allows_grant(grant_type.as_str()) {
        return Err(OAuthError::new(
            ErrorCode::UnauthorizedClient,
            "the client is not registered for this grant type",
        ));
    }
    // RFC 9449 §5: the proof is checked before any grant, so a bad one changes nothing.
    let proof = super::dpop::at_token(cx, client, dpop)?;
    let proof = proof.as_ref();
    match grant_type {
        GrantType::AuthorizationCode => code::exchange(cx, client, form, ip, proof).await,
        GrantType::RefreshToken => refresh::refresh(cx, client, form, ip, proof).await,
        GrantType::ClientCredentials => client_credentials(cx, client, form, ip, proof).await,
        GrantType::DeviceCode => super::device::poll(cx, client, form, ip, proof).await,
        GrantType::Password => super::password_grant::exchange(cx, client, form, ip, proof).await,
    }
}

/// The scope of the admin API (docs/ADMIN_API.md): only clients registered as admin
/// clients obtain it, and only with their own credentials.
pub const ADMIN_SCOPE: &str = "tessera:admin";

/// RFC 6749 §4.4: a token for the client itself: no user, no refresh token, no ID
/// token, and only scopes registered for the client (`client_scope`).
async fn client_credentials(
    cx: &Ctx<'_>,
    client: &Client,
    form: &Form,
    ip: &str,
    proof: Option<&Proof>,
) -> Result<TokenResponse, OAuthError> {
    let ip = ip.to_string();
    if client.is_public() {
        return Err(OAuthError::new(
            ErrorCode::UnauthorizedClient,
            "public clients cannot use client_credentials",
        ));
    }
    let scope = client_scope(client, param(form, "scope"))?;
    // RFC 8707 §2.2: with no authorization before it, any registered resource.
    let targets = super::resource::registered_now(cx, super::resource::form_values(form)).await?;
    let scope = super::resource::narrow(&scope, &targets);
    let now = cx.now;
    let grant = Grant {
        id: crate::crypto::random::random_id(),
        client_id: client.client_id.clone(),
        user_id: None,
        scope: scope.to_string(),
        sid: None,
        auth_time: None,
        nonce: None,
        expires_at: now + access_ttl(cx, client),
        revoked_at: None,
        claims_request: None,
        amr: None,
        created_at: now,
        resource: (!targets.is_empty()).then(|| super::resource::audience(&targets).join(" ")),
        dpop_jkt: None,
    };
    let stored = grant.clone();
    let replay = proof.cloned();
    let fresh = cx
        .db
        .write(move |c| {
            if let Some(p) = &replay {
                if !dpop::record(c, p)? {
                    return Ok(false);
                }
            }
            db::grants::insert_grant(c, &stored, now)?;
            audit::token("token.issued", &stored.client_id, "client_credentials", &stored.id, &ip).write(c, now)?;
            Ok(true)
        })
        .await?;
    if !fresh {
        return Err(dpop::replayed());
    }
    super::issue::mint_for_client(
        cx,
        &grant,
        &scope,
        client_alg(client),
        access_ttl(cx, client),
        &super::issue::Binding {
            audience: super::resource::audience(&targets),
            jkt: proof.map(|p| p.jkt.clone()),
        },
    )
}

/// RFC 6749 §3.3 for a client acting for itself: each scope asked for must be one the
/// client is registered for (`--scope`), or the admin scope for an admin client;
/// anything else is `invalid_scope`. Asking for none gives the registered ones.
/// OpenID Connect scopes mean nothing without a user and are dropped.
fn client_scope(client: &Client, asked: Option<&str>) -> Result<Scope, OAuthError> {
    let Some(asked) = asked else {
        return Scope::parse(&client.client_scopes.join(" "))
            .map_err(|e| OAuthError::new(ErrorCode::InvalidScope, e.0));
    };
    let requested = Scope::parse(asked).map_err(|e| OAuthError::new(ErrorCode::InvalidScope, e.0))?;
    let scope = requested.filter(|s| !super::claims::SUPPORTED_SCOPES.contains(&s));
    if scope.contains(ADMIN_SCOPE) && !client.admin {
        return Err(OAuthError::new(
            ErrorCode::InvalidScope,
            "tessera:admin is only granted to admin clients",
        ));
    }
    if let Some(s) = scope
        .iter()
        .find(|s| *s != ADMIN_SCOPE && !client.client_scopes.iter().any(|c| c == s))
    {
        return Err(OAuthError::new(
            ErrorCode::InvalidScope,
            format!("the client is not registered for the scope `{s}`"),
        ));
    }
    Ok(scope)
}

/// What the write transaction decided; failures that must still commit (a replay
/// revokes tokens, a wrong verifier burns the code) are values, not errors, so that
/// their savepoint is kept.
enum Outcome {
    Issued(Box<Issued>),
    Refused(OAuthError),
}

/// A grant the transaction opened or refreshed, and what its tokens carry.
struct Issued {
    grant: Grant,
    user: User,
    nonce: Option<String>,
    /// Whether the response carries the new refresh token.
    with_refresh: bool,
    /// RFC 8707: the resources the access token is for.
    targets: Vec<crate::db::resources::Resource>,
}

/// Signs the tokens of an issued grant for `client`, the scope narrowed to the
/// resources they are for; `refresh` is the new refresh token, sent when the
/// transaction stored it.
fn mint_issued(
    cx: &Ctx<'_>,
    client: &Client,
    proof: Option<&Proof>,
    issued: &Issued,
    scope: &Scope,
    refresh: &Secret,
) -> Result<TokenResponse, OAuthError> {
    let scope = super::resource::narrow(scope, &issued.targets);
    mint(
        cx,
        &Mint {
            grant: &issued.grant,
            user: &issued.user,
            scope: &scope,
            nonce: issued.nonce.as_deref(),
            refresh_token: issued.with_refresh.then_some(refresh),
            alg: client_alg(client),
            access_ttl: access_ttl(cx, client),
            rules: &client.claim_rules,
            binding: &super::issue::Binding {
                audience: super::resource::audience(&issued.targets),
                jkt: proof.map(|p| p.jkt.clone()),
            },
        },
    )
}
