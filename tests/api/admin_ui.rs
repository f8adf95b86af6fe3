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
    let (b, csrf) = app.admin_browser().await;
    let page = b.get(app.url("/admin")).send().await.unwrap().text().await.unwrap();
    assert_eq!(text_of(&page, "stat-users").as_deref(), Some("1"));

    let refused = b
        .post(app.url("/admin/users"))
        .form(&[("username", "bob"), ("password", "long enough pw")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403, "no CSRF token");
    let missing = b
        .post(app.url("/admin/users"))
        .form(&[("csrf", csrf.as_str()), ("username", "bob"), ("email", "nope")])
        .send()
        .await
        .unwrap();
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

    let created = b
        .post(app.url("/admin/users"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("username", "bob"),
            ("email", "bob@example.com"),
            ("password", "long enough pw"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 302);
    let user_path = location(&created).split('?').next().unwrap().to_string();
    let list = b
        .get(app.url("/admin/users?q=bob"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(list.contains(&format!("href=\"{user_path}\"")));

    let g = b
        .post(app.url("/admin/groups"))
        .form(&[("csrf", csrf.as_str()), ("name", "staff")])
        .send()
        .await
        .unwrap();
    assert_eq!(g.status(), 302);
    let saved = b
        .post(app.url(&user_path))
        .form(&[
            ("csrf", csrf.as_str()),
            ("name", "Bob"),
            ("email", "bob@example.com"),
            ("groups", "staff"),
            ("claims", "{\"given_name\": \"Bob\"}"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 302);
    let html = b.get(app.url(&user_path)).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("value=\"staff\" checked"));
    let bad_claims = b
        .post(app.url(&user_path))
        .form(&[("csrf", csrf.as_str()), ("claims", "[1]")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad_claims.status(), 400);
    assert!(text_of(&bad_claims.text().await.unwrap(), "claims-error").is_some());

    for action in ["disable", "enable", "unlock"] {
        let r = b
            .post(app.url(&format!("{user_path}/{action}")))
            .form(&[("csrf", csrf.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 302, "{action}");
    }
    let short = b
        .post(app.url(&format!("{user_path}/password")))
        .form(&[("csrf", csrf.as_str()), ("password", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(short.status(), 400);
    let set = b
        .post(app.url(&format!("{user_path}/password")))
        .form(&[("csrf", csrf.as_str()), ("password", "bob's new password")])
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 302);
    let bob = browser();
    app.portal_login(&bob, "bob", "bob's new password").await;
    let html = b.get(app.url(&user_path)).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("/sessions/end"), "bob's session is listed");
    let out = b
        .post(app.url(&format!("{user_path}/sessions/end")))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 302);
    assert!(bob
        .get(app.url("/account"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .contains("your Tessera account"));

    let unconfirmed = b
        .post(app.url(&format!("{user_path}/delete")))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(unconfirmed.status(), 400);
    let deleted = b
        .post(app.url(&format!("{user_path}/delete")))
        .form(&[("csrf", csrf.as_str()), ("confirm", "on")])
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 302);
    assert_eq!(b.get(app.url(&user_path)).send().await.unwrap().status(), 404);
    let root_id = app.audit().await.len(); // touch the log before reading the page
    assert!(root_id > 0);
    let audit = b
        .get(app.url("/admin/audit?event=admin."))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
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
    let today = &tessera::http::signin::portal::when(app.clock.now())[..10];
    let dated = b
        .get(app.url(&format!("/admin/audit?event=admin.&from={today}&to={today}")))
        .send()
        .await
        .unwrap();
    assert!(
        dated.text().await.unwrap().contains("admin.user_created"),
        "today's events"
    );
    let old = b
        .get(app.url("/admin/audit?from=2001-01-01&to=2001-12-31"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(old.contains("0 event(s)"), "nothing in 2001");
    let bad = b
        .get(app.url("/admin/audit?from=someday"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(bad.contains("a date like"), "a bad date is explained");
}

#[tokio::test]
async fn administrators_register_clients_groups_and_keys_through_the_pages() {
    let app = spawn_app().await;
    let (b, csrf) = app.admin_browser().await;
    let form = b.get(app.url("/admin/clients/new")).send().await.unwrap();
    assert_eq!(form.status(), 200);
    let bad = b
        .post(app.url("/admin/clients"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("client_id", "grafana"),
            ("kind", "confidential"),
            ("grant_types", "authorization_code"),
            ("redirect_uris", "not a uri"),
            ("access_token_ttl", "soon"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let html = bad.text().await.unwrap();
    assert!(text_of(&html, "redirect_uris-error").is_some());
    assert!(text_of(&html, "access-error").is_some());

    let created = b
        .post(app.url("/admin/clients"))
        .form(&[
            ("csrf", csrf.as_str()),
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
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let html = created.text().await.unwrap();
    let secret = text_of(&html, "client-secret").expect("the secret is shown once");
    let token = app
        .token(Some(("grafana", &secret)), &[("grant_type", "client_credentials")])
        .await;
    assert_eq!(token.json::<serde_json::Value>().await.unwrap()["expires_in"], 300);
    let shown = b
        .get(app.url("/admin/clients/grafana"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!shown.contains(&secret), "not shown again");

    let saved = b
        .post(app.url("/admin/clients/grafana"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("name", "Grafana Prod"),
            ("grant_types", "authorization_code"),
            ("grant_types", "client_credentials"),
            ("redirect_uris", "https://grafana.example/login/generic_oauth"),
            ("id_token_signed_response_alg", "ES256"),
            ("refresh_tokens", "always"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 302);
    let list = b
        .get(app.url("/admin/clients"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(list.contains("Grafana Prod"));
    let rotated = b
        .post(app.url("/admin/clients/grafana/secret"))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    let new_secret = text_of(&rotated.text().await.unwrap(), "client-secret").unwrap();
    assert_ne!(new_secret, secret);
    assert_eq!(
        app.token(Some(("grafana", &secret)), &[("grant_type", "client_credentials")])
            .await
            .status(),
        401
    );
    let gone = b
        .post(app.url("/admin/clients/grafana/delete"))
        .form(&[("csrf", csrf.as_str()), ("confirm", "on")])
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 302);
    assert_eq!(
        b.get(app.url("/admin/clients/grafana")).send().await.unwrap().status(),
        404
    );

    let dup = b
        .post(app.url("/admin/groups"))
        .form(&[("csrf", csrf.as_str()), ("name", "")])
        .send()
        .await
        .unwrap();
    assert_eq!(dup.status(), 400);
    assert!(text_of(&dup.text().await.unwrap(), "group-name-error").is_some());
    let g = b
        .post(app.url("/admin/groups"))
        .form(&[("csrf", csrf.as_str()), ("name", "ops")])
        .send()
        .await
        .unwrap();
    let group_path = location(&g).split('?').next().unwrap().to_string();
    let add = b
        .post(app.url(&format!("{group_path}/members/add")))
        .form(&[("csrf", csrf.as_str()), ("username", "root")])
        .send()
        .await
        .unwrap();
    assert_eq!(add.status(), 302);
    let nobody = b
        .post(app.url(&format!("{group_path}/members/add")))
        .form(&[("csrf", csrf.as_str()), ("username", "ghost")])
        .send()
        .await
        .unwrap();
    assert_eq!(nobody.status(), 400);
    let html = b.get(app.url(&group_path)).send().await.unwrap().text().await.unwrap();
    assert!(html.contains(">root</a>"));
    let renamed = b
        .post(app.url(&group_path))
        .form(&[("csrf", csrf.as_str()), ("name", "operations")])
        .send()
        .await
        .unwrap();
    assert_eq!(renamed.status(), 302);
    let deleted = b
        .post(app.url(&format!("{group_path}/delete")))
        .form(&[("csrf", csrf.as_str()), ("confirm", "on")])
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 302);

    let keys_before = b
        .get(app.url("/admin/keys"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .matches("<tr>")
        .count();
    let rotate = b
        .post(app.url("/admin/keys/rotate"))
        .form(&[("csrf", csrf.as_str()), ("alg", "EdDSA")])
        .send()
        .await
        .unwrap();
    assert_eq!(rotate.status(), 302);
    let keys_after = b
        .get(app.url("/admin/keys"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(keys_after.matches("<tr>").count(), keys_before + 1);
    assert!(keys_after.contains("EdDSA"));
}
