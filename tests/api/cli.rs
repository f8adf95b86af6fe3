//! The `tessera` binary's administration commands, run as an operator runs them.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn tessera(db: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("TESSERA_BCRYPT_COST", "4")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn users_and_clients_are_managed_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.db");

    let out = tessera(
        &db,
        &[
            "user",
            "add",
            "alice",
            "--email",
            "alice@example.com",
            "--admin",
            "--password-stdin",
        ],
        Some("s3cret-pass\n"),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dup = tessera(
        &db,
        &["user", "add", "ALICE", "--password-stdin"],
        Some("s3cret-pass\n"),
    );
    assert!(!dup.status.success(), "usernames are unique regardless of case");
    let short = tessera(&db, &["user", "add", "bob", "--password-stdin"], Some("short\n"));
    assert!(!short.status.success());
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 8"));

    let list = tessera(&db, &["user", "list", "--json"], None);
    let users: serde_json::Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(users.as_array().unwrap().len(), 1);
    assert_eq!(users[0]["admin"], true);

    let add = tessera(
        &db,
        &[
            "client",
            "add",
            "grafana",
            "--redirect-uri",
            "https://grafana.example.com/login/generic_oauth",
            "--json",
        ],
        None,
    );
    assert!(add.status.success(), "{}", String::from_utf8_lossy(&add.stderr));
    let created: serde_json::Value = serde_json::from_str(&stdout(&add)).unwrap();
    let secret = created["client_secret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 43);

    let show = tessera(&db, &["client", "show", "grafana", "--json"], None);
    let shown = stdout(&show);
    assert!(!shown.contains(&secret), "the secret is shown only once");

    let rotated = tessera(&db, &["client", "rotate-secret", "grafana", "--json"], None);
    let rotated: serde_json::Value = serde_json::from_str(&stdout(&rotated)).unwrap();
    assert_ne!(rotated["client_secret"].as_str().unwrap(), secret);

    let bad = tessera(
        &db,
        &["client", "add", "x", "--redirect-uri", "https://a/cb#frag"],
        None,
    );
    assert!(!bad.status.success());
    let public = tessera(
        &db,
        &[
            "client",
            "add",
            "spa",
            "--public",
            "--redirect-uri",
            "http://127.0.0.1:3000/cb",
            "--json",
        ],
        None,
    );
    let public: serde_json::Value = serde_json::from_str(&stdout(&public)).unwrap();
    assert!(public["client_secret"].is_null());

    assert!(tessera(&db, &["client", "delete", "spa"], None).status.success());
    assert!(!tessera(&db, &["client", "delete", "spa"], None).status.success());
    assert!(tessera(&db, &["user", "disable", "alice"], None).status.success());
    assert!(!tessera(&db, &["user", "disable", "nobody"], None).status.success());
}

#[test]
fn invalid_settings_fail_at_start_with_one_line_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cfg.db");
    for (args, setting) in [
        (vec!["serve", "--listen", "not-an-address"], "listen"),
        (vec!["serve", "--bcrypt-cost", "99"], "bcrypt_cost"),
        (vec!["serve", "--issuer", "ftp://x"], "issuer"),
        (vec!["serve", "--sqlite-wal", "maybe"], "sqlite_wal"),
        (vec!["serve", "--metrics-token", "short"], "metrics_token"),
        (
            vec!["serve", "--audit-retention-days", "forever"],
            "audit_retention_days",
        ),
    ] {
        let out = tessera(&db, &args, None);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("`{setting}`")), "{err}");
    }
}

#[test]
fn admin_clients_group_rules_and_mfa_reset_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.db");
    let out = tessera(
        &db,
        &[
            "client",
            "add",
            "ops",
            "--grant-type",
            "client_credentials",
            "--admin",
            "--access-token-ttl",
            "120",
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = stdout(&tessera(&db, &["client", "show", "ops", "--json"], None));
    let v: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        (v["admin"].as_bool(), v["access_token_ttl"].as_i64()),
        (Some(true), Some(120))
    );

    let public_admin = tessera(
        &db,
        &[
            "client",
            "add",
            "spa",
            "--public",
            "--redirect-uri",
            "https://spa.example/cb",
            "--admin",
        ],
        None,
    );
    assert!(!public_admin.status.success());
    assert!(String::from_utf8_lossy(&public_admin.stderr).contains("admin"));
    let short_ttl = tessera(
        &db,
        &[
            "client",
            "add",
            "web",
            "--redirect-uri",
            "https://web.example/cb",
            "--access-token-ttl",
            "5",
        ],
        None,
    );
    assert!(String::from_utf8_lossy(&short_ttl.stderr).contains("access_token_ttl"));
    let grouped = tessera(
        &db,
        &[
            "client",
            "add",
            "wiki",
            "--redirect-uri",
            "https://wiki.example/cb",
            "--allowed-group",
            "staff",
            "--json",
        ],
        None,
    );
    assert!(grouped.status.success());
    assert!(String::from_utf8_lossy(&grouped.stderr).contains("group staff created"));
    let member = tessera(
        &db,
        &["user", "add", "bob", "--group", "staff", "--password-stdin"],
        Some("correct horse battery\n"),
    );
    assert!(member.status.success());
    let users = stdout(&tessera(&db, &["user", "list", "--json"], None));
    assert!(users.contains("bob"));

    let add = tessera(
        &db,
        &["user", "add", "alice", "--password-stdin"],
        Some("correct horse battery\n"),
    );
    assert!(add.status.success(), "{}", String::from_utf8_lossy(&add.stderr));
    let none = tessera(&db, &["user", "reset-mfa", "alice"], None);
    assert!(stdout(&none).contains("had no authenticator"));
    let unknown = tessera(&db, &["user", "reset-mfa", "nobody"], None);
    assert!(!unknown.status.success());
}
