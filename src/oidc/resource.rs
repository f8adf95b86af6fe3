//! Resource indicators (RFC 8707): which registered resource servers an access token
//! is for. A token asked for with `resource` gets those URIs as its `aud` (RFC 8707
//! §2.2, RFC 9068 §3), and a scope narrowed to what they accept; without `resource`
//! nothing changes (the audience is the client).

use crate::db::resources::Resource;
use crate::db::{self, DbError, Tx};
use crate::domain::Scope;
use crate::oidc::grant::Form;
use crate::oidc::Ctx;
use crate::oidc::{ErrorCode, OAuthError};

/// Most resources one request may name: each is one more audience in every token.
pub const MAX_RESOURCES: usize = 8;
const MAX_URI: usize = 2048;

/// RFC 8707 §2: "an absolute URI … MUST NOT include a fragment component". The URI is
/// kept as written: resources are compared as exact strings, like redirect URIs.
pub fn parse_uri(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > MAX_URI || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a resource is an absolute URI without spaces".into());
    }
    if text.contains('#') {
        return Err(format!("the resource `{}` has a fragment (RFC 8707 §2)", shown(text)));
    }
    match url::Url::parse(text) {
        // A URL parses only with a scheme: an absolute URI (RFC 3986 §4.3).
        Ok(_) => Ok(text.to_string()),
        Err(_) => Err(format!("the resource `{}` is not an absolute URI", shown(text))),
    }
}

/// Enough of a value to recognise it in a message, not to echo a long one.
fn shown(text: &str) -> String {
    text.chars().take(80).collect()
}

fn checked(values: Vec<String>) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let uri = parse_uri(&v)?;
        if !out.contains(&uri) {
            out.push(uri);
        }
    }
    if out.len() > MAX_RESOURCES {
        return Err(format!("at most {MAX_RESOURCES} resources may be named"));
    }
    Ok(out)
}

fn unknown(uri: &str) -> String {
    format!("the resource `{}` is not registered", shown(uri))
}

/// The `resource` values of an authorization request (RFC 8707 §2), each a
/// registered resource; a message for `invalid_target` otherwise.
pub async fn requested(cx: &Ctx<'_>, params: &[(String, String)]) -> Result<Vec<String>, String> {
    let asked: Vec<String> = params
        .iter()
        .filter(|(k, _)| k == "resource")
        .map(|(_, v)| v.clone())
        .collect();
    if asked.is_empty() {
        return Ok(asked);
    }
    let asked = checked(asked)?;
    let wanted = asked.clone();
    let found = cx
        .db
        .read(move |c| db::resources::find_all(c, &wanted))
        .await
        .map_err(|_| "the registered resources cannot be read now".to_string())?;
    match asked.iter().find(|a| !found.iter().any(|r| &r.uri == *a)) {
        Some(missing) => Err(unknown(missing)),
        None => Ok(asked),
    }
}

/// The `resource` values of a token request. The form keeps a repeated `resource` as
/// one space-separated value (`http::params::unique_form`; URIs hold no spaces).
pub fn form_values(form: &Form) -> Vec<String> {
    form.get("resource")
        .map(|v| v.split(' ').filter(|s| !s.is_empty()).map(str::to_string).collect())
        .unwrap_or_default()
}

fn target(d: String) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidTarget, d)
}

/// RFC 8707 §2.2 for a code or refresh token: what the token request names must be
/// among what was authorized (`authorized`, space-separated); naming none takes all
/// of those. An outer `Err` is storage; the inner one is `invalid_target`.
pub fn select(
    c: &Tx<'_>,
    asked: &[String],
    authorized: Option<&str>,
) -> Result<Result<Vec<Resource>, OAuthError>, DbError> {
    let authorized: Vec<String> = authorized
        .unwrap_or_default()
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let chosen = if asked.is_empty() {
        authorized
    } else {
        if let Some(extra) = asked.iter().find(|a| !authorized.contains(a)) {
            return Ok(Err(target(format!(
                "the resource `{}` was not part of the authorization",
                shown(extra)
            ))));
        }
        asked.to_vec()
    };
    registered(c, &chosen)
}

/// The registered resources named (client credentials: RFC 8707 §2.2 with no prior
/// authorization); any unknown one is `invalid_target`.
pub fn registered(c: &Tx<'_>, asked: &[String]) -> Result<Result<Vec<Resource>, OAuthError>, DbError> {
    let asked = match checked(asked.to_vec()) {
        Ok(a) => a,
        Err(d) => return Ok(Err(target(d))),
    };
    let found = db::resources::find_all(c, &asked)?;
    Ok(match asked.iter().find(|a| !found.iter().any(|r| &r.uri == *a)) {
        Some(missing) => Err(target(unknown(missing))),
        None => Ok(found),
    })
}

/// `registered` outside a transaction, for a grant with nothing to consume first.
pub async fn registered_now(cx: &Ctx<'_>, asked: Vec<String>) -> Result<Vec<Resource>, OAuthError> {
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    cx.db.read(move |c| registered(c, &asked)).await?
}

/// The access token's scope for these resources: a resource that lists scopes accepts
/// only those, so the others are left out (RFC 8707 §2.2 lets the server narrow). The
/// OpenID Connect scopes stay: they are about the user's claims and the ID token, not
/// about the resource. No resources, or one accepting any scope: unchanged.
pub fn narrow(scope: &Scope, targets: &[Resource]) -> Scope {
    if targets.is_empty() || targets.iter().any(|t| t.scopes.is_empty()) {
        return scope.clone();
    }
    scope.filter(|s| {
        crate::oidc::claims::SUPPORTED_SCOPES.contains(&s) || targets.iter().any(|t| t.scopes.iter().any(|x| x == s))
    })
}

/// The access token's `aud`: the resources' URIs (empty: the client, as before).
pub fn audience(targets: &[Resource]) -> Vec<String> {
    targets.iter().map(|t| t.uri.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(uri: &str, scopes: &[&str]) -> Resource {
        Resource {
            uri: uri.into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            created_at: 0,
        }
    }

    #[test]
    fn a_resource_is_an_absolute_uri_without_fragment() {
        assert!(parse_uri("https://api.example.com/v1").is_ok());
        assert!(parse_uri("urn:example:api").is_ok());
        assert!(parse_uri("https://api.example.com/#frag").is_err());
        assert!(parse_uri("/relative").is_err());
        assert!(parse_uri("api.example.com").is_err());
        assert!(parse_uri("https://a.example/x y").is_err());
        assert!(parse_uri("").is_err());
    }

    #[test]
    fn scopes_narrow_to_what_the_resources_accept() {
        let scope = Scope::parse("openid email read write admin").unwrap();
        let narrowed = narrow(&scope, &[res("https://a", &["read"]), res("https://b", &["write"])]);
        assert_eq!(narrowed.to_string(), "openid email read write");
        assert_eq!(narrow(&scope, &[res("https://a", &[])]).to_string(), scope.to_string());
        assert_eq!(narrow(&scope, &[]).to_string(), scope.to_string());
    }
}
