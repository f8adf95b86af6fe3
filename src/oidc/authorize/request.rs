//! Parsing and validating an authorization request.

use super::auth_request::{AuthRequest, Prompt};
use super::error::AuthorizeError;
use super::response::AuthResponse;
use super::source::Via;
use crate::crypto::jwt;
use crate::domain::{RedirectUri, Scope};
use crate::oidc::claims::{client_supports, ClaimsRequest};
use crate::oidc::Ctx;
use crate::oidc::{pkce, ErrorCode, OAuthError};

const MAX_PARAM: usize = 4096;

/// Looks up a single-valued parameter; a repeated one is an error (RFC 6749 §3.1).
fn single<'a>(params: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, String> {
    match crate::oidc::unique_param(params, name) {
        Err(crate::oidc::Repeated) => Err(format!("the `{name}` parameter is repeated")),
        Ok(Some(v)) if v.len() > MAX_PARAM => Err(format!("the `{name}` parameter is too long")),
        Ok(v) => Ok(v),
    }
}

fn fatal(message: &str) -> AuthorizeError {
    AuthorizeError::Fatal(message.to_string())
}

/// Validates an authorization request at the authorization endpoint: its own
/// parameters, or those of the pushed request or request object it names.
pub async fn validate(cx: &Ctx<'_>, params: &[(String, String)]) -> Result<AuthRequest, AuthorizeError> {
    let (params, via) = super::source::resolve(cx, params).await?;
    validate_as(cx, &params, via).await
}

/// RFC 9126 §2.1: a pushed request is validated as the authorization endpoint would.
pub async fn validate_pushed(
    cx: &Ctx<'_>,
    params: &[(String, String)],
    signed: bool,
) -> Result<AuthRequest, AuthorizeError> {
    validate_as(cx, params, Via::Push { signed }).await
}

async fn validate_as(cx: &Ctx<'_>, params: &[(String, String)], via: Via) -> Result<AuthRequest, AuthorizeError> {
    let (client, redirect_uri) = target(cx, params).await?;
    // A repeated or oversized `state` is refused below, but cannot be echoed: which
    // one is genuine, and a 5 KB echo is no state a client sent to be kept.
    let (state_param, state_problem) = match single(params, "state") {
        Ok(v) => (v.map(str::to_string), None),
        Err(e) => (None, Some(e)),
    };
    // The response mode decides how even errors travel, so it is read first.
    let (form_post, mode_error) = match single(params, "response_mode") {
        Ok(None | Some("query")) => (false, None),
        Ok(Some("form_post")) => (true, None),
        Ok(Some(_)) => (false, Some("response_mode must be query or form_post")),
        Err(_) => (false, Some("the `response_mode` parameter is repeated")),
    };
    let fail = |code: ErrorCode, description: String| {
        AuthorizeError::Respond(AuthResponse::error(
            cx.issuer,
            &redirect_uri,
            state_param.as_deref(),
            form_post,
            &OAuthError::new(code, description),
        ))
    };
    let get = |name: &str| single(params, name).map_err(|d| fail(ErrorCode::InvalidRequest, d));
    let invalid = |d: &str| fail(ErrorCode::InvalidRequest, d.to_string());
    if let Some(problem) = state_problem {
        return Err(fail(ErrorCode::InvalidRequest, problem));
    }
    if let Some(e) = mode_error {
        return Err(invalid(e));
    }
    if let Some(d) = via.refusal(&client, cx.settings.protocol.require_par) {
        return Err(invalid(d));
    }
    if let Some((code, d)) = flow_problem(&client, get("response_type")?) {
        return Err(fail(code, d.into()));
    }
    let scope = Scope::parse(get("scope")?.unwrap_or("")).map_err(|e| fail(ErrorCode::InvalidScope, e.0))?;
    if !scope.contains("openid") {
        return Err(fail(ErrorCode::InvalidScope, "the openid scope is required".into()));
    }
    let scope = scope.filter(|s| client_supports(&client, s));
    let code_challenge = pkce_challenge(
        get("code_challenge")?,
        get("code_challenge_method")?,
        client.is_public(),
    )
    .map_err(invalid)?;
    let prompt = parse_prompt(get("prompt")?).map_err(invalid)?;
    let max_age = parse_max_age(get("max_age")?).map_err(invalid)?;
    let claims = parse_claims(get("claims")?).map_err(|d| fail(ErrorCode::InvalidRequest, d))?;
    let hint_sub = get("id_token_hint")?
        .map(|hint| {
            hint_subject(cx, hint, &client.client_id)
                .ok_or_else(|| invalid("id_token_hint is not an ID token we issued"))
        })
        .transpose()?;
    let resource = crate::oidc::resource::requested(cx, params)
        .await
        .map_err(|d| fail(ErrorCode::InvalidTarget, d))?;
    let dpop_jkt = crate::oidc::dpop::jkt_param(get("dpop_jkt")?).map_err(invalid)?;
    Ok(AuthRequest {
        client_id: client.client_id.clone(),
        redirect_uri: redirect_uri.as_str().to_string(),
        scope: scope.to_string(),
        state: state_param.clone(),
        nonce: get("nonce")?.map(str::to_string),
        code_challenge,
        prompt,
        max_age,
        login_hint: get("login_hint")?.map(|h| h.chars().take(256).collect()),
        claims,
        hint_sub,
        form_post,
        idp: get("idp")?
            .filter(|v| !v.is_empty() && v.len() <= 32)
            .map(str::to_string),
        resource,
        dpop_jkt,
        ui_locales: get("ui_locales")?.map(|v| v.chars().take(256).collect()),
    })
}

/// The client and the redirect URI the answer may go to; until both are known and
/// match, a problem is told to the person, never redirected.
async fn target(
    cx: &Ctx<'_>,
    params: &[(String, String)],
) -> Result<(std::sync::Arc<crate::db::clients::Client>, RedirectUri), AuthorizeError> {
    let client_id = single(params, "client_id").map_err(AuthorizeError::Fatal)?;
    let client_id = client_id.ok_or_else(|| fatal("The request names no client (client_id is missing)."))?;
    let client = cx.clients.get(cx.db, client_id, cx.now).await?;
    let client = client.ok_or_else(|| fatal("The application that sent you here is not registered."))?;
    let redirect = single(params, "redirect_uri").map_err(AuthorizeError::Fatal)?;
    let redirect = redirect.ok_or_else(|| fatal("The request has no redirect_uri."))?;
    // Exact string comparison with a registered URI (RFC 9700 §4.1.3).
    if !client.redirect_uris.iter().any(|r| r == redirect) {
        return Err(fatal(
            "The redirect URI in the request is not registered for this application.",
        ));
    }
    let redirect_uri = RedirectUri::parse(redirect).map_err(|e| AuthorizeError::Fatal(e.to_string()))?;
    Ok((client, redirect_uri))
}

/// Why the request cannot use the code flow with this client, if it cannot: the
/// response type (only `code`) and the client's registered grants.
fn flow_problem(client: &crate::db::clients::Client, response_type: Option<&str>) -> Option<(ErrorCode, &'static str)> {
    match response_type {
        Some("code") => {}
        None => return Some((ErrorCode::InvalidRequest, "response_type is required")),
        Some(_) => {
            return Some((
                ErrorCode::UnsupportedResponseType,
                "only response_type=code is supported",
            ))
        }
    }
    if !client.allows_grant("authorization_code") {
        return Some((
            ErrorCode::UnauthorizedClient,
            "the client is not registered for the authorization code flow",
        ));
    }
    None
}

/// `max_age` (Core §3.1.2.1): a non-negative number of seconds.
fn parse_max_age(value: Option<&str>) -> Result<Option<i64>, &'static str> {
    match value.map(str::parse::<i64>) {
        None => Ok(None),
        Some(Ok(n)) if n >= 0 => Ok(Some(n)),
        Some(_) => Err("max_age is not a non-negative integer"),
    }
}

/// The `claims` parameter (Core §5.5), re-serialised; `None` when it asks for nothing.
fn parse_claims(value: Option<&str>) -> Result<Option<String>, String> {
    let Some(text) = value else {
        return Ok(None);
    };
    let parsed = ClaimsRequest::parse(text)?;
    Ok((!parsed.is_empty()).then(|| serde_json::to_string(&parsed).unwrap_or_default()))
}

/// RFC 7636 §4.3 with RFC 9700 §2.1.1: S256 only, required for public clients.
fn pkce_challenge(challenge: Option<&str>, method: Option<&str>, public: bool) -> Result<Option<String>, &'static str> {
    match (challenge, method) {
        (Some(c), Some("S256")) if pkce::valid_challenge(c) => Ok(Some(c.to_string())),
        (Some(_), Some("S256")) => Err("code_challenge is not a S256 challenge"),
        (Some(_), _) => Err("code_challenge_method must be S256"),
        (None, Some(_)) => Err("code_challenge_method without code_challenge"),
        (None, None) if public => Err("PKCE (S256) is required for public clients"),
        (None, None) => Ok(None),
    }
}

fn parse_prompt(value: Option<&str>) -> Result<Prompt, &'static str> {
    let mut prompt = Prompt::default();
    for token in value.unwrap_or("").split(' ').filter(|t| !t.is_empty()) {
        match token {
            "none" => prompt.none = true,
            "login" => prompt.login = true,
            "consent" => prompt.consent = true,
            "create" => prompt.create = true,
            "select_account" => {}
            _ => return Err("prompt has an unknown value"),
        }
    }
    if prompt.none && (prompt.login || prompt.consent || prompt.create) {
        return Err("prompt=none cannot be combined with other values");
    }
    Ok(prompt)
}

/// The `sub` of an ID token this provider signed for this client. Expiry is not
/// checked: a hint names a user, it does not authenticate one (Core §3.1.2.1).
fn hint_subject(cx: &Ctx<'_>, hint: &str, client_id: &str) -> Option<String> {
    let keys = cx.keys.current();
    let signed = jwt::verify(&keys, hint).ok()?;
    let is_id_token = signed.is_id_token();
    let claims = signed.claims;
    let iss_ok = claims.get("iss").and_then(|v| v.as_str()) == Some(cx.issuer);
    let aud_ok = match claims.get("aud") {
        Some(serde_json::Value::String(a)) => a == client_id,
        Some(serde_json::Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(client_id)),
        _ => false,
    };
    if !is_id_token || !iss_ok || !aud_ok {
        return None;
    }
    claims.get("sub").and_then(|v| v.as_str()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_values() {
        assert_eq!(
            parse_prompt(Some("login consent")).unwrap(),
            Prompt {
                none: false,
                login: true,
                consent: true,
                create: false
            }
        );
        assert!(parse_prompt(Some("create")).unwrap().create);
        assert!(parse_prompt(Some("none create")).is_err(), "create shows a page");
        assert!(parse_prompt(Some("none login")).is_err());
        assert!(parse_prompt(Some("bogus")).is_err());
        assert_eq!(parse_prompt(Some("select_account")).unwrap(), Prompt::default());
    }

    #[test]
    fn pkce_rules() {
        let c = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert_eq!(pkce_challenge(Some(c), Some("S256"), true).unwrap().as_deref(), Some(c));
        assert!(pkce_challenge(Some(c), Some("plain"), false).is_err());
        assert!(
            pkce_challenge(Some(c), None, false).is_err(),
            "the default method is plain"
        );
        assert!(pkce_challenge(None, None, true).is_err());
        assert!(pkce_challenge(None, None, false).unwrap().is_none());
    }
}
