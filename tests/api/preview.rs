//! The token preview (`/admin/api/clients/{id}/preview` and its page) and the client
//! page's "Test sign-in": the preview's exact shape, reasons and refusals, its equality
//! with the claims of real tokens, and a test sign-in whose checks pass and whose grant
//! ends revoked.

use serde_json::{json, Map, Value};
use tessera::db::{self, claim_rules::ClaimRule};

use crate::admin_api::admin_token;
use crate::claim_mapping::{flow, grafana_role, join, rule};
use crate::helpers::*;

async fn preview(app: &TestApp, token: &str, query: &str) -> (u16, Value) {
    let resp = plain_client()
        .get(app.url(&format!("/admin/api/clients/{query}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn without(v: &Value, names: &[&str]) -> Map<String, Value> {
    let mut m = v.as_object().unwrap().clone();
    for n in names {
        m.remove(*n);
    }
    m
}

fn mapped_rules() -> Vec<ClaimRule> {
    vec![
        grafana_role(),
        ClaimRule {
            id_token: false,
            access_token: true,
            userinfo: false,
            ..rule("roles", "groups")
        },
    ]
}

#[tokio::test]
async fn the_preview_has_its_exact_shape_with_reasons_and_refusals() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let alice = app.add_user("alice").await;
    join(&app, alice.id, "grafana-editors").await;
    join(&app, alice.id, "grafana-admins").await;
    let staff = app.add_user("staffer").await;
    join(&app, staff.id, "staff").await;
    app.add_client_with("grafana", false, |c| {
        c.claim_rules = mapped_rules();
        c.allowed_groups = vec!["staff".into()];
        c.consent_required = true;
    })
    .await;

    let (s, p) = preview(&app, &token, "grafana/preview?user=alice").await;
    assert_eq!(s, 200, "{p}");
    let mut top = keys(&p);
    top.sort();
    assert_eq!(top, ["access_token", "id_token", "reasons", "refused", "userinfo"]);
    let mut targets = keys(&p["reasons"]);
    targets.sort();
    assert_eq!(targets, ["access_token", "id_token", "userinfo"]);
    for t in ["id_token", "access_token", "userinfo"] {
        assert_eq!(keys(&p[t]), keys(&p["reasons"][t]), "every claim of {t} has its reason");
    }
    the_preview_gives_claims_and_reasons(&app, &p, &alice.sub);
    the_preview_says_what_is_refused(&p);

    // A member who consented: no refusal left; a custom scope nobody knows is one.
    let sid = staff.id;
    app.state
        .db
        .write(move |c| db::consents::grant(c, sid, "grafana", "openid profile email", "", 0))
        .await
        .unwrap();
    let (_, p) = preview(&app, &token, "grafana/preview?user=staffer&scope=openid+bogus").await;
    assert_eq!(
        p["refused"],
        json!([{"what": "scope bogus", "why": "neither a scope of this server nor one of the client's claim mapping: dropped from the request"}])
    );
    assert_eq!(p["id_token"]["role"], "Viewer");
    assert!(p["id_token"].get("email").is_none(), "email was not asked for");

    the_preview_refuses_disabled_unknown_and_bad_requests(&app, &token).await;
}

/// Each claim of the ID token, the access token and userinfo, with its reason.
fn the_preview_gives_claims_and_reasons(app: &TestApp, p: &Value, sub: &str) {
    let id = &p["id_token"];
    let why = &p["reasons"]["id_token"];
    assert_eq!(id["role"], "Admin");
    assert_eq!(why["role"], "claim mapping \"role\" (group_values)");
    assert_eq!(id["email"], "alice@example.com");
    assert_eq!(why["email"], "scope email");
    assert_eq!(why["preferred_username"], "scope profile");
    assert_eq!(
        (id["sub"].as_str().unwrap(), why["sub"].as_str().unwrap()),
        (sub, "always")
    );
    assert_eq!(id["iss"].as_str().unwrap(), &*app.state.issuer);
    assert_eq!(id["aud"], "grafana");
    for name in ["iss", "aud", "azp", "exp", "iat", "auth_time"] {
        assert_eq!(why[name], "protocol", "{name}");
    }
    let lifetimes = &app.state.settings.lifetimes;
    assert_eq!(
        id["exp"].as_i64().unwrap() - id["iat"].as_i64().unwrap(),
        lifetimes.id_token
    );
    assert!(id.get("roles").is_none(), "roles goes to the access token only");
    let at = &p["access_token"];
    assert_eq!(at["roles"], json!(["grafana-admins", "grafana-editors"]));
    assert_eq!(
        p["reasons"]["access_token"]["roles"],
        "claim mapping \"roles\" (groups)"
    );
    assert_eq!(at["scope"], "openid profile email", "the default scope");
    assert_eq!(
        at["exp"].as_i64().unwrap() - at["iat"].as_i64().unwrap(),
        lifetimes.access_token
    );
    assert!(at.get("email").is_none() && at.get("role").is_none());
    assert_eq!(p["userinfo"]["role"], "Admin");
    assert!(p["userinfo"].get("iss").is_none());
}

/// What the preview refuses for alice, each with why.
fn the_preview_says_what_is_refused(p: &Value) {
    let refused = p["refused"].as_array().unwrap();
    let whats: Vec<&str> = refused.iter().map(|r| r["what"].as_str().unwrap()).collect();
    assert_eq!(
        whats,
        ["client grafana", "scope openid", "scope profile", "scope email"],
        "{refused:?}"
    );
    assert!(refused[0]["why"]
        .as_str()
        .unwrap()
        .contains("not a member of an allowed group (staff)"));
    assert!(refused[1]["why"].as_str().unwrap().contains("consent"));
    for r in refused {
        assert_eq!(keys(r), ["what", "why"]);
    }
}

/// A disabled person, a scope without openid, an unknown person or client, and bad
/// queries.
async fn the_preview_refuses_disabled_unknown_and_bad_requests(app: &TestApp, token: &str) {
    app.add_user("bob").await;
    app.state
        .db
        .write(move |c| db::users::set_disabled(c, "bob", true, 0))
        .await
        .unwrap();
    let (_, p) = preview(app, token, "grafana/preview?user=bob").await;
    assert_eq!(p["refused"][0]["what"], "user bob");

    let (_, p) = preview(app, token, "grafana/preview?user=alice&scope=profile").await;
    assert_eq!(p["id_token"], json!({}));
    assert!(p["refused"].to_string().contains("scope openid"));

    let (s, e) = preview(app, token, "grafana/preview?user=nobody").await;
    assert_eq!((s, e["error"].as_str()), (404, Some("not_found")), "{e}");
    let (s, _) = preview(app, token, "nothere/preview?user=alice").await;
    assert_eq!(s, 404);
    let (s, _) = preview(app, token, "grafana/preview").await;
    assert_eq!(s, 400);
    let (s, _) = preview(app, token, "grafana/preview?user=alice&scope=a%22b").await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn the_preview_equals_the_claims_of_real_tokens() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let alice = app.add_user("alice").await;
    join(&app, alice.id, "grafana-editors").await;
    let other = app.add_user("other").await;
    join(&app, other.id, "grafana-admins").await;
    let secret = app
        .add_client_with("grafana", false, |c| c.claim_rules = mapped_rules())
        .await
        .unwrap();
    let seen = flow(&app, "grafana", &secret, "alice", "openid profile email").await;
    let (s, p) = preview(&app, &token, "grafana/preview?user=alice").await;
    assert_eq!(s, 200);
    // What only a real sign-in or issuance has: its times, nonce, session and methods.
    let timing = ["iat", "exp", "auth_time"];
    let issued = [
        "iat",
        "exp",
        "auth_time",
        "nonce",
        "at_hash",
        "sid",
        "amr",
        "acr",
        "jti",
        "gid",
    ];
    assert_eq!(without(&seen.id, &issued), without(&p["id_token"], &timing));
    assert_eq!(without(&seen.at, &issued), without(&p["access_token"], &timing));
    assert_eq!(seen.userinfo, p["userinfo"]);
    assert_eq!(seen.id["role"], "Editor", "the comparison covers the mapping");
}

#[tokio::test]
async fn the_client_page_edits_rules_and_shows_the_preview() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    join(&app, alice.id, "grafana-editors").await;
    app.add_client("grafana", false).await;
    let p = app.admin_portal().await;
    let form = [
        ("claim", "role"),
        ("source", "group_values"),
        ("in", "id_token"),
        ("in", "access_token"),
        ("values", "grafana-editors=Editor\n"),
        ("default", "Viewer"),
    ];
    let resp = p.post("/admin/clients/grafana/claims", &form).await;
    assert_eq!(resp.status(), 302);
    let html = p.page("/admin/clients/grafana").await;
    let table = text_of(&html, "claim-rules").unwrap();
    assert!(table.contains("grafana-editors → Editor; otherwise Viewer"), "{table}");
    assert!(html.contains("href=\"/admin/clients/grafana/preview\""));

    let bad = [("claim", "nonce"), ("source", "email")];
    let resp = p.post("/admin/clients/grafana/claims", &bad).await;
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("protocol claim"));
    let forged = [("csrf", "wrong"), ("claim", "x"), ("source", "email")];
    let resp =
        p.b.post(app.url("/admin/clients/grafana/claims"))
            .form(&forged)
            .send()
            .await
            .unwrap();
    assert_eq!(resp.status(), 403);

    let page = p.get("/admin/clients/grafana/preview?user=alice").await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    let id = text_of(&html, "id-token").unwrap();
    assert!(
        id.contains("\"Editor\"") && id.contains("claim mapping \"role\" (group_values)"),
        "{id}"
    );
    assert!(text_of(&html, "access-token").unwrap().contains("\"Editor\""));
    assert!(!text_of(&html, "userinfo").unwrap().contains("Editor"));
    let page = p.get("/admin/clients/grafana/preview?user=ghost").await;
    assert_eq!(page.status(), 404);

    let resp = p.post("/admin/clients/grafana/claims/role/delete", &[]).await;
    assert_eq!(resp.status(), 302);
    let html = p.page("/admin/clients/grafana").await;
    assert!(html.contains("No rules"));
}

/// The pretty-printed JSON of an element of the test sign-in page.
fn json_of(html: &str, id: &str) -> Value {
    serde_json::from_str(&text_of(html, id).unwrap()).unwrap()
}

#[tokio::test]
async fn test_sign_in_passes_every_check_then_revokes_the_grant() {
    let app = spawn_app().await;
    app.add_client_with("grafana", false, |c| {
        c.claim_rules = vec![ClaimRule {
            access_token: true,
            ..rule("login", "preferred_username")
        }]
    })
    .await;
    let (b, csrf) = app.admin_browser().await;
    let resp = b
        .post(app.url("/admin/clients/grafana/test"))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let html = resp.text().await.unwrap();
    assert_eq!(text_of(&html, "test-result").unwrap(), "Every check passed.", "{html}");
    let checks = text_of(&html, "checks").unwrap();
    for name in ["ID token signature", "iss", "aud", "exp", "nonce", "at_hash"] {
        assert!(checks.contains(name), "{name}: {checks}");
    }
    assert!(!checks.contains("fail"), "{checks}");
    assert!(text_of(&html, "revoked").unwrap().contains("was revoked"));
    let id = json_of(&html, "id-token-claims");
    assert_eq!(id["aud"], "grafana");
    assert_eq!(id["login"], "root");
    assert!(id["nonce"].as_str().is_some_and(|n| !n.is_empty()));
    let at = json_of(&html, "access-token-claims");
    assert_eq!(at["login"], "root");
    let (gid, jti) = (
        at["gid"].as_str().unwrap().to_string(),
        at["jti"].as_str().unwrap().to_string(),
    );
    let (grant, active) = app
        .state
        .db
        .read(move |c| {
            Ok((
                db::grants::find_grant(c, &gid)?,
                db::grants::access_token_active(c, &gid, &jti)?,
            ))
        })
        .await
        .unwrap();
    let grant = grant.expect("the test sign-in made a real grant");
    assert!(grant.revoked_at.is_some() && !active, "revoked afterwards");
    let audit = app.audit().await;
    assert!(audit.iter().any(|(e, a, t)| e == "client.test_sign_in"
        && a.as_deref() == Some("root")
        && t.as_deref() == Some("client:grafana")));
    assert!(
        audit.iter().any(|(e, _, _)| e == "token.issued"),
        "through the real code exchange"
    );

    let resp = b
        .post(app.url("/admin/clients/grafana/test"))
        .form(&[("csrf", "forged")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
}

#[tokio::test]
async fn test_sign_in_shows_the_refusal_of_a_client_the_admin_may_not_use() {
    let app = spawn_app().await;
    let member = app.add_user("member").await;
    join(&app, member.id, "finance").await;
    app.add_client_with("books", false, |c| c.allowed_groups = vec!["finance".into()])
        .await;
    let (b, csrf) = app.admin_browser().await;
    let html = b
        .post(app.url("/admin/clients/books/test"))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let refused = text_of(&html, "test-refused").unwrap();
    assert!(
        refused.contains("not a member of a group allowed to use this client (finance)"),
        "{refused}"
    );
    assert!(text_of(&html, "checks").is_none(), "no token, no checks");
    let issued = app
        .audit()
        .await
        .into_iter()
        .filter(|(e, _, _)| e == "token.issued")
        .count();
    assert_eq!(issued, 0);
}
