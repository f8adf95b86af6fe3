//! A person's links to upstream accounts: listed and removed through the API, the
//! user page and the command line; a replaced secret keeps them.

use super::*;

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
