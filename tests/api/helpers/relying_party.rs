//! A browser-like client and a relying party's moves: authorize, sign in, exchange.

use std::collections::HashMap;

use tessera::domain::Secret;
use url::Url;

use super::{form_fields, redirect_params, TestApp, PASSWORD, REDIRECT};

/// One TLS context for every test client: building one loads the system CA bundle,
/// which costs tens of milliseconds, and these tests speak plain HTTP anyway.
fn tls() -> native_tls::TlsConnector {
    static TLS: std::sync::OnceLock<native_tls::TlsConnector> = std::sync::OnceLock::new();
    TLS.get_or_init(|| native_tls::TlsConnector::new().unwrap()).clone()
}
/// A client that behaves like a browser: keeps cookies, does not follow redirects so
/// every hop can be inspected.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .use_preconfigured_tls(tls())
        .build()
        .unwrap()
}

pub fn plain_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .use_preconfigured_tls(tls())
        .build()
        .unwrap()
}

/// A relying party's view of one authorization: what it sent and must check.
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn new() -> Self {
        let verifier = Secret::generate().expose().to_string() + "-verifier";
        let challenge = tessera::crypto::sha256_b64(verifier.as_bytes());
        Self { verifier, challenge }
    }
}
impl TestApp {
    pub fn authorize_url(&self, client_id: &str, extra: &[(&str, &str)]) -> String {
        let mut url = Url::parse(&self.url("/authorize")).unwrap();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("client_id", client_id)
                .append_pair("redirect_uri", REDIRECT)
                .append_pair("response_type", "code")
                .append_pair("scope", "openid profile email")
                .append_pair("state", "st4te")
                .append_pair("nonce", "n0nce");
            for (k, v) in extra {
                q.append_pair(k, v);
            }
        }
        url.to_string()
    }

    /// Opens the authorization URL and returns the login form's fields.
    pub async fn open_login(&self, browser: &reqwest::Client, url: &str) -> HashMap<String, String> {
        let resp = browser.get(url).send().await.unwrap();
        assert_eq!(resp.status(), 200, "expected the login page for {url}");
        form_fields(&resp.text().await.unwrap())
    }

    pub async fn submit_login(
        &self,
        browser: &reqwest::Client,
        mut fields: HashMap<String, String>,
        username: &str,
        password: &str,
    ) -> reqwest::Response {
        fields.insert("username".into(), username.into());
        fields.insert("password".into(), password.into());
        browser.post(self.url("/login")).form(&fields).send().await.unwrap()
    }

    /// Signs in through the form and returns the redirect's query parameters.
    pub async fn login(&self, browser: &reqwest::Client, url: &str, username: &str) -> HashMap<String, String> {
        let fields = self.open_login(browser, url).await;
        let resp = self.submit_login(browser, fields, username, PASSWORD).await;
        assert_eq!(resp.status(), 303, "login failed: {}", resp.text().await.unwrap());
        redirect_params(&resp)
    }

    /// Signs in through the form for a client that asks for consent, and allows it:
    /// the consent page's text and the redirect's query parameters.
    pub async fn login_and_allow(&self, url: &str, username: &str) -> (String, HashMap<String, String>) {
        let b = browser();
        let fields = self.open_login(&b, url).await;
        let resp = self.submit_login(&b, fields, username, PASSWORD).await;
        assert_eq!(resp.status(), 200, "expected the consent page");
        let page = resp.text().await.unwrap();
        let mut fields = form_fields(&page);
        fields.insert("decision".into(), "allow".into());
        let resp = b.post(self.url("/consent")).form(&fields).send().await.unwrap();
        (page, redirect_params(&resp))
    }

    /// A full code flow for a confidential client, returning the token response.
    pub async fn tokens(&self, client_id: &str, secret: &str, username: &str) -> serde_json::Value {
        let pkce = Pkce::new();
        let url = self.authorize_url(
            client_id,
            &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
        );
        let params = self.login(&browser(), &url, username).await;
        let resp = self
            .token(
                Some((client_id, secret)),
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &params["code"]),
                    ("redirect_uri", REDIRECT),
                    ("code_verifier", &pkce.verifier),
                ],
            )
            .await;
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }

    /// A full code flow with PKCE for a public client (no secret); returns the token
    /// endpoint's answer unread.
    pub async fn public_tokens(&self, client_id: &str, username: &str) -> reqwest::Response {
        let pkce = Pkce::new();
        let url = self.authorize_url(
            client_id,
            &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
        );
        let params = self.login(&browser(), &url, username).await;
        self.token(
            None,
            &[
                ("grant_type", "authorization_code"),
                ("client_id", client_id),
                ("code", &params["code"]),
                ("redirect_uri", REDIRECT),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await
    }

    /// Exchanges a code issued without PKCE at the registered redirect URI.
    pub async fn exchange(&self, client: &str, secret: &str, code: &str) -> serde_json::Value {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
        ];
        let resp = self.token(Some((client, secret)), &form).await;
        assert_eq!(resp.status(), 200, "code exchange failed");
        resp.json().await.unwrap()
    }

    /// A refresh at the token endpoint by the client `basic` with `refresh_token`, and
    /// `extra` parameters after it.
    pub async fn refresh(&self, basic: (&str, &str), refresh_token: &str, extra: &[(&str, &str)]) -> reqwest::Response {
        let mut form = vec![("grant_type", "refresh_token"), ("refresh_token", refresh_token)];
        form.extend_from_slice(extra);
        self.token(Some(basic), &form).await
    }

    pub async fn token(&self, basic: Option<(&str, &str)>, form: &[(&str, &str)]) -> reqwest::Response {
        self.post_form("/token", basic, form).await
    }

    pub async fn post_form(&self, path: &str, basic: Option<(&str, &str)>, form: &[(&str, &str)]) -> reqwest::Response {
        let mut req = plain_client().post(self.url(path)).form(form);
        if let Some((id, secret)) = basic {
            req = req.basic_auth(id, Some(secret));
        }
        req.send().await.unwrap()
    }

    pub async fn introspect(&self, basic: (&str, &str), token: &str) -> serde_json::Value {
        let resp = self.post_form("/introspect", Some(basic), &[("token", token)]).await;
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }
}

impl TestApp {
    /// The JSON body of a plain GET of `path`.
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        plain_client()
            .get(self.url(path))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The body of a plain GET of `path`, as text.
    pub async fn get_text(&self, path: &str) -> String {
        plain_client()
            .get(self.url(path))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// The discovery document.
    pub async fn discovery(&self) -> serde_json::Value {
        self.get_json("/.well-known/openid-configuration").await
    }

    /// The key ids this node's `/jwks` publishes.
    pub async fn jwks_kids(&self) -> Vec<serde_json::Value> {
        let jwks: serde_json::Value = plain_client()
            .get(self.url("/jwks"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].clone())
            .collect()
    }
}
