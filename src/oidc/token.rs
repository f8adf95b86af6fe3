//! The token endpoint's grants (RFC 6749 §4.1.3 and §6): exchanging a code and
//! rotating a refresh token. Each is one write transaction; signing happens after it.

use super::dpop::{self, Proof};
use super::grant::{
    access_ttl, active_user, client_alg, maps_groups, open_grant, param, refresh_ttl, required, Form, RefreshRule,
};
use super::issue::{mint, Mint, TokenResponse};
use super::{pkce, ErrorCode, OAuthError};
use crate::audit;
use crate::crypto::{Secret, TokenHash};
use crate::db::grants::{Consumed, Grant};
use crate::db::{self, clients::Client, users::User};
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
        GrantType::AuthorizationCode => exchange_code(cx, client, form, ip, proof).await,
        GrantType::RefreshToken => refresh(cx, client, form, ip, proof).await,
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
    Issued {
        grant: Box<Grant>,
        user: Box<User>,
        nonce: Option<String>,
        with_refresh: bool,
        /// RFC 8707: the resources the access token is for.
        targets: Vec<crate::db::resources::Resource>,
    },
    Refused(OAuthError),
}

async fn exchange_code(
    cx: &Ctx<'_>,
    client: &Client,
    form: &Form,
    ip: &str,
    proof: Option<&Proof>,
) -> Result<TokenResponse, OAuthError> {
    let ip = ip.to_string();
    let code = TokenHash::of(required(form, "code")?);
    let redirect_uri = required(form, "redirect_uri")?.to_string();
    let verifier = param(form, "code_verifier").map(str::to_string);
    let client_id = client.client_id.clone();
    let now = cx.now;
    let refresh = Secret::generate();
    let (refresh_hash, refresh_ttl) = (refresh.hash(), refresh_ttl(cx, client));
    let rule = RefreshRule::of(client);
    let mapped_groups = maps_groups(&client.claim_rules);
    let replay = proof.cloned();
    let grant_jkt = dpop::grant_binding(client, proof);
    let asked_resources = super::resource::form_values(form);
    let outcome = cx
        .db
        .write(move |c| {
            // The proof's jti first: a replayed proof must not burn the code.
            if let Some(p) = &replay {
                if !dpop::record(c, p)? {
                    return Ok(Outcome::Refused(dpop::replayed()));
                }
            }
            let code = match db::grants::consume_code(c, &code, now)? {
                Consumed::Fresh(code) => code,
                Consumed::Replayed { grant_id } => {
                    // RFC 6749 §4.1.2: a code used twice revokes what it issued.
                    db::grants::revoke_grant(c, &grant_id, now)?;
                    audit::token("token.reuse_detected", &client_id, "authorization_code", &grant_id, &ip)
                        .write(c, now)?;
                    return Ok(Outcome::Refused(OAuthError::invalid_grant("the code was already used")));
                }
                Consumed::Unknown => return Ok(Outcome::Refused(OAuthError::invalid_grant("the code is not valid"))),
            };
            let refuse = |d: &'static str| Ok(Outcome::Refused(OAuthError::invalid_grant(d)));
            if code.expires_at <= now {
                return refuse("the code has expired");
            }
            if code.client_id != client_id {
                return refuse("the code was issued to another client");
            }
            if code.redirect_uri != redirect_uri {
                return refuse("redirect_uri does not match the authorization request");
            }
            match (&code.code_challenge, &verifier) {
                (Some(challenge), Some(v)) if pkce::verify(v, challenge) => {}
                (Some(_), _) => return refuse("code_verifier does not match the code challenge"),
                // RFC 9700 §2.1.1: a verifier without a challenge is refused.
                (None, Some(_)) => return refuse("code_verifier given but no code_challenge was sent"),
                (None, None) => {}
            }
            if !dpop::fits_code(code.dpop_jkt.as_deref(), replay.as_ref()) {
                return refuse("the code is bound to a DPoP key (dpop_jkt); send a proof of that key");
            }
            // RFC 8707 §2.2: the token is for resources among those authorized.
            let targets = match super::resource::select(c, &asked_resources, code.resource.as_deref())? {
                Ok(t) => t,
                Err(e) => return Ok(Outcome::Refused(e)),
            };
            let Some(user) = active_user(
                c,
                code.user_id,
                &code.scope,
                code.claims_request.as_deref(),
                mapped_groups,
            )?
            else {
                return refuse("the user is no longer active");
            };
            let grant = Grant {
                id: code.grant_id.clone(),
                client_id: code.client_id.clone(),
                user_id: Some(user.id),
                scope: code.scope.clone(),
                sid: Some(code.sid.clone()),
                auth_time: Some(code.auth_time),
                nonce: code.nonce.clone(),
                expires_at: now + refresh_ttl,
                revoked_at: None,
                claims_request: code.claims_request.clone(),
                amr: Some(code.amr.clone()),
                created_at: now,
                resource: code.resource.clone(),
                dpop_jkt: grant_jkt,
            };
            let with_refresh = open_grant(c, &grant, rule, &refresh_hash, now)?;
            audit::token("token.issued", &grant.client_id, "authorization_code", &grant.id, &ip)
                .target(&user.username)
                .write(c, now)?;
            Ok(Outcome::Issued {
                grant: Box::new(grant),
                user: Box::new(user),
                nonce: code.nonce,
                with_refresh,
                targets,
            })
        })
        .await?;
    match outcome {
        Outcome::Refused(e) => Err(e),
        Outcome::Issued {
            grant,
            user,
            nonce,
            with_refresh,
            targets,
        } => {
            let scope = super::resource::narrow(&Scope::parse(&grant.scope).unwrap_or_default(), &targets);
            mint(
                cx,
                &Mint {
                    grant: &grant,
                    user: &user,
                    scope: &scope,
                    nonce: nonce.as_deref(),
                    refresh_token: with_refresh.then_some(&refresh),
                    alg: client_alg(client),
                    access_ttl: access_ttl(cx, client),
                    rules: &client.claim_rules,
                    binding: &super::issue::Binding {
                        audience: super::resource::audience(&targets),
                        jkt: proof.map(|p| p.jkt.clone()),
                    },
                },
            )
        }
    }
}

/// What a refresh must know of its client, copied into the write transaction.
struct RefreshRules {
    client_id: String,
    /// RFC 9700 §4.14.2: a public client's replay is never taken for a retry.
    grace: bool,
    restricted: bool,
    grant_lifetime: i64,
    ttl: i64,
}

async fn refresh(
    cx: &Ctx<'_>,
    client: &Client,
    form: &Form,
    ip: &str,
    proof: Option<&Proof>,
) -> Result<TokenResponse, OAuthError> {
    let ip = ip.to_string();
    let presented = TokenHash::of(required(form, "refresh_token")?);
    let requested = match param(form, "scope") {
        Some(s) => Some(Scope::parse(s).map_err(|e| OAuthError::new(ErrorCode::InvalidScope, e.0))?),
        None => None,
    };
    let rules = RefreshRules {
        client_id: client.client_id.clone(),
        grace: !client.is_public(),
        restricted: !client.allowed_groups.is_empty(),
        grant_lifetime: client.grant_lifetime.unwrap_or(cx.settings.lifetimes.grant),
        ttl: refresh_ttl(cx, client),
    };
    let now = cx.now;
    let next = Secret::generate();
    let next_hash = next.hash();
    let mapped_groups = maps_groups(&client.claim_rules);
    let replay = proof.cloned();
    let asked_resources = super::resource::form_values(form);
    let outcome = cx
        .db
        .write(move |c| {
            let refuse = |d: &'static str| Ok((Outcome::Refused(OAuthError::invalid_grant(d)), None));
            let client_id = rules.client_id.as_str();
            if let Some(p) = &replay {
                if !dpop::record(c, p)? {
                    return Ok((Outcome::Refused(dpop::replayed()), None));
                }
            }
            db::grants::lock_family(c, &presented)?;
            // Checked before use, so another client cannot burn a token it was not issued.
            let r = match db::grants::find_refresh(c, &presented)? {
                Some(r) if r.grant.client_id == client_id => r,
                _ => return refuse("the refresh token is not valid"),
            };
            // RFC 9449 §5: a bound refresh token is used only with a proof of its key,
            // refused before anything about it changes.
            let bound = r.grant.dpop_jkt.is_some();
            if bound && replay.as_ref().map(|p| &p.jkt) != r.grant.dpop_jkt.as_ref() {
                return refuse("the refresh token is bound to a DPoP key; send a proof of that key");
            }
            // RFC 8707 §2.2, checked before the token is used so a refusal keeps it.
            let targets = match super::resource::select(c, &asked_resources, r.grant.resource.as_deref())? {
                Ok(t) => t,
                Err(e) => return Ok((Outcome::Refused(e), None)),
            };
            match r.used_at {
                // RFC 9700 §4.14.2: sender-constrained, so not rotated and never used up.
                None if bound => {}
                None => {
                    if !db::grants::use_refresh(c, &presented, now)?.won() {
                        return refuse("the refresh token is not valid");
                    }
                }
                // A confidential client that lost the response to its refresh may retry
                // briefly. The successors minted before die first, so only the newest
                // branch of the family lives.
                Some(used) if rules.grace && now - used <= REFRESH_RETRY_GRACE && r.grant.revoked_at.is_none() => {
                    db::grants::retire_live_refresh(c, &r.grant.id)?;
                }
                Some(_) => {
                    // RFC 9700 §4.14.2: reuse of a rotated token revokes the family.
                    db::grants::revoke_grant(c, &r.grant.id, now)?;
                    audit::token("token.reuse_detected", client_id, "refresh_token", &r.grant.id, &ip).write(c, now)?;
                    return refuse("the refresh token was already used");
                }
            }
            if r.expires_at <= now || r.grant.revoked_at.is_some() {
                return refuse("the refresh token has expired or was revoked");
            }
            let granted = Scope::parse(&r.scope).unwrap_or_default();
            // However often it is refreshed, a grant ends this long after its sign-in.
            let ends = r.grant.created_at.saturating_add(rules.grant_lifetime);
            if now >= ends {
                db::grants::revoke_grant(c, &r.grant.id, now)?;
                return refuse("the sign-in behind this refresh token is too old; sign in again");
            }
            // Without offline_access a grant lives only as long as its session (Core
            // §11): once the person signed out, or the session expired, it ends.
            let session_bound = !granted.contains("offline_access");
            if let Some(sid) = r.grant.sid.as_deref().filter(|_| session_bound) {
                if !db::sessions::sid_active(c, sid, now)? {
                    db::grants::revoke_grant(c, &r.grant.id, now)?;
                    return refuse("the session this refresh token belongs to has ended");
                }
            }
            let scope = match requested {
                Some(s) if !s.is_subset_of(&granted) => {
                    return Ok((
                        Outcome::Refused(OAuthError::new(
                            ErrorCode::InvalidScope,
                            "the requested scope exceeds the original grant",
                        )),
                        None,
                    ))
                }
                Some(s) => s,
                None => granted.clone(),
            };
            let user_id = r.grant.user_id.unwrap_or_default();
            let Some(user) = active_user(c, user_id, &r.scope, r.grant.claims_request.as_deref(), mapped_groups)?
            else {
                return refuse("the user is no longer active");
            };
            if rules.restricted && !db::clients::group_allowed(c, client_id, user_id)? {
                db::grants::revoke_grant(c, &r.grant.id, now)?;
                return refuse("the user is no longer in a group allowed to use this client");
            }
            // The new token keeps the grant's scope; only this response is narrowed.
            let expires = (now + rules.ttl).min(ends);
            if !bound {
                db::grants::insert_refresh(c, &next_hash, &r.grant.id, &r.scope, now, expires)?;
            }
            audit::token("token.issued", client_id, "refresh_token", &r.grant.id, &ip)
                .target(&user.username)
                .write(c, now)?;
            Ok((
                Outcome::Issued {
                    grant: Box::new(r.grant),
                    user: Box::new(user),
                    nonce: None,
                    // RFC 6749 §6: the client keeps its (bound) refresh token.
                    with_refresh: !bound,
                    targets,
                },
                Some(scope),
            ))
        })
        .await?;
    match outcome {
        (Outcome::Refused(e), _) => Err(e),
        (
            Outcome::Issued {
                grant,
                user,
                with_refresh,
                targets,
                ..
            },
            scope,
        ) => {
            let scope = super::resource::narrow(&scope.unwrap_or_default(), &targets);
            mint(
                cx,
                &Mint {
                    grant: &grant,
                    user: &user,
                    scope: &scope,
                    nonce: None,
                    refresh_token: with_refresh.then_some(&next),
                    alg: client_alg(client),
                    access_ttl: access_ttl(cx, client),
                    rules: &client.claim_rules,
                    binding: &super::issue::Binding {
                        audience: super::resource::audience(&targets),
                        jkt: proof.map(|p| p.jkt.clone()),
                    },
                },
            )
        }
    }
}
