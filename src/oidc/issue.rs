//! Minting tokens: the RFC 9068 access token, the ID token (OpenID Connect Core §2) and
//! the token response (RFC 6749 §5.1).

use serde::Serialize;
use serde_json::{Map, Value};

use super::claims::{release, ClaimsRequest};
use super::OAuthError;
use crate::crypto::jwt;
use crate::crypto::keys::Alg;
use crate::crypto::random::random_id;
use crate::db::claim_rules::ClaimRule;
use crate::db::{grants::Grant, users::User};
use crate::domain::Scope;
use crate::domain::Secret;
use crate::oidc::Ctx;

#[derive(Debug, Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    /// RFC 6749 §5.1: OPTIONAL; left out when no scope was granted rather than empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
}

/// What the new tokens are for.
pub struct Mint<'a> {
    pub grant: &'a Grant,
    pub user: &'a User,
    pub scope: &'a Scope,
    /// Only the first ID token of a grant echoes the nonce (Core §12.2).
    pub nonce: Option<&'a str>,
    pub refresh_token: Option<&'a Secret>,
    /// The client's signing algorithm, for both tokens.
    pub alg: Alg,
    /// Seconds the access token lives (the client's own, or the server's).
    pub access_ttl: i64,
    /// The client's claim mapping.
    pub rules: &'a [ClaimRule],
    /// Who the access token is for and whose key it is bound to.
    pub binding: &'a Binding,
}

/// What restricts an access token beyond its client: the resources it is for (RFC 8707
/// §2.2, its `aud`), and the DPoP key it is bound to (RFC 9449 §6, `cnf.jkt`).
#[derive(Debug, Clone, Default)]
pub struct Binding {
    /// Resource URIs; empty: the token's audience is the client, as without RFC 8707.
    pub audience: Vec<String>,
    /// The JWK SHA-256 thumbprint (RFC 7638) of the proof's key.
    pub jkt: Option<String>,
}

impl Binding {
    /// `token_type` of the response (RFC 9449 §5: `DPoP` for a bound token).
    pub fn token_type(&self) -> &'static str {
        if self.jkt.is_some() {
            "DPoP"
        } else {
            "Bearer"
        }
    }

    /// Sets `aud` and `cnf` of an access token's claims.
    fn apply(&self, at: &mut Map<String, Value>) {
        match self.audience.as_slice() {
            [] => {}
            [one] => {
                at.insert("aud".into(), Value::from(one.clone()));
            }
            many => {
                at.insert("aud".into(), Value::from(many.to_vec()));
            }
        }
        if let Some(jkt) = &self.jkt {
            at.insert("cnf".into(), serde_json::json!({ "jkt": jkt }));
        }
    }
}

/// What the protocol claims of a user's tokens are made of, so that the admin
/// preview shows the same ones `mint` signs.
pub struct Protocol<'a> {
    pub client_id: &'a str,
    pub sub: &'a str,
    pub scope: &'a Scope,
    pub auth_time: Option<i64>,
    pub access_ttl: i64,
}

/// The RFC 9068 §2.2 claims of a user's access token, without `jti` and `gid`, which
/// exist only once a token is issued.
pub fn access_protocol(cx: &Ctx<'_>, p: &Protocol<'_>) -> Map<String, Value> {
    let now = cx.now;
    let mut at = Map::new();
    at.insert("iss".into(), Value::from(cx.issuer));
    at.insert("sub".into(), Value::from(p.sub));
    at.insert("aud".into(), Value::from(p.client_id));
    at.insert("exp".into(), Value::from(now + p.access_ttl));
    at.insert("iat".into(), Value::from(now));
    at.insert("client_id".into(), Value::from(p.client_id));
    scope_claim(&mut at, p.scope);
    if let Some(t) = p.auth_time {
        at.insert("auth_time".into(), Value::from(t));
    }
    at
}

/// The ID token's protocol claims (Core §2) that do not depend on the sign-in itself
/// (`amr`, `acr`, `nonce`, `sid`, `at_hash` are added by `mint`).
pub fn id_protocol(cx: &Ctx<'_>, p: &Protocol<'_>) -> Map<String, Value> {
    let now = cx.now;
    let mut id = Map::new();
    id.insert("iss".into(), Value::from(cx.issuer));
    id.insert("aud".into(), Value::from(p.client_id));
    id.insert("azp".into(), Value::from(p.client_id));
    id.insert("exp".into(), Value::from(now + cx.settings.lifetimes.id_token));
    id.insert("iat".into(), Value::from(now));
    if let Some(t) = p.auth_time {
        id.insert("auth_time".into(), Value::from(t));
    }
    id
}

/// RFC 9068 §2.2.3: `scope` when scopes were granted; no empty string otherwise.
fn scope_claim(at: &mut Map<String, Value>, scope: &Scope) {
    let text = scope.to_string();
    if !text.is_empty() {
        at.insert("scope".into(), Value::from(text));
    }
}

/// Claims of `extra` added to `base` where `base` has none of that name: the
/// protocol's claims always win.
fn add_missing(base: &mut Map<String, Value>, extra: Map<String, Value>) {
    for (k, v) in extra {
        base.entry(k).or_insert(v);
    }
}

/// RFC 6749 §4.4.3: only an access token, with the client as its subject.
pub fn mint_for_client(
    cx: &Ctx<'_>,
    grant: &Grant,
    scope: &Scope,
    alg: Alg,
    ttl: i64,
    binding: &Binding,
) -> Result<TokenResponse, OAuthError> {
    let keys = cx.keys.current();
    let now = cx.now;
    let mut at = Map::new();
    at.insert("iss".into(), Value::from(cx.issuer));
    at.insert("sub".into(), Value::from(grant.client_id.clone()));
    at.insert("aud".into(), Value::from(grant.client_id.clone()));
    at.insert("exp".into(), Value::from(now + ttl));
    at.insert("iat".into(), Value::from(now));
    at.insert("jti".into(), Value::from(random_id()));
    at.insert("client_id".into(), Value::from(grant.client_id.clone()));
    scope_claim(&mut at, scope);
    at.insert("gid".into(), Value::from(grant.id.clone()));
    binding.apply(&mut at);
    Ok(TokenResponse {
        access_token: jwt::sign(&keys, cx.settings.access_token_alg.unwrap_or(alg), "at+jwt", at, now)?,
        token_type: binding.token_type(),
        expires_in: ttl,
        scope: scope.to_string(),
        id_token: None,
        refresh_token: None,
    })
}

/// The claims individually requested for the grant's tokens.
pub fn requested(grant: &Grant) -> ClaimsRequest {
    super::claims::stored(grant.claims_request.as_deref())
}

/// The authentication context classes Tessera asserts (advertised in discovery).
pub const ACR_PASSWORD: &str = "urn:tessera:acr:pwd";
pub const ACR_MFA: &str = "urn:tessera:acr:mfa";

pub fn acr_for(amr: &str) -> &'static str {
    if amr.split(' ').any(|m| m == "mfa") {
        ACR_MFA
    } else {
        ACR_PASSWORD
    }
}

pub fn mint(cx: &Ctx<'_>, m: &Mint<'_>) -> Result<TokenResponse, OAuthError> {
    let keys = cx.keys.current();
    let now = cx.now;
    let client_id = &m.grant.client_id;
    let protocol = Protocol {
        client_id,
        sub: &m.user.sub,
        scope: m.scope,
        auth_time: m.grant.auth_time,
        access_ttl: m.access_ttl,
    };
    let released = release(m.user, m.rules, m.scope, &requested(m.grant));

    let mut at = access_protocol(cx, &protocol);
    at.insert("jti".into(), Value::from(random_id()));
    // The grant the token belongs to, so revoking the family revokes this token too.
    at.insert("gid".into(), Value::from(m.grant.id.clone()));
    // RFC 9068 §2.2: an access token may carry further claims; only mapped ones do.
    add_missing(&mut at, released.access_token.claims);
    m.binding.apply(&mut at);
    // `--access-token-alg`, else as the ID token (RFC 9068 §2.1: any asymmetric alg).
    let at_alg = cx.settings.access_token_alg.unwrap_or(m.alg);
    let access_token = jwt::sign(&keys, at_alg, "at+jwt", at, now)?;

    let id_token = if m.scope.contains("openid") {
        let mut id = released.id_token.claims;
        for (k, v) in id_protocol(cx, &protocol) {
            id.insert(k, v);
        }
        if let Some(amr) = &m.grant.amr {
            // RFC 8176 method names; `acr` names the class they add up to.
            id.insert("amr".into(), amr.split(' ').collect::<Vec<_>>().into());
            id.insert("acr".into(), Value::from(acr_for(amr)));
        }
        if let Some(n) = m.nonce {
            id.insert("nonce".into(), Value::from(n));
        }
        if let Some(sid) = &m.grant.sid {
            id.insert("sid".into(), Value::from(sid.clone()));
        }
        id.insert("at_hash".into(), Value::from(jwt::half_hash(m.alg, &access_token)));
        Some(jwt::sign(&keys, m.alg, "JWT", id, now)?)
    } else {
        None
    };
    Ok(TokenResponse {
        access_token,
        token_type: m.binding.token_type(),
        expires_in: m.access_ttl,
        scope: m.scope.to_string(),
        id_token,
        refresh_token: m.refresh_token.map(|s| s.expose().to_string()),
    })
}
