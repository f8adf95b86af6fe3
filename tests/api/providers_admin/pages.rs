//! The provider pages `/admin/providers`: adding, seeing and deleting, with the form's
//! problems and its CSRF token.

use super::*;

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
