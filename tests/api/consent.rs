//! Consent, prompt values, id_token_hint and the form post response mode.

use std::collections::HashMap;

use crate::helpers::*;

/// Signs in and returns the consent page's form fields.
async fn consent_fields(app: &TestApp, b: &reqwest::Client, url: &str) -> HashMap<String, String> {
    let fields = app.open_login(b, url).await;
    let resp = app.submit_login(b, fields, "alice", PASSWORD).await;
    assert_eq!(resp.status(), 200, "expected the consent page");
    let body = resp.text().await.unwrap();
    assert!(body.contains("Allow access?"), "{body}");
    assert!(body.contains("See your email address"), "scopes are listed in words");
    form_fields(&body)
}

async fn decide(app: &TestApp, b: &reqwest::Client, mut fields: HashMap<String, String>, d: &str) -> reqwest::Response {
    fields.insert("decision".into(), d.into());
    b.post(app.url("/consent")).form(&fields).send().await.unwrap()
}

#[tokio::test]
async fn a_client_that_asks_for_consent_gets_it_once_and_remembers_it() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client_with("third", false, |c| c.consent_required = true).await;
    let b = browser();
    let fields = consent_fields(&app, &b, &app.authorize_url("third", &[])).await;
    let resp = decide(&app, &b, fields, "allow").await;
    let params = redirect_params(&resp);
    assert!(params.contains_key("code"));
    assert_eq!(params["state"], "st4te");

    // Remembered: the next request goes straight through, even with prompt=none.
    let resp = b
        .get(app.authorize_url("third", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert!(redirect_params(&resp).contains_key("code"));
    // A wider scope than approved asks again; prompt=none then says consent_required.
    let wider = app
        .authorize_url("third", &[("prompt", "none")])
        .replace("profile+email", "profile+email+phone");
    let resp = b.get(wider).send().await.unwrap();
    assert_eq!(redirect_params(&resp)["error"], "consent_required");
    // prompt=consent always shows the page.
    let resp = b
        .get(app.authorize_url("third", &[("prompt", "consent")]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.unwrap().contains("Allow access?"));
}

#[tokio::test]
async fn denying_consent_returns_access_denied_and_issues_nothing() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client_with("third", false, |c| c.consent_required = true).await;
    let b = browser();
    let fields = consent_fields(&app, &b, &app.authorize_url("third", &[])).await;
    let resp = decide(&app, &b, fields.clone(), "deny").await;
    let params = redirect_params(&resp);
    assert_eq!(params["error"], "access_denied");
    assert!(!params.contains_key("code"));
    // The decision is final: the same form cannot be replayed to approve.
    let again = decide(&app, &b, fields, "allow").await;
    assert_eq!(again.status(), 400);
    let resp = b
        .get(app.authorize_url("third", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert_eq!(
        redirect_params(&resp)["error"],
        "consent_required",
        "a refusal is not remembered as consent"
    );
}

#[tokio::test]
async fn the_consent_form_is_bound_to_the_browser() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client_with("third", false, |c| c.consent_required = true).await;
    let b = browser();
    let fields = consent_fields(&app, &b, &app.authorize_url("third", &[])).await;
    let resp = decide(&app, &browser(), fields.clone(), "allow").await;
    assert_eq!(resp.status(), 403);
    let mut forged = fields;
    forged.insert("csrf".into(), "x".into());
    assert_eq!(decide(&app, &b, forged, "allow").await.status(), 403);
}

#[tokio::test]
async fn revoking_consent_from_the_command_line_asks_again_and_ends_grants() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app
        .add_client_with("third", false, |c| c.consent_required = true)
        .await
        .unwrap();
    let b = browser();
    let fields = consent_fields(&app, &b, &app.authorize_url("third", &[])).await;
    let code = redirect_params(&decide(&app, &b, fields, "allow").await)["code"].clone();
    let tokens = app.exchange("third", &secret, &code).await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(app.db_args())
        .args(["user", "revoke-consent", "alice", "third"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let at = tokens["access_token"].as_str().unwrap();
    assert_eq!(app.introspect(("third", &secret), at).await["active"], false);
    let resp = b
        .get(app.authorize_url("third", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "consent_required");
}

#[tokio::test]
async fn id_token_hint_must_match_the_signed_in_user() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_user("bob").await;
    let secret = app.add_client("app", false).await.unwrap();
    let bobs = app.tokens("app", &secret, "bob").await;
    let alices = app.tokens("app", &secret, "alice").await;
    let b = browser();
    app.login(&b, &app.authorize_url("app", &[]), "alice").await;

    let hint = alices["id_token"].as_str().unwrap();
    let resp = b
        .get(app.authorize_url("app", &[("prompt", "none"), ("id_token_hint", hint)]))
        .send()
        .await
        .unwrap();
    assert!(
        redirect_params(&resp).contains_key("code"),
        "the hinted user is signed in"
    );

    let other = bobs["id_token"].as_str().unwrap();
    let resp = b
        .get(app.authorize_url("app", &[("prompt", "none"), ("id_token_hint", other)]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "login_required");
    let resp = b
        .get(app.authorize_url("app", &[("id_token_hint", other)]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "without prompt=none the other user may sign in");

    let resp = b
        .get(app.authorize_url("app", &[("id_token_hint", "not.a.token")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "invalid_request");
}

#[tokio::test]
async fn form_post_delivers_codes_and_errors_in_a_self_submitting_form() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client("app", false).await;
    let b = browser();
    let fields = app
        .open_login(&b, &app.authorize_url("app", &[("response_mode", "form_post")]))
        .await;
    let resp = app.submit_login(&b, fields, "alice", PASSWORD).await;
    assert_eq!(resp.status(), 200);
    let csp = resp.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("script-src 'sha256-") && !csp.contains("unsafe-inline"));
    let body = resp.text().await.unwrap();
    assert!(body.contains(&format!("action=\"{REDIRECT}\"")));
    let posted = form_fields(&body);
    assert!(!posted["code"].is_empty());
    assert_eq!(posted["state"], "st4te");
    assert_eq!(posted["iss"], app.address);

    let resp = b
        .get(app.authorize_url(
            "app",
            &[("response_mode", "form_post"), ("prompt", "none"), ("max_age", "x")],
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(form_fields(&resp.text().await.unwrap())["error"], "invalid_request");

    let resp = b
        .get(app.authorize_url("app", &[("response_mode", "fragment")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "invalid_request");
}

#[tokio::test]
async fn the_account_page_lists_allowed_applications_and_removes_their_access() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_user("bob").await;
    let secret = app
        .add_client_with("third", false, |c| {
            c.consent_required = true;
            c.name = "Third Party".into();
        })
        .await
        .unwrap();
    let b = browser();
    let fields = consent_fields(&app, &b, &app.authorize_url("third", &[])).await;
    let code = redirect_params(&decide(&app, &b, fields, "allow").await)["code"].clone();
    let tokens = app.exchange("third", &secret, &code).await;

    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(
        html.contains("<td>Third Party</td>"),
        "the application is listed by name"
    );
    assert!(
        html.contains("See your email address"),
        "with what it may see, in words"
    );
    let csrf = input_value(&html, "csrf").unwrap();
    // Another user cannot remove alice's consent (they have none to remove).
    let bob = browser();
    let bob_csrf = app.portal_login(&bob, "bob", PASSWORD).await;
    let other = bob
        .post(app.url("/account/apps/revoke"))
        .form(&[("csrf", bob_csrf.as_str()), ("client_id", "third")])
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    assert_eq!(
        app.introspect(("third", &secret), tokens["access_token"].as_str().unwrap())
            .await["active"],
        true
    );

    let removed = b
        .post(app.url("/account/apps/revoke"))
        .form(&[("csrf", csrf.as_str()), ("client_id", "third")])
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), 302);
    assert_eq!(
        app.introspect(("third", &secret), tokens["access_token"].as_str().unwrap())
            .await["active"],
        false
    );
    let again = b
        .get(app.authorize_url("third", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert_eq!(
        redirect_params(&again)["error"],
        "consent_required",
        "it must ask again"
    );
    assert!(app.audit().await.iter().any(|e| e.0 == "consent.revoked"));
}

/// An authorization URL for `client` with scope `openid` alone and these claims.
fn openid_with_claims(app: &TestApp, client: &str, claims: &str, extra: &[(&str, &str)]) -> String {
    let mut all = vec![("claims", claims)];
    all.extend_from_slice(extra);
    app.authorize_url(client, &all)
        .replace("scope=openid+profile+email", "scope=openid")
}

#[tokio::test]
async fn claims_asked_for_by_name_need_consent_and_a_new_claim_asks_again() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app
        .add_client_with("third", false, |c| c.consent_required = true)
        .await
        .unwrap();
    let b = browser();
    // The user approves `openid` alone.
    let fields = app
        .open_login(
            &b,
            &app.authorize_url("third", &[])
                .replace("scope=openid+profile+email", "scope=openid"),
        )
        .await;
    let resp = app.submit_login(&b, fields, "alice", PASSWORD).await;
    let resp = decide(&app, &b, form_fields(&resp.text().await.unwrap()), "allow").await;
    assert!(redirect_params(&resp).contains_key("code"));

    // Claims beyond the approved scope are not a way around the consent page.
    let claims = r#"{"id_token":{"email":null,"name":null},"userinfo":{"groups":null}}"#;
    let resp = b
        .get(openid_with_claims(&app, "third", claims, &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "consent_required");
    let resp = b
        .get(openid_with_claims(&app, "third", claims, &[]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let page = resp.text().await.unwrap();
    assert!(page.contains("Allow access?"));
    for c in ["(email)", "(name)", "(groups)"] {
        assert!(page.contains(c), "the consent page names {c}: {page}");
    }
    let resp = decide(&app, &b, form_fields(&page), "allow").await;
    let code = redirect_params(&resp)["code"].clone();
    let tokens = app.exchange("third", &secret, &code).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(id["email"], "alice@example.com", "approved claims are released");

    // Remembered with the consent: the same claims pass; one more claim asks again.
    let resp = b
        .get(openid_with_claims(&app, "third", claims, &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert!(redirect_params(&resp).contains_key("code"));
    let more = r#"{"id_token":{"email":null,"phone_number":null}}"#;
    let resp = b
        .get(openid_with_claims(&app, "third", more, &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "consent_required");
}

#[tokio::test]
async fn custom_claims_are_never_released_by_name_even_without_consent() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let (uid, now) = (alice.id, app.clock.now());
    app.state
        .db
        .write(move |c| {
            let claims = serde_json::json!({"salary": 100000, "given_name": "Alice"});
            tessera::db::users::set_claims(c, uid, claims.as_object().unwrap(), now)
        })
        .await
        .unwrap();
    let secret = app.add_client("first", false).await.unwrap();
    let claims = r#"{"id_token":{"salary":null,"given_name":null},"userinfo":{"salary":null}}"#;
    let params = app
        .login(&browser(), &openid_with_claims(&app, "first", claims, &[]), "alice")
        .await;
    let tokens = app.exchange("first", &secret, &params["code"]).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert!(
        id.get("salary").is_none(),
        "a custom claim is not a standard claim: {id}"
    );
    assert_eq!(
        id["given_name"], "Alice",
        "a client that needs no consent gets standard claims"
    );
    let info: serde_json::Value = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(tokens["access_token"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(info.get("salary").is_none(), "{info}");
}

#[tokio::test]
async fn a_client_switched_to_asking_for_consent_asks_at_once() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client("app", false).await;
    let b = browser();
    app.login(&b, &app.authorize_url("app", &[]), "alice").await;
    // Fill the client cache, then change the registration behind it.
    let resp = b
        .get(app.authorize_url("app", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert!(redirect_params(&resp).contains_key("code"));
    let mut client = app.client("app").await.unwrap();
    client.consent_required = true;
    app.state
        .db
        .write(move |c| tessera::db::clients::update(c, &client, 0).map(|_| ()))
        .await
        .unwrap();
    let resp = b
        .get(app.authorize_url("app", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "consent_required", "no cached answer");
}
