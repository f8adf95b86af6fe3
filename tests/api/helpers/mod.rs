//! `spawn_app()`: the real server on port 0 with a database of its own (a SQLite file
//! or a PostgreSQL schema), and the modules the tests share.

mod html;
mod portal;
mod relying_party;
mod tools;

pub use html::*;
pub use portal::Portal;
pub use relying_party::*;
pub use tools::*;

use tessera::clock::Clock;
use tessera::config::Settings;
use tessera::crypto::random::random_id;
use tessera::db::{self, clients::Client};
use tessera::domain::Secret;
use tessera::startup::Application;
use tessera::state::AppState;

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

    /// The person stored under `username`, if any.
    pub async fn user(&self, username: &str) -> Option<db::users::User> {
        let name = username.to_string();
        self.state
            .db
            .read(move |c| db::users::find_by_username(c, &name))
            .await
            .unwrap()
    }

    /// The client stored under `id`, if any.
    pub async fn client(&self, id: &str) -> Option<Client> {
        let id = id.to_string();
        self.state.db.read(move |c| db::clients::find(c, &id)).await.unwrap()
    }

    /// How many passkeys the person `user_id` has.
    pub async fn passkey_count(&self, user_id: i64) -> i64 {
        self.state
            .db
            .read(move |c| db::passkeys::count_for_user(c, user_id))
            .await
            .unwrap()
    }

    /// A virtual authenticator for this app's WebAuthn relying party.
    pub fn authenticator(&self) -> tessera::crypto::webauthn_testing::Authenticator {
        let rp = tessera::crypto::webauthn::RelyingParty::of_issuer(&self.address).unwrap();
        tessera::crypto::webauthn_testing::Authenticator::new(&rp).unwrap()
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
