//! `tessera apply` and `tessera dump-config` (docs/APPLY.md): create, update, no-op,
//! dry run, prune, secret references, refusals that name their place and apply
//! nothing, the audit, the dump's round trip and `serve --apply`.

use std::path::{Path, PathBuf};
use std::process::Command;

use tessera::apply::{apply_file, Mode};
use tessera::db;

use crate::helpers::*;

const SECRET_A: &str = "a-client-secret-of-more-than-32-characters";
const SECRET_B: &str = "another-client-secret-longer-than-32-chars";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `tessera apply FILE [flags]` on the app's database: (success, stdout, stderr).
fn run_apply(app: &TestApp, file: &Path, flags: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(app.db_args())
        .arg("apply")
        .arg(file)
        .args(flags)
        .envs(env.iter().copied())
        .env("TESSERA_BCRYPT_COST", "4")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn apply_ok(app: &TestApp, file: &Path, flags: &[&str], env: &[(&str, &str)]) -> String {
    let (ok, out, err) = run_apply(app, file, flags, env);
    assert!(ok, "apply failed: {err}");
    out
}

async fn apply(app: &TestApp, file: &Path) -> Result<String, String> {
    apply_file(&app.state.ctx(), &app.state.upstreams, file, Mode::default()).await
}

async fn client(app: &TestApp, id: &str) -> Option<db::clients::Client> {
    let id = id.to_string();
    app.state.db.read(move |c| db::clients::find(c, &id)).await.unwrap()
}

async fn group_names(app: &TestApp) -> Vec<String> {
    app.state
        .db
        .read(db::groups::list)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.name)
        .collect()
}

async fn members(app: &TestApp, group: &str) -> Vec<String> {
    let group = group.to_string();
    app.state
        .db
        .read(move |c| {
            let id = db::groups::id_of(c, &group)?.unwrap();
            Ok(db::groups::members(c, id)?.into_iter().map(|m| m.username).collect())
        })
        .await
        .unwrap()
}

async fn client_credentials(app: &TestApp, id: &str, secret: &str) -> u16 {
    app.token(Some((id, secret)), &[("grant_type", "client_credentials")])
        .await
        .status()
        .as_u16()
}

const OFFICE: &str = r#"
[[groups]]
name = "staff"
members = ["ada"]

[[users]]
username = "ada"
email = "ada@example.org"
name = "Ada"

[[clients]]
client_id = "wiki"
name = "Wiki"
redirect_uris = ["https://wiki.example.org/cb"]
allowed_groups = ["staff"]
secret_env = "WIKI_SECRET"

[[apps]]
id = "files"
url = "https://files.example.org"
allowed_groups = ["staff"]
"#;

#[tokio::test]
async fn a_file_is_created_then_a_second_apply_prints_no_changes() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "office.toml", OFFICE);
    let env = [("WIKI_SECRET", SECRET_A)];
    let out = apply_ok(&app, &file, &[], &env);
    for line in [
        "+ group staff",
        "+ user ada",
        "~ group staff: members [] -> [\"ada\"]",
        "+ client wiki",
        "+ app files",
    ] {
        assert!(out.lines().any(|l| l == line), "{line} in:\n{out}");
    }
    assert!(!out.contains(SECRET_A), "a referenced secret is never printed");
    let wiki = client(&app, "wiki").await.unwrap();
    assert_eq!(wiki.redirect_uris, ["https://wiki.example.org/cb"]);
    assert_eq!(wiki.allowed_groups, ["staff"]);
    assert_eq!(members(&app, "staff").await, ["ada"]);
    assert_eq!(apply_ok(&app, &file, &[], &env), "no changes\n");
}

#[tokio::test]
async fn an_edit_is_one_line_per_field_and_is_applied() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let env = [("WIKI_SECRET", SECRET_A)];
    apply_ok(&app, &write(dir.path(), "v1.toml", OFFICE), &[], &env);
    app.add_user("bob").await;
    let v2 = OFFICE
        .replace("https://wiki.example.org/cb", "https://wiki.example.org/oauth")
        .replace("name = \"Wiki\"", "name = \"Wiki\"\nconsent_required = true")
        .replace("members = [\"ada\"]", "members = [\"bob\"]")
        .replace(
            "allowed_groups = [\"staff\"]\n\"#",
            "allowed_groups = [\"staff\"]\nrequire_mfa = true\n",
        );
    let v2 = format!("{v2}require_mfa = true\n");
    let out = apply_ok(&app, &write(dir.path(), "v2.toml", &v2), &[], &env);
    let expected = [
        "~ group staff: members [\"ada\"] -> [\"bob\"]",
        "~ client wiki: redirect_uris [\"https://wiki.example.org/cb\"] -> [\"https://wiki.example.org/oauth\"]",
        "~ client wiki: consent_required false -> true",
        "~ app files: require_mfa false -> true",
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected, "{out}");
    let wiki = client(&app, "wiki").await.unwrap();
    assert_eq!(wiki.redirect_uris, ["https://wiki.example.org/oauth"]);
    assert!(wiki.consent_required);
    assert_eq!(members(&app, "staff").await, ["bob"]);
    let files = tessera::admin::apps::get(&app.state.ctx(), "files").await.unwrap();
    assert!(files.require_mfa);
    let audit = app.audit().await;
    for event in [
        "admin.client_updated",
        "admin.app_updated",
        "admin.group_member_removed",
    ] {
        assert!(
            audit
                .iter()
                .any(|(e, actor, _)| e == event && actor.as_deref() == Some("apply")),
            "{event} by apply: {audit:?}"
        );
    }
}

#[tokio::test]
async fn a_dry_run_prints_the_diff_and_changes_nothing() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "office.toml", OFFICE);
    let before = app.audit().await.len();
    let out = apply_ok(&app, &file, &["--dry-run"], &[("WIKI_SECRET", SECRET_A)]);
    assert!(out.starts_with("+ group staff\n+ user ada\n"), "{out}");
    assert!(
        out.ends_with("+ client wiki\n+ app files\ndry run: nothing applied\n"),
        "{out}"
    );
    assert!(client(&app, "wiki").await.is_none());
    assert!(group_names(&app).await.is_empty());
    assert_eq!(app.audit().await.len(), before, "nothing audited either");
}

#[tokio::test]
async fn every_change_is_audited_with_the_actor_apply() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("APPLY_AUDIT_WIKI", SECRET_A);
    let text = OFFICE.replace("WIKI_SECRET", "APPLY_AUDIT_WIKI");
    apply(&app, &write(dir.path(), "a.toml", &text)).await.unwrap();
    let audit = app.audit().await;
    for (event, target) in [
        ("admin.group_created", "staff"),
        ("admin.user_created", "ada"),
        ("admin.group_member_added", "ada"),
        ("admin.client_created", "client:wiki"),
        ("admin.client_secret_set", "client:wiki"),
        ("admin.app_created", "app:files"),
        ("admin.password_link_created", "ada"),
    ] {
        assert!(
            audit
                .iter()
                .any(|(e, a, t)| e == event && a.as_deref() == Some("apply") && t.as_deref() == Some(target)),
            "{event} {target}: {audit:?}"
        );
    }
}

#[tokio::test]
async fn prune_removes_what_the_file_leaves_out_of_its_tables_only() {
    let app = spawn_app().await;
    let root = app.add_user("root").await;
    app.make_admin(root.id).await;
    app.add_client("old", false).await;
    let dir = tempfile::tempdir().unwrap();
    apply(&app, &write(dir.path(), "g.toml", "[[groups]]\nname = \"old\"\n"))
        .await
        .unwrap();
    let file = write(
        dir.path(),
        "p.toml",
        "[[groups]]\nname = \"staff\"\n\n[[clients]]\nclient_id = \"new\"\npublic = true\nredirect_uris = [\"http://localhost:1/cb\"]\n",
    );
    // Without --prune, what the file leaves out stays.
    let out = apply(&app, &file).await.unwrap();
    assert_eq!(out, "+ group staff\n+ client new\n");
    assert!(client(&app, "old").await.is_some());
    let out = apply_ok(&app, &file, &["--prune"], &[]);
    assert_eq!(out, "- client old\n- group old\n");
    assert!(client(&app, "old").await.is_none());
    assert_eq!(group_names(&app).await, ["staff"]);
    assert!(
        tessera::admin::users::id_by_username(&app.state.ctx(), "root")
            .await
            .unwrap()
            .is_some(),
        "no [[users]] table: users are not pruned"
    );
}

#[tokio::test]
async fn prune_never_removes_the_last_administrator() {
    let app = spawn_app().await;
    let root = app.add_user("root").await;
    app.make_admin(root.id).await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "u.toml",
        "[[groups]]\nname = \"staff\"\n\n[[users]]\nusername = \"ada\"\nemail = \"ada@example.org\"\n",
    );
    let (ok, out, err) = run_apply(&app, &file, &["--prune"], &[]);
    assert!(!ok && out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("last active administrator `root`"), "{err}");
    assert!(tessera::admin::users::id_by_username(&app.state.ctx(), "ada")
        .await
        .unwrap()
        .is_none());
    assert!(group_names(&app).await.is_empty(), "all or nothing");
    // Demoting the last administrator in the file is refused the same way.
    let demote = write(dir.path(), "d.toml", "[[users]]\nusername = \"root\"\nadmin = false\n");
    let err = apply(&app, &demote).await.unwrap_err();
    assert!(
        err.starts_with(&format!("{}:3: users[root].admin: ", demote.display())),
        "{err}"
    );
    // Declared, the administrator stays and the rest is pruned.
    let keep = write(
        dir.path(),
        "k.toml",
        "[[users]]\nusername = \"root\"\nadmin = true\n\n[[users]]\nusername = \"ada\"\n",
    );
    app.add_user("bob").await;
    let out = apply_ok(&app, &keep, &["--prune"], &[]);
    assert!(out.starts_with("+ user ada\n"), "{out}");
    assert!(out.ends_with("- user bob\n"), "{out}");
}

#[tokio::test]
async fn referenced_secrets_are_exactly_the_clients_secret() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let secret_file = write(dir.path(), "svc.secret", &format!("{SECRET_B}\n"));
    let text = format!(
        "[[clients]]\nclient_id = \"svc-env\"\ngrant_types = [\"client_credentials\"]\nsecret_env = \"SVC_SECRET\"\n\n\
         [[clients]]\nclient_id = \"svc-file\"\ngrant_types = [\"client_credentials\"]\nsecret_file = \"{}\"\n\n\
         [[clients]]\nclient_id = \"svc-new\"\ngrant_types = [\"client_credentials\"]\n",
        secret_file.display()
    );
    let file = write(dir.path(), "s.toml", &text);
    let out = apply_ok(&app, &file, &[], &[("SVC_SECRET", SECRET_A)]);
    assert_eq!(client_credentials(&app, "svc-env", SECRET_A).await, 200);
    assert_eq!(
        client_credentials(&app, "svc-file", SECRET_B).await,
        200,
        "the file's newline is no part of it"
    );
    // A confidential client without a reference gets a secret printed once.
    let generated = out
        .lines()
        .find_map(|l| l.strip_prefix("  client svc-new secret: "))
        .and_then(|l| l.strip_suffix(" (shown once)"))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(client_credentials(&app, "svc-new", generated).await, 200);
    assert_eq!(apply_ok(&app, &file, &[], &[("SVC_SECRET", SECRET_A)]), "no changes\n");
    // Another secret is an update: the old one stops working.
    let out = apply_ok(&app, &file, &[], &[("SVC_SECRET", SECRET_B)]);
    assert_eq!(out, "~ client svc-env: secret changed\n");
    // The server reads a registration again once its one-second cache has expired.
    app.clock.advance(2);
    assert_eq!(client_credentials(&app, "svc-env", SECRET_A).await, 401);
    assert_eq!(client_credentials(&app, "svc-env", SECRET_B).await, 200);
}

#[tokio::test]
async fn a_bad_file_names_its_place_in_one_line_and_applies_nothing() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let head = "[[groups]]\nname = \"staff\"\n\n[[clients]]\nclient_id = \"a\"\n";
    let cases: &[(&str, &str)] = &[
        ("[[clients]\n", ":1: not valid TOML"),
        ("redirect_uri = [\"https://a.example/cb\"]\n", ":6: clients[a].redirect_uri: unknown key"),
        (
            "redirect_uris = [\n  \"https://a.example/cb\",\n  \"a.example/cb\",\n]\n",
            ":8: clients[a].redirect_uris[1]: a.example/cb",
        ),
        (
            "redirect_uris = [\"https://a.example/cb\"]\n\n[[clients]]\nclient_id = \"a\"\n",
            ":8: clients[a]: `a` is declared twice",
        ),
        ("public = \"yes\"\n", ":6: clients[a].public: expected true or false, found a string"),
        (
            "redirect_uris = [\"https://a.example/cb\"]\nallowed_groups = [\"staff\", \"nope\"]\n",
            ":7: clients[a].allowed_groups[1]: there is no group `nope`",
        ),
        (
            "redirect_uris = [\"https://a.example/cb\"]\nsecret_env = \"TESSERA_APPLY_TEST_UNSET\"\n",
            ":7: clients[a].secret_env: the environment variable TESSERA_APPLY_TEST_UNSET is not set",
        ),
        ("client_secret = \"hunter2hunter2\"\n", ":6: clients[a].client_secret: secrets are never written in the file: use secret_file or secret_env"),
        (
            "redirect_uris = [\"https://a.example/cb\"]\n\n[[apps]]\nid = \"x\"\nurl = \"https://x.example.org/path\"\n",
            ":10: apps[x].url: give the app's origin",
        ),
        (
            "redirect_uris = [\"https://a.example/cb\"]\n\n[[groups]]\nname = \"ops\"\nmembers = [\"nobody\"]\n",
            ":10: groups[ops].members[0]: there is no user `nobody`",
        ),
    ];
    for (i, (tail, expected)) in cases.iter().enumerate() {
        let text = if tail.starts_with("[[clients]\n") {
            tail.to_string()
        } else {
            format!("{head}{tail}")
        };
        let file = write(dir.path(), &format!("bad{i}.toml"), &text);
        let (ok, out, err) = run_apply(&app, &file, &[], &[]);
        assert!(!ok, "{text} was accepted: {out}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        let want = format!("error: {}{expected}", file.display());
        assert!(err.starts_with(&want), "case {i}:\n{text}\nwant {want}\ngot  {err}");
    }
    assert!(client(&app, "a").await.is_none(), "nothing applied");
    assert!(
        group_names(&app).await.is_empty(),
        "not even what came before the bad line"
    );
}

#[tokio::test]
async fn new_users_get_a_link_to_choose_their_password() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let text = "[[users]]\nusername = \"ada\"\nemail = \"ada@example.org\"\n\n[[users]]\nusername = \"nomail\"\n";
    let out = apply(&app, &write(dir.path(), "u.toml", text)).await.unwrap();
    let link = out
        .lines()
        .find_map(|l| l.strip_prefix("  user ada: choose a password at "))
        .and_then(|l| l.strip_suffix(" (valid 7 days, once)"))
        .unwrap_or_else(|| panic!("{out}"));
    let token = link.split("token=").nth(1).unwrap();
    assert!(tessera::lifecycle::reset::usable(&app.state.ctx(), token)
        .await
        .unwrap()
        .is_some());
    // The printed link works on a server without mail: the person chooses a password.
    let b = browser();
    let page = b.get(link).send().await.unwrap();
    assert_eq!(page.status(), 200, "the link opens the form without mail");
    let fields = form_fields(&page.text().await.unwrap());
    let done = b
        .post(app.url("/password/reset"))
        .form(&[
            ("token", fields["token"].as_str()),
            ("password", "a brand new passphrase"),
            ("confirm", "a brand new passphrase"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    assert_eq!(b.get(link).send().await.unwrap().status(), 410, "once");
    assert!(out.contains("  user nomail: no email address for a link"), "{out}");
    assert!(!out.contains("password ="), "no password is ever printed");
}

#[tokio::test]
async fn with_mail_on_new_users_are_mailed_their_link() {
    let (app, sink) = spawn_mail(|_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let text = "[[users]]\nusername = \"ada\"\nemail = \"ada@example.org\"\n";
    let out = apply(&app, &write(dir.path(), "u.toml", text)).await.unwrap();
    assert_eq!(
        out,
        "+ user ada\n  user ada: a link to choose a password was mailed to ada@example.org\n"
    );
    let mail = sink.nth("ada@example.org", 1).await;
    let body = format!("{mail:?}");
    assert!(body.contains("/password/reset?token="), "{body}");
}

#[tokio::test]
async fn presets_claims_and_providers_are_declared_and_dump_config_round_trips() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
[[groups]]
name = "staff"

[[clients]]
client_id = "grafana"
preset = "grafana"
app_url = "https://grafana.example.org"
allowed_groups = ["staff"]
secret_env = "GRAFANA_SECRET"

[[clients]]
client_id = "spa"
public = true
redirect_uris = ["http://localhost:5173/cb"]
web_origins = ["http://localhost:5173"]
access_token_ttl = 600

[[clients.claims]]
claim = "team"
source = "group_values"
in = ["id_token", "access_token"]
values = [{ group = "staff", value = "Staff" }]
default = "Guest"

[[apps]]
id = "files"
url = "https://files.example.org"

[[providers]]
id = "corp"
issuer = "https://idp.example.org"
client_id = "tessera"
secret_env = "CORP_SECRET"
group_claim = "groups"
map_group = ["employees=staff"]
"#;
    let env = [("GRAFANA_SECRET", SECRET_A), ("CORP_SECRET", "upstream-secret")];
    let out = apply_ok(&app, &write(dir.path(), "in.toml", text), &[], &env);
    assert!(
        out.contains("+ group grafana-admins\n"),
        "the preset's groups are made: {out}"
    );
    let grafana = client(&app, "grafana").await.unwrap();
    assert_eq!(
        grafana.redirect_uris,
        ["https://grafana.example.org/login/generic_oauth"]
    );
    assert!(!grafana.claim_rules.is_empty(), "the preset's claim mapping");
    let spa = client(&app, "spa").await.unwrap();
    assert_eq!(spa.claim_rules[0].default.as_deref(), Some("Guest"));
    assert_eq!(
        client_credentials(&app, "grafana", SECRET_A).await,
        400,
        "secret right, grant not allowed"
    );
    assert_eq!(
        apply_ok(&app, &write(dir.path(), "in.toml", text), &[], &env),
        "no changes\n"
    );

    let mut args: Vec<String> = app.db_args();
    args.push("dump-config".into());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let dumped = tessera_ok(&refs, &[], None);
    assert!(dumped.contains("secret_env = \"CLIENT_GRAFANA_SECRET\""), "{dumped}");
    assert!(dumped.contains("secret_env = \"PROVIDER_CORP_SECRET\""), "{dumped}");
    assert!(
        !dumped.contains(SECRET_A) && !dumped.contains("upstream-secret"),
        "{dumped}"
    );
    let file = write(dir.path(), "dumped.toml", &dumped);
    let env = [
        ("CLIENT_GRAFANA_SECRET", SECRET_A),
        ("PROVIDER_CORP_SECRET", "upstream-secret"),
    ];
    assert_eq!(apply_ok(&app, &file, &["--prune"], &env), "no changes\n", "{dumped}");
}

#[tokio::test]
async fn serve_apply_applies_the_file_at_start() {
    if std::env::var("TESSERA_TEST_BACKEND").as_deref() == Ok("postgres") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "svc.toml",
        "[[clients]]\nclient_id = \"svc\"\ngrant_types = [\"client_credentials\"]\nsecret_env = \"SVC_SECRET\"\n",
    );
    let db = dir.path().join("tessera.db");
    let env = [("TESSERA_APPLY", file.to_str().unwrap()), ("SVC_SECRET", SECRET_A)];
    let server = crate::process::Server::start_with(&db, &dir.path().join("log"), 0, &env);
    let resp = plain_client()
        .post(format!("{}/token", server.address))
        .basic_auth("svc", Some(SECRET_A))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    drop(server);
    // The report goes to standard output, beside the setup link, never to the log.
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    assert!(!log.contains("+ client svc") && !log.contains(SECRET_A), "{log}");
}
