//! Claim mapping (docs/PROTOCOL.md "Claim mapping"): each kind of rule changes the real
//! tokens and userinfo of a real code flow; custom and gating scopes; protected names
//! refused; the CLI, the admin API and the consent page.

use serde_json::{json, Value};
use tessera::db::{self, claim_rules::ClaimRule};
use url::Url;

use crate::admin_api::admin_token;
use crate::helpers::*;

/// A rule for `claim` from `source`, in the ID token and userinfo.
pub(crate) fn rule(claim: &str, source: &str) -> ClaimRule {
    ClaimRule {
        claim: claim.into(),
        source: source.into(),
        scope: None,
        id_token: true,
        access_token: false,
        userinfo: true,
        values: Vec::new(),
        default: None,
    }
}

/// The Grafana mapping: admins → Admin, editors → Editor, everyone else Viewer.
pub(crate) fn grafana_role() -> ClaimRule {
    ClaimRule {
        values: vec![
            ("grafana-admins".into(), "Admin".into()),
            ("grafana-editors".into(), "Editor".into()),
        ],
        default: Some("Viewer".into()),
        ..rule("role", "group_values")
    }
}

pub(crate) async fn join(app: &TestApp, user_id: i64, group: &str) {
    let group = group.to_string();
    app.state
        .db
        .write(move |c| db::users::add_to_group(c, user_id, &group))
        .await
        .unwrap();
}

/// What a relying party sees after a code flow with `scope`: the token response,
/// the ID token's and access token's claims, and the userinfo response.
pub(crate) struct Seen {
    pub scope: String,
    pub id: Value,
    pub at: Value,
    pub userinfo: Value,
}

pub(crate) async fn flow(app: &TestApp, client: &str, secret: &str, username: &str, scope: &str) -> Seen {
    let pkce = Pkce::new();
    let mut url = Url::parse(&app.url("/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", client)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", scope)
        .append_pair("state", "st4te")
        .append_pair("nonce", "n0nce")
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256");
    let params = app.login(&browser(), url.as_str(), username).await;
    let resp = app
        .token(
            Some((client, secret)),
            &[
                ("grant_type", "authorization_code"),
                ("code", &params["code"]),
                ("redirect_uri", REDIRECT),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let tokens: Value = resp.json().await.unwrap();
    let at = tokens["access_token"].as_str().unwrap();
    let userinfo = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(at)
        .send()
        .await
        .unwrap();
    assert_eq!(userinfo.status(), 200);
    Seen {
        scope: tokens["scope"].as_str().unwrap().to_string(),
        id: jwt_parts(tokens["id_token"].as_str().unwrap()).1,
        at: jwt_parts(at).1,
        userinfo: userinfo.json().await.unwrap(),
    }
}

#[tokio::test]
async fn groups_renamed_to_roles_reach_every_target_whatever_the_scope() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    join(&app, alice.id, "staff").await;
    let secret = app
        .add_client_with("app", false, |c| {
            c.claim_rules = vec![ClaimRule {
                access_token: true,
                ..rule("roles", "groups")
            }]
        })
        .await
        .unwrap();
    let seen = flow(&app, "app", &secret, "alice", "openid").await;
    for target in [&seen.id, &seen.at, &seen.userinfo] {
        assert_eq!(target["roles"], json!(["staff"]), "{target}");
        assert!(
            target.get("groups").is_none(),
            "the groups scope was not asked: {target}"
        );
    }
    // The protocol claims are untouched.
    assert_eq!(seen.at["sub"], alice.sub);
    assert_eq!(seen.at["client_id"], "app");
    assert_eq!(seen.id["nonce"], "n0nce");
}

#[tokio::test]
async fn grafana_role_mapping_takes_the_first_group_that_matches_else_the_default() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let bob = app.add_user("bob").await;
    app.add_user("carol").await;
    join(&app, alice.id, "grafana-editors").await;
    join(&app, alice.id, "grafana-admins").await;
    join(&app, bob.id, "grafana-editors").await;
    let secret = app
        .add_client_with("grafana", false, |c| c.claim_rules = vec![grafana_role()])
        .await
        .unwrap();
    for (user, role) in [("alice", "Admin"), ("bob", "Editor"), ("carol", "Viewer")] {
        let seen = flow(&app, "grafana", &secret, user, "openid profile email").await;
        assert_eq!(seen.id["role"], role, "{user}");
        assert_eq!(seen.userinfo["role"], role, "{user}");
        assert!(seen.at.get("role").is_none(), "not mapped into the access token");
    }
    // Without a default, a user in no mapped group gets no claim at all.
    let secret = app
        .add_client_with("strict", false, |c| {
            c.claim_rules = vec![ClaimRule {
                default: None,
                ..grafana_role()
            }]
        })
        .await
        .unwrap();
    let seen = flow(&app, "strict", &secret, "carol", "openid").await;
    assert!(seen.id.get("role").is_none() && seen.userinfo.get("role").is_none());
}

#[tokio::test]
async fn scope_gated_rules_and_custom_scopes() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let mut claims = serde_json::Map::new();
    claims.insert("department".into(), json!("Research"));
    let id = alice.id;
    app.state
        .db
        .write(move |c| db::users::set_claims(c, id, &claims, 0))
        .await
        .unwrap();
    let secret = app
        .add_client_with("hr", false, |c| {
            c.claim_rules = vec![
                ClaimRule {
                    scope: Some("hr".into()),
                    access_token: true,
                    ..rule("department", "department")
                },
                ClaimRule {
                    scope: Some("profile".into()),
                    userinfo: false,
                    ..rule("login", "preferred_username")
                },
            ]
        })
        .await
        .unwrap();
    let plain = flow(&app, "hr", &secret, "alice", "openid").await;
    assert!(plain.id.get("department").is_none() && plain.userinfo.get("department").is_none());
    assert!(plain.id.get("login").is_none());

    let custom = flow(&app, "hr", &secret, "alice", "openid hr unknown").await;
    assert_eq!(
        custom.scope, "openid hr",
        "the client's custom scope is kept, an unknown one dropped"
    );
    assert_eq!(custom.at["scope"], "openid hr");
    for target in [&custom.id, &custom.at, &custom.userinfo] {
        assert_eq!(target["department"], "Research", "{target}");
    }

    let profile = flow(&app, "hr", &secret, "alice", "openid profile").await;
    assert_eq!(profile.id["login"], "alice");
    assert!(profile.userinfo.get("login").is_none(), "the rule leaves userinfo out");
    assert!(profile.id.get("department").is_none());

    // Another client has no such scope: it is dropped there.
    let other = app.add_client("other", false).await.unwrap();
    let seen = flow(&app, "other", &other, "alice", "openid hr").await;
    assert_eq!(seen.scope, "openid");
}

/// Runs `tessera ARGS` on the app's database: (success, stdout, stderr).
fn cli(app: &TestApp, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(app.db_args())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `client claim set` mapping grafana's groups to its `role` claim.
const GRAFANA_ROLE: &[&str] = &[
    "client",
    "claim",
    "set",
    "grafana",
    "role",
    "--from",
    "group_values",
    "--value",
    "grafana-admins=Admin",
    "--value",
    "grafana-editors=Editor",
    "--default",
    "Viewer",
    "--in",
    "id_token,access_token",
];

#[tokio::test]
async fn the_cli_sets_lists_and_deletes_rules_that_tokens_then_carry() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    join(&app, alice.id, "grafana-editors").await;
    let secret = app.add_client("grafana", false).await.unwrap();
    let (ok, out, err) = cli(&app, GRAFANA_ROLE);
    assert!(!ok, "grafana-admins does not exist yet: {out}");
    assert!(err.contains("no group named `grafana-admins`"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let bob = app.add_user("bob").await;
    join(&app, bob.id, "grafana-admins").await;
    let (ok, out, err) = cli(&app, GRAFANA_ROLE);
    assert!(ok, "{err}");
    assert!(out.contains("claim role of client grafana set"), "{out}");
    let (ok, out, _) = cli(&app, &["client", "claim", "list", "grafana", "--json"]);
    assert!(ok);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        listed,
        json!({"items": [{
            "claim": "role", "source": "group_values", "scope": null, "in": ["id_token", "access_token"],
            "values": [{"group": "grafana-admins", "value": "Admin"}, {"group": "grafana-editors", "value": "Editor"}],
            "default": "Viewer"
        }]})
    );
    let (_, table, _) = cli(&app, &["client", "claim", "list", "grafana"]);
    assert!(
        table.contains("grafana-admins=Admin grafana-editors=Editor default=Viewer"),
        "{table}"
    );

    // The server reads the change within the client cache's second.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let seen = flow(&app, "grafana", &secret, "alice", "openid").await;
    assert_eq!(seen.id["role"], "Editor");
    assert_eq!(seen.at["role"], "Editor");
    assert!(seen.userinfo.get("role").is_none());

    the_cli_refuses_bad_rules_and_deletes_one(&app).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let seen = flow(&app, "grafana", &secret, "alice", "openid").await;
    assert!(seen.id.get("role").is_none());
}

/// A protocol claim, an unknown client and a bad value refused; the rule deleted
/// once, not twice.
async fn the_cli_refuses_bad_rules_and_deletes_one(app: &TestApp) {
    let (ok, _, err) = cli(app, &["client", "claim", "set", "grafana", "sub", "--from", "email"]);
    assert!(!ok);
    assert!(err.contains("`sub` is a protocol claim"), "{err}");
    let (ok, _, err) = cli(app, &["client", "claim", "set", "nobody", "x", "--from", "email"]);
    assert!(!ok && err.contains("no client with id nobody"), "{err}");
    let (ok, _, err) = cli(
        app,
        &[
            "client", "claim", "set", "grafana", "x", "--from", "email", "--value", "junk",
        ],
    );
    assert!(!ok && err.contains("expected GROUP=VALUE"), "{err}");

    let (ok, out, _) = cli(app, &["client", "claim", "delete", "grafana", "role"]);
    assert!(ok && out.contains("deleted"));
    let (ok, _, err) = cli(app, &["client", "claim", "delete", "grafana", "role"]);
    assert!(!ok && err.contains("maps no claim role"), "{err}");
    let (_, out, _) = cli(app, &["client", "claim", "list", "grafana", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!({"items": []}));
}

async fn api(app: &TestApp, token: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    app.admin_api(token, method, path, body).await
}

#[tokio::test]
async fn the_admin_api_manages_the_table_and_refuses_bad_rules() {
    use reqwest::Method;
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let alice = app.add_user("alice").await;
    join(&app, alice.id, "grafana-admins").await;
    let secret = app.add_client("grafana", false).await.unwrap();
    let (s, v) = api(&app, &token, Method::GET, "/clients/grafana/claims", None).await;
    assert_eq!((s, v), (200, json!({"items": []})));

    let table = json!({"items": [
        {"claim": "roles", "source": "groups", "in": ["id_token", "access_token", "userinfo"]},
        {"claim": "role", "source": "group_values", "values": [{"group": "grafana-admins", "value": "Admin"}], "default": "Viewer"}
    ]});
    let (s, v) = api(&app, &token, Method::PUT, "/clients/grafana/claims", Some(table)).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["items"][0]["in"], json!(["id_token", "access_token", "userinfo"]));
    assert_eq!(
        v["items"][1]["in"],
        json!(["id_token", "userinfo"]),
        "the default targets"
    );

    let seen = flow(&app, "grafana", &secret, "alice", "openid").await;
    assert_eq!(seen.at["roles"], json!(["grafana-admins"]));
    assert_eq!(seen.id["role"], "Admin");

    let v = replace_one_rule_and_add_one(&app, &token).await;
    refuse_bad_rules(&app, &token, &v).await;

    let (s, _) = api(&app, &token, Method::DELETE, "/clients/grafana/claims/mail", None).await;
    assert_eq!(s, 204);
    let (s, _) = api(&app, &token, Method::DELETE, "/clients/grafana/claims/mail", None).await;
    assert_eq!(s, 404);
    let (s, _) = api(&app, &token, Method::GET, "/clients/nobody/claims", None).await;
    assert_eq!(s, 404);
    let changes = app
        .audit()
        .await
        .into_iter()
        .filter(|(e, a, t)| {
            e == "admin.client_claims_changed"
                && a.as_deref() == Some("client:ops")
                && t.as_deref() == Some("client:grafana")
        })
        .count();
    assert_eq!(changes, 4, "one audit entry per change that happened");
}

/// One rule replaced in place, one added; the table as it then stands.
async fn replace_one_rule_and_add_one(app: &TestApp, token: &str) -> Value {
    use reqwest::Method;
    // One rule replaced in place, one added.
    let (s, v) = api(
        app,
        token,
        Method::PUT,
        "/clients/grafana/claims/roles",
        Some(json!({"source": "preferred_username", "in": ["userinfo"]})),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["items"][0]["claim"], "roles");
    assert_eq!(v["items"][0]["source"], "preferred_username");
    let (s, _) = api(
        app,
        token,
        Method::PUT,
        "/clients/grafana/claims/mail",
        Some(json!({"source": "email", "scope": "mail"})),
    )
    .await;
    assert_eq!(s, 200);
    let (_, v) = api(app, token, Method::GET, "/clients/grafana/claims", None).await;
    let names: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["claim"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["roles", "role", "mail"]);

    v
}

/// Refusals: 400 with the field, nothing changed from `v`.
async fn refuse_bad_rules(app: &TestApp, token: &str, v: &Value) {
    use reqwest::Method;
    // Refusals: 400 with the field, nothing changed.
    for (path, body, field) in [
        ("/clients/grafana/claims/sub", json!({"source": "email"}), "claim"),
        ("/clients/grafana/claims/aud", json!({"source": "email"}), "claim"),
        ("/clients/grafana/claims/x", json!({"source": "no such"}), "source"),
        (
            "/clients/grafana/claims/x",
            json!({"source": "email", "in": ["cookie"]}),
            "in",
        ),
        (
            "/clients/grafana/claims/x",
            json!({"source": "email", "default": "v"}),
            "default",
        ),
        (
            "/clients/grafana/claims/x",
            json!({"source": "group_values", "values": [{"group": "ghosts", "value": "G"}]}),
            "values",
        ),
        (
            "/clients/grafana/claims/x",
            json!({"claim": "y", "source": "email"}),
            "claim",
        ),
    ] {
        let (s, v) = api(app, token, Method::PUT, path, Some(body.clone())).await;
        assert_eq!(s, 400, "{body}: {v}");
        assert!(v.to_string().contains(field), "{body}: {v}");
    }
    let (_, after) = api(app, token, Method::GET, "/clients/grafana/claims", None).await;
    assert_eq!(&after, v, "refused changes change nothing");
}

#[tokio::test]
async fn the_consent_page_lists_what_the_mapping_releases() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    // The groups a rule names exist before the client is stored with it.
    join(&app, alice.id, "grafana-admins").await;
    join(&app, alice.id, "grafana-editors").await;
    app.add_client_with("third", false, |c| {
        c.consent_required = true;
        c.claim_rules = vec![
            ClaimRule {
                values: vec![
                    ("grafana-admins".into(), "Admin".into()),
                    ("grafana-editors".into(), "Editor".into()),
                ],
                default: Some("Viewer".into()),
                ..rule("roles", "group_values")
            },
            ClaimRule {
                scope: Some("hr".into()),
                ..rule("department", "department")
            },
        ];
    })
    .await;
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("third", &[])).await;
    let resp = app.submit_login(&b, fields, "alice", PASSWORD).await;
    assert_eq!(resp.status(), 200, "expected the consent page");
    let html = resp.text().await.unwrap();
    let mapped = text_of(&html, "mapped-claims").unwrap();
    assert!(
        mapped.contains("roles: your groups mapped to Admin/Editor/Viewer"),
        "{mapped}"
    );
    assert!(
        !mapped.contains("department"),
        "the hr scope was not asked for: {mapped}"
    );
}
