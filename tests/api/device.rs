//! Device Authorization Grant (RFC 8628).

use crate::helpers::*;

const DEVICE: &str = "urn:ietf:params:oauth:grant-type:device_code";

async fn device_app() -> TestApp {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client_with("tv", true, |c| {
        c.grant_types = vec![DEVICE.into(), "refresh_token".into()]
    })
    .await;
    app
}

async fn start(app: &TestApp) -> serde_json::Value {
    let resp = app
        .post_form(
            "/device_authorization",
            None,
            &[("client_id", "tv"), ("scope", "openid profile")],
        )
        .await;
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

async fn poll(app: &TestApp, device_code: &str) -> (u16, serde_json::Value) {
    let resp = app
        .token(
            None,
            &[
                ("grant_type", DEVICE),
                ("client_id", "tv"),
                ("device_code", device_code),
            ],
        )
        .await;
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// The person's side: open the verification URI, sign in, answer.
async fn approve(app: &TestApp, codes: &serde_json::Value, decision: &str) -> String {
    let b = browser();
    let uri = codes["verification_uri_complete"].as_str().unwrap();
    let fields = app.open_login(&b, uri).await;
    let resp = app.submit_login(&b, fields, "alice", PASSWORD).await;
    assert_eq!(resp.status(), 303);
    let back = app.url(&location(&resp));
    let page = b.get(back).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let body = page.text().await.unwrap();
    assert!(
        body.contains(codes["user_code"].as_str().unwrap()),
        "the page shows the code to compare"
    );
    let mut fields = form_fields(&body);
    fields.insert("decision".into(), decision.into());
    let resp = b.post(app.url("/device")).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

#[tokio::test]
async fn a_device_gets_tokens_once_the_person_approves() {
    let app = device_app().await;
    let codes = start(&app).await;
    assert_eq!(codes["verification_uri"], app.url("/device"));
    assert_eq!(codes["interval"], 5);
    let device_code = codes["device_code"].as_str().unwrap();

    let (status, body) = poll(&app, device_code).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("authorization_pending")));
    let (_, body) = poll(&app, device_code).await;
    assert_eq!(body["error"], "slow_down", "polling faster than the interval");

    assert!(approve(&app, &codes, "allow").await.contains("Device connected"));
    app.clock.advance(11);
    let (status, tokens) = poll(&app, device_code).await;
    assert_eq!(status, 200, "{tokens}");
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(id["aud"], "tv");
    assert!(tokens["refresh_token"].is_string());
    app.clock.advance(11);
    let (_, again) = poll(&app, device_code).await;
    assert_eq!(again["error"], "invalid_grant", "a device code is redeemed once");
}

#[tokio::test]
async fn denial_and_expiry_are_reported_to_the_device() {
    let app = device_app().await;
    let codes = start(&app).await;
    assert!(approve(&app, &codes, "deny").await.contains("denied"));
    let (_, body) = poll(&app, codes["device_code"].as_str().unwrap()).await;
    assert_eq!(body["error"], "access_denied");

    let late = start(&app).await;
    app.clock.advance(601);
    let (_, body) = poll(&app, late["device_code"].as_str().unwrap()).await;
    assert_eq!(body["error"], "expired_token");
}

#[tokio::test]
async fn wrong_codes_and_clients_are_refused() {
    let app = device_app().await;
    let page = browser().get(app.url("/device?user_code=AEIOU")).send().await.unwrap();
    assert_eq!(page.status(), 400);
    assert!(page.text().await.unwrap().contains("not a valid code"));
    let page = browser()
        .get(app.url("/device?user_code=BCDF-GHJK"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 400, "an unknown code");

    let web = app.add_client("web", false).await.unwrap();
    let resp = app.post_form("/device_authorization", Some(("web", &web)), &[]).await;
    assert_eq!(resp.status(), 400);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "unauthorized_client");
    let (_, body) = poll(&app, "made-up").await;
    assert_eq!(body["error"], "invalid_grant");
}

#[tokio::test]
async fn a_device_client_with_allowed_groups_refuses_others() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.state
        .db
        .write(|c| {
            tessera::db::groups::create(c, "family")?;
            Ok(())
        })
        .await
        .unwrap();
    app.add_client_with("tv", true, |c| {
        c.grant_types = vec![DEVICE.into()];
        c.allowed_groups = vec!["family".into()];
    })
    .await;
    let codes = start(&app).await;
    let b = browser();
    let fields = app
        .open_login(&b, codes["verification_uri_complete"].as_str().unwrap())
        .await;
    let resp = app.submit_login(&b, fields, "alice", PASSWORD).await;
    let page = b.get(app.url(&location(&resp))).send().await.unwrap();
    assert_eq!(page.status(), 403);
    assert!(page.text().await.unwrap().contains("not allowed to use"));
    let (status, body) = poll(&app, codes["device_code"].as_str().unwrap()).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("authorization_pending")));
}

#[tokio::test]
async fn a_device_approval_asks_an_enrolled_user_for_the_code() {
    let app = device_app().await;
    let b = browser();
    let csrf = app.portal_login(&b, "alice", PASSWORD).await;
    let html = b
        .get(app.url("/account/totp"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let key = text_of(&html, "totp-secret").unwrap();
    let code = tessera::auth::totp::code_at(&key, app.clock.now()).unwrap();
    let done = b
        .post(app.url("/account/totp"))
        .form(&[("csrf", csrf.as_str()), ("code", code.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);

    let codes = start(&app).await;
    let phone = browser();
    let fields = app
        .open_login(&phone, codes["verification_uri_complete"].as_str().unwrap())
        .await;
    let resp = app.submit_login(&phone, fields, "alice", PASSWORD).await;
    let mut fields = form_fields(&resp.text().await.unwrap());
    assert!(fields.contains_key("request_id"), "the code page");
    let next = tessera::auth::totp::code_at(&key, app.clock.now() + 30).unwrap();
    fields.insert("code".into(), next);
    let resp = phone.post(app.url("/login/mfa")).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 303, "on to the approval page");
    let page = phone
        .get(app.url(&location(&resp)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(codes["user_code"].as_str().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_polls_of_an_approved_device_code_give_tokens_once() {
    let app = device_app().await;
    let codes = start(&app).await;
    approve(&app, &codes, "allow").await;
    let dc = codes["device_code"].as_str().unwrap().to_string();
    let (a, b, c, d) = tokio::join!(poll(&app, &dc), poll(&app, &dc), poll(&app, &dc), poll(&app, &dc));
    let results = [a, b, c, d];
    let issued = results.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!(issued, 1, "{results:?}");
    assert!(results
        .iter()
        .filter(|(s, _)| *s != 200)
        .all(|(_, b)| b["error"] == "invalid_grant" || b["error"] == "slow_down"));
}

#[tokio::test]
async fn entering_user_codes_is_rate_limited() {
    let app = spawn_with(|s| s.rate_limit = true).await;
    let burst = tessera::auth::limits::quota(tessera::auth::limits::Bucket::Device).1 as usize;
    let b = browser();
    let mut statuses = Vec::new();
    for _ in 0..=burst {
        let resp = b.get(app.url("/device?user_code=BCDF-GHJK")).send().await.unwrap();
        statuses.push(resp.status().as_u16());
    }
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    assert!(
        statuses[..burst].iter().all(|s| *s == 400),
        "unknown codes until the limit: {statuses:?}"
    );
    // The empty entry form itself is not counted.
    assert_eq!(b.get(app.url("/device")).send().await.unwrap().status(), 200);
}
