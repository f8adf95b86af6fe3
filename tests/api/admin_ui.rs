//! The admin pages: administrators only (403 for everyone else on every route), CSRF
//! on every form, and each page action doing what it says.

use crate::helpers::*;

/// Every admin page route, with a method, for the authorisation sweep.
const PAGES: &[(&str, &str)] = &[
    ("GET", "/admin"),
    ("GET", "/admin/users"),
    ("POST", "/admin/users"),
    ("GET", "/admin/users/1"),
    ("POST", "/admin/users/1"),
    ("POST", "/admin/users/1/password"),
    ("POST", "/admin/users/1/disable"),
    ("POST", "/admin/users/1/enable"),
    ("POST", "/admin/users/1/unlock"),
    ("POST", "/admin/users/1/mfa-reset"),
    ("POST", "/admin/users/1/delete"),
    ("POST", "/admin/users/1/deletion-approve"),
    ("POST", "/admin/users/1/deletion-reject"),
    ("POST", "/admin/users/1/sessions/end"),
    ("POST", "/admin/users/1/unlink"),
    ("GET", "/admin/clients"),
    ("POST", "/admin/clients"),
    ("GET", "/admin/clients/new"),
    ("GET", "/admin/clients/rp"),
    ("POST", "/admin/clients/rp"),
    ("POST", "/admin/clients/rp/secret"),
    ("POST", "/admin/clients/rp/delete"),
    ("GET", "/admin/providers"),
    ("POST", "/admin/providers"),
    ("GET", "/admin/providers/up"),
    ("POST", "/admin/providers/up/delete"),
    ("POST", "/admin/providers/up/secret"),
    ("GET", "/admin/groups"),
    ("POST", "/admin/groups"),
    ("GET", "/admin/groups/1"),
    ("POST", "/admin/groups/1"),
    ("POST", "/admin/groups/1/members/add"),
    ("POST", "/admin/groups/1/members/remove"),
    ("POST", "/admin/groups/1/delete"),
    ("GET", "/admin/keys"),
    ("POST", "/admin/keys/rotate"),
    ("GET", "/admin/audit"),
    ("GET", "/admin/mail"),
    ("GET", "/admin/invitations"),
    ("POST", "/admin/invitations"),
    ("POST", "/admin/invitations/1/revoke"),
];

#[tokio::test]
async fn every_admin_page_refuses_non_admins() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    app.add_client("rp", false).await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    for (method, path) in PAGES {
        let url = app.url(path);
        let resp = if *method == "GET" {
            b.get(&url).send().await.unwrap()
        } else {
            b.post(&url).form(&[("csrf", csrf.as_str())]).send().await.unwrap()
        };
        assert_eq!(resp.status(), 403, "{method} {path} for a non-admin");
        assert!(resp.text().await.unwrap().contains("Administrators only"));
        let stranger = browser();
        let resp = if *method == "GET" {
            stranger.get(&url).send().await.unwrap()
        } else {
            stranger.post(&url).form(&[("csrf", "x")]).send().await.unwrap()
        };
        let expected = if *method == "GET" { 200 } else { 401 };
        assert_eq!(resp.status(), expected, "{method} {path} signed out");
        if *method == "GET" {
            assert!(
                resp.text().await.unwrap().contains("action=\"/login\""),
                "the login form"
            );
        }
    }
}

#[tokio::test]
async fn administrators_manage_users_through_the_pages() {
    let app = spawn_app().await;
    let p = app.admin_portal().await;
    let page = p.page("/admin").await;
    assert_eq!(text_of(&page, "stat-users").as_deref(), Some("1"));
    let user_path = create_bob(&p).await;
    edit_bob(&p, &user_path).await;
    set_bobs_password_and_end_his_session(&p, &user_path).await;
    delete_bob(&p, &user_path).await;
    read_the_audit_page(&p).await;
}

/// Creating `bob`: refused without CSRF, the form's errors, then created and listed;
/// his page's path.
async fn create_bob(p: &Portal<'_>) -> String {
    let refused =
        p.b.post(p.app.url("/admin/users"))
            .form(&[("username", "bob"), ("password", "long enough pw")])
            .send()
            .await
            .unwrap();
    assert_eq!(refused.status(), 403, "no CSRF token");
    let missing = p.post("/admin/users", &[("username", "bob"), ("email", "nope")]).await;
    assert_eq!(missing.status(), 400);
    let html = missing.text().await.unwrap();
    assert!(
        text_of(&html, "new-password-error").is_some(),
        "error next to the password field"
    );
    assert!(text_of(&html, "new-email-error").is_some());
    assert_eq!(
        input_value(&html, "username").as_deref(),
        Some("bob"),
        "the form keeps what was typed"
    );

    let created = p
        .post(
            "/admin/users",
            &[
                ("username", "bob"),
                ("email", "bob@example.com"),
                ("password", "long enough pw"),
            ],
        )
        .await;
    assert_eq!(created.status(), 302);
    let user_path = location(&created).split('?').next().unwrap().to_string();
    let list = p.page("/admin/users?q=bob").await;
    assert!(list.contains(&format!("href=\"{user_path}\"")));
    user_path
}

/// Bob's details, groups and claims saved (bad claims refused), and the account actions.
async fn edit_bob(p: &Portal<'_>, user_path: &str) {
    let g = p.post("/admin/groups", &[("name", "staff")]).await;
    assert_eq!(g.status(), 302);
    let saved = p
        .post(
            user_path,
            &[
                ("name", "Bob"),
                ("email", "bob@example.com"),
                ("groups", "staff"),
                ("claims", "{\"given_name\": \"Bob\"}"),
            ],
        )
        .await;
    assert_eq!(saved.status(), 302);
    let html = p.page(user_path).await;
    assert!(html.contains("value=\"staff\" checked"));
    let bad_claims = p.post(user_path, &[("claims", "[1]")]).await;
    assert_eq!(bad_claims.status(), 400);
    assert!(text_of(&bad_claims.text().await.unwrap(), "claims-error").is_some());

    for action in ["disable", "enable", "unlock"] {
        let r = p.post(&format!("{user_path}/{action}"), &[]).await;
        assert_eq!(r.status(), 302, "{action}");
    }
}

/// A new password (a short one refused) that bob signs in with, and his session ended.
async fn set_bobs_password_and_end_his_session(p: &Portal<'_>, user_path: &str) {
    let password_path = format!("{user_path}/password");
    let short = p.post(&password_path, &[("password", "x")]).await;
    assert_eq!(short.status(), 400);
    let set = p.post(&password_path, &[("password", "bob's new password")]).await;
    assert_eq!(set.status(), 302);
    let bob = p.app.portal("bob", "bob's new password").await;
    let html = p.page(user_path).await;
    assert!(html.contains("/sessions/end"), "bob's session is listed");
    let out = p.post(&format!("{user_path}/sessions/end"), &[]).await;
    assert_eq!(out.status(), 302);
    assert!(bob.page("/account").await.contains("your Tessera account"));
}

/// Deleting bob needs the confirmation box; then his page is gone.
async fn delete_bob(p: &Portal<'_>, user_path: &str) {
    let delete_path = format!("{user_path}/delete");
    let unconfirmed = p.post(&delete_path, &[]).await;
    assert_eq!(unconfirmed.status(), 400);
    let deleted = p.post(&delete_path, &[("confirm", "on")]).await;
    assert_eq!(deleted.status(), 302);
    assert_eq!(p.get(user_path).await.status(), 404);
}

/// The audit page lists the admin events, filters by event and date, explains a bad date.
async fn read_the_audit_page(p: &Portal<'_>) {
    let root_id = p.app.audit().await.len(); // touch the log before reading the page
    assert!(root_id > 0);
    let audit = p.page("/admin/audit?event=admin.").await;
    for e in [
        "admin.user_created",
        "admin.user_updated",
        "admin.user_disabled",
        "admin.password_set",
        "admin.user_deleted",
    ] {
        assert!(audit.contains(e), "{e} on the audit page");
    }
    assert!(!audit.contains("login.ok"), "filtered to admin events");
    let today = &tessera::http::signin::portal::when(p.app.clock.now())[..10];
    let dated = p
        .page(&format!("/admin/audit?event=admin.&from={today}&to={today}"))
        .await;
    assert!(dated.contains("admin.user_created"), "today's events");
    let old = p.page("/admin/audit?from=2001-01-01&to=2001-12-31").await;
    assert!(old.contains("0 event(s)"), "nothing in 2001");
    let bad = p.page("/admin/audit?from=someday").await;
    assert!(bad.contains("a date like"), "a bad date is explained");
}

#[tokio::test]
async fn administrators_register_clients_groups_and_keys_through_the_pages() {
    let app = spawn_app().await;
    let p = app.admin_portal().await;
    register_and_retire_a_client(&p).await;
    manage_a_group(&p).await;
    rotate_a_key(&p).await;
}

/// The client form's errors, then a client registered, edited, its secret rotated
/// (the old one refused) and deleted.
async fn register_and_retire_a_client(p: &Portal<'_>) {
    let app = p.app;
    let form = p.get("/admin/clients/new").await;
    assert_eq!(form.status(), 200);
    let bad = p
        .post(
            "/admin/clients",
            &[
                ("client_id", "grafana"),
                ("kind", "confidential"),
                ("grant_types", "authorization_code"),
                ("redirect_uris", "not a uri"),
                ("access_token_ttl", "soon"),
            ],
        )
        .await;
    assert_eq!(bad.status(), 400);
    let html = bad.text().await.unwrap();
    assert!(text_of(&html, "redirect_uris-error").is_some());
    assert!(text_of(&html, "access-error").is_some());

    let created = p
        .post(
            "/admin/clients",
            &[
                ("client_id", "grafana"),
                ("kind", "confidential"),
                ("name", "Grafana"),
                ("grant_types", "authorization_code"),
                ("grant_types", "refresh_token"),
                ("grant_types", "client_credentials"),
                ("redirect_uris", "https://grafana.example/login/generic_oauth"),
                ("id_token_signed_response_alg", "RS256"),
                ("refresh_tokens", "always"),
                ("access_token_ttl", "300"),
            ],
        )
        .await;
    assert_eq!(created.status(), 201);
    let html = created.text().await.unwrap();
    let secret = text_of(&html, "client-secret").expect("the secret is shown once");
    let token = app
        .token(Some(("grafana", &secret)), &[("grant_type", "client_credentials")])
        .await;
    assert_eq!(token.json::<serde_json::Value>().await.unwrap()["expires_in"], 300);
    let shown = p.page("/admin/clients/grafana").await;
    assert!(!shown.contains(&secret), "not shown again");

    let saved = p
        .post(
            "/admin/clients/grafana",
            &[
                ("name", "Grafana Prod"),
                ("grant_types", "authorization_code"),
                ("grant_types", "client_credentials"),
                ("redirect_uris", "https://grafana.example/login/generic_oauth"),
                ("id_token_signed_response_alg", "ES256"),
                ("refresh_tokens", "always"),
            ],
        )
        .await;
    assert_eq!(saved.status(), 302);
    let list = p.page("/admin/clients").await;
    assert!(list.contains("Grafana Prod"));
    let rotated = p.post("/admin/clients/grafana/secret", &[]).await;
    let new_secret = text_of(&rotated.text().await.unwrap(), "client-secret").unwrap();
    assert_ne!(new_secret, secret);
    assert_eq!(
        app.token(Some(("grafana", &secret)), &[("grant_type", "client_credentials")])
            .await
            .status(),
        401
    );
    let gone = p.post("/admin/clients/grafana/delete", &[("confirm", "on")]).await;
    assert_eq!(gone.status(), 302);
    assert_eq!(p.get("/admin/clients/grafana").await.status(), 404);
}

/// A group: an empty name refused, created, a member added (an unknown one refused),
/// renamed and deleted.
async fn manage_a_group(p: &Portal<'_>) {
    let dup = p.post("/admin/groups", &[("name", "")]).await;
    assert_eq!(dup.status(), 400);
    assert!(text_of(&dup.text().await.unwrap(), "group-name-error").is_some());
    let g = p.post("/admin/groups", &[("name", "ops")]).await;
    let group_path = location(&g).split('?').next().unwrap().to_string();
    let members_add = format!("{group_path}/members/add");
    let add = p.post(&members_add, &[("username", "root")]).await;
    assert_eq!(add.status(), 302);
    let nobody = p.post(&members_add, &[("username", "ghost")]).await;
    assert_eq!(nobody.status(), 400);
    let html = p.page(&group_path).await;
    assert!(html.contains(">root</a>"));
    let renamed = p.post(&group_path, &[("name", "operations")]).await;
    assert_eq!(renamed.status(), 302);
    let deleted = p.post(&format!("{group_path}/delete"), &[("confirm", "on")]).await;
    assert_eq!(deleted.status(), 302);
}

/// Rotating in an EdDSA key adds a row to the keys page.
async fn rotate_a_key(p: &Portal<'_>) {
    let keys_before = p.page("/admin/keys").await.matches("<tr>").count();
    let rotate = p.post("/admin/keys/rotate", &[("alg", "EdDSA")]).await;
    assert_eq!(rotate.status(), 302);
    let keys_after = p.page("/admin/keys").await;
    assert_eq!(keys_after.matches("<tr>").count(), keys_before + 1);
    assert!(keys_after.contains("EdDSA"));
}
