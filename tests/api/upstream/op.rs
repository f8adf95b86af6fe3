//! A real upstream OpenID Provider on loopback: node's `oidc-provider` (pinned in
//! tests/interop/package.json) run by tests/interop/upstream_op.mjs, with one
//! confidential client for Tessera and the accounts `alice`, `bob` and `carol`.
//!
//! Accounts (login → claims):
//! - `alice`: sub `alice-sub`, alice@example.org verified, "Alice Upstream", groups
//!   `engineering`, `staff`
//! - `bob`: sub `bob-sub`, bob@example.org NOT verified, "Bob", no groups
//! - `carol`: sub `carol-sub`, carol@example.org verified, "Carol", group `staff`
//!
//! Scopes `openid email profile groups`; the scope claims are in the ID token as well
//! as at userinfo. PKCE (S256) is required, the client authenticates with
//! `client_secret_basic`, consent is granted without a page.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rand::distributions::{Alphanumeric, DistString};
use reqwest::header::LOCATION;
use url::Url;

use crate::helpers::plain_client;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");

/// A running upstream provider; the node process is killed when this is dropped
/// (which is also how a test makes the upstream "down").
pub struct UpstreamOp {
    /// `http://127.0.0.1:PORT`, no trailing slash; discovery is at
    /// `ISSUER/.well-known/openid-configuration`.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// The one redirect URI registered for the client.
    pub redirect_uri: String,
    child: Child,
}

/// Whether node and the pinned package are installed; in CI their absence fails.
fn available() -> bool {
    crate::helpers::available(
        Command::new("node").current_dir(DIR).args([
            "-e",
            "import('oidc-provider').then(() => process.exit(0), () => process.exit(1))",
        ]),
        "node's oidc-provider",
    )
}

impl UpstreamOp {
    /// Starts the provider on a free loopback port with its client registered for
    /// `redirect_uri` and, when given, `backchannel_uri` as its
    /// `backchannel_logout_uri` (with `backchannel_logout_session_required`, so logout
    /// tokens and ID tokens carry `sid`). `None` (and a SKIPPED line) when node or the
    /// package is missing outside CI; panics in CI or when the process does not start.
    pub async fn start(redirect_uri: &str, backchannel_uri: Option<&str>) -> Option<UpstreamOp> {
        if !tokio::task::spawn_blocking(available).await.unwrap() {
            return None;
        }
        let client_id = "tessera".to_string();
        let client_secret = Alphanumeric.sample_string(&mut rand::thread_rng(), 32);
        let mut cmd = Command::new("node");
        cmd.arg(format!("{DIR}/upstream_op.mjs"))
            .current_dir(DIR)
            // Port 0: the script binds first and derives its issuer from the port it got.
            .env("PORT", "0")
            .env("CLIENT_ID", &client_id)
            .env("CLIENT_SECRET", &client_secret)
            .env("REDIRECT_URI", redirect_uri)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(uri) = backchannel_uri {
            cmd.env("BACKCHANNEL_URI", uri);
        }
        let mut child = cmd.spawn().expect("spawn node upstream_op.mjs");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match line.strip_prefix("ready ") {
                    Some(issuer) => drop(tx.send(issuer.trim().to_string())),
                    None => println!("upstream_op: {line}"),
                }
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("upstream_op: {line}");
            }
        });
        let ready = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(30)))
            .await
            .unwrap();
        let Ok(issuer) = ready else {
            let _ = child.kill();
            let status = child.wait();
            panic!("upstream_op.mjs did not print `ready` ({status:?}); its stderr is above");
        };
        Some(UpstreamOp {
            issuer,
            client_id,
            client_secret,
            redirect_uri: redirect_uri.to_string(),
            child,
        })
    }

    fn origin(&self) -> url::Origin {
        Url::parse(&self.issuer).unwrap().origin()
    }

    /// Signs `login` in at the upstream, starting from `authorize_url` (the upstream
    /// authorization URL Tessera redirected to) with `browser` (a cookie-keeping client
    /// with redirects off): follows each redirect that stays on the upstream's origin,
    /// fills the login form with `login`, and returns the first response whose
    /// `Location` leaves the upstream — normally the redirect to Tessera's callback with
    /// `code`, `state` and `iss` (or `error`), unfollowed. When `browser` still has a
    /// session at the upstream no form is shown and `login` is not used (single
    /// sign-on, as a real upstream does). Panics on an unknown login or any other page.
    pub async fn sign_in(&self, browser: &reqwest::Client, authorize_url: &str, login: &str) -> reqwest::Response {
        let mut url = Url::parse(authorize_url).expect("an absolute authorization URL");
        assert_eq!(url.origin(), self.origin(), "{url} is not at the upstream");
        for _ in 0..20 {
            let res = browser.get(url.clone()).send().await.unwrap();
            if res.status().is_redirection() {
                let next = location(&res, &url);
                if next.origin() != self.origin() {
                    return res;
                }
                url = next;
                continue;
            }
            let status = res.status();
            let page = res.text().await.unwrap();
            let action = page
                .contains(r#"name="login""#)
                .then(|| attribute(&page, "action="))
                .flatten();
            let Some(action) = action else {
                panic!("upstream page at {url} ({status}) is not the login form:\n{page}");
            };
            let post = url.join(&action).unwrap();
            let res = browser
                .post(post.clone())
                .form(&[("login", login)])
                .send()
                .await
                .unwrap();
            assert!(
                res.status().is_redirection(),
                "the upstream refused login {login:?}: {}",
                res.status()
            );
            url = location(&res, &post);
        }
        panic!("more than 20 hops at the upstream from {authorize_url}");
    }

    /// Ends `browser`'s session at the upstream through the real RP-Initiated Logout
    /// flow (GET `end_session_endpoint`, then its confirmation form with `logout=yes`).
    /// oidc-provider POSTs a `logout_token` (OIDC Back-Channel Logout 1.0) to the
    /// client's `backchannel_logout_uri` for every client of the session and waits for
    /// the answers before it replies, so when this returns the delivery is done; a
    /// failed delivery shows on stderr as `back-channel logout … failed`. Returns the
    /// confirmation's response (303 to the upstream's signed-out page).
    pub async fn sign_out(&self, browser: &reqwest::Client) -> reqwest::Response {
        let page = browser
            .get(format!("{}/session/end", self.issuer))
            .send()
            .await
            .unwrap();
        assert!(page.status().is_success(), "end_session: {}", page.status());
        let page = page.text().await.unwrap();
        let xsrf = page
            .find(r#"name="xsrf""#)
            .and_then(|at| attribute(&page[at..], "value="))
            .unwrap_or_else(|| panic!("no xsrf on the upstream's logout page:\n{page}"));
        let res = browser
            .post(format!("{}/session/end/confirm", self.issuer))
            .form(&[("xsrf", xsrf.as_str()), ("logout", "yes")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 303, "end_session confirm");
        res
    }

    /// Rotates the upstream's signing key without a restart: a new RS256 key (new
    /// `kid`) signs every ID token and logout token from now on. The JWKS had not
    /// listed it; now it lists it first and keeps the old key after it, so a relying
    /// party with a cached JWKS meets an unknown kid and must refetch. Returns the new
    /// kid. Two rotations per run (a third panics: the pool has three keys).
    pub async fn rotate_key(&self) -> String {
        let res = plain_client()
            .post(format!("{}/test/rotate", self.issuer))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "rotate");
        let body: serde_json::Value = res.json().await.unwrap();
        body["kid"].as_str().unwrap().to_string()
    }

    /// The `kid` of the key signing now.
    pub async fn signing_kid(&self) -> String {
        let body: serde_json::Value = plain_client()
            .get(format!("{}/test/kid", self.issuer))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        body["kid"].as_str().unwrap().to_string()
    }
}

impl Drop for UpstreamOp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The redirect target of `res`, resolved against the URL it answered.
fn location(res: &reqwest::Response, base: &Url) -> Url {
    let raw = res
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("{} without Location from {base}", res.status()));
    base.join(raw).unwrap()
}

/// The double-quoted value after the first `name` (e.g. `action=`) in `html`, with
/// the entities oidc-provider's and the script's escaping produce undone.
fn attribute(html: &str, name: &str) -> Option<String> {
    let start = html.find(&format!("{name}\""))? + name.len() + 1;
    let end = start + html[start..].find('"')?;
    Some(
        html[start..end]
            .replace("&#34;", "\"")
            .replace("&#39;", "'")
            .replace("&#60;", "<")
            .replace("&#62;", ">")
            .replace("&amp;", "&")
            .replace("&#38;", "&"),
    )
}
