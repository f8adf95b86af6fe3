//! Dynamic client registration (RFC 7591) and its management protocol (RFC 7592).
//!
//! A registration is validated by the same rules as every other way of adding a
//! client (`client_spec::build`), then made a third-party client: consent
//! required, refresh tokens only with `offline_access`, never admin, no client
//! credentials scopes. Who may register is the server's choice (RFC 7591 §3):
//! with an initial access token, or, when registration is open, public clients whose
//! redirect URIs stay on the user's machine (RFC 8252 §7.1 and §7.3).

mod metadata;
mod uris;

use serde_json::{json, Map, Value};
use subtle::ConstantTimeEq;

use super::client_spec::auth_family;
use super::{Ctx, ErrorCode, OAuthError};
use crate::audit::Event;
use crate::config::Registration;
use crate::crypto::{random::random_id, TokenHash};
use crate::db::{self, clients::Client};
use crate::domain::Secret;
use metadata::metadata_error;
pub use metadata::{client_of, parse, stays_on_device, Metadata};
pub use uris::{check_document_post_logout, check_logout_uris};

fn invalid_token(d: &'static str) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidToken, d)
}

/// The key in `registration_metadata` that marks a client registered without a
/// token: its updates keep the open-registration limits.
const OPEN_MARK: &str = "registered_openly";

/// Whether a client may be registered without an initial access token.
fn open_allowed(client: &Client) -> bool {
    client.is_public() && !client.redirect_uris.is_empty() && client.redirect_uris.iter().all(|u| stays_on_device(u))
}

const OPEN_REFUSED: &str = "without an initial access token, only public clients (token_endpoint_auth_method \
     `none`) whose redirect URIs are all loopback (http://127.0.0.1:PORT/…, http://[::1]:PORT/…, \
     http://localhost:PORT/…) or a private-use scheme (com.example.app:/callback) may register";

/// A `jwks_uri` must give a JWK Set now, fetched with the outbound limits.
async fn check_jwks_uri(cx: &Ctx<'_>, client: &Client) -> Result<(), OAuthError> {
    if let Some(uri) = &client.jwks_uri {
        super::client_keys::fetch_set(cx.clients.fetcher(), uri)
            .await
            .map_err(|why| metadata_error(format!("jwks_uri: {why}")))?;
    }
    Ok(())
}

/// A client_secret_jwt key is kept sealed with the master key, as the admin path does.
fn seal(cx: &Ctx<'_>, client: &mut Client) -> Result<(), OAuthError> {
    if let Some(s) = client.secret_for_hmac.take() {
        let sealed = crate::crypto::sealed::seal_text(cx.settings.master_key.as_ref(), &s).map_err(|e| {
            tracing::error!(error = %e, "cannot seal a client secret");
            OAuthError::server_error()
        })?;
        client.secret_for_hmac = Some(sealed);
    }
    Ok(())
}

/// RFC 7591 §3: registers a client. `bearer` is the initial access token, if sent;
/// `ip` is for the audit entry. The answer is the client information response
/// (§3.2.1), with the client secret and registration access token shown this once.
pub async fn register(cx: &Ctx<'_>, bearer: Option<&str>, body: &[u8], ip: &str) -> Result<Value, OAuthError> {
    let token = bearer.map(TokenHash::of);
    match (&token, cx.settings.protocol.registration) {
        (_, Registration::Off) => {
            return Err(OAuthError::new(ErrorCode::AccessDenied, "registration is off"));
        }
        (None, Registration::Token) => {
            return Err(invalid_token(
                "registration needs an initial access token (Authorization: Bearer …); \
                 an administrator makes one with `tessera client registration-token`",
            ))
        }
        (Some(hash), _) => {
            let (hash, now) = (*hash, cx.now);
            if !cx
                .db
                .read(move |c| db::registration::token_usable(c, &hash, now))
                .await?
            {
                return Err(invalid_token("the initial access token is unknown, expired or used up"));
            }
        }
        (None, Registration::Open) => {}
    }
    let m = parse(body)?;
    if m.software_statement.is_some() {
        return Err(OAuthError::new(
            ErrorCode::UnapprovedSoftwareStatement,
            "this server does not accept software statements; register without one",
        ));
    }
    let client_id = random_id();
    let (mut client, secret) = client_of(&m, &client_id, cx.now)?;
    let open = token.is_none();
    if open && !open_allowed(&client) {
        return Err(invalid_token(OPEN_REFUSED));
    }
    if open {
        uris::check_open_post_logout(&client)?;
    }
    check_jwks_uri(cx, &client).await?;
    check_logout_uris(cx.clients.fetcher(), &client).await?;
    seal(cx, &mut client)?;
    let access = Secret::generate();
    client.origin = db::clients::ORIGIN_REGISTRATION.into();
    client.registration_token_hash = Some(access.hash());
    mark_open(&mut client, open);
    let (stored, now, ip) = (client.clone(), cx.now, ip.to_string());
    cx.db
        .write(move |c| {
            if let Some(hash) = token {
                if !db::registration::use_token(c, &hash, now)?.won() {
                    return Ok(Err(invalid_token(
                        "the initial access token is unknown, expired or used up",
                    )));
                }
            }
            db::clients::insert(c, &stored)?;
            Event::new("client.registered")
                .actor("registration")
                .ip(Some(ip))
                .target(format!("client:{}", stored.client_id))
                .detail(json!({
                    "client_name": stored.name,
                    "token_endpoint_auth_method": stored.auth_method,
                    "redirect_uris": stored.redirect_uris,
                    "initial_access_token": !open,
                }))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await??;
    Ok(information(cx, &client, secret.as_ref(), access.expose()))
}

fn mark_open(client: &mut Client, open: bool) {
    if !open {
        return;
    }
    let mut meta: Map<String, Value> = client
        .registration_metadata
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default();
    meta.insert(OPEN_MARK.into(), true.into());
    client.registration_metadata = Some(Value::Object(meta).to_string());
}

fn display_of(client: &Client) -> Map<String, Value> {
    client
        .registration_metadata
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

/// The client information response (RFC 7591 §3.2.1, RFC 7592 §3).
fn information(cx: &Ctx<'_>, c: &Client, secret: Option<&Secret>, access_token: &str) -> Value {
    let response_types: Vec<&str> = if c.allows_grant("authorization_code") {
        vec!["code"]
    } else {
        Vec::new()
    };
    let mut out = json!({
        "client_id": c.client_id,
        "client_id_issued_at": c.created_at,
        "registration_access_token": access_token,
        "registration_client_uri": cx.url(&format!("/register/{}", c.client_id)),
        "client_name": c.name,
        "redirect_uris": c.redirect_uris,
        "token_endpoint_auth_method": c.auth_method,
        "grant_types": c.grant_types,
        "response_types": response_types,
        "id_token_signed_response_alg": c.id_token_alg,
        "post_logout_redirect_uris": c.post_logout_redirect_uris,
        "require_pushed_authorization_requests": c.require_par,
        "require_signed_request_object": c.require_signed_request_object,
        "dpop_bound_access_tokens": c.dpop_bound,
    });
    let obj = match out.as_object_mut() {
        Some(o) => o,
        None => return out,
    };
    if !c.is_public() && c.auth_method != "private_key_jwt" {
        // RFC 7591 §3.2.1: 0, the secret does not expire.
        obj.insert("client_secret_expires_at".into(), 0.into());
    }
    if let Some(s) = secret {
        obj.insert("client_secret".into(), s.expose().into());
    }
    let optional = [
        ("jwks_uri", c.jwks_uri.clone()),
        ("backchannel_logout_uri", c.backchannel_logout_uri.clone()),
        ("frontchannel_logout_uri", c.frontchannel_logout_uri.clone()),
        ("initiate_login_uri", c.initiate_login_uri.clone()),
    ];
    for (k, v) in optional {
        if let Some(v) = v {
            obj.insert(k.into(), v.into());
        }
    }
    if let Some(j) = c.jwks.as_deref().and_then(|j| serde_json::from_str::<Value>(j).ok()) {
        obj.insert("jwks".into(), j);
    }
    if c.backchannel_logout_uri.is_some() {
        obj.insert(
            "backchannel_logout_session_required".into(),
            c.backchannel_logout_session_required.into(),
        );
    }
    if c.frontchannel_logout_uri.is_some() {
        obj.insert(
            "frontchannel_logout_session_required".into(),
            c.frontchannel_logout_session_required.into(),
        );
    }
    for (k, v) in display_of(c) {
        if k != OPEN_MARK {
            obj.insert(k, v);
        }
    }
    out
}

/// RFC 7592 §2: the registered client the registration access token belongs to. A
/// wrong token, an unknown id and a client not registered here all get the same
/// answer, so the endpoint does not reveal which ids exist.
async fn authorized(cx: &Ctx<'_>, client_id: &str, bearer: Option<&str>) -> Result<Client, OAuthError> {
    let refused = || invalid_token("the registration access token is not valid for this client");
    let Some(given) = bearer.map(TokenHash::of) else {
        return Err(refused());
    };
    let id = client_id.to_string();
    let found = cx.db.read(move |c| db::clients::find(c, &id)).await?;
    let stored = found
        .as_ref()
        .filter(|c| c.origin == db::clients::ORIGIN_REGISTRATION)
        .and_then(|c| c.registration_token_hash);
    // Compared as digests in constant time; an absent one against a dummy.
    let expected = stored.unwrap_or(TokenHash([0; 32]));
    let same = bool::from(given.as_bytes().ct_eq(expected.as_bytes()));
    match found {
        Some(c) if same && stored.is_some() => Ok(c),
        _ => Err(refused()),
    }
}

/// RFC 7592 §2.1: reads the client's current registration. The secret is stored only
/// as a digest, so it is not repeated; the registration access token is the one sent.
pub async fn read(cx: &Ctx<'_>, client_id: &str, bearer: Option<&str>) -> Result<Value, OAuthError> {
    let client = authorized(cx, client_id, bearer).await?;
    Ok(information(cx, &client, None, bearer.unwrap_or_default()))
}

/// RFC 7592 §2.2: replaces the client's metadata with what is sent. The client_id
/// must be the client's, a client_secret sent must be its secret; the secret stays,
/// and the registration access token is rotated (the new one is in the answer).
pub async fn update(
    cx: &Ctx<'_>,
    client_id: &str,
    bearer: Option<&str>,
    body: &[u8],
    ip: &str,
) -> Result<Value, OAuthError> {
    let existing = authorized(cx, client_id, bearer).await?;
    let m = parse(body)?;
    if m.client_id.as_deref() != Some(client_id) {
        return Err(metadata_error(
            "client_id: must be sent, and be this client's (RFC 7592 §2.2)",
        ));
    }
    if m.software_statement.is_some() {
        return Err(OAuthError::new(
            ErrorCode::UnapprovedSoftwareStatement,
            "this server does not accept software statements; update without one",
        ));
    }
    if let Some(sent) = &m.client_secret {
        let matches = existing
            .secret_hash
            .is_some_and(|h| bool::from(TokenHash::of(sent).as_bytes().ct_eq(h.as_bytes())));
        if !matches {
            return Err(metadata_error("client_secret: not this client's secret"));
        }
    }
    let (mut client, _) = client_of(&m, client_id, existing.created_at)?;
    if auth_family(&client.auth_method) != auth_family(&existing.auth_method) {
        return Err(metadata_error(format!(
            "token_endpoint_auth_method: cannot change from {} to {}; register a new client",
            existing.auth_method, client.auth_method
        )));
    }
    let open = display_of(&existing).get(OPEN_MARK) == Some(&Value::Bool(true));
    if open && !open_allowed(&client) {
        return Err(invalid_token(OPEN_REFUSED));
    }
    if open {
        uris::check_open_post_logout(&client)?;
    }
    check_jwks_uri(cx, &client).await?;
    check_logout_uris(cx.clients.fetcher(), &client).await?;
    client.secret_hash = existing.secret_hash;
    client.secret_for_hmac = existing.secret_for_hmac.clone();
    client.origin = existing.origin.clone();
    // An administrator's decision, which the client's own metadata cannot change.
    client.introspect_any = existing.introspect_any;
    mark_open(&mut client, open);
    let access = Secret::generate();
    client.registration_token_hash = Some(access.hash());
    let (stored, now, ip) = (client.clone(), cx.now, ip.to_string());
    cx.db
        .write(move |c| {
            db::clients::update(c, &stored, now)?;
            if let Some(hash) = &stored.registration_token_hash {
                db::registration::set_access_token(c, &stored.client_id, hash, now)?;
            }
            Event::new("client.registration_updated")
                .actor("registration")
                .ip(Some(ip))
                .target(format!("client:{}", stored.client_id))
                .detail(json!({"redirect_uris": stored.redirect_uris, "client_name": stored.name}))
                .write(c, now)
        })
        .await?;
    cx.clients.forget(client_id);
    Ok(information(cx, &client, None, access.expose()))
}

/// RFC 7592 §2.3: deletes the client, and with it its grants and tokens.
pub async fn delete(cx: &Ctx<'_>, client_id: &str, bearer: Option<&str>, ip: &str) -> Result<(), OAuthError> {
    let existing = authorized(cx, client_id, bearer).await?;
    let (now, ip) = (cx.now, ip.to_string());
    cx.db
        .write(move |c| {
            db::clients::delete(c, &existing.client_id)?;
            Event::new("client.registration_deleted")
                .actor("registration")
                .ip(Some(ip))
                .target(format!("client:{}", existing.client_id))
                .write(c, now)
        })
        .await?;
    cx.clients.forget(client_id);
    Ok(())
}
