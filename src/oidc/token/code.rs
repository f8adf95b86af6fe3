//! Exchanging an authorization code (RFC 6749 §4.1.3): the code is spent and its
//! grant opened in one write transaction; the tokens are signed after it.

use super::{mint_issued, Issued, Outcome};
use crate::audit;
use crate::crypto::TokenHash;
use crate::db::grants::{Code, Consumed, Grant};
use crate::db::{self, clients::Client};
use crate::domain::Scope;
use crate::domain::Secret;
use crate::oidc::dpop::{self, Proof};
use crate::oidc::grant::{active_user, maps_groups, open_grant, param, refresh_ttl, required, Form, RefreshRule};
use crate::oidc::issue::TokenResponse;
use crate::oidc::{pkce, Ctx, OAuthError};

/// What the exchange knows before its transaction, moved into it.
struct Redeem {
    ip: String,
    code: TokenHash,
    redirect_uri: String,
    verifier: Option<String>,
    client_id: String,
    now: i64,
    refresh_hash: TokenHash,
    refresh_ttl: i64,
    rule: RefreshRule,
    mapped_groups: bool,
    replay: Option<Proof>,
    grant_jkt: Option<String>,
    asked_resources: Vec<String>,
}

pub(super) async fn exchange(
    cx: &Ctx<'_>,
    client: &Client,
    form: &Form,
    ip: &str,
    proof: Option<&Proof>,
) -> Result<TokenResponse, OAuthError> {
    let refresh = Secret::generate();
    let redeem = Redeem {
        ip: ip.to_string(),
        code: TokenHash::of(required(form, "code")?),
        redirect_uri: required(form, "redirect_uri")?.to_string(),
        verifier: param(form, "code_verifier").map(str::to_string),
        client_id: client.client_id.clone(),
        now: cx.now,
        refresh_hash: refresh.hash(),
        refresh_ttl: refresh_ttl(cx, client),
        rule: RefreshRule::of(client),
        mapped_groups: maps_groups(&client.claim_rules),
        replay: proof.cloned(),
        grant_jkt: dpop::grant_binding(client, proof),
        asked_resources: crate::oidc::resource::form_values(form),
    };
    match cx.db.write(move |c| redeem_in(c, redeem)).await? {
        Outcome::Refused(e) => Err(e),
        Outcome::Issued(issued) => {
            let scope = Scope::parse(&issued.grant.scope).unwrap_or_default();
            mint_issued(cx, client, proof, &issued, &scope, &refresh)
        }
    }
}

/// The exchange's transaction: the proof recorded, the code spent and checked, its
/// grant opened.
fn redeem_in(c: &db::Tx<'_>, r: Redeem) -> Result<Outcome, db::DbError> {
    let now = r.now;
    // The proof's jti first: a replayed proof must not burn the code.
    if let Some(p) = &r.replay {
        if !dpop::record(c, p)? {
            return Ok(Outcome::Refused(dpop::replayed()));
        }
    }
    let code = match db::grants::consume_code(c, &r.code, now)? {
        Consumed::Fresh(code) => code,
        Consumed::Replayed { grant_id } => {
            // RFC 6749 §4.1.2: a code used twice revokes what it issued.
            db::grants::revoke_grant(c, &grant_id, now)?;
            audit::token(
                "token.reuse_detected",
                &r.client_id,
                "authorization_code",
                &grant_id,
                &r.ip,
            )
            .write(c, now)?;
            return Ok(Outcome::Refused(OAuthError::invalid_grant("the code was already used")));
        }
        Consumed::Unknown => return Ok(Outcome::Refused(OAuthError::invalid_grant("the code is not valid"))),
    };
    let refuse = |d: &'static str| Ok(Outcome::Refused(OAuthError::invalid_grant(d)));
    if let Some(why) = code_refusal(&code, &r) {
        return refuse(why);
    }
    // RFC 8707 §2.2: the token is for resources among those authorized.
    let targets = match crate::oidc::resource::select(c, &r.asked_resources, code.resource.as_deref())? {
        Ok(t) => t,
        Err(e) => return Ok(Outcome::Refused(e)),
    };
    let Some(user) = active_user(
        c,
        code.user_id,
        &code.scope,
        code.claims_request.as_deref(),
        r.mapped_groups,
    )?
    else {
        return refuse("the user is no longer active");
    };
    let grant = grant_of(&code, user.id, &r);
    let with_refresh = open_grant(c, &grant, r.rule, &r.refresh_hash, now)?;
    audit::token("token.issued", &grant.client_id, "authorization_code", &grant.id, &r.ip)
        .target(&user.username)
        .write(c, now)?;
    Ok(Outcome::Issued(Box::new(Issued {
        grant,
        user,
        nonce: code.nonce,
        with_refresh,
        targets,
    })))
}

/// Why the spent code cannot be exchanged by this request, if it cannot.
fn code_refusal(code: &Code, r: &Redeem) -> Option<&'static str> {
    if code.expires_at <= r.now {
        return Some("the code has expired");
    }
    if code.client_id != r.client_id {
        return Some("the code was issued to another client");
    }
    if code.redirect_uri != r.redirect_uri {
        return Some("redirect_uri does not match the authorization request");
    }
    match (&code.code_challenge, &r.verifier) {
        (Some(challenge), Some(v)) if pkce::verify(v, challenge) => {}
        (Some(_), _) => return Some("code_verifier does not match the code challenge"),
        // RFC 9700 §2.1.1: a verifier without a challenge is refused.
        (None, Some(_)) => return Some("code_verifier given but no code_challenge was sent"),
        (None, None) => {}
    }
    if !dpop::fits_code(code.dpop_jkt.as_deref(), r.replay.as_ref()) {
        return Some("the code is bound to a DPoP key (dpop_jkt); send a proof of that key");
    }
    None
}

/// The grant a code opens for `user_id`.
fn grant_of(code: &Code, user_id: i64, r: &Redeem) -> Grant {
    Grant {
        id: code.grant_id.clone(),
        client_id: code.client_id.clone(),
        user_id: Some(user_id),
        scope: code.scope.clone(),
        sid: Some(code.sid.clone()),
        auth_time: Some(code.auth_time),
        nonce: code.nonce.clone(),
        expires_at: r.now + r.refresh_ttl,
        revoked_at: None,
        claims_request: code.claims_request.clone(),
        amr: Some(code.amr.clone()),
        created_at: r.now,
        resource: code.resource.clone(),
        dpop_jkt: r.grant_jkt.clone(),
    }
}
