//! GitHub as an upstream: its OAuth 2.0 web application flow (with PKCE) and the REST
//! API's authenticated user and email addresses, on github.com or on a GitHub
//! Enterprise Server (whose API lives under `BASE/api/v3`). GitHub issues no ID token:
//! the subject is the account's numeric id, which never changes (its login can).

use serde_json::Value;

use super::upstream::Upstreams;
use super::{Profile, UpstreamError};
use crate::db::providers::Provider;

struct Endpoints {
    authorize: String,
    token: String,
    api: String,
}

fn endpoints(p: &Provider) -> Endpoints {
    match p.issuer.as_deref() {
        None => Endpoints {
            authorize: "https://github.com/login/oauth/authorize".into(),
            token: "https://github.com/login/oauth/access_token".into(),
            api: "https://api.github.com".into(),
        },
        Some(base) => Endpoints {
            authorize: format!("{base}/login/oauth/authorize"),
            token: format!("{base}/login/oauth/access_token"),
            api: format!("{base}/api/v3"),
        },
    }
}

/// The authorization URL at GitHub (its `state` is ours; PKCE S256 is supported).
pub fn authorization_url(p: &Provider, redirect_uri: &str, state: &str, challenge: &str) -> String {
    let mut url = match url::Url::parse(&endpoints(p).authorize) {
        Ok(u) => u,
        Err(_) => return String::new(),
    };
    url.query_pairs_mut()
        .append_pair("client_id", &p.client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("scope", &p.scope)
        .append_pair("state", state)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("allow_signup", "false");
    url.to_string()
}

/// Redeems the code and reads the user and their verified primary address.
pub async fn finish(
    ups: &Upstreams,
    p: &Provider,
    secret: &str,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<Profile, UpstreamError> {
    let at = endpoints(p);
    let form = [
        ("client_id", p.client_id.as_str()),
        ("client_secret", secret),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
    ];
    let (status, answer) = ups.post_form(&at.token, &form, None).await?;
    // GitHub answers refusals with 200 and an `error` member.
    if let Some(error) = answer.get("error").and_then(Value::as_str) {
        return Err(UpstreamError::Refused(format!("GitHub refused the code: {error}")));
    }
    let token = answer
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|_| status.is_success())
        .ok_or_else(|| UpstreamError::Unavailable(format!("GitHub's token endpoint answered {status}")))?;
    let user = api(ups, &format!("{}/user", at.api), token).await?;
    let emails = api(ups, &format!("{}/user/emails", at.api), token).await?;
    profile(&user, &emails)
}

async fn api(ups: &Upstreams, url: &str, token: &str) -> Result<Value, UpstreamError> {
    let resp = ups
        .http()?
        .get(url)
        .bearer_auth(token)
        .header(reqwest::header::ACCEPT, "application/vnd.github+json")
        .header("X-GitHub-Api-Version", "2022-11-28")
        .send()
        .await
        .map_err(|_| UpstreamError::Unavailable("GitHub cannot be reached".into()))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(UpstreamError::Unavailable(format!("GitHub's API answered {status}")));
    }
    let bytes = super::upstream::read_body(resp).await?;
    serde_json::from_slice(&bytes).map_err(|_| UpstreamError::Unavailable("GitHub did not answer JSON".into()))
}

/// The profile from `/user` and `/user/emails`: the address is the primary one, and
/// counts as verified only when GitHub says it is.
fn profile(user: &Value, emails: &Value) -> Result<Profile, UpstreamError> {
    let subject = match user.get("id") {
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(UpstreamError::Refused("GitHub's user has no id".into())),
    };
    let primary = emails
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e.get("primary") == Some(&Value::Bool(true)));
    let email = primary.and_then(|e| e.get("email")).and_then(Value::as_str);
    let verified = primary.is_some_and(|e| e.get("verified") == Some(&Value::Bool(true)));
    let text = |k: &str| user.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(Profile {
        subject,
        preferred_username: text("login"),
        name: text("name"),
        email: email.map(str::to_string),
        email_verified: verified,
        groups: None,
        amr: Vec::new(),
        sid: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_profile_takes_the_numeric_id_and_the_primary_address() {
        let user = json!({"id": 583231, "login": "octocat", "name": "The Octocat", "email": "public@example.org"});
        let emails = json!([
            {"email": "other@example.org", "primary": false, "verified": true},
            {"email": "octocat@example.org", "primary": true, "verified": false}
        ]);
        let p = profile(&user, &emails).unwrap();
        assert_eq!(p.subject, "583231");
        assert_eq!(p.preferred_username.as_deref(), Some("octocat"));
        assert_eq!(p.email.as_deref(), Some("octocat@example.org"));
        assert!(!p.email_verified, "an unverified primary address is not verified");
        assert!(profile(&json!({"login": "x"}), &emails).is_err());
    }

    #[test]
    fn enterprise_servers_keep_their_api_under_api_v3() {
        let mut p = Provider {
            id: "gh".into(),
            kind: "github".into(),
            name: "GitHub".into(),
            issuer: None,
            client_id: "c".into(),
            client_secret: "s".into(),
            scope: "read:user user:email".into(),
            jit: false,
            link_by_email: false,
            require_local_mfa: false,
            group_claim: None,
            group_map: vec![],
            created_at: 0,
            updated_at: 0,
        };
        assert_eq!(endpoints(&p).api, "https://api.github.com");
        p.issuer = Some("https://ghe.example.org".into());
        assert_eq!(endpoints(&p).api, "https://ghe.example.org/api/v3");
        assert!(authorization_url(&p, "https://sso/cb", "st", "ch")
            .starts_with("https://ghe.example.org/login/oauth/authorize?"));
    }
}
