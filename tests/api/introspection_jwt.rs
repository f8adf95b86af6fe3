//! JWT introspection responses (RFC 9701): asked for with `Accept`, signed with the
//! server's key for the calling client; plain JSON otherwise.

use serde_json::{json, Value};

use crate::helpers::*;

const JWT_TYPE: &str = "application/token-introspection+jwt";

async fn introspect_as(app: &TestApp, who: (&str, &str), token: &str, accept: Option<&str>) -> reqwest::Response {
    let mut req = plain_client()
        .post(app.url("/introspect"))
        .basic_auth(who.0, Some(who.1))
        .form(&[("token", token)]);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    req.send().await.unwrap()
}

/// The JWT's claims after checking its signature against `/jwks` by its `kid`.
async fn verified(app: &TestApp, jwt: &str) -> (Value, Value) {
    let (header, _) = jwt_parts(jwt);
    let jwks: Value = plain_client()
        .get(app.url("/jwks"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == header["kid"])
        .expect("the kid is published");
    let jwk = josekit::jwk::Jwk::from_bytes(serde_json::to_vec(key).unwrap()).unwrap();
    let verifier = josekit::jws::RS256.verifier_from_jwk(&jwk).unwrap();
    let (payload, _) = josekit::jws::deserialize_compact(jwt, &verifier).expect("the signature verifies");
    (header, serde_json::from_slice(&payload).unwrap())
}

struct Setup {
    app: TestApp,
    secret: String,
    rs_secret: String,
    access: String,
}

async fn setup() -> Setup {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    // A resource server introspects tokens issued to other clients only when marked so.
    let rs_secret = app
        .add_client_with("resource-server", false, |c| c.introspect_any = true)
        .await
        .unwrap();
    let tokens = app.tokens("app", &secret, "alice").await;
    let access = tokens["access_token"].as_str().unwrap().to_string();
    Setup {
        app,
        secret,
        rs_secret,
        access,
    }
}

#[tokio::test]
async fn asked_by_accept_the_answer_is_a_signed_jwt_for_the_caller() {
    let Setup {
        app,
        secret,
        rs_secret,
        access,
    } = setup().await;
    let plain = app.introspect(("app", &secret), &access).await;
    let resp = introspect_as(&app, ("resource-server", &rs_secret), &access, Some(JWT_TYPE)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], JWT_TYPE);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let jwt = resp.text().await.unwrap();
    let (header, claims) = verified(&app, &jwt).await;
    assert_eq!(header["typ"], "token-introspection+jwt");
    assert_eq!(header["alg"], "RS256");
    assert_eq!(claims["iss"], *app.state.issuer);
    assert_eq!(claims["aud"], "resource-server", "aud is the calling client");
    assert!(claims["iat"].as_i64().unwrap() >= app.clock.now() - 5);
    let inner = &claims["token_introspection"];
    assert_eq!(inner["active"], true);
    assert_eq!(inner["client_id"], "app");
    assert_eq!(inner, &plain, "the ordinary answer, unchanged, inside");
}

#[tokio::test]
async fn an_inactive_token_is_active_false_inside_the_jwt() {
    let Setup { app, rs_secret, .. } = setup().await;
    let resp = introspect_as(&app, ("resource-server", &rs_secret), "not-a-token", Some(JWT_TYPE)).await;
    assert_eq!(resp.status(), 200);
    let (_, claims) = verified(&app, &resp.text().await.unwrap()).await;
    assert_eq!(claims["token_introspection"], json!({"active": false}));
}

#[tokio::test]
async fn without_the_media_type_the_answer_stays_json() {
    let Setup {
        app, rs_secret, access, ..
    } = setup().await;
    for accept in [
        None,
        Some("application/json"),
        Some("*/*"),
        Some("application/token-introspection+jwt;q=0"),
    ] {
        let resp = introspect_as(&app, ("resource-server", &rs_secret), &access, accept).await;
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"),
            "{accept:?}"
        );
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["active"], true);
    }
    // Listed among others, with parameters, it is honoured.
    let resp = introspect_as(
        &app,
        ("resource-server", &rs_secret),
        &access,
        Some("application/json;q=0.5, Application/Token-Introspection+JWT"),
    )
    .await;
    assert_eq!(resp.headers()["content-type"], JWT_TYPE);
}

#[tokio::test]
async fn errors_stay_json_even_when_a_jwt_is_asked_for() {
    let Setup { app, access, .. } = setup().await;
    let resp = introspect_as(&app, ("resource-server", "wrong"), &access, Some(JWT_TYPE)).await;
    assert_eq!(resp.status(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "invalid_client");
}

#[tokio::test]
async fn a_token_the_caller_may_not_see_is_active_false_inside_the_jwt() {
    let Setup { app, access, .. } = setup().await;
    let other = app.add_client("other", false).await.unwrap();
    let resp = introspect_as(&app, ("other", &other), &access, Some(JWT_TYPE)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], JWT_TYPE);
    let (_, claims) = verified(&app, &resp.text().await.unwrap()).await;
    assert_eq!(claims["aud"], "other");
    assert_eq!(
        claims["token_introspection"],
        json!({"active": false}),
        "nothing about another client's token, not even that it exists"
    );
}
