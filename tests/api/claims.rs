//! Scopes, claims and the grants that carry no user.

use serde_json::json;
use tessera::db::{self, clients::RefreshPolicy};

use crate::helpers::*;

async fn enrich(app: &TestApp, username: &str) {
    let name = username.to_string();
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| {
            let user = db::users::find_by_username(c, &name)?.unwrap();
            let claims = json!({
                "given_name": "Alice",
                "family_name": "Liddell",
                "phone_number": "+44 20 7946 0000",
                "phone_number_verified": true,
                "address": {"locality": "Oxford", "country": "GB"},
            });
            db::users::set_claims(c, user.id, claims.as_object().unwrap(), now)?;
            db::users::add_to_group(c, user.id, "staff")?;
            db::users::add_to_group(c, user.id, "admins")
        })
        .await
        .unwrap();
}

async fn code_tokens(app: &TestApp, client: &str, secret: &str, extra: &[(&str, &str)]) -> serde_json::Value {
    let params = app.login(&browser(), &app.authorize_url(client, extra), "alice").await;
    app.exchange(client, secret, &params["code"]).await
}

async fn userinfo(app: &TestApp, at: &str) -> serde_json::Value {
    let resp = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(at)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

#[tokio::test]
async fn address_phone_and_groups_scopes_release_their_claims() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    enrich(&app, "alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let params = app
        .login(
            &browser(),
            &app.authorize_url("app", &[])
                .replace("scope=openid+profile+email", "scope=openid+address+phone+groups"),
            "alice",
        )
        .await;
    let tokens = app.exchange("app", &secret, &params["code"]).await;
    let info = userinfo(&app, tokens["access_token"].as_str().unwrap()).await;
    assert_eq!(info["address"]["locality"], "Oxford");
    assert_eq!(info["phone_number"], "+44 20 7946 0000");
    assert_eq!(info["phone_number_verified"], true);
    assert_eq!(info["groups"], json!(["admins", "staff"]));
    assert!(info.get("email").is_none(), "email scope was not asked for");
    assert!(info.get("given_name").is_none(), "profile scope was not asked for");
}

#[tokio::test]
async fn the_claims_parameter_adds_individual_claims() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    enrich(&app, "alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let claims = r#"{"id_token":{"email":{"essential":true}},"userinfo":{"given_name":null}}"#;
    let url = app
        .authorize_url("app", &[("claims", claims)])
        .replace("scope=openid+profile+email", "scope=openid");
    let params = app.login(&browser(), &url, "alice").await;
    let tokens = app.exchange("app", &secret, &params["code"]).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(id["email"], "alice@example.com");
    assert!(id.get("given_name").is_none(), "asked for userinfo only");
    let info = userinfo(&app, tokens["access_token"].as_str().unwrap()).await;
    assert_eq!(info["given_name"], "Alice");
    assert!(info.get("email").is_none(), "asked for the ID token only");

    let bad = browser()
        .get(app.authorize_url("app", &[("claims", "not json")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&bad)["error"], "invalid_request");
}

#[tokio::test]
async fn offline_access_decides_refresh_tokens_for_clients_that_ask_for_it() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app
        .add_client_with("cautious", false, |c| c.refresh = RefreshPolicy::OfflineAccess)
        .await
        .unwrap();
    let without = code_tokens(&app, "cautious", &secret, &[]).await;
    assert!(without.get("refresh_token").is_none());
    let url_with = app
        .authorize_url("cautious", &[])
        .replace("scope=openid+profile+email", "scope=openid+offline_access");
    let params = app.login(&browser(), &url_with, "alice").await;
    let with = app.exchange("cautious", &secret, &params["code"]).await;
    assert!(with["refresh_token"].is_string());
    assert_eq!(with["scope"], "openid offline_access");

    let no_refresh_grant = app
        .add_client_with("short", false, |c| c.grant_types = vec!["authorization_code".into()])
        .await
        .unwrap();
    let tokens = code_tokens(&app, "short", &no_refresh_grant, &[]).await;
    assert!(
        tokens.get("refresh_token").is_none(),
        "no refresh_token grant, no refresh token"
    );
}

#[tokio::test]
async fn client_credentials_gives_the_client_its_own_access_token_only() {
    let app = spawn_app().await;
    let secret = app
        .add_client_with("api-job", false, |c| {
            c.grant_types = vec!["client_credentials".into()];
            c.client_scopes = vec!["reports:read".into()];
        })
        .await
        .unwrap();
    let resp = app
        .token(
            Some(("api-job", &secret)),
            &[("grant_type", "client_credentials"), ("scope", "openid reports:read")],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert!(body.get("id_token").is_none() && body.get("refresh_token").is_none());
    assert_eq!(body["scope"], "reports:read", "openid means nothing without a user");
    let at = body["access_token"].as_str().unwrap();
    let info = app.introspect(("api-job", &secret), at).await;
    assert_eq!(info["active"], true);
    assert_eq!(info["sub"], "api-job");
    let userinfo = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(at)
        .send()
        .await
        .unwrap();
    assert_eq!(userinfo.status(), 401, "no user behind this token");

    // The code flow is not open to this client, nor client_credentials to others.
    let resp = browser().get(app.authorize_url("api-job", &[])).send().await.unwrap();
    assert_eq!(redirect_params(&resp)["error"], "unauthorized_client");
    let other = app.add_client("web", false).await.unwrap();
    let resp = app
        .token(Some(("web", &other)), &[("grant_type", "client_credentials")])
        .await;
    assert_eq!(resp.status(), 400);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "unauthorized_client");
}
