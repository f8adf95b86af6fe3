//! Nodes as processes of the binary (so that one can be killed) and the commands and
//! sign-ins that prepare their database.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::helpers::*;

const BIN: &str = env!("CARGO_BIN_EXE_tessera");

/// A node as an operator runs it: a process of the binary, so that it can be killed.
pub struct Node {
    child: Child,
    pub address: String,
}

impl Node {
    /// Starts on a free port with the cluster's issuer, logging to `log`. The port is
    /// found by binding and releasing it, so another process may take it first: then
    /// the node cannot bind, exits, and is started again on another.
    pub fn start(database_url: &str, log: &Path) -> Self {
        Self::start_with(database_url, log, &[])
    }

    /// `start` with further settings in the environment (`TESSERA_SMTP_URL`, …).
    pub fn start_with(database_url: &str, log: &Path, env: &[(&str, &str)]) -> Self {
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let listen = format!("127.0.0.1:{port}");
            let mut child = Command::new(BIN)
                .args(["serve", "--listen", &listen, "--issuer", "http://id.test"])
                .args(["--workers", "2", "--hash-threads", "1", "--rate-limit", "false"])
                .env("TESSERA_DATABASE_URL", database_url)
                .env("TESSERA_BCRYPT_COST", "4")
                .envs(env.iter().copied())
                .env("RUST_LOG", "info")
                .stdout(Stdio::piped())
                .stderr(std::fs::File::create(log).unwrap())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let (up, started) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                use std::io::BufRead;
                let mut lines = std::io::BufReader::new(stdout).lines();
                let banner = lines
                    .by_ref()
                    .map_while(Result::ok)
                    .any(|l| l.trim_start().starts_with("issuer:"));
                let _ = up.send(banner);
                // Keep draining stdout, as a supervisor would.
                lines.for_each(drop);
            });
            // The test's runtime keeps running meanwhile (a proxy the node starts
            // through is one of its tasks).
            let banner = tokio::task::block_in_place(|| started.recv_timeout(Duration::from_secs(60)));
            if banner == Ok(true) {
                return Self {
                    child,
                    address: format!("http://{listen}"),
                };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("no node started; see {}", log.display());
    }

    /// `kill -9`: the process ends between one instruction and the next.
    pub fn kill_9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tessera` command against `database_url`; its standard output.
fn tessera(database_url: &str, args: &[&str], stdin: Option<&str>) -> String {
    tessera_ok(args, &[("TESSERA_DATABASE_URL", database_url)], stdin)
}

/// Alice and the confidential client `app` in the schema at `database_url`; the secret.
pub fn provision(database_url: &str) -> String {
    let password = format!("{PASSWORD}\n");
    tessera(
        database_url,
        &["user", "add", "alice", "--password-stdin"],
        Some(&password),
    );
    let out = tessera(
        database_url,
        &["client", "add", "app", "--redirect-uri", REDIRECT, "--json"],
        None,
    );
    let added: serde_json::Value = serde_json::from_str(&out).unwrap();
    added["client_secret"].as_str().unwrap().to_string()
}

/// A code from `address` in `person`'s browser: through the form the first time, at
/// once while its session lives.
async fn code_from(person: &reqwest::Client, address: &str, pkce: &Pkce) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("client_id", "app")
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", "openid")
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .finish();
    let mut resp = person.get(format!("{address}/authorize?{query}")).send().await.unwrap();
    if resp.status() == 200 {
        let mut form = form_fields(&resp.text().await.unwrap());
        form.insert("username".into(), "alice".into());
        form.insert("password".into(), PASSWORD.into());
        resp = person
            .post(format!("{address}/login"))
            .form(&form)
            .send()
            .await
            .unwrap();
    }
    redirect_params(&resp)["code"].clone()
}

/// A refresh token from a full code flow on `address`.
pub async fn chain_on(person: &reqwest::Client, address: &str, secret: &str) -> String {
    let pkce = Pkce::new();
    let code = code_from(person, address, &pkce).await;
    let resp = plain_client()
        .post(format!("{address}/token"))
        .basic_auth("app", Some(secret))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", pkce.verifier.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    body["refresh_token"].as_str().unwrap().to_string()
}
