//! Administering upstream identity providers: `tessera provider …` run as an operator
//! runs it (secret from standard input, never printed, sealed with the master key),
//! the admin API under `/admin/api/providers`, and the pages `/admin/providers`.

use std::process::{Command, Output};

use serde_json::{json, Value};
use tessera::admin::Actor;
use tessera::db;

use crate::admin_api::admin_token;
use crate::helpers::*;

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

async fn page(b: &reqwest::Client, url: String) -> (u16, String) {
    let resp = b.get(url).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn administrators_add_see_and_delete_providers_through_the_pages() {
    let app = spawn_app().await;
    add_group(&app, "staff").await;
    let (b, csrf) = app.admin_browser().await;
    let (status, html) = page(&b, app.url("/admin/providers")).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("href=\"/admin/providers\""),
        "the navigation links the page"
    );
    assert!(html.contains("id=\"add-provider\""));

    let form = [
        ("csrf", csrf.as_str()),
        ("id", "acme"),
        ("kind", "oidc"),
        ("name", "Acme SSO"),
        ("issuer", "https://login.acme.example"),
        ("client_id", "tessera-rp"),
        ("client_secret", SECRET),
        ("scope", ""),
        ("group_claim", "groups"),
        ("map_group", "acme-admins=staff\r\n\r\nacme-ops=staff\r\n"),
        ("jit", "on"),
        ("link_by_email", "on"),
    ];
    let resp = b.post(app.url("/admin/providers")).form(&form).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), "/admin/providers/acme?done=created");
    let p = stored(&app, "acme").await.unwrap();
    assert_eq!(p.group_map.len(), 2);
    assert!(p.jit && p.link_by_email && !p.require_local_mfa);
    assert_eq!(p.scope, "openid email profile");

    let (status, detail) = page(&b, app.url("/admin/providers/acme?done=created")).await;
    assert_eq!(status, 200);
    let callback = format!("{}/federation/acme/callback", app.state.issuer);
    assert_eq!(text_of(&detail, "redirect-uri").as_deref(), Some(callback.as_str()));
    assert!(text_of(&detail, "backchannel-uri")
        .unwrap()
        .ends_with("/federation/acme/backchannel-logout"));
    assert_eq!(text_of(&detail, "linked-accounts").as_deref(), Some("0"));
    assert!(!detail.contains(SECRET), "the secret is never shown");

    let (_, list) = page(&b, app.url("/admin/providers")).await;
    assert!(list.contains("href=\"/admin/providers/acme\"") && list.contains("Acme SSO"));
    assert!(!list.contains(SECRET));

    let unconfirmed = b
        .post(app.url("/admin/providers/acme/delete"))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(unconfirmed.status(), 400);
    assert!(stored(&app, "acme").await.is_some());
    let resp = b
        .post(app.url("/admin/providers/acme/delete"))
        .form(&[("csrf", csrf.as_str()), ("confirm", "on")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), "/admin/providers?done=deleted");
    assert!(stored(&app, "acme").await.is_none());
    let (status, _) = page(&b, app.url("/admin/providers/acme")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_add_form_shows_its_problems_and_needs_its_csrf_token() {
    let app = spawn_app().await;
    let (b, csrf) = app.admin_browser().await;
    let form = |csrf: &str| {
        vec![
            ("csrf", csrf.to_string()),
            ("id", "corp".to_string()),
            ("kind", "oidc".to_string()),
            ("issuer", "http://login.example.com".to_string()),
            ("client_id", "rp".to_string()),
            ("client_secret", SECRET.to_string()),
            ("map_group", "no-equals-sign".to_string()),
        ]
    };
    let resp = b
        .post(app.url("/admin/providers"))
        .form(&form(&csrf))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let html = resp.text().await.unwrap();
    assert!(html.contains("must be https"), "the issuer's problem is shown");
    assert!(html.contains("is not UPSTREAM=LOCAL"), "the mapping's problem is shown");
    assert_eq!(
        input_value(&html, "id").as_deref(),
        Some("corp"),
        "the form keeps what was typed"
    );
    assert_eq!(
        input_value(&html, "issuer").as_deref(),
        Some("http://login.example.com")
    );
    assert!(!html.contains(SECRET), "the secret is not sent back");
    assert!(stored(&app, "corp").await.is_none());

    let mut fixed = form(&csrf);
    fixed[3].1 = "https://login.example.com".into();
    fixed[6].1 = String::new();
    let mut no_csrf = fixed.clone();
    no_csrf.remove(0);
    let resp = b.post(app.url("/admin/providers")).form(&no_csrf).send().await.unwrap();
    assert_eq!(resp.status(), 403, "no CSRF token");
    let mut wrong = fixed.clone();
    wrong[0].1 = "not-the-token".into();
    let resp = b.post(app.url("/admin/providers")).form(&wrong).send().await.unwrap();
    assert_eq!(resp.status(), 403, "a wrong CSRF token");
    assert!(stored(&app, "corp").await.is_none(), "refused forms store nothing");

    // Someone signed in who is not an administrator gets neither the page nor the form.
    app.add_user("ada").await;
    let other = browser();
    let ada_csrf = app.portal_login(&other, "ada", PASSWORD).await;
    assert_eq!(page(&other, app.url("/admin/providers")).await.0, 403);
    let mut theirs = fixed.clone();
    theirs[0].1 = ada_csrf;
    let resp = other
        .post(app.url("/admin/providers"))
        .form(&theirs)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(stored(&app, "corp").await.is_none());

    let resp = b.post(app.url("/admin/providers")).form(&fixed).send().await.unwrap();
    assert_eq!(resp.status(), 302, "the corrected form is accepted");
    assert!(stored(&app, "corp").await.is_some());
}

/// Registers the provider `acme` ("Acme SSO") and links `user_id` to the upstream
/// account `subject` there, as a first sign-in through it would.
async fn linked(app: &TestApp, user_id: i64, subject: &'static str) {
    let actor = Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    };
    let spec = tessera::admin::providers::ProviderSpec {
        id: "acme".into(),
        kind: "oidc".into(),
        name: Some("Acme SSO".into()),
        issuer: Some("https://login.acme.example".into()),
        client_id: "tessera-rp".into(),
        client_secret: SECRET.into(),
        ..Default::default()
    };
    if stored(app, "acme").await.is_none() {
        tessera::admin::providers::create(&app.state.ctx(), &app.state.upstreams, &actor, &spec)
            .await
            .unwrap();
    }
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| db::identities::link(c, "acme", subject, user_id, Some("ada@acme.example"), now))
        .await
        .unwrap();
}

async fn links(app: &TestApp, user_id: i64) -> Vec<db::identities::Identity> {
    app.state
        .db
        .read(move |c| db::identities::of_user(c, user_id))
        .await
        .unwrap()
}

/// The detail of the last audit entry of this event.
async fn audit_detail(app: &TestApp, event: &str) -> Option<(Option<String>, Option<String>, Value)> {
    let (entries, _) = app
        .state
        .db
        .read(|c| db::audit::list(c, &db::audit::Filter::default(), 10_000, 0))
        .await
        .unwrap();
    entries
        .into_iter()
        .find(|e| e.event == event)
        .map(|e| (e.actor, e.target, e.detail))
}

#[tokio::test]
async fn the_api_lists_and_removes_a_users_links() {
    use reqwest::Method;
    let app = spawn_app().await;
    let ada = app.add_user("ada").await;
    let bob = app.add_user("bob").await;
    linked(&app, ada.id, "acme-sub-1").await;
    let api = Api {
        token: admin_token(&app).await,
        app: &app,
    };
    let path = format!("/users/{}/identities", ada.id);
    let (status, body) = api.call(Method::GET, &path, None).await;
    assert_eq!(status, 200, "{body}");
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{body}");
    assert_eq!(items[0]["provider"], "acme");
    assert_eq!(items[0]["provider_name"], "Acme SSO");
    assert_eq!(items[0]["subject"], "acme-sub-1");
    assert_eq!(items[0]["email"], "ada@acme.example");
    // Linked a moment ago (the clock may have passed a second since).
    let now = app.clock.now();
    for at in ["created_at", "last_used_at"] {
        let t = items[0][at].as_i64().unwrap();
        assert!((now - 5..=now).contains(&t), "{at}: {t} (now {now})");
    }
    let (status, none) = api
        .call(Method::GET, &format!("/users/{}/identities", bob.id), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(none, json!({"items": []}));
    for missing in ["/users/9999/identities", "/users/nobody/identities"] {
        let (status, body) = api.call(Method::GET, missing, None).await;
        assert_eq!(status, 404, "{missing}: {body}");
        assert_eq!(body["error"], "not_found");
    }
    // The user routes of the same prefix still answer.
    assert_eq!(api.call(Method::GET, &format!("/users/{}", ada.id), None).await.0, 200);
    assert_eq!(
        api.call(Method::GET, &format!("/users/{}/sessions", ada.id), None)
            .await
            .0,
        200
    );

    let (status, body) = api
        .call(Method::DELETE, &format!("/users/{}/identities/acme", bob.id), None)
        .await;
    assert_eq!(status, 404, "bob has no link: {body}");
    assert_eq!(body["error"], "not_found");
    let (status, _) = api.call(Method::DELETE, "/users/9999/identities/acme", None).await;
    assert_eq!(status, 404);
    let (status, _) = api.call(Method::DELETE, &format!("{path}/acme"), None).await;
    assert_eq!(status, 204);
    assert!(links(&app, ada.id).await.is_empty());
    assert_eq!(api.call(Method::GET, &path, None).await.1, json!({"items": []}));
    let (status, _) = api.call(Method::DELETE, &format!("{path}/acme"), None).await;
    assert_eq!(status, 404, "the link is gone");
    let (actor, target, detail) = audit_detail(&app, "admin.identity_unlinked").await.unwrap();
    assert_eq!(actor.as_deref(), Some("client:ops"));
    assert_eq!(target, Some(format!("user:{}", ada.id)));
    assert_eq!(
        detail,
        json!({"provider": "acme", "subject": "acme-sub-1", "sessions_ended": 0})
    );
    assert!(stored(&app, "acme").await.is_some(), "the provider stays");

    linked(&app, bob.id, "acme-sub-2").await;
    for (method, path) in [
        (Method::GET, format!("/admin/api/users/{}/identities", bob.id)),
        (Method::DELETE, format!("/admin/api/users/{}/identities/acme", bob.id)),
    ] {
        let resp = plain_client()
            .request(method.clone(), app.url(&path))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401, "{method} {path} without credentials");
        assert!(resp.headers().contains_key("www-authenticate"));
    }
    assert_eq!(links(&app, bob.id).await.len(), 1, "nothing was removed");
}

#[tokio::test]
async fn administrators_see_and_unlink_links_on_the_user_page() {
    let app = spawn_app().await;
    let (b, csrf) = app.admin_browser().await;
    let ada = app.add_user("ada").await;
    let bob = app.add_user("bob").await;
    linked(&app, ada.id, "acme-sub-1").await;

    let (status, html) = page(&b, app.url(&format!("/admin/users/{}", bob.id))).await;
    assert_eq!(status, 200);
    assert!(!html.contains("id=\"linked-accounts\""), "no section without links");

    let (status, html) = page(&b, app.url(&format!("/admin/users/{}", ada.id))).await;
    assert_eq!(status, 200);
    let section = text_of(&html, "linked-accounts").expect("the linked accounts");
    assert!(
        section.contains("Linked accounts") && section.contains("Acme SSO"),
        "{section}"
    );
    assert!(
        section.contains("acme-sub-1") && section.contains("ada@acme.example"),
        "{section}"
    );
    assert_eq!(text_of(&html, "unlink-acme").as_deref(), Some("Unlink"));

    let action = app.url(&format!("/admin/users/{}/unlink", ada.id));
    let resp = b.post(&action).form(&[("provider", "acme")]).send().await.unwrap();
    assert_eq!(resp.status(), 403, "no CSRF token");
    assert_eq!(links(&app, ada.id).await.len(), 1);
    let resp = b
        .post(&action)
        .form(&[("csrf", csrf.as_str()), ("provider", "acme")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), format!("/admin/users/{}?done=unlinked", ada.id));
    assert!(links(&app, ada.id).await.is_empty());
    let (_, html) = page(&b, app.url(&location(&resp))).await;
    assert!(html.contains("The link to the upstream account was removed."));
    assert!(!html.contains("id=\"linked-accounts\""));
    let (actor, target, detail) = audit_detail(&app, "admin.identity_unlinked").await.unwrap();
    assert_eq!(actor.as_deref(), Some("root"));
    assert_eq!(target, Some(format!("user:{}", ada.id)));
    assert_eq!(
        detail,
        json!({"provider": "acme", "subject": "acme-sub-1", "sessions_ended": 0})
    );

    let again = b
        .post(&action)
        .form(&[("csrf", csrf.as_str()), ("provider", "acme")])
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404, "no link left to remove");
}

#[tokio::test]
async fn the_command_line_unlinks_a_user() {
    let app = spawn_app().await;
    let ada = app.add_user("ada").await;
    linked(&app, ada.id, "acme-sub-1").await;
    let ok = tessera(&app, &["user", "unlink", "ada", "acme"], None, &[]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let out = stdout(&ok);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("ada") && out.contains("acme"), "{out}");
    assert!(links(&app, ada.id).await.is_empty());
    let (actor, target, _) = audit_detail(&app, "admin.identity_unlinked").await.unwrap();
    assert_eq!(actor.as_deref(), Some("cli"));
    assert_eq!(target, Some(format!("user:{}", ada.id)));

    let none = refused(&tessera(&app, &["user", "unlink", "ada", "acme"], None, &[]));
    assert_eq!(none, "error: ada has no link to acme");
    let nobody = refused(&tessera(&app, &["user", "unlink", "nobody", "acme"], None, &[]));
    assert_eq!(nobody, "error: no user named nobody");
}

#[tokio::test]
async fn a_replaced_secret_is_stored_sealed_and_keeps_the_links() {
    use reqwest::Method;
    let app = spawn_app().await;
    let ada = app.add_user("ada").await;
    linked(&app, ada.id, "acme-sub-1").await;
    // The command line reads it from standard input and seals it with the master key.
    let out = tessera(
        &app,
        &["provider", "set-secret", "acme", "--client-secret-stdin"],
        Some("rotated-upstream-secret\n"),
        &[("TESSERA_MASTER_KEY", KEY)],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!stdout(&out).contains("rotated-upstream-secret"), "never printed");
    let p = stored(&app, "acme").await.unwrap();
    assert!(p.client_secret.starts_with("sealed:v1:"), "sealed at rest");
    assert_eq!(links(&app, ada.id).await.len(), 1, "the links stay");
    let out = tessera(
        &app,
        &["provider", "set-secret", "nope", "--client-secret-stdin"],
        Some("x\n"),
        &[],
    );
    assert!(refused(&out).contains("no provider with id nope"));
    let out = tessera(
        &app,
        &["provider", "set-secret", "acme", "--client-secret-stdin"],
        Some("\n"),
        &[],
    );
    assert!(refused(&out).contains("no client secret"));

    // The API: 204, 400 for an empty one, 404 for an unknown provider.
    let api = Api {
        token: admin_token(&app).await,
        app: &app,
    };
    let body = json!({"client_secret": "via-the-api"});
    let (status, _) = api
        .call(Method::PUT, "/providers/acme/secret", Some(body.clone()))
        .await;
    assert_eq!(status, 204);
    assert_eq!(stored(&app, "acme").await.unwrap().client_secret, "via-the-api");
    let (status, err) = api
        .call(
            Method::PUT,
            "/providers/acme/secret",
            Some(json!({"client_secret": " "})),
        )
        .await;
    assert_eq!((status, err["error"].as_str()), (400, Some("invalid_request")), "{err}");
    let (status, _) = api.call(Method::PUT, "/providers/nope/secret", Some(body)).await;
    assert_eq!(status, 404);
    assert!(audit_detail(&app, "admin.provider_secret_replaced").await.is_some());
    assert_eq!(links(&app, ada.id).await.len(), 1);

    // The provider's page.
    let (b, csrf) = app.admin_browser().await;
    let resp = b
        .post(app.url("/admin/providers/acme/secret"))
        .form(&[("csrf", csrf.as_str()), ("client_secret", "via-the-page")])
        .send()
        .await
        .unwrap();
    assert_eq!(location(&resp), "/admin/providers/acme?done=saved");
    assert_eq!(stored(&app, "acme").await.unwrap().client_secret, "via-the-page");
    let resp = b
        .post(app.url("/admin/providers/acme/secret"))
        .form(&[("client_secret", "no-csrf")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(stored(&app, "acme").await.unwrap().client_secret, "via-the-page");
}
