//! The real binary as an operator runs it: crash safety (`kill -9` loses nothing a
//! client was given), graceful shutdown, online backup and check, and logs free of
//! secrets.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::helpers::*;

const BIN: &str = env!("CARGO_BIN_EXE_tessera");

pub(crate) fn cli(db: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let db = db.to_str().unwrap();
    let args: Vec<&str> = ["--db", db].into_iter().chain(args.iter().copied()).collect();
    tessera_ok(&args, &[], stdin)
}

pub(crate) struct Server {
    child: Child,
    pub(crate) address: String,
    log: PathBuf,
}

impl Server {
    /// Starts on `port` (0: any free port, reported back in the printed issuer); a
    /// restart passes the first start's `port()`, since the issuer every token names
    /// must survive it.
    pub(crate) fn start(db: &Path, log: &Path, port: u16) -> Self {
        Self::start_with(db, log, port, &[])
    }

    /// `start` with further environment variables (settings such as `TESSERA_SMTP_URL`).
    pub(crate) fn start_with(db: &Path, log: &Path, port: u16, env: &[(&str, &str)]) -> Self {
        let listen = format!("127.0.0.1:{port}");
        let mut child = Command::new(BIN)
            .arg("--db")
            .arg(db)
            .args(["serve", "--listen", &listen, "--workers", "2", "--rate-limit", "false"])
            .env("TESSERA_BCRYPT_COST", "4")
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let mut address = String::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(issuer) = line.trim().strip_prefix("issuer:") {
                address = issuer.trim().to_string();
                break;
            }
        }
        // Keep draining stdout, as a supervisor would.
        std::thread::spawn(move || lines.for_each(drop));
        assert!(!address.is_empty(), "the server printed no issuer");
        Self {
            child,
            address,
            log: log.to_path_buf(),
        }
    }

    pub(crate) fn port(&self) -> u16 {
        url::Url::parse(&self.address)
            .ok()
            .and_then(|u| u.port())
            .expect("the printed issuer names its port")
    }

    pub(crate) fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Signs in through the form and returns the code and the secrets the browser saw.
async fn code(address: &str, pkce: &Pkce, seen: &mut Vec<String>) -> String {
    code_in(&browser(), address, pkce, seen).await
}

/// `code` in the given browser, which keeps the session.
async fn code_in(b: &reqwest::Client, address: &str, pkce: &Pkce, seen: &mut Vec<String>) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("client_id", "app")
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", "openid profile email")
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .finish();
    let page = b.get(format!("{address}/authorize?{query}")).send().await.unwrap();
    for c in page.cookies() {
        seen.push(c.value().to_string());
    }
    let mut fields: HashMap<String, String> = form_fields(&page.text().await.unwrap());
    seen.push(fields["csrf"].clone());
    seen.push(fields["request_id"].clone());
    fields.insert("username".into(), "alice".into());
    fields.insert("password".into(), PASSWORD.into());
    let resp = b.post(format!("{address}/login")).form(&fields).send().await.unwrap();
    for c in resp.cookies() {
        seen.push(c.value().to_string());
    }
    let code = redirect_params(&resp)["code"].clone();
    seen.push(code.clone());
    code
}

async fn post(address: &str, path: &str, secret: &str, form: &[(&str, &str)]) -> reqwest::Response {
    plain_client()
        .post(format!("{address}{path}"))
        .basic_auth("app", Some(secret))
        .form(form)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn exchange(address: &str, secret: &str, code: &str, pkce: &Pkce) -> reqwest::Response {
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    post(address, "/token", secret, &form).await
}

pub(crate) async fn active(address: &str, secret: &str, token: &str) -> bool {
    let body: serde_json::Value = post(address, "/introspect", secret, &[("token", token)])
        .await
        .json()
        .await
        .unwrap();
    body["active"] == true
}

pub(crate) fn setup(dir: &Path) -> (PathBuf, String) {
    let db = dir.join("tessera.db");
    cli(&db, &["init"], None);
    cli(
        &db,
        &["user", "add", "alice", "--password-stdin"],
        Some(&format!("{PASSWORD}\n")),
    );
    let out = cli(
        &db,
        &["client", "add", "app", "--redirect-uri", REDIRECT, "--json"],
        None,
    );
    let secret = serde_json::from_str::<serde_json::Value>(&out).unwrap()["client_secret"]
        .as_str()
        .unwrap()
        .to_string();
    (db, secret)
}

/// A sign-in that gives up quietly when the server is gone (it is about to be killed).
pub(crate) async fn try_code(address: &str, pkce: &Pkce) -> Option<String> {
    let b = browser();
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("client_id", "app")
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", "openid")
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .finish();
    let page = b.get(format!("{address}/authorize?{query}")).send().await.ok()?;
    let mut fields: HashMap<String, String> = form_fields(&page.text().await.ok()?);
    fields.insert("username".into(), "alice".into());
    fields.insert("password".into(), PASSWORD.into());
    let resp = b.post(format!("{address}/login")).form(&fields).send().await.ok()?;
    let location = resp.headers().get("location")?.to_str().ok()?.to_string();
    url::Url::parse(&location)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
}

pub(crate) async fn try_exchange(address: &str, secret: &str, code: &str, pkce: &Pkce) -> Option<Vec<String>> {
    let resp = exchange(address, secret, code, pkce).await;
    let body: serde_json::Value = resp.json().await.ok()?;
    Some(vec![
        body["access_token"].as_str()?.to_string(),
        body["refresh_token"].as_str()?.to_string(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_load_loses_nothing_a_client_was_given() {
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let (db, secret) = setup(dir.path());
    let server = Server::start(&db, &dir.path().join("log1"), 0);
    let port = server.port();
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let codes = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..4 {
        let (address, secret) = (server.address.clone(), secret.clone());
        let (tokens, codes, stop) = (tokens.clone(), codes.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                i += 1;
                let pkce = Pkce::new();
                let Some(code) = try_code(&address, &pkce).await else {
                    break;
                };
                if (i + w) % 4 == 0 {
                    // Kept, never presented: it must still redeem after the crash.
                    codes.lock().unwrap().push((code, pkce));
                    continue;
                }
                match try_exchange(&address, &secret, &code, &pkce).await {
                    Some(t) => tokens.lock().unwrap().extend(t),
                    None => break,
                }
            }
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    server.signal("KILL");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        let _ = w.await;
    }
    drop(server);
    let tokens = tokens.lock().unwrap().clone();
    let codes: Vec<(String, Pkce)> = std::mem::take(&mut *codes.lock().unwrap());
    assert!(
        tokens.len() >= 8 && !codes.is_empty(),
        "the load ran: {} tokens, {} codes",
        tokens.len(),
        codes.len()
    );

    let check = cli(&db, &["check"], None);
    assert!(check.contains("integrity ok"), "{check}");
    let server = Server::start(&db, &dir.path().join("log2"), port);
    for token in &tokens {
        assert!(
            active(&server.address, &secret, token).await,
            "a token given out before the crash is lost"
        );
    }
    for (code, pkce) in &codes {
        let resp = exchange(&server.address, &secret, code, pkce).await;
        assert_eq!(
            resp.status(),
            200,
            "a code given out before the crash no longer redeems"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_and_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (db, secret) = setup(dir.path());
    let mut server = Server::start(&db, &dir.path().join("log"), 0);
    let port = server.port();
    let pkce = Pkce::new();
    let code = code(&server.address, &pkce, &mut Vec::new()).await;
    let body: serde_json::Value = exchange(&server.address, &secret, &code, &pkce)
        .await
        .json()
        .await
        .unwrap();
    server.signal("TERM");
    let status = tokio::task::spawn_blocking(move || {
        let status = server.child.wait().unwrap();
        (status, server)
    })
    .await
    .unwrap()
    .0;
    assert!(status.success(), "exit status {status:?}");
    let server = Server::start(&db, &dir.path().join("log2"), port);
    assert!(active(&server.address, &secret, body["refresh_token"].as_str().unwrap()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_while_serving_gives_a_sound_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (db, secret) = setup(dir.path());
    let server = Server::start(&db, &dir.path().join("log"), 0);
    let pkce = Pkce::new();
    let code = code(&server.address, &pkce, &mut Vec::new()).await;
    assert_eq!(exchange(&server.address, &secret, &code, &pkce).await.status(), 200);
    let copy = dir.path().join("copy.db");
    cli(&db, &["backup", copy.to_str().unwrap()], None);
    assert!(cli(&copy, &["check"], None).contains("integrity ok"));
    assert!(cli(&copy, &["user", "list"], None).contains("alice"));
    let again = Command::new(BIN)
        .arg("--db")
        .arg(&db)
        .args(["backup", copy.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!again.status.success(), "an existing file is never overwritten");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_of_a_full_flow_holds_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let (db, secret) = setup(dir.path());
    let server = Server::start(&db, &dir.path().join("log"), 0);
    let mut seen = vec![secret.clone(), PASSWORD.to_string()];
    let pkce = Pkce::new();
    seen.push(pkce.verifier.clone());
    let code = code(&server.address, &pkce, &mut seen).await;
    let body: serde_json::Value = exchange(&server.address, &secret, &code, &pkce)
        .await
        .json()
        .await
        .unwrap();
    for name in ["access_token", "refresh_token", "id_token"] {
        seen.push(body[name].as_str().unwrap().to_string());
    }
    let refresh = body["refresh_token"].as_str().unwrap();
    let next: serde_json::Value = post(
        &server.address,
        "/token",
        &secret,
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    )
    .await
    .json()
    .await
    .unwrap();
    seen.push(next["refresh_token"].as_str().unwrap().to_string());
    let info = plain_client()
        .get(format!("{}/userinfo", server.address))
        .bearer_auth(body["access_token"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(info.status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(
        log.contains("route=/token") && log.contains("client_id=\"app\""),
        "one line per request:\n{log}"
    );
    for value in seen.iter().filter(|v| v.len() >= 8) {
        assert!(!log.contains(value.as_str()), "a secret reached the log: {value}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_database_prints_a_working_setup_link() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fresh.db");
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(&db)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let link = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let link = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.trim().strip_prefix("setup:").map(|s| s.trim().to_string()));
        std::thread::spawn(move || lines.for_each(drop));
        link
    })
    .await
    .unwrap()
    .expect("a setup link on the console");
    let page = browser().get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Create the first administrator"));
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_name_unknown_sign_in_names_by_pseudonym_and_record_deliveries() {
    let (uri, mut bodies) = crate::logout::receiver(200).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    cli(&db, &["init"], None);
    cli(
        &db,
        &["user", "add", "alice", "--password-stdin"],
        Some(&format!("{PASSWORD}\n")),
    );
    let out = cli(
        &db,
        &[
            "client",
            "add",
            "app",
            "--redirect-uri",
            REDIRECT,
            "--backchannel-logout-uri",
            &uri,
            "--json",
        ],
        None,
    );
    let secret = serde_json::from_str::<serde_json::Value>(&out).unwrap()["client_secret"]
        .as_str()
        .unwrap()
        .to_string();
    let log = dir.path().join("log");
    let server = Server::start(&db, &log, 0);

    a_password_typed_as_a_name(&server.address).await;

    let pkce = Pkce::new();
    let signed_in = browser();
    let code = code_in(&signed_in, &server.address, &pkce, &mut Vec::new()).await;
    let tokens: serde_json::Value = exchange(&server.address, &secret, &code, &pkce)
        .await
        .json()
        .await
        .unwrap();
    let hint = tokens["id_token"].as_str().unwrap();
    let resp = signed_in
        .get(format!("{}/logout?id_token_hint={hint}", server.address))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success() || resp.status().is_redirection());
    tokio::time::timeout(std::time::Duration::from_secs(10), bodies.recv())
        .await
        .unwrap()
        .unwrap();
    // A logout the command line queues is signed by the server, with its issuer.
    let again = code_in(&signed_in, &server.address, &pkce, &mut Vec::new()).await;
    assert_eq!(exchange(&server.address, &secret, &again, &pkce).await.status(), 200);
    cli(
        &db,
        &["user", "set-password", "alice", "--password-stdin"],
        Some("another long password\n"),
    );
    let token = crate::logout::next_logout_token(&mut bodies, 15).await;
    let (_, claims) = jwt_parts(&token);
    assert_eq!(claims["iss"], server.address, "the server's issuer, not a CLI default");
    assert!(claims["exp"].as_i64().unwrap() > claims["iat"].as_i64().unwrap());

    the_log_and_audit_name_nobody_by_what_was_typed(&server.log, &db).await;
}

/// A password typed into the username box, at a sign-in that names no account.
async fn a_password_typed_as_a_name(address: &str) {
    let b = browser();
    let probe = Pkce::new();
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("client_id", "app")
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", "openid")
        .append_pair("code_challenge", &probe.challenge)
        .append_pair("code_challenge_method", "S256")
        .finish();
    let page = b.get(format!("{}/authorize?{query}", address)).send().await.unwrap();
    assert_eq!(page.status(), 200, "{:?}", page.headers().get("location"));
    let page = page.text().await.unwrap();
    let mut fields = form_fields(&page);
    assert!(fields.contains_key("request_id"), "{page}");
    fields.insert("username".into(), "Sup3r-Secret-Passw0rd".into());
    fields.insert("password".into(), "x".into());
    let resp = b.post(format!("{}/login", address)).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 401);
}

/// The log records the delivery and an unknown name only by pseudonym; neither the
/// log nor the audit table holds what was typed.
async fn the_log_and_audit_name_nobody_by_what_was_typed(log: &std::path::Path, db: &std::path::Path) {
    let mut text = String::new();
    for _ in 0..50 {
        text = std::fs::read_to_string(log).unwrap();
        if text.contains("back-channel logout delivered") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(text.contains("back-channel logout delivered"), "{text}");
    assert!(
        !text.to_lowercase().contains("sup3r-secret-passw0rd"),
        "the typed name reached the log"
    );
    assert!(text.contains("unknown:"), "the unknown name appears as a pseudonym");
    assert!(
        text.contains("target=") && !text.contains("target_="),
        "audit lines name `target`"
    );
    let filter = tessera::db::audit::Filter::default();
    let (entries, _) =
        tessera::db::testing::with_file(db, |c| tessera::db::audit::list(c, &filter, 10_000, 0)).unwrap();
    let leaked = entries.iter().any(|e| {
        let who = format!("{:?}{:?}", e.actor, e.target).to_lowercase();
        who.contains("sup3r")
    });
    assert!(!leaked, "the typed name reached the audit table");
}
