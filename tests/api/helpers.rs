//! `spawn_app()` and a browser-like client that fills in the login form.

use std::collections::HashMap;

use reqwest::header::LOCATION;
use scraper::{Html, Selector};
use tessera::clock::Clock;
use tessera::config::Settings;
use tessera::crypto::random::random_id;
use tessera::db::{self, clients::Client};
use tessera::domain::Secret;
use tessera::startup::Application;
use tessera::state::AppState;
use url::Url;

pub const PASSWORD: &str = "correct horse battery";
pub const REDIRECT: &str = "http://localhost:8080/callback";

pub struct TestApp {
    pub address: String,
    pub state: AppState,
    pub clock: Clock,
    _dir: tempfile::TempDir,
}

pub async fn spawn_app() -> TestApp {
    spawn_with(|_| {}).await
}

/// A migrated database with signing keys, made once per test run and copied for each
/// test: generating RSA, P-256 and Ed25519 keys for every test would cost more than
/// most tests themselves.
async fn template() -> &'static std::path::Path {
    static TEMPLATE: tokio::sync::OnceCell<(tempfile::TempDir, std::path::PathBuf)> =
        tokio::sync::OnceCell::const_new();
    let (_, path) = TEMPLATE
        .get_or_init(|| async {
            let dir = tempfile::tempdir().unwrap();
            let live = dir.path().join("live.db");
            let db = db::Db::open(&live, &db::SqliteOptions::default()).unwrap();
            let keep = tessera::oidc::keys::keep_retired(&Default::default());
            tessera::oidc::keys::ensure(&db, &Clock::system(), keep, None)
                .await
                .unwrap();
            // One self-contained file, whatever is still in the write-ahead log.
            let path = dir.path().join("template.db");
            db.backup(&path).await.unwrap();
            db.shutdown();
            (dir, path)
        })
        .await;
    path
}

/// Whether this is the suite's PostgreSQL pass: tests of the SQLite file alone
/// (replication, a full disk) run once, on the SQLite pass.
pub fn on_postgres_pass() -> bool {
    std::env::var("TESSERA_TEST_BACKEND").as_deref() == Ok("postgres")
}

/// The PostgreSQL cluster the suite runs on when `TESSERA_TEST_BACKEND=postgres`
/// (`scripts/test.sh` runs it so, after the SQLite run); `None`: SQLite files.
pub fn postgres_url() -> Option<String> {
    if std::env::var("TESSERA_TEST_BACKEND").as_deref() != Ok("postgres") {
        return None;
    }
    Some(
        std::env::var("TESSERA_TEST_DATABASE_URL")
            .expect("TESSERA_TEST_BACKEND=postgres needs TESSERA_TEST_DATABASE_URL"),
    )
}

/// `url` with every connection's `search_path` set to `schema`: each test gets a
/// schema of its own in the one database of the run.
fn in_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-csearch_path%3D{schema}")
}

fn schema_name(prefix: &str) -> String {
    format!("{prefix}_{}", random_id().to_ascii_lowercase().replace('-', "_"))
}

/// The PostgreSQL twin of `template()`: a schema with the migrations applied and keys
/// generated, once per run, whose keys each test's schema copies.
async fn postgres_template(url: &str) -> &'static str {
    static TEMPLATE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let schema = schema_name("tpl");
            db::testing::postgres_batch(url, &format!("CREATE SCHEMA {schema}")).unwrap();
            let db = db::Db::open_postgres(&in_schema(url, &schema), 2, true).await.unwrap();
            let keep = tessera::oidc::keys::keep_retired(&Default::default());
            tessera::oidc::keys::ensure(&db, &Clock::system(), keep, None)
                .await
                .unwrap();
            schema
        })
        .await
}

/// An empty, migrated database on `backend` (no keys), outside any app; the directory
/// holding a SQLite file lives as long as the test process.
pub async fn empty_db(backend: &Backend) -> db::Db {
    match backend {
        Backend::Sqlite => {
            let dir = Box::leak(Box::new(tempfile::tempdir().unwrap()));
            db::Db::open(&dir.path().join("empty.db"), &db::SqliteOptions::default()).unwrap()
        }
        Backend::Postgres(url) => {
            let schema = schema_name("e");
            db::testing::postgres_batch(url, &format!("CREATE SCHEMA {schema}")).unwrap();
            db::Db::open_postgres(&in_schema(url, &schema), 8, true).await.unwrap()
        }
    }
}

/// A schema for one test, migrated, with the run's pre-generated keys.
async fn postgres_database(url: &str) -> String {
    let template = postgres_template(url).await;
    let schema = schema_name("t");
    db::testing::postgres_batch(url, &format!("CREATE SCHEMA {schema}")).unwrap();
    let own = in_schema(url, &schema);
    db::Db::open_postgres(&own, 1, true).await.unwrap();
    db::testing::postgres_batch(
        &own,
        &format!("INSERT INTO signing_keys SELECT * FROM {template}.signing_keys"),
    )
    .unwrap();
    own
}

/// Where an app keeps its data.
#[derive(Debug, Clone)]
pub enum Backend {
    Sqlite,
    /// The cluster's URL; each app gets a schema of its own in it.
    Postgres(String),
}

/// The backends a storage contract test runs on: SQLite always, and PostgreSQL when
/// the run has a cluster (`TESSERA_TEST_DATABASE_URL`, which `scripts/test.sh` starts;
/// required in CI).
pub fn backends() -> Vec<Backend> {
    match std::env::var("TESSERA_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => vec![Backend::Sqlite, Backend::Postgres(url)],
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs the storage contract on PostgreSQL: set TESSERA_TEST_DATABASE_URL"
            );
            eprintln!(
                "SKIPPED: the PostgreSQL half of this test (no TESSERA_TEST_DATABASE_URL; make test starts a cluster)"
            );
            vec![Backend::Sqlite]
        }
    }
}

pub async fn spawn_on(backend: &Backend) -> TestApp {
    spawn_backend(backend.clone(), |_| {}).await
}

/// `n` nodes on one PostgreSQL schema, as a cluster runs them: the same database,
/// issuer and keys, each on its own port.
pub async fn spawn_nodes(url: &str, n: usize) -> Vec<TestApp> {
    spawn_nodes_with(url, n, |_| {}).await
}

/// `n` nodes on one fresh PostgreSQL schema, speaking as one issuer, each with
/// `adjust` applied to its settings.
pub async fn spawn_nodes_with(url: &str, n: usize, adjust: impl Fn(&mut Settings)) -> Vec<TestApp> {
    let shared = postgres_database(url).await;
    let mut nodes = Vec::new();
    for _ in 0..n {
        let database_url = Some(Secret::from_string(shared.clone()));
        nodes.push(
            start(tempfile::tempdir().unwrap(), database_url, |s| {
                s.issuer = Some(tessera::config::parse_issuer("http://id.test").unwrap());
                adjust(s);
            })
            .await,
        );
    }
    nodes
}

pub async fn spawn_with(adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let backend = match postgres_url() {
        Some(url) => Backend::Postgres(url),
        None => Backend::Sqlite,
    };
    spawn_backend(backend, adjust).await
}

async fn spawn_backend(backend: Backend, adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let database_url = match backend {
        Backend::Postgres(url) => Some(Secret::from_string(postgres_database(&url).await)),
        Backend::Sqlite => {
            std::fs::copy(template().await, dir.path().join("tessera.db")).unwrap();
            None
        }
    };
    start(dir, database_url, adjust).await
}

/// An app on the SQLite file in `dir`, or on `database_url` when given.
async fn start(dir: tempfile::TempDir, database_url: Option<Secret>, adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let mut settings = Settings {
        db_path: dir.path().join("tessera.db"),
        database_url,
        pg_pool: 4,
        listen: "127.0.0.1:0".parse().unwrap(),
        bcrypt_cost: 4,
        workers: 2,
        hash_threads: 2,
        // Most tests sign in many times from 127.0.0.1; the limit tests turn it on.
        rate_limit: false,
        ..Settings::default()
    };
    adjust(&mut settings);
    let clock = Clock::system();
    let app = Application::build(settings, clock.clone()).await.unwrap();
    let address = format!("http://127.0.0.1:{}", app.port());
    let state = app.state().clone();
    tokio::spawn(app.run_until_stopped());
    TestApp {
        address,
        state,
        clock,
        _dir: dir,
    }
}

/// A client that behaves like a browser: keeps cookies, does not follow redirects so
/// every hop can be inspected.
/// One TLS context for every test client: building one loads the system CA bundle,
/// which costs tens of milliseconds, and these tests speak plain HTTP anyway.
fn tls() -> native_tls::TlsConnector {
    static TLS: std::sync::OnceLock<native_tls::TlsConnector> = std::sync::OnceLock::new();
    TLS.get_or_init(|| native_tls::TlsConnector::new().unwrap()).clone()
}

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
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// The flags that point a `tessera` command at this app's database.
    pub fn db_args(&self) -> Vec<String> {
        match &self.state.settings.database_url {
            Some(url) => vec!["--database-url".into(), url.expose().to_string()],
            None => vec!["--db".into(), self.state.settings.db_path.display().to_string()],
        }
    }

    pub async fn add_user(&self, username: &str) -> db::users::User {
        let hash = bcrypt::hash(PASSWORD, 4).unwrap();
        let name = username.to_string();
        let now = self.clock.now();
        self.state
            .db
            .write(move |c| {
                let id = db::users::insert(
                    c,
                    &db::users::NewUser {
                        sub: &random_id(),
                        username: &name,
                        email: Some(&format!("{name}@example.com")),
                        name: Some("Test User"),
                        password_hash: &hash,
                        is_admin: false,
                        now,
                    },
                )?;
                Ok(db::users::find_by_id(c, id)?.unwrap())
            })
            .await
            .unwrap()
    }

    /// Registers a client; returns its secret (None for a public client).
    pub async fn add_client(&self, id: &str, public: bool) -> Option<String> {
        self.add_client_with(id, public, |_| {}).await
    }

    /// Registers a client after `adjust` has changed its settings.
    pub async fn add_client_with(&self, id: &str, public: bool, adjust: impl FnOnce(&mut Client)) -> Option<String> {
        let secret = (!public).then(Secret::generate);
        let mut client = Client::new(
            id,
            &format!("{id} app"),
            secret.as_ref().map(Secret::hash),
            vec![REDIRECT.to_string()],
        );
        client.created_at = self.clock.now();
        adjust(&mut client);
        self.state
            .db
            .write(move |c| db::clients::insert(c, &client))
            .await
            .unwrap();
        secret.map(|s| s.expose().to_string())
    }

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

/// The hidden and text inputs of the first form on a page.
pub fn form_fields(html: &str) -> HashMap<String, String> {
    let doc = Html::parse_document(html);
    let input = Selector::parse("form input").unwrap();
    doc.select(&input)
        .filter_map(|i| {
            let name = i.value().attr("name")?;
            Some((
                name.to_string(),
                i.value().attr("value").unwrap_or_default().to_string(),
            ))
        })
        .collect()
}

pub fn location(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(LOCATION)
        .unwrap_or_else(|| panic!("no Location header (status {})", resp.status()))
        .to_str()
        .unwrap()
        .to_string()
}

/// The query of a redirect to the client, after checking it goes where it should.
pub fn redirect_params(resp: &reqwest::Response) -> HashMap<String, String> {
    let loc = location(resp);
    assert!(loc.starts_with(REDIRECT), "redirected to {loc}");
    Url::parse(&loc).unwrap().query_pairs().into_owned().collect()
}

/// Decodes a JWT's header and claims without verifying (the RP tests verify).
pub fn jwt_parts(token: &str) -> (serde_json::Value, serde_json::Value) {
    use base64::Engine;
    let mut parts = token.split('.');
    let mut decode = || {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts.next().unwrap())
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    (decode(), decode())
}

/// The value of one input on a page (first match by name).
pub fn input_value(html: &str, name: &str) -> Option<String> {
    let doc = Html::parse_document(html);
    let sel = Selector::parse(&format!("input[name=\"{name}\"]")).unwrap();
    doc.select(&sel)
        .next()
        .and_then(|i| i.value().attr("value"))
        .map(str::to_string)
}

/// The text of the element with this id.
pub fn text_of(html: &str, id: &str) -> Option<String> {
    let doc = Html::parse_document(html);
    let sel = Selector::parse(&format!("#{id}")).unwrap();
    doc.select(&sel)
        .next()
        .map(|e| e.text().collect::<String>().trim().to_string())
}

impl TestApp {
    /// Signs in to Tessera's own pages through `/account`; returns the session's CSRF token.
    pub async fn portal_login(&self, browser: &reqwest::Client, username: &str, password: &str) -> String {
        let fields = self.open_login(browser, &self.url("/account")).await;
        let resp = self.submit_login(browser, fields, username, password).await;
        assert_eq!(resp.status(), 302, "portal login failed");
        assert_eq!(location(&resp), "/account");
        self.csrf(browser).await
    }

    /// An administrator `root`, signed in to Tessera's pages: the browser and its CSRF
    /// token.
    pub async fn admin_browser(&self) -> (reqwest::Client, String) {
        let root = self.add_user("root").await;
        self.make_admin(root.id).await;
        let b = browser();
        let csrf = self.portal_login(&b, "root", PASSWORD).await;
        (b, csrf)
    }

    /// The CSRF token on the account page of a signed-in browser.
    pub async fn csrf(&self, browser: &reqwest::Client) -> String {
        let html = browser
            .get(self.url("/account"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        input_value(&html, "csrf").expect("a signed-in account page")
    }

    /// Makes a user an administrator.
    pub async fn make_admin(&self, user_id: i64) {
        self.state
            .db
            .write(move |c| db::users::set_admin(c, user_id, true, 0))
            .await
            .unwrap();
    }

    /// Audit events recorded so far, oldest first, as (event, actor, target).
    pub async fn audit(&self) -> Vec<(String, Option<String>, Option<String>)> {
        let (entries, _) = self
            .state
            .db
            .read(|c| db::audit::list(c, &db::audit::Filter::default(), 10_000, 0))
            .await
            .unwrap();
        entries
            .into_iter()
            .rev()
            .map(|e| (e.event, e.actor, e.target))
            .collect()
    }
}

/// A fresh migrated schema holding the run's keys, for nodes a test starts itself
/// (behind a proxy, or as processes of the binary): its URL, with the schema as each
/// connection's `search_path`.
pub async fn keyed_schema(url: &str) -> String {
    postgres_database(url).await
}

/// A node on exactly `database_url` (a schema from `keyed_schema`, perhaps reached
/// through a proxy the test controls), with `adjust` applied to its settings.
pub async fn spawn_on_url(database_url: &str, adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let database_url = Some(Secret::from_string(database_url.to_string()));
    start(tempfile::tempdir().unwrap(), database_url, adjust).await
}

/// An app on SQLite even in a PostgreSQL run, its settings adjusted first: for tests
/// that move a SQLite deployment elsewhere.
pub async fn spawn_sqlite_with(adjust: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_backend(Backend::Sqlite, adjust).await
}

/// An app on a database made outside the helpers: `tessera.db` in `dir`, or
/// `database_url` when given (as `tessera import` left them).
pub async fn spawn_imported(
    dir: tempfile::TempDir,
    database_url: Option<String>,
    adjust: impl FnOnce(&mut Settings),
) -> TestApp {
    start(dir, database_url.map(Secret::from_string), adjust).await
}

/// The URL of a new, empty schema on the cluster at `url`: not migrated, no keys.
pub fn empty_postgres_schema(url: &str) -> String {
    let schema = schema_name("x");
    db::testing::postgres_batch(url, &format!("CREATE SCHEMA {schema}")).unwrap();
    in_schema(url, &schema)
}

/// The run's PostgreSQL cluster for tests that exist only on it (`what` names them in
/// the messages): required in CI, a loud SKIPPED line elsewhere.
pub fn required_cluster(what: &str) -> Option<String> {
    match std::env::var("TESSERA_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs the {what} tests: set TESSERA_TEST_DATABASE_URL"
            );
            eprintln!("SKIPPED: the {what} tests need PostgreSQL (make test starts a cluster)");
            None
        }
    }
}

/// Whether a tool a test needs runs here (`check` succeeds): without it the test skips
/// loudly, but under CI, where .ci/run installs it, its absence is a failure.
pub fn available(check: &mut std::process::Command, what: &str) -> bool {
    use std::process::Stdio;
    let ok = check
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is not installed; .ci/run installs it"
        );
        eprintln!("SKIPPED: {what} is not installed (.ci/run installs it)");
    }
    ok
}

/// Runs the `tessera` binary with `args` and `env`, `stdin` written to it; its
/// standard output, the command's failure failing the test.
pub fn tessera_ok(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .envs(env.iter().copied())
        .env("TESSERA_BCRYPT_COST", "4")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl TestApp {
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

/// The sender the mail tests configure.
pub const MAIL_FROM: &str = "Example ID <id@example.org>";

/// An app on `backend` that sends mail through a real SMTP server on loopback, with
/// `adjust` applied to its settings after mail is configured.
pub async fn spawn_mail_on(backend: &Backend, adjust: impl FnOnce(&mut Settings)) -> (TestApp, crate::smtp::SmtpSink) {
    let sink = crate::smtp::SmtpSink::start().await;
    let smtp = tessera::config::smtp::Smtp::parse(&sink.url(), None, Some(MAIL_FROM)).unwrap();
    let app = spawn_backend(backend.clone(), move |s| {
        s.smtp = Some(smtp);
        s.org_name = "Example Org".into();
        adjust(s);
    })
    .await;
    (app, sink)
}

/// `spawn_mail_on` on the backend `spawn_with` picks.
pub async fn spawn_mail(adjust: impl FnOnce(&mut Settings)) -> (TestApp, crate::smtp::SmtpSink) {
    let backend = match postgres_url() {
        Some(url) => Backend::Postgres(url),
        None => Backend::Sqlite,
    };
    spawn_mail_on(&backend, adjust).await
}

impl TestApp {
    /// Turns on an authenticator app from the account page of a signed-in browser;
    /// returns its secret (the enrolment spent the current step's code).
    pub async fn enrol_totp(&self, b: &reqwest::Client, csrf: &str) -> String {
        let html = b
            .get(self.url("/account/totp"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let key = text_of(&html, "totp-secret").expect("the key is shown");
        let code = tessera::auth::totp::code_at(&key, self.clock.now()).unwrap();
        let enrolled = b
            .post(self.url("/account/totp"))
            .form(&[("csrf", csrf), ("code", code.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(enrolled.status(), 200, "the authenticator app is on");
        key
    }
}
