//! Administering upstream identity providers: `tessera provider …` run as an operator
//! runs it (secret from standard input, never printed, sealed with the master key),
//! the admin API under `/admin/api/providers`, and the pages `/admin/providers`.

use std::process::{Command, Output};

use serde_json::{json, Value};
use tessera::admin::Actor;
use tessera::db;

use crate::admin_api::admin_token;
use crate::helpers::*;

mod links;
mod pages;

const SECRET: &str = "upstream-client-secret-4f9a";
const KEY: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

/// The binary on the app's database; the outcome unread.
fn tessera(app: &TestApp, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(app.db_args())
            .args(args)
            .env_remove("TESSERA_ISSUER")
            .env_remove("TESSERA_MASTER_KEY")
            .envs(env.iter().copied())
            .env("TESSERA_BCRYPT_COST", "4"),
        stdin,
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A command that must fail with one readable line: that line.
fn refused(o: &Output) -> String {
    assert!(!o.status.success(), "succeeded: {}", stdout(o));
    let err = String::from_utf8_lossy(&o.stderr).trim().to_string();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    err
}

async fn stored(app: &TestApp, id: &str) -> Option<db::providers::Provider> {
    let id = id.to_string();
    app.state.db.read(move |c| db::providers::find(c, &id)).await.unwrap()
}

async fn add_group(app: &TestApp, name: &str) {
    let actor = Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    };
    tessera::admin::groups::create(&app.state.ctx(), &actor, name)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_command_line_adds_lists_shows_and_deletes_providers() {
    let app = spawn_app().await;
    add_group(&app, "staff").await;
    let add = [
        "provider",
        "add",
        "acme",
        "--issuer",
        "https://login.acme.example/realms/main/",
        "--client-id",
        "tessera-rp",
        "--client-secret-stdin",
        "--name",
        "Acme SSO",
        "--jit",
        "--link-by-email",
        "--group-claim",
        "realm_access.roles",
        "--map-group",
        "admins=staff",
        "--map-group",
        "ops=staff",
        "--require-local-mfa",
    ];
    let env = [("TESSERA_ISSUER", "https://id.example.org")];
    let out = tessera(&app, &add, Some(&format!("  {SECRET}  \nsecond line\n")), &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = stdout(&out);
    assert!(
        printed.contains("https://id.example.org/federation/acme/callback"),
        "{printed}"
    );
    assert!(printed.contains("https://id.example.org/federation/acme/backchannel-logout"));
    assert!(!printed.contains(SECRET), "the secret is never printed");
    let p = stored(&app, "acme").await.unwrap();
    assert_eq!(
        p.client_secret, SECRET,
        "the first line, trimmed; stored in clear without a master key"
    );
    assert_eq!(p.issuer.as_deref(), Some("https://login.acme.example/realms/main"));
    assert_eq!(
        p.group_map,
        vec![("admins".into(), "staff".into()), ("ops".into(), "staff".into())]
    );
    assert!(p.jit && p.link_by_email && p.require_local_mfa);

    add_a_github_provider_sealed(&app).await;
    the_providers_are_listed_without_secrets(&app, &env);
    acme_is_shown_with_its_settings(&app);

    let del = tessera(&app, &["provider", "delete", "acme"], None, &[]);
    assert!(del.status.success());
    assert!(stored(&app, "acme").await.is_none());
    let gone = refused(&tessera(&app, &["provider", "show", "acme"], None, &[]));
    assert_eq!(gone, "error: no provider with id acme");
    assert_eq!(
        refused(&tessera(&app, &["provider", "delete", "acme"], None, &[])),
        "error: no provider with id acme"
    );
    let audit = app.audit().await;
    let by_cli = |event: &str| {
        audit
            .iter()
            .any(|(e, a, t)| e == event && a.as_deref() == Some("cli") && t.as_deref() == Some("provider:acme"))
    };
    assert!(by_cli("admin.provider_created") && by_cli("admin.provider_deleted"));
}

/// GitHub needs no issuer; the master key seals the secret.
async fn add_a_github_provider_sealed(app: &TestApp) {
    let gh = [
        "provider",
        "add",
        "gh",
        "--kind",
        "github",
        "--client-id",
        "Iv1.abc",
        "--client-secret-stdin",
    ];
    let out = tessera(app, &gh, Some("gh-secret-value\n"), &[("TESSERA_MASTER_KEY", KEY)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let gh_stored = stored(app, "gh").await.unwrap();
    assert!(gh_stored.client_secret.starts_with("sealed:v1:"), "sealed at rest");
    assert!(!gh_stored.client_secret.contains("gh-secret-value"));
    assert_eq!(gh_stored.scope, "read:user user:email");
}

/// `provider list`, as JSON and as a table, without any secret.
fn the_providers_are_listed_without_secrets(app: &TestApp, env: &[(&str, &str)]) {
    let list = tessera(app, &["provider", "list", "--json"], None, env);
    assert!(list.status.success());
    let text = stdout(&list);
    assert!(!text.contains(SECRET) && !text.contains("sealed:") && !text.contains("client_secret"));
    let items: Value = serde_json::from_str(&text).unwrap();
    let items = items.as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["id"], "acme");
    assert_eq!(items[0]["name"], "Acme SSO");
    assert_eq!(items[0]["kind"], "oidc");
    assert_eq!(items[0]["linked_accounts"], 0);
    assert_eq!(items[0]["map_group"], json!(["admins=staff", "ops=staff"]));
    assert_eq!(
        items[0]["redirect_uri"],
        "https://id.example.org/federation/acme/callback"
    );
    assert_eq!(items[1]["id"], "gh");
    assert_eq!(items[1]["issuer"], Value::Null);

    let table = stdout(&tessera(app, &["provider", "list"], None, &[]));
    let row = table.lines().find(|l| l.starts_with("acme ")).expect("a row for acme");
    assert!(row.contains("oidc") && row.contains("Acme SSO") && row.contains("https://login.acme.example/realms/main"));
    assert!(table.lines().any(|l| l.starts_with("gh ") && l.contains("github.com")));
}

/// `provider show` gives acme's addresses for another issuer and its settings, no
/// secret.
fn acme_is_shown_with_its_settings(app: &TestApp) {
    let show = tessera(
        app,
        &[
            "provider",
            "show",
            "acme",
            "--tessera-issuer",
            "https://sso.example.net/",
        ],
        None,
        &[],
    );
    assert!(show.status.success());
    let shown = stdout(&show);
    for want in [
        "https://sso.example.net/federation/acme/callback",
        "https://sso.example.net/federation/acme/backchannel-logout",
        "admins=staff, ops=staff",
        "realm_access.roles",
        "tessera-rp",
        "openid email profile",
    ] {
        assert!(shown.contains(want), "show lacks {want}: {shown}");
    }
    assert!(shown
        .lines()
        .any(|l| l.starts_with("linked_accounts") && l.trim_end().ends_with(" 0")));
    assert!(!shown.contains(SECRET) && !shown.contains("client_secret"));
}

#[tokio::test]
async fn the_command_line_refuses_bad_providers_in_one_line() {
    let app = spawn_app().await;
    let add = |id: &'static str, extra: &[&'static str]| {
        let mut args = vec!["provider", "add", id, "--client-id", "rp", "--client-secret-stdin"];
        args.extend_from_slice(extra);
        args
    };
    let plain_http = refused(&tessera(
        &app,
        &add("corp", &["--issuer", "http://login.example.com"]),
        Some("x-secret\n"),
        &[],
    ));
    assert!(plain_http.contains("issuer: must be https"), "{plain_http}");
    let unknown_group = refused(&tessera(
        &app,
        &add(
            "corp",
            &[
                "--issuer",
                "https://login.example.com",
                "--group-claim",
                "groups",
                "--map-group",
                "a=nosuch",
            ],
        ),
        Some("x-secret\n"),
        &[],
    ));
    assert!(
        unknown_group.contains("map_group: there is no group `nosuch`"),
        "{unknown_group}"
    );
    let empty = refused(&tessera(
        &app,
        &add("corp", &["--issuer", "https://login.example.com"]),
        Some("   \n"),
        &[],
    ));
    assert!(empty.contains("no client secret"), "{empty}");
    let bad_id = refused(&tessera(
        &app,
        &add("Not_Valid!", &["--issuer", "https://login.example.com"]),
        Some("x-secret\n"),
        &[],
    ));
    assert!(bad_id.contains("id: "), "{bad_id}");
    let no_flag = tessera(
        &app,
        &[
            "provider",
            "add",
            "corp",
            "--issuer",
            "https://login.example.com",
            "--client-id",
            "rp",
        ],
        Some("x-secret\n"),
        &[],
    );
    assert!(!no_flag.status.success(), "--client-secret-stdin is required");
    assert!(String::from_utf8_lossy(&no_flag.stderr).contains("--client-secret-stdin"));
    assert!(
        stored(&app, "corp").await.is_none(),
        "nothing was stored by the refusals"
    );

    // A loopback http issuer is accepted (tests and labs); a second one with the id is not.
    let lab = add("corp", &["--issuer", "http://127.0.0.1:5556"]);
    let ok = tessera(&app, &lab, Some("x-secret\n"), &[]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let dup = refused(&tessera(&app, &lab, Some("x-secret\n"), &[]));
    assert!(dup.contains("a provider with this id exists"), "{dup}");
}

struct Api<'a> {
    app: &'a TestApp,
    token: String,
}

impl Api<'_> {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        self.app.admin_api(&self.token, method, path, body).await
    }
}

fn acme() -> Value {
    json!({
        "id": "acme",
        "kind": "oidc",
        "name": "Acme SSO",
        "issuer": "https://login.acme.example",
        "client_id": "tessera-rp",
        "client_secret": SECRET,
        "scope": "openid email",
        "jit": true,
        "link_by_email": false,
        "group_claim": "groups",
        "map_group": ["acme-admins=staff"],
        "require_local_mfa": true
    })
}

#[tokio::test]
async fn the_api_creates_lists_gets_and_deletes_providers() {
    use reqwest::Method;
    let app = spawn_app().await;
    add_group(&app, "staff").await;
    let api = Api {
        token: admin_token(&app).await,
        app: &app,
    };
    let (status, created) = api.call(Method::POST, "/providers", Some(acme())).await;
    assert_eq!(status, 201, "{created}");
    let callback = format!("{}/federation/acme/callback", app.state.issuer);
    assert_eq!(created["redirect_uri"], callback.as_str());
    assert_eq!(
        created["backchannel_logout_uri"],
        format!("{}/federation/acme/backchannel-logout", app.state.issuer).as_str()
    );
    assert_eq!(created["map_group"], json!(["acme-admins=staff"]));
    assert_eq!(created["linked_accounts"], 0);
    assert_eq!(created["require_local_mfa"], true);
    assert!(created.get("client_secret").is_none());
    assert_eq!(stored(&app, "acme").await.unwrap().client_secret, SECRET);

    let (status, gh) = api
        .call(
            Method::POST,
            "/providers",
            Some(json!({"id": "gh", "kind": "github", "client_id": "Iv1.x", "client_secret": "s"})),
        )
        .await;
    assert_eq!(status, 201, "{gh}");
    assert_eq!(gh["issuer"], Value::Null);
    assert_eq!(gh["name"], "gh");

    let (status, list) = api.call(Method::GET, "/providers", None).await;
    assert_eq!(status, 200);
    assert_eq!(list["total"], 2);
    assert_eq!(list["offset"], 0);
    assert_eq!(list["limit"], 50);
    assert_eq!(list["items"][0]["id"], "acme");
    assert_eq!(list["items"][0]["linked_accounts"], 0);
    assert_eq!(list["items"][1]["id"], "gh");
    assert!(!list.to_string().contains(SECRET));
    let (_, paged) = api.call(Method::GET, "/providers?limit=1&offset=1", None).await;
    assert_eq!(paged["items"].as_array().unwrap().len(), 1);
    assert_eq!(paged["items"][0]["id"], "gh");
    assert_eq!(paged["total"], 2);

    let (status, one) = api.call(Method::GET, "/providers/acme", None).await;
    assert_eq!(status, 200);
    assert_eq!(one["name"], "Acme SSO");
    assert_eq!(one["scope"], "openid email");
    assert_eq!(one["linked_accounts"], 0);
    assert!(one.get("client_secret").is_none());

    let (status, _) = api.call(Method::DELETE, "/providers/acme", None).await;
    assert_eq!(status, 204);
    let (status, missing) = api.call(Method::GET, "/providers/acme", None).await;
    assert_eq!(status, 404);
    assert_eq!(missing["error"], "not_found");
    let (status, _) = api.call(Method::DELETE, "/providers/acme", None).await;
    assert_eq!(status, 404);
    let audit = app.audit().await;
    assert!(audit.iter().any(|(e, a, t)| e == "admin.provider_created"
        && a.as_deref() == Some("client:ops")
        && t.as_deref() == Some("provider:acme")));
    assert!(audit
        .iter()
        .any(|(e, _, t)| e == "admin.provider_deleted" && t.as_deref() == Some("provider:acme")));
}

#[tokio::test]
async fn the_api_names_each_wrong_field_and_refuses_strangers() {
    use reqwest::Method;
    let app = spawn_app().await;
    let api = Api {
        token: admin_token(&app).await,
        app: &app,
    };
    let bad = json!({"id": "Bad Id", "issuer": "http://login.example.com", "client_id": "rp"});
    let (status, body) = api.call(Method::POST, "/providers", Some(bad)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_request");
    let fields = &body["fields"];
    assert!(
        fields["id"].is_string() && fields["client_secret"].is_string(),
        "{body}"
    );
    assert!(fields["issuer"].as_str().unwrap().contains("https"), "{body}");

    let mut unknown_group = acme();
    unknown_group["map_group"] = json!(["x=nosuch"]);
    let (status, body) = api.call(Method::POST, "/providers", Some(unknown_group)).await;
    assert_eq!(status, 400);
    assert_eq!(body["fields"]["map_group"], "there is no group `nosuch`");
    let mut extra = acme();
    extra["secret"] = json!("x");
    let (status, body) = api.call(Method::POST, "/providers", Some(extra)).await;
    assert_eq!(status, 400);
    assert!(body["fields"]["body"].is_string(), "unknown fields are refused: {body}");
    let mut ok = acme();
    ok["map_group"] = json!([]);
    assert_eq!(api.call(Method::POST, "/providers", Some(ok.clone())).await.0, 201);
    let (status, body) = api.call(Method::POST, "/providers", Some(ok)).await;
    assert_eq!(status, 400);
    assert_eq!(body["fields"]["id"], "a provider with this id exists");
    let (status, body) = api.call(Method::GET, "/providers?sort=name", None).await;
    assert_eq!(status, 400);
    assert!(body["fields"]["sort"].is_string());

    for (method, path) in [
        (Method::GET, "/admin/api/providers"),
        (Method::POST, "/admin/api/providers"),
        (Method::GET, "/admin/api/providers/acme"),
        (Method::DELETE, "/admin/api/providers/acme"),
    ] {
        let resp = plain_client()
            .request(method.clone(), app.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401, "{method} {path} without credentials");
        assert!(resp.headers().contains_key("www-authenticate"));
    }
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let resp = b
        .delete(app.url("/admin/api/providers/acme"))
        .header("x-csrf-token", csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403, "a non-administrator's session");
    assert!(stored(&app, "acme").await.is_some(), "nothing was deleted");
}

/// A page's status and text.
async fn page(b: &reqwest::Client, url: String) -> (u16, String) {
    let resp = b.get(url).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}
