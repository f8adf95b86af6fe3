//! `tessera export` and `tessera import`: a deployment moved SQLite → PostgreSQL →
//! SQLite keeps its users, clients, keys and live tokens; and what the commands refuse.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use openidconnect::core::{CoreIdToken, CoreIdTokenVerifier, CoreJsonWebKeySet};
use openidconnect::{ClientId, ClientSecret, IssuerUrl, Nonce};

use crate::helpers::*;

/// One issuer for every node of the move, as a deployment keeps its public URL.
const ISSUER: &str = "http://id.test";

fn with_issuer(s: &mut tessera::config::Settings) {
    s.issuer = Some(tessera::config::parse_issuer(ISSUER).unwrap());
}

/// Runs `tessera DB_ARGS ARGS…` with `stdin` as its input.
fn tessera(db_args: &[String], args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(db_args)
        .args(args)
        // Only the flags name the database, whatever the shell running the tests has.
        .env_remove("TESSERA_DB")
        .env_remove("TESSERA_DATABASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sqlite_args(path: &Path) -> Vec<String> {
    vec!["--db".into(), path.display().to_string()]
}

fn export(db_args: &[String], file: &Path) {
    let out = tessera(db_args, &["export", file.to_str().unwrap()], "");
    assert!(out.status.success(), "export failed: {}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("exported"));
}

/// A failure told in one line on standard error, with a failing exit code.
fn one_line_failure(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let text = stderr(out);
    assert_eq!(text.trim().lines().count(), 1, "one line: {text}");
    text
}

/// The tables of an export file (without `exported_at`, which changes every time).
fn tables(file: &Path) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    doc["tables"].clone()
}

/// Where the next hop of the move goes.
enum Hop {
    Postgres(String),
    Sqlite,
}

/// What the relying party holds from before the move.
struct Held {
    secret: String,
    id_token: serde_json::Value,
    access_token: String,
    refresh_token: String,
    kid: serde_json::Value,
}

/// On the app a move ended on: the refresh token still refreshes (and the new tokens
/// are signed with the key from before), the access token from before still
/// introspects active, and the ID token from before verifies against this server's
/// JWKS, which publishes the same key.
async fn assert_still_valid(app: &TestApp, held: &mut Held) {
    let basic = ("app", held.secret.as_str());
    let resp = app
        .token(
            Some(basic),
            &[("grant_type", "refresh_token"), ("refresh_token", &held.refresh_token)],
        )
        .await;
    assert_eq!(resp.status(), 200, "the refresh token refreshes");
    let fresh: serde_json::Value = resp.json().await.unwrap();
    held.refresh_token = fresh["refresh_token"].as_str().unwrap().to_string();
    let new_access = fresh["access_token"].as_str().unwrap();
    assert_eq!(jwt_parts(new_access).0["kid"], held.kid, "the imported key signs");
    assert_eq!(app.introspect(basic, new_access).await["active"], true);

    let introspected = app.introspect(basic, &held.access_token).await;
    assert_eq!(introspected["active"], true, "the old access token: {introspected}");

    let jwks: serde_json::Value = plain_client()
        .get(app.url("/jwks"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kids: Vec<_> = jwks["keys"].as_array().unwrap().iter().map(|k| &k["kid"]).collect();
    assert!(kids.contains(&&held.kid), "{kids:?} publishes {}", held.kid);
    let verifier = CoreIdTokenVerifier::new_confidential_client(
        ClientId::new("app".into()),
        ClientSecret::new(held.secret.clone()),
        IssuerUrl::new(ISSUER.into()).unwrap(),
        serde_json::from_value::<CoreJsonWebKeySet>(jwks).unwrap(),
    );
    let id_token: CoreIdToken = serde_json::from_value(held.id_token.clone()).unwrap();
    id_token
        .claims(&verifier, &Nonce::new("n0nce".into()))
        .expect("the ID token from before verifies against the new server's keys");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_moves_from_sqlite_to_postgresql_and_back_with_its_live_tokens() {
    let hops = match std::env::var("TESSERA_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => vec![Hop::Postgres(url), Hop::Sqlite],
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI moves a deployment through PostgreSQL: set TESSERA_TEST_DATABASE_URL"
            );
            eprintln!(
                "SKIPPED: the PostgreSQL hops of the export/import test (no TESSERA_TEST_DATABASE_URL); moving SQLite to SQLite only"
            );
            vec![Hop::Sqlite]
        }
    };
    let app = spawn_sqlite_with(with_issuer).await;
    app.add_user("ada").await;
    let secret = app.add_client("app", false).await.unwrap();
    let tokens = app.tokens("app", &secret, "ada").await;
    let access_token = tokens["access_token"].as_str().unwrap().to_string();
    let mut held = Held {
        secret,
        id_token: tokens["id_token"].clone(),
        kid: jwt_parts(&access_token).0["kid"].clone(),
        access_token,
        refresh_token: tokens["refresh_token"].as_str().unwrap().to_string(),
    };
    assert_eq!(
        jwt_parts(held.id_token.as_str().unwrap()).0["kid"],
        held.kid,
        "one key signs both (RS256)"
    );

    let work = tempfile::tempdir().unwrap();
    let mut source = app;
    for (n, hop) in hops.iter().enumerate() {
        // The node stops taking writes before its database is exported.
        source.state.db.shutdown();
        let file = work.path().join(format!("move-{n}.json"));
        export(&source.db_args(), &file);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "the export holds hashes and keys");
        }
        let dir = tempfile::tempdir().unwrap();
        let (database_url, target_args) = match hop {
            Hop::Postgres(cluster) => {
                let url = empty_postgres_schema(cluster);
                (Some(url.clone()), vec!["--database-url".to_string(), url])
            }
            Hop::Sqlite => (None, sqlite_args(&dir.path().join("tessera.db"))),
        };
        let out = tessera(&target_args, &["import", file.to_str().unwrap()], "");
        assert!(out.status.success(), "import failed: {}", stderr(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("imported"));

        let app = spawn_imported(dir, database_url, with_issuer).await;
        assert_still_valid(&app, &mut held).await;
        source = app;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_into_a_database_with_rows_is_refused_and_changes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let source = spawn_sqlite_with(|_| {}).await;
    source.add_user("ada").await;
    source.state.db.shutdown();
    let file = work.path().join("source.json");
    export(&source.db_args(), &file);

    for (n, backend) in backends().iter().enumerate() {
        let target = spawn_on(backend).await;
        target.add_user("bea").await;
        let before = work.path().join(format!("before-{n}.json"));
        export(&target.db_args(), &before);

        let out = tessera(&target.db_args(), &["import", file.to_str().unwrap()], "");
        let line = one_line_failure(&out);
        assert!(line.contains("not empty"), "{backend:?}: {line}");

        let after = work.path().join(format!("after-{n}.json"));
        export(&target.db_args(), &after);
        assert_eq!(tables(&before), tables(&after), "{backend:?}: the target is unchanged");
    }
}

#[test]
fn export_never_replaces_a_file() {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("tessera.db");
    let out = tessera(&sqlite_args(&db), &["init"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let file = work.path().join("taken.json");
    std::fs::write(&file, "keep").unwrap();

    let out = tessera(&sqlite_args(&db), &["export", file.to_str().unwrap()], "");
    let line = one_line_failure(&out);
    assert!(line.contains("already exists"), "{line}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");

    // A mistyped database is an error, not an empty export of a new file.
    let missing = work.path().join("missing.db");
    let out = tessera(&sqlite_args(&missing), &["export", "-"], "");
    one_line_failure(&out);
    assert!(!missing.exists());
}

#[test]
fn a_file_that_is_not_a_version_1_export_is_refused_in_one_line() {
    let work = tempfile::tempdir().unwrap();
    let target = work.path().join("new.db");
    let cases = [
        ("{\"format\": \"tessera-exp", "not a Tessera export"),
        ("users,clients\n1,2\n", "not a Tessera export"),
        ("{\"format\":\"tessera-export\",\"version\":2,\"tables\":{}}", "export version 2"),
        (
            "{\"format\":\"tessera-export\",\"version\":1,\"exported_at\":1,\"tables\":{\"users\":{\"columns\":[\"id\"],\"rows\":[[\"x\"]]}}}",
            "table users: row 1, column id: expected an integer",
        ),
    ];
    for (n, (text, expected)) in cases.iter().enumerate() {
        let file = work.path().join(format!("bad-{n}.json"));
        std::fs::write(&file, text).unwrap();
        let out = tessera(&sqlite_args(&target), &["import", file.to_str().unwrap()], "");
        let line = one_line_failure(&out);
        assert!(line.contains(expected), "{text}: {line}");
        // From standard input too.
        let out = tessera(&sqlite_args(&target), &["import", "-"], text);
        let line = one_line_failure(&out);
        assert!(line.contains("standard input") && line.contains(expected), "{line}");
    }
    assert!(!target.exists(), "a refused file creates no database");
}
