//! The upstream's back-channel logout (OpenID Connect Back-Channel Logout 1.0): the
//! upstream Tessera's logout token ends the local session opened through it, and
//! Tessera's own clients then get theirs; tokens that do not hold up (§2.6) are
//! refused with 400 and end nothing, and providers that send none answer 404.

use ::tessera::crypto::jwt;
use ::tessera::crypto::keys::{Alg, KeySet, SigningKeyRecord};
use ::tessera::crypto::random::random_id;
use serde_json::{json, Map, Value};

use super::*;
use crate::logout::{next_logout_token, receiver};

const EVENT: &str = "http://schemas.openid.net/event/backchannel-logout";

/// Whether `b` still has a session at `app`: a silent authorization gets a code.
async fn signed_in_at(app: &TestApp, b: &reqwest::Client) -> bool {
    let resp = b
        .get(app.authorize_url(RP, &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    redirect_params(&resp).contains_key("code")
}

async fn sessions_of(app: &TestApp, user_id: i64) -> usize {
    let now = app.clock.now();
    app.state
        .db
        .read(move |c| db::sessions::list_for_user(c, user_id, now))
        .await
        .unwrap()
        .len()
}

/// POSTs a logout token to `down`'s back-channel endpoint for provider `id`.
async fn post_logout_token(app: &TestApp, id: &str, token: &str) -> (u16, Value) {
    let resp = plain_client()
        .post(app.url(&format!("/federation/{id}/backchannel-logout")))
        .form(&[("logout_token", token)])
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// The claims of a well-formed logout token from the upstream for `sub` (§2.4).
fn logout_claims(pair: &Pair, sub: &str) -> Map<String, Value> {
    let now = pair.up.clock.now();
    let Value::Object(m) = json!({
        "iss": pair.up.address, "aud": "tessera-down", "iat": now, "exp": now + 120,
        "jti": random_id(), "events": {EVENT: {}}, "sub": sub,
    }) else {
        unreachable!()
    };
    m
}

fn sign(keys: &KeySet, claims: Map<String, Value>, now: i64) -> String {
    jwt::sign(keys, Alg::Rs256, "logout+jwt", claims, now).unwrap()
}

/// A key set of one fresh RS256 key named `kid`: another Tessera's, as far as the
/// upstream's published keys are concerned.
fn foreign_keys(kid: &str, now: i64) -> KeySet {
    let record = SigningKeyRecord::generate(Alg::Rs256, kid.to_string(), now).unwrap();
    KeySet::from_records(&[record], now, 0).unwrap()
}

#[tokio::test]
async fn the_upstreams_logout_ends_the_local_session_and_tells_the_rps() {
    let (uri, mut bodies) = receiver(200).await;
    let pair = pair(|s| s.jit = true).await;
    let ada = pair.up.add_user("ada").await;
    verify_email(&pair.up, ada.id).await;
    let secret = pair
        .down
        .add_client_with("listener", false, |c| {
            c.backchannel_logout_uri = Some(uri);
            c.backchannel_logout_session_required = true;
        })
        .await
        .unwrap();

    let b = browser();
    let url = pair.down.authorize_url("listener", &[("idp", "up")]);
    let params = pair.sign_in_at(&b, &url, "ada").await;
    let tokens = pair.down.exchange("listener", &secret, &params["code"]).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    let local = local_user(&pair.down, "ada").await.unwrap();
    assert_eq!(sessions_of(&pair.down, local.id).await, 1);
    assert!(signed_in_at(&pair.down, &b).await);

    // The person signs out at the upstream (RP-Initiated Logout, confirmed).
    let resp = b
        .get(pair.up.url("/logout?client_id=tessera-down"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let fields = form_fields(&resp.text().await.unwrap());
    let resp = b
        .post(pair.up.url("/logout/confirm"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    // The upstream's deliverer reaches Tessera, which ends the session…
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while sessions_of(&pair.down, local.id).await > 0 {
        assert!(std::time::Instant::now() < deadline, "the local session was not ended");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(!signed_in_at(&pair.down, &b).await, "the browser's session is over");
    assert!(pair
        .down
        .audit()
        .await
        .iter()
        .any(|(e, a, _)| e == "federation.logout" && a.as_deref() == Some("provider:up")));
    let at = tokens["access_token"].as_str().unwrap();
    assert_eq!(pair.down.introspect(("listener", &secret), at).await["active"], false);

    // …and sends its own logout token to its client.
    let token = next_logout_token(&mut bodies, 15).await;
    let (header, claims) = jwt_parts(&token);
    assert_eq!(header["typ"], "logout+jwt");
    assert_eq!(claims["iss"], pair.down.address);
    assert_eq!(claims["aud"], "listener");
    assert_eq!(claims["sub"], local.sub);
    assert_eq!(claims["sid"], id["sid"]);
}

#[tokio::test]
async fn logout_tokens_that_do_not_hold_up_are_refused_and_end_nothing() {
    let pair = pair(|s| s.jit = true).await;
    let ada = pair.up.add_user("ada").await;
    let b = browser();
    pair.sign_in(&b, "ada").await;
    let local = local_user(&pair.down, "ada").await.unwrap();
    assert_eq!(sessions_of(&pair.down, local.id).await, 1);

    let now = pair.up.clock.now();
    let upstream_keys = pair.up.state.keys.current();
    let real = sign(&upstream_keys, logout_claims(&pair, &ada.sub), now);
    let kid = jwt_parts(&real).0["kid"].as_str().unwrap().to_string();
    let with_nonce = {
        let mut claims = logout_claims(&pair, &ada.sub);
        claims.insert("nonce".into(), json!("n0nce"));
        sign(&upstream_keys, claims, now)
    };
    let for_another_client = {
        let mut claims = logout_claims(&pair, &ada.sub);
        claims.insert("aud".into(), json!("someone-else"));
        sign(&upstream_keys, claims, now)
    };
    let refused = [
        ("garbage", "not.a-jwt".to_string(), "not a signed JWT"),
        ("missing", String::new(), "missing"),
        (
            "another Tessera's key",
            sign(&foreign_keys(&random_id(), now), logout_claims(&pair, &ada.sub), now),
            "no upstream key matches",
        ),
        (
            "another key under the upstream's kid",
            sign(&foreign_keys(&kid, now), logout_claims(&pair, &ada.sub), now),
            "does not verify",
        ),
        ("a nonce", with_nonce, "nonce"),
        ("another audience", for_another_client, "not for this client"),
    ];
    for (what, token, why) in refused {
        let (status, body) = post_logout_token(&pair.down, "up", &token).await;
        assert_eq!(status, 400, "{what}: {body}");
        assert_eq!(body["error"], "invalid_request", "{what}");
        let text = body["error_description"].as_str().unwrap_or_default();
        assert!(text.contains(why), "{what}: {text}");
        assert_eq!(sessions_of(&pair.down, local.id).await, 1, "{what} ended the session");
    }
    assert!(signed_in_at(&pair.down, &b).await);

    // The same claims, signed by the upstream and without the faults, do end it.
    let (status, body) = post_logout_token(&pair.down, "up", &real).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(sessions_of(&pair.down, local.id).await, 0);
    assert!(!signed_in_at(&pair.down, &b).await);
}

#[tokio::test]
async fn logout_tokens_for_github_or_unknown_providers_are_not_found() {
    let pair = pair(|s| s.jit = true).await;
    register(
        &pair.down,
        &ProviderSpec {
            id: "gh".into(),
            kind: "github".into(),
            name: Some("GitHub".into()),
            client_id: "Iv1.test".into(),
            client_secret: "shh".into(),
            ..ProviderSpec::default()
        },
    )
    .await;
    let ada = pair.up.add_user("ada").await;
    let b = browser();
    pair.sign_in(&b, "ada").await;
    let token = sign(
        &pair.up.state.keys.current(),
        logout_claims(&pair, &ada.sub),
        pair.up.clock.now(),
    );
    for id in ["gh", "nope"] {
        let (status, body) = post_logout_token(&pair.down, id, &token).await;
        assert_eq!(status, 404, "{id}: {body}");
        assert_eq!(body["error"], "invalid_request", "{id}");
    }
    assert!(signed_in_at(&pair.down, &b).await, "nothing was ended");
}
