//! The `tessera` binary's administration commands, run as an operator runs them.

use std::process::{Command, Output};

use tessera::db::testing;

fn tessera(db: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Output {
    tessera_with(db, args, stdin, &[])
}

fn tessera_with(db: &std::path::Path, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    crate::helpers::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .arg("--db")
            .arg(db)
            .args(args)
            .envs(env.iter().copied())
            .env("TESSERA_BCRYPT_COST", "4"),
        stdin,
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A new database made as an operator makes one: `tessera init`.
fn initialised(dir: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    let db = dir.path().join(name);
    let out = tessera(&db, &["init"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("created"));
    db
}

/// The audit events recorded so far, as (event, actor, target), read from the file.
fn audit(db: &std::path::Path) -> Vec<(String, String, String)> {
    let filter = tessera::db::audit::Filter::default();
    let (entries, _) = testing::with_file(db, |c| tessera::db::audit::list(c, &filter, 10_000, 0)).unwrap();
    entries
        .into_iter()
        .rev()
        .map(|e| (e.event, e.actor.unwrap_or_default(), e.target.unwrap_or_default()))
        .collect()
}

#[test]
fn users_and_clients_are_managed_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = initialised(&dir, "cli.db");

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
    manage_clients(&db);
    let carol = tessera(
        &db,
        &["user", "add", "carol", "--password-stdin"],
        Some("s3cret-pass\n"),
    );
    assert!(carol.status.success(), "{}", stderr(&carol));
    assert!(tessera(&db, &["user", "disable", "carol"], None).status.success());
    assert!(!tessera(&db, &["user", "disable", "nobody"], None).status.success());
}

/// A client added, shown without its secret, its secret rotated; a bad redirect URI
/// refused; a public client deleted once, not twice.
fn manage_clients(db: &std::path::Path) {
    let add = tessera(
        db,
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

    let show = tessera(db, &["client", "show", "grafana", "--json"], None);
    let shown = stdout(&show);
    assert!(!shown.contains(&secret), "the secret is shown only once");

    let rotated = tessera(db, &["client", "rotate-secret", "grafana", "--json"], None);
    let rotated: serde_json::Value = serde_json::from_str(&stdout(&rotated)).unwrap();
    assert_ne!(rotated["client_secret"].as_str().unwrap(), secret);

    let bad = tessera(db, &["client", "add", "x", "--redirect-uri", "https://a/cb#frag"], None);
    assert!(!bad.status.success());
    let public = tessera(
        db,
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

    assert!(tessera(db, &["client", "delete", "spa"], None).status.success());
    assert!(!tessera(db, &["client", "delete", "spa"], None).status.success());
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
fn a_missing_or_empty_metrics_token_file_stops_the_start_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cfg.db");
    let missing = dir.path().join("no-such-token");
    let empty = dir.path().join("empty-token");
    std::fs::write(&empty, "\n").unwrap();
    for (file, says) in [(&missing, "cannot read"), (&empty, "is empty")] {
        let file = file.display().to_string();
        let out = tessera(
            &db,
            &["serve", "--listen", "127.0.0.1:0", "--metrics-token-file", &file],
            None,
        );
        assert!(!out.status.success());
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("`metrics_token_file`") && err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // The environment variable is read the same way.
    let missing = missing.display().to_string();
    let out = tessera_with(&db, &["serve"], None, &[("TESSERA_METRICS_TOKEN_FILE", &missing)]);
    assert!(stderr(&out).contains("`metrics_token_file`"), "{}", stderr(&out));
}

#[test]
fn admin_clients_group_rules_and_mfa_reset_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = initialised(&dir, "cli.db");
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
    group_rules_and_mfa_reset(&db);
}

/// A client limited to a group creates it, a person joins it; resetting a second
/// factor nobody has, or for nobody.
fn group_rules_and_mfa_reset(db: &std::path::Path) {
    let grouped = tessera(
        db,
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
        db,
        &["user", "add", "bob", "--group", "staff", "--password-stdin"],
        Some("correct horse battery\n"),
    );
    assert!(member.status.success());
    let users = stdout(&tessera(db, &["user", "list", "--json"], None));
    assert!(users.contains("bob"));

    let add = tessera(
        db,
        &["user", "add", "alice", "--password-stdin"],
        Some("correct horse battery\n"),
    );
    assert!(add.status.success(), "{}", String::from_utf8_lossy(&add.stderr));
    let none = tessera(db, &["user", "reset-mfa", "alice"], None);
    assert!(stdout(&none).contains("had no authenticator"));
    let unknown = tessera(db, &["user", "reset-mfa", "nobody"], None);
    assert!(!unknown.status.success());
}

#[test]
fn commands_on_a_mistyped_database_path_fail_without_creating_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("tesera.db");
    for args in [
        vec!["user", "list"],
        vec!["client", "list"],
        vec!["keys", "list"],
        vec!["check"],
        vec!["user", "disable", "alice"],
        vec!["backup", "/tmp/never-written.db"],
    ] {
        let out = tessera(&missing, &args, Some("s3cret-pass\n"));
        assert!(!out.status.success(), "{args:?} succeeded on a missing database");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("tesera.db"), "the line names the path: {err}");
        assert!(!missing.exists(), "{args:?} created the database");
    }
    let add = tessera(
        &missing,
        &["user", "add", "alice", "--password-stdin"],
        Some("s3cret-pass\n"),
    );
    assert!(!add.status.success());
    assert!(!missing.exists());
}

#[test]
fn check_opens_read_only_and_never_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let db = initialised(&dir, "ro.db");
    // Pretend the file is from an older release: check must report, not upgrade.
    let version = testing::with_file(&db, testing::schema_version).unwrap();
    testing::with_file(&db, |c| testing::set_schema_version(c, version - 1)).unwrap();
    let modified = std::fs::metadata(&db).unwrap().modified().unwrap();
    let out = tessera(&db, &["check"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = testing::with_file(&db, testing::schema_version).unwrap();
    assert_eq!(after, version - 1, "check migrated the database");
    assert_eq!(std::fs::metadata(&db).unwrap().modified().unwrap(), modified);
}

#[test]
fn backups_are_created_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = initialised(&dir, "b.db");
    let copy = dir.path().join("copy.db");
    let out = tessera(&db, &["backup", copy.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let mode = std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the backup holds hashes and keys: {mode:o}");
    assert!(stdout(&tessera(&copy, &["check"], None)).contains("integrity ok"));
}

#[test]
fn the_command_line_goes_through_the_admin_operations_and_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let db = initialised(&dir, "audit.db");
    let add = tessera(
        &db,
        &[
            "user",
            "add",
            "root",
            "--admin",
            "--email",
            "root@example.com",
            "--email-verified",
            "--password-stdin",
        ],
        Some("s3cret-pass\n"),
    );
    assert!(add.status.success(), "{}", stderr(&add));
    // The last administrator is protected on the command line as on the admin pages.
    let refused = tessera(&db, &["user", "disable", "root"], None);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("last active administrator"),
        "{}",
        stderr(&refused)
    );
    let app = tessera(
        &db,
        &["client", "add", "app", "--redirect-uri", "https://app.example/cb"],
        None,
    );
    assert!(app.status.success(), "{}", stderr(&app));
    for args in [
        vec!["user", "set-password", "root", "--password-stdin"],
        vec!["user", "unlock", "root"],
        vec!["client", "rotate-secret", "app"],
        vec!["client", "delete", "app"],
    ] {
        let out = tessera(&db, &args, Some("another-pass\n"));
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let events = audit(&db);
    for (event, target) in [
        ("admin.user_created", "root"),
        ("admin.client_created", "client:app"),
        ("admin.password_set", "root"),
        ("admin.user_unlocked", "root"),
        ("admin.client_secret_rotated", "client:app"),
        ("admin.client_deleted", "client:app"),
    ] {
        assert!(
            events.iter().any(|(e, a, t)| e == event && a == "cli" && t == target),
            "{event} on {target} by cli missing from {events:?}"
        );
    }
    let list = stdout(&tessera(&db, &["user", "list", "--json"], None));
    assert!(list.contains("root@example.com"));
    let verified = testing::with_file(&db, |c| tessera::db::users::find_by_username(c, "root"))
        .unwrap()
        .unwrap()
        .email_verified;
    assert!(verified, "--email-verified marks the address verified");
}

#[test]
fn administration_commands_need_no_master_key_on_a_sealed_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sealed.db");
    let key = format!("{}A=", "A".repeat(42));
    let out = tessera_with(&db, &["init"], None, &[("TESSERA_MASTER_KEY", &key)]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The signing keys are sealed now; user and client commands sign nothing.
    let add = tessera(
        &db,
        &["user", "add", "alice", "--admin", "--password-stdin"],
        Some("s3cret-pass\n"),
    );
    assert!(add.status.success(), "{}", stderr(&add));
    let client = tessera(
        &db,
        &["client", "add", "app", "--redirect-uri", "https://app.example/cb"],
        None,
    );
    assert!(client.status.success(), "{}", stderr(&client));
    // What needs the keys still says so.
    let rotate = tessera(&db, &["keys", "rotate"], None);
    assert!(!rotate.status.success());
}

#[test]
fn the_database_url_is_checked_before_anything_runs() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(args)
            .env_remove("TESSERA_DB")
            .env_remove("TESSERA_DATABASE_URL")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let last = err.lines().last().unwrap_or_default().to_string();
        assert!(last.starts_with("error: "), "one line naming the problem: {err}");
        last
    };
    let both = run(&[
        "--db",
        "x.db",
        "--database-url",
        "postgres://u:pw@127.0.0.1/x",
        "user",
        "list",
    ]);
    assert!(both.contains("given together with `db`"), "{both}");
    let scheme = run(&["--database-url", "mysql://u@127.0.0.1/x", "user", "list"]);
    assert!(scheme.contains("postgres://"), "{scheme}");
    let mode = run(&[
        "--database-url",
        "postgres://u@127.0.0.1/x?sslmode=allow",
        "user",
        "list",
    ]);
    assert!(mode.contains("sslmode allow"), "{mode}");
    let down = run(&[
        "--database-url",
        "postgres://u:secret-pw@127.0.0.1:1/x?sslmode=disable",
        "user",
        "list",
    ]);
    assert!(
        down.contains("cannot reach the database") && !down.contains("secret-pw"),
        "{down}"
    );
}
