//! Who may introspect what (RFC 7662 §4): a client sees the tokens issued to it and
//! those naming it in `aud`; a resource server marked `introspect_any` sees every
//! token; anyone else gets `{"active": false}`, as for a token that does not exist.

use serde_json::json;

use crate::helpers::*;

struct Setup {
    app: TestApp,
    secret: String,
    tokens: serde_json::Value,
}

async fn setup() -> Setup {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let tokens = app.tokens("app", &secret, "alice").await;
    Setup { app, secret, tokens }
}

#[tokio::test]
async fn another_client_sees_an_access_token_as_inactive_and_learns_nothing() {
    let Setup { app, secret, tokens } = setup().await;
    let at = tokens["access_token"].as_str().unwrap();
    let other = app.add_client("other", false).await.unwrap();
    assert_eq!(app.introspect(("other", &other), at).await, json!({"active": false}));
    // The answer is the same as for a token that was never issued.
    assert_eq!(
        app.introspect(("other", &other), "a.b.c").await,
        app.introspect(("other", &other), at).await
    );
    let own = app.introspect(("app", &secret), at).await;
    assert_eq!(own["active"], true);
    assert_eq!(own["client_id"], "app");
}

#[tokio::test]
async fn another_client_sees_a_refresh_token_as_inactive() {
    let Setup { app, secret, tokens } = setup().await;
    let rt = tokens["refresh_token"].as_str().unwrap();
    let other = app.add_client("other", false).await.unwrap();
    assert_eq!(app.introspect(("other", &other), rt).await, json!({"active": false}));
    assert_eq!(app.introspect(("app", &secret), rt).await["active"], true);
}

#[tokio::test]
async fn a_resource_server_marked_introspect_any_sees_every_token() {
    let Setup { app, tokens, .. } = setup().await;
    let rs = app
        .add_client_with("resource-server", false, |c| c.introspect_any = true)
        .await
        .unwrap();
    let at = app
        .introspect(("resource-server", &rs), tokens["access_token"].as_str().unwrap())
        .await;
    assert_eq!(at["active"], true);
    assert_eq!(at["client_id"], "app");
    assert_eq!(at["sub"].as_str().map(str::is_empty), Some(false));
    let rt = app
        .introspect(("resource-server", &rs), tokens["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(rt["active"], true);
    assert_eq!(rt["token_type"], "refresh_token");
}

#[tokio::test]
async fn a_client_named_in_aud_sees_the_token() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    const API: &str = "https://api.example.com";
    let actor = tessera::admin::Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    };
    tessera::admin::resources::create(&app.state.ctx(), &actor, API, &[])
        .await
        .unwrap();
    let secret = app.add_client("web", false).await.unwrap();
    // A resource server registered as a client under its resource URI, which the
    // token's `aud` names (RFC 8707 §2); it authenticates in the body, since a `:`
    // in its id would need encoding in HTTP Basic.
    let api_secret = app
        .add_client_with(API, false, |c| c.auth_method = "client_secret_post".into())
        .await
        .unwrap();
    let pkce = Pkce::new();
    let url = app.authorize_url(
        "web",
        &[
            ("code_challenge", &pkce.challenge),
            ("code_challenge_method", "S256"),
            ("resource", API),
        ],
    );
    let code = app.login(&browser(), &url, "alice").await["code"].clone();
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    let resp = app.token(Some(("web", &secret)), &form).await;
    assert_eq!(resp.status(), 200);
    let tokens: serde_json::Value = resp.json().await.unwrap();
    let at = tokens["access_token"].as_str().unwrap();
    let resp = app
        .post_form(
            "/introspect",
            None,
            &[("token", at), ("client_id", API), ("client_secret", &api_secret)],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let info: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(info["active"], true);
    assert_eq!(info["aud"], API);
    // Its refresh token names no audience: only the client it was issued to sees it.
    let rt = tokens["refresh_token"].as_str().unwrap();
    let resp = app
        .post_form(
            "/introspect",
            None,
            &[("token", rt), ("client_id", API), ("client_secret", &api_secret)],
        )
        .await;
    assert_eq!(
        resp.json::<serde_json::Value>().await.unwrap(),
        json!({"active": false})
    );
}
