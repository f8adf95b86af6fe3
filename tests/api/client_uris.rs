//! URLs a client chose for itself beyond its redirect URIs: back- and front-channel
//! logout URIs (held to the outbound fetch policy at registration and at delivery)
//! and post-logout redirect URIs (held to open registration's rules, and followed
//! without an `id_token_hint` only for an administrator's client).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tessera::config::Registration;
use tessera::db;

use crate::helpers::*;
use crate::logout::{next_logout_token, receiver};
use crate::registration::initial_token;

const AFTER: &str = "http://localhost:8080/signed-out";

async fn register(app: &TestApp, token: Option<&str>, body: &Value) -> (u16, Value) {
    let mut req = plain_client().post(app.url("/register")).json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

fn public_client(extra: Value) -> Value {
    let mut body = json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

/// A TCP listener that counts the connections made to it and answers none.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(sock);
        }
    });
    (port, count)
}

#[tokio::test]
async fn registration_refuses_logout_uris_on_private_addresses_or_plain_http() {
    let app = spawn_app().await;
    let token = initial_token(&app, "1h", None).await;
    let before = app.state.db.read(db::clients::count).await.unwrap();
    for uri in [
        "https://127.0.0.1/logout",
        "https://10.0.0.1/logout",
        "https://169.254.169.254/latest/meta-data",
        "http://rp.example/logout",
        "https://localhost/logout",
    ] {
        for field in ["backchannel_logout_uri", "frontchannel_logout_uri"] {
            let mut body = public_client(json!({}));
            body[field] = uri.into();
            let (status, body) = register(&app, Some(&token), &body).await;
            assert_eq!(status, 400, "{field} {uri}");
            assert_eq!(body["error"], "invalid_client_metadata", "{field} {uri}");
            let description = body["error_description"].as_str().unwrap();
            assert!(description.starts_with(field), "{description}");
        }
    }
    assert_eq!(
        app.state.db.read(db::clients::count).await.unwrap(),
        before,
        "nothing was registered"
    );
    let public = public_client(json!({"backchannel_logout_uri": "https://93.184.215.14/logout"}));
    assert_eq!(
        register(&app, Some(&token), &public).await.0,
        201,
        "a public address is fine"
    );

    let open = spawn_with(|s| s.protocol.registration = Registration::Open).await;
    let (status, body) = register(
        &open,
        None,
        &public_client(json!({"backchannel_logout_uri": "https://10.0.0.1/logout"})),
    )
    .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_client_metadata")));
}

#[tokio::test]
async fn open_registration_refuses_post_logout_uris_that_leave_the_device() {
    let app = spawn_with(|s| s.protocol.registration = Registration::Open).await;
    let away = public_client(json!({"post_logout_redirect_uris": ["https://evil.example/landing"]}));
    let (status, body) = register(&app, None, &away).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_client_metadata")));
    let description = body["error_description"].as_str().unwrap();
    assert!(description.starts_with("post_logout_redirect_uris"), "{description}");
    let home =
        public_client(json!({"post_logout_redirect_uris": ["http://127.0.0.1:9/out", "com.example.agent:/out"]}));
    assert_eq!(register(&app, None, &home).await.0, 201);
}

#[tokio::test]
async fn a_self_registered_clients_back_channel_is_checked_again_when_delivered() {
    let (admin_uri, mut admin_bodies) = receiver(200).await;
    let (port, connections) = counting_listener().await;
    let app = spawn_app().await;
    app.add_user("alice").await;
    let adm = app
        .add_client_with("adm", false, |c| c.backchannel_logout_uri = Some(admin_uri))
        .await
        .unwrap();
    // As stored before registrations were checked, or by a name that has since moved
    // to a loopback address.
    let reg = app
        .add_client_with("reg", false, |c| {
            c.origin = db::clients::ORIGIN_REGISTRATION.into();
            c.backchannel_logout_uri = Some(format!("https://localhost:{port}/logout"));
        })
        .await
        .unwrap();
    let b = browser();
    let params = app.login(&b, &app.authorize_url("adm", &[]), "alice").await;
    let tokens = app.exchange("adm", &adm, &params["code"]).await;
    let resp = b.get(app.authorize_url("reg", &[])).send().await.unwrap();
    app.exchange("reg", &reg, &redirect_params(&resp)["code"]).await;

    let hint = tokens["id_token"].as_str().unwrap();
    let logged_out_at = app.clock.now();
    let resp = b
        .get(format!("{}?id_token_hint={hint}", app.url("/logout")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let token = next_logout_token(&mut admin_bodies, 10).await;
    assert_eq!(
        jwt_parts(&token).1["aud"],
        "adm",
        "the administrator's loopback URI is sent to"
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "no connection to the refused URI"
    );
    let pending = app.state.db.read(db::testing::deliveries).await.unwrap();
    assert_eq!(pending.len(), 1, "the refused delivery is kept like a failed one");
    assert_eq!(pending[0].0, 1, "and counted as a failed attempt");
    assert!(pending[0].1 > logged_out_at, "and retried later, not at once");
}

fn logout_url(app: &TestApp, client_id: &str, hint: Option<&str>) -> String {
    let after = url::form_urlencoded::byte_serialize(AFTER.as_bytes()).collect::<String>();
    let hint = hint.map(|h| format!("&id_token_hint={h}")).unwrap_or_default();
    format!(
        "{}?client_id={client_id}&post_logout_redirect_uri={after}&state=bye{hint}",
        app.url("/logout")
    )
}

#[tokio::test]
async fn a_self_registered_client_gets_its_post_logout_redirect_only_with_an_id_token_hint() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let reg = app
        .add_client_with("reg", false, |c| {
            c.origin = db::clients::ORIGIN_REGISTRATION.into();
            c.post_logout_redirect_uris = vec![AFTER.into()];
        })
        .await
        .unwrap();
    app.add_client_with("adm", false, |c| c.post_logout_redirect_uris = vec![AFTER.into()])
        .await;

    // Nobody signed in, no hint: the page, not the registered URI.
    let resp = browser().get(logout_url(&app, "reg", None)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("location").is_none() && resp.headers().get("refresh").is_none());
    assert!(!resp.text().await.unwrap().contains(AFTER));
    // An administrator's registration vouches for its URI (RP-Initiated Logout §3).
    let resp = browser().get(logout_url(&app, "adm", None)).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), format!("{AFTER}?state=bye"));

    // Signed in, no hint: confirming signs out, and still does not redirect.
    let b = browser();
    let params = app.login(&b, &app.authorize_url("reg", &[]), "alice").await;
    let tokens = app.exchange("reg", &reg, &params["code"]).await;
    let resp = b.get(logout_url(&app, "reg", None)).send().await.unwrap();
    let fields = form_fields(&resp.text().await.unwrap());
    let resp = b.post(app.url("/logout/confirm")).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("location").is_none() && resp.headers().get("refresh").is_none());

    // With the client's own ID token as the hint, it is sent back.
    let hint = tokens["id_token"].as_str().unwrap();
    let resp = browser().get(logout_url(&app, "reg", Some(hint))).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), format!("{AFTER}?state=bye"));
}
