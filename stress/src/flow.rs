//! The steps of the flow, as a browser and a relying party perform them: authorize,
//! read the login form, sign in, exchange the code, introspect, refresh.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use reqwest::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE};
use sha2::{Digest, Sha256};

use crate::targets::{Hop, Targets};
use crate::Args;

/// The server under test (one node or several) and the identities to use against it.
pub struct Target {
    pub http: reqwest::Client,
    pub targets: Targets,
    pub client_id: String,
    basic: String,
    pub redirect_uri: String,
    pub user_prefix: String,
    pub users: usize,
    pub password: String,
    scope: String,
    prompt: Option<String>,
}

/// Redirects followed within the issuer before a response counts as the answer: a
/// provider may take the browser through interaction pages (oidc-provider's
/// `/interaction/…` and `/authorize/…` resume), where Tessera answers at once.
const MAX_HOPS: usize = 6;

/// Cookies of one simulated browser.
#[derive(Default, Clone)]
pub struct Jar {
    cookies: Vec<(String, String)>,
}

impl Jar {
    fn absorb(&mut self, resp: &reqwest::Response) {
        for value in resp.headers().get_all(SET_COOKIE) {
            let Ok(text) = value.to_str() else { continue };
            let pair = text.split(';').next().unwrap_or_default();
            if let Some((name, v)) = pair.split_once('=') {
                self.cookies.retain(|(n, _)| n != name);
                if !v.is_empty() {
                    self.cookies.push((name.to_string(), v.to_string()));
                }
            }
        }
    }

    fn header(&self) -> String {
        self.cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

pub struct Tokens {
    pub access: String,
    pub refresh: String,
}

fn random(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A value of a hidden input in the login form.
pub fn hidden(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')?;
    Some(html[start..start + end].to_string())
}

fn query_value(url: &str, name: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let found = parsed
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned());
    found
}

impl Target {
    pub async fn new(args: &Args) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(1024)
            .timeout(Duration::from_secs(180))
            .build()
            .map_err(|e| e.to_string())?;
        let targets = Targets::new(&args.issuer, args.targets.as_deref())?;
        for base in targets.all() {
            let health = http.get(format!("{base}/healthz")).send().await;
            if !health.is_ok_and(|r| r.status().is_success()) {
                return Err(format!("no Tessera answering at {base}"));
            }
        }
        let creds =
            base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", args.client_id, args.client_secret));
        Ok(Self {
            http,
            targets,
            client_id: args.client_id.clone(),
            basic: format!("Basic {creds}"),
            redirect_uri: args.redirect_uri.clone(),
            user_prefix: args.user_prefix.clone(),
            users: args.users.max(1),
            password: args.password.clone(),
            scope: args.scope.clone(),
            prompt: args.prompt.clone().filter(|p| !p.is_empty()),
        })
    }

    /// Virtual user `vu` signs in as its own user.
    pub fn username(&self, vu: usize) -> String {
        format!("{}{}", self.user_prefix, vu % self.users + 1)
    }

    /// A fresh authorization request with PKCE S256, state and nonce; returns the URL
    /// (on the issuer, where a relying party sends the browser) and the code verifier.
    pub fn authorize_url(&self) -> (String, String) {
        let verifier = random(32);
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", &self.redirect_uri)
            .append_pair("response_type", "code")
            .append_pair("scope", &self.scope)
            .append_pair("state", &random(12))
            .append_pair("nonce", &random(12))
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        if let Some(prompt) = &self.prompt {
            query.append_pair("prompt", prompt);
        }
        (
            format!("{}/authorize?{}", self.targets.issuer(), query.finish()),
            verifier,
        )
    }

    /// Follows `resp`'s redirects while they stay on the issuer, as a browser would,
    /// keeping cookies; returns the first answer that is not such a redirect.
    async fn within_issuer(
        &self,
        hop: &mut Hop,
        jar: &mut Jar,
        mut resp: reqwest::Response,
    ) -> Result<reqwest::Response, String> {
        for _ in 0..MAX_HOPS {
            let next = match redirect_to(&resp) {
                Some(location) if self.targets.on_issuer(&location) => location,
                _ => return Ok(resp),
            };
            resp = self
                .http
                .get(&*self.targets.follow(hop, &next))
                .header(COOKIE, jar.header())
                .send()
                .await
                .map_err(kind)?;
            jar.absorb(&resp);
        }
        Err("redirects: too many within the issuer".into())
    }

    /// GET /authorize without a session: the login form and its hidden fields.
    pub async fn authorize(&self, hop: &mut Hop, jar: &mut Jar, url: &str) -> Result<(String, String), String> {
        let resp = self
            .http
            .get(&*self.targets.follow(hop, url))
            .header(COOKIE, jar.header())
            .send()
            .await
            .map_err(kind)?;
        jar.absorb(&resp);
        let resp = self.within_issuer(hop, jar, resp).await?;
        if resp.status() != 200 {
            return Err(format!("authorize: status {}", resp.status().as_u16()));
        }
        let html = resp.text().await.map_err(kind)?;
        match (hidden(&html, "request_id"), hidden(&html, "csrf")) {
            (Some(r), Some(c)) => Ok((r, c)),
            _ => Err("authorize: no login form".into()),
        }
    }

    /// POST /login: the redirect to the client carrying the code.
    pub async fn login(
        &self,
        hop: &mut Hop,
        jar: &mut Jar,
        fields: (String, String),
        username: &str,
    ) -> Result<String, String> {
        let form = [
            ("request_id", fields.0.as_str()),
            ("csrf", fields.1.as_str()),
            ("username", username),
            ("password", self.password.as_str()),
        ];
        let resp = self
            .http
            .post(self.targets.url(hop, "/login"))
            .header(COOKIE, jar.header())
            .form(&form)
            .send()
            .await
            .map_err(kind)?;
        jar.absorb(&resp);
        let resp = self.within_issuer(hop, jar, resp).await?;
        code_in_redirect(&resp, "login")
    }

    /// GET /authorize with an SSO session: a code without the password.
    pub async fn code_with_session(&self, hop: &mut Hop, jar: &mut Jar) -> Result<(String, String), String> {
        let (url, verifier) = self.authorize_url();
        let resp = self
            .http
            .get(&*self.targets.follow(hop, &url))
            .header(COOKIE, jar.header())
            .send()
            .await
            .map_err(kind)?;
        jar.absorb(&resp);
        let resp = self.within_issuer(hop, jar, resp).await?;
        Ok((code_in_redirect(&resp, "authorize")?, verifier))
    }

    async fn token_request(&self, hop: &mut Hop, form: &[(&str, &str)], step: &str) -> Result<Tokens, String> {
        let resp = self
            .http
            .post(self.targets.url(hop, "/token"))
            .header(AUTHORIZATION, &self.basic)
            .form(form)
            .send()
            .await
            .map_err(kind)?;
        if resp.status() != 200 {
            return Err(format!("{step}: status {}", resp.status().as_u16()));
        }
        let body: serde_json::Value = resp.json().await.map_err(kind)?;
        let field = |n: &str| body.get(n).and_then(|v| v.as_str()).map(str::to_string);
        match (field("access_token"), field("refresh_token")) {
            (Some(access), Some(refresh)) => Ok(Tokens { access, refresh }),
            _ => Err(format!("{step}: tokens missing")),
        }
    }

    pub async fn token(&self, hop: &mut Hop, code: &str, verifier: &str) -> Result<Tokens, String> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("code_verifier", verifier),
        ];
        self.token_request(hop, &form, "token").await
    }

    pub async fn refresh(&self, hop: &mut Hop, refresh: &str) -> Result<Tokens, String> {
        self.token_request(
            hop,
            &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
            "refresh",
        )
        .await
    }

    /// RFC 7662 with client authentication; the token must be active.
    pub async fn introspect(&self, hop: &mut Hop, token: &str) -> Result<(), String> {
        let resp = self
            .http
            .post(self.targets.url(hop, "/introspect"))
            .header(AUTHORIZATION, &self.basic)
            .form(&[("token", token)])
            .send()
            .await
            .map_err(kind)?;
        if resp.status() != 200 {
            return Err(format!("introspect: status {}", resp.status().as_u16()));
        }
        let body: serde_json::Value = resp.json().await.map_err(kind)?;
        if body.get("active") != Some(&serde_json::Value::Bool(true)) {
            return Err("introspect: inactive".into());
        }
        Ok(())
    }
}

/// Transport failures grouped by kind, not by message, so errors count sensibly.
fn kind(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "transport: timeout".into()
    } else if e.is_connect() {
        "transport: connect".into()
    } else if e.is_decode() {
        "transport: bad body".into()
    } else {
        "transport: other".into()
    }
}

/// Where a redirect (302, 303 or 307) sends the browser.
fn redirect_to(resp: &reqwest::Response) -> Option<String> {
    if !matches!(resp.status().as_u16(), 302 | 303 | 307) {
        return None;
    }
    let location = resp.headers().get(LOCATION)?.to_str().ok()?;
    Some(location.to_string())
}

/// The code in a redirect to the client.
fn code_in_redirect(resp: &reqwest::Response, step: &str) -> Result<String, String> {
    let Some(location) = redirect_to(resp) else {
        return Err(format!("{step}: status {}", resp.status().as_u16()));
    };
    if let Some(error) = query_value(&location, "error") {
        return Err(format!("{step}: error {error} in the redirect"));
    }
    query_value(&location, "code").ok_or_else(|| format!("{step}: no code in the redirect"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_hidden_fields_and_query_values() {
        let html =
            r#"<input type="hidden" name="request_id" value="abc"><input type="hidden" name="csrf" value="x-y">"#;
        assert_eq!(hidden(html, "request_id").as_deref(), Some("abc"));
        assert_eq!(hidden(html, "csrf").as_deref(), Some("x-y"));
        assert_eq!(hidden(html, "missing"), None);
        assert_eq!(
            query_value("http://a/cb?code=c1&state=s", "code").as_deref(),
            Some("c1")
        );
    }

    #[test]
    fn the_jar_keeps_the_latest_value_and_drops_cleared_cookies() {
        let mut jar = Jar::default();
        jar.cookies.push(("a".into(), "1".into()));
        jar.cookies.retain(|(n, _)| n != "a");
        jar.cookies.push(("a".into(), "2".into()));
        assert_eq!(jar.header(), "a=2");
    }
}
