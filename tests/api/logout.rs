//! RP-Initiated Logout 1.0 and Back-Channel Logout 1.0.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::helpers::*;

const AFTER: &str = "http://localhost:8080/signed-out";

async fn setup(backchannel: Option<String>, session_required: bool) -> (TestApp, String) {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app
        .add_client_with("app", false, |c| {
            c.post_logout_redirect_uris = vec![AFTER.into()];
            c.backchannel_logout_uri = backchannel;
            c.backchannel_logout_session_required = session_required;
        })
        .await
        .unwrap();
    (app, secret)
}

/// Signs in with a browser and returns it with the token response.
async fn signed_in(app: &TestApp, secret: &str) -> (reqwest::Client, serde_json::Value) {
    let b = browser();
    let params = app.login(&b, &app.authorize_url("app", &[]), "alice").await;
    (b, app.exchange("app", secret, &params["code"]).await)
}

async fn still_signed_in(app: &TestApp, b: &reqwest::Client) -> bool {
    let resp = b
        .get(app.authorize_url("app", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    redirect_params(&resp).contains_key("code")
}

#[tokio::test]
async fn logout_with_a_hint_ends_the_session_and_returns_to_the_client() {
    let (app, secret) = setup(None, false).await;
    let (b, tokens) = signed_in(&app, &secret).await;
    let hint = tokens["id_token"].as_str().unwrap();
    let url = format!(
        "{}?id_token_hint={hint}&post_logout_redirect_uri={}&state=bye",
        app.url("/logout"),
        url::form_urlencoded::byte_serialize(AFTER.as_bytes()).collect::<String>()
    );
    let resp = b.get(url).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), format!("{AFTER}?state=bye"));
    assert!(!still_signed_in(&app, &b).await, "the SSO session is over");
    let at = tokens["access_token"].as_str().unwrap();
    assert_eq!(
        app.introspect(("app", &secret), at).await["active"],
        false,
        "the session's grants end"
    );
}

#[tokio::test]
async fn an_unregistered_destination_is_refused_without_redirecting() {
    let (app, secret) = setup(None, false).await;
    let (b, tokens) = signed_in(&app, &secret).await;
    let hint = tokens["id_token"].as_str().unwrap();
    for query in [
        format!("id_token_hint={hint}&post_logout_redirect_uri=https%3A%2F%2Fevil.example%2F"),
        "post_logout_redirect_uri=http%3A%2F%2Flocalhost%3A8080%2Fsigned-out".to_string(),
        "client_id=app&post_logout_redirect_uri=http%3A%2F%2Flocalhost%3A8080%2Fcallback".to_string(),
        "id_token_hint=forged.token.here".to_string(),
    ] {
        let resp = b.get(format!("{}?{query}", app.url("/logout"))).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{query}");
        assert!(resp.headers().get("location").is_none());
    }
    assert!(still_signed_in(&app, &b).await, "nothing was ended");
}

#[tokio::test]
async fn without_a_hint_the_user_confirms_with_a_csrf_protected_form() {
    let (app, secret) = setup(None, false).await;
    let (b, _) = signed_in(&app, &secret).await;
    let resp = b
        .get(format!("{}?client_id=app&state=s1", app.url("/logout")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let fields = form_fields(&resp.text().await.unwrap());
    assert!(still_signed_in(&app, &b).await, "showing the page logs nobody out");

    let mut forged = fields.clone();
    forged.insert("csrf".into(), "guess".into());
    let resp = b.post(app.url("/logout/confirm")).form(&forged).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let resp = browser()
        .post(app.url("/logout/confirm"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "another browser has no session to end");
    assert!(still_signed_in(&app, &b).await);

    let resp = b.post(app.url("/logout/confirm")).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.unwrap().contains("Signed out"));
    assert!(!still_signed_in(&app, &b).await);
}

/// A one-shot HTTP endpoint that records request bodies and answers `status`.
/// The next logout token the receiver is sent, within `secs` seconds.
pub(crate) async fn next_logout_token(bodies: &mut mpsc::UnboundedReceiver<String>, secs: u64) -> String {
    let body = tokio::time::timeout(std::time::Duration::from_secs(secs), bodies.recv())
        .await
        .expect("a logout token is delivered in time")
        .unwrap();
    url::form_urlencoded::parse(body.as_bytes())
        .find(|(k, _)| k == "logout_token")
        .map(|(_, v)| v.into_owned())
        .expect("the delivery carries logout_token")
}

pub(crate) async fn receiver(status: u16) -> (String, mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/backchannel", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let n = sock.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().to_string())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    if body.len() >= len {
                        let _ = tx.send(body.to_string());
                        break;
                    }
                }
            }
            let reply = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = sock.write_all(reply.as_bytes()).await;
        }
    });
    (url, rx)
}

#[tokio::test]
async fn back_channel_logout_posts_a_signed_logout_token() {
    let (uri, mut bodies) = receiver(200).await;
    let (app, secret) = setup(Some(uri), true).await;
    let (b, tokens) = signed_in(&app, &secret).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    let hint = tokens["id_token"].as_str().unwrap();
    let resp = b
        .get(format!("{}?id_token_hint={hint}", app.url("/logout")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    let token = next_logout_token(&mut bodies, 10).await;
    let (header, claims) = jwt_parts(&token);
    assert_eq!(header["typ"], "logout+jwt");
    assert_eq!(claims["iss"], app.address);
    assert_eq!(claims["aud"], "app");
    assert_eq!(claims["sub"], id["sub"]);
    assert_eq!(claims["sid"], id["sid"], "sid when the client requires it");
    assert!(claims["events"]
        .get("http://schemas.openid.net/event/backchannel-logout")
        .is_some());
    assert!(claims.get("nonce").is_none(), "a logout token never has a nonce");
    assert!(claims["jti"].is_string() && claims["iat"].is_i64());
}

#[tokio::test]
async fn a_failing_back_channel_is_retried_without_blocking_the_user() {
    let (uri, mut bodies) = receiver(503).await;
    let (app, secret) = setup(Some(uri), false).await;
    let (b, tokens) = signed_in(&app, &secret).await;
    let hint = tokens["id_token"].as_str().unwrap();
    let started = std::time::Instant::now();
    let resp = b
        .get(format!("{}?id_token_hint={hint}", app.url("/logout")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "logout does not wait for clients"
    );
    tokio::time::timeout(std::time::Duration::from_secs(10), bodies.recv())
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let pending = app.state.db.read(tessera::db::testing::deliveries).await.unwrap()[0];
    assert_eq!(pending.0, 1, "the failure is counted and kept for a retry");
    assert!(pending.1 > app.clock.now() - 1);
}

#[tokio::test]
async fn disabling_or_deleting_a_user_in_the_admin_api_logs_them_out_of_clients() {
    let (uri, mut bodies) = receiver(200).await;
    let (app, secret) = setup(Some(uri), false).await;
    let ops = app
        .add_client_with("ops", false, |c| {
            c.admin = true;
            c.grant_types = vec!["client_credentials".into()];
        })
        .await
        .unwrap();
    let token: serde_json::Value = app
        .token(
            Some(("ops", &ops)),
            &[("grant_type", "client_credentials"), ("scope", "tessera:admin")],
        )
        .await
        .json()
        .await
        .unwrap();
    let bearer = token["access_token"].as_str().unwrap().to_string();
    let (b, tokens) = signed_in(&app, &secret).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    let users: serde_json::Value = plain_client()
        .get(app.url("/admin/api/users?q=alice"))
        .bearer_auth(&bearer)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let uid = users["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == "alice")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let resp = plain_client()
        .post(app.url(&format!("/admin/api/users/{uid}/disable")))
        .bearer_auth(&bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body = tokio::time::timeout(std::time::Duration::from_secs(10), bodies.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(body.starts_with("logout_token="));
    let token: String = url::form_urlencoded::parse(body.as_bytes())
        .next()
        .unwrap()
        .1
        .into_owned();
    assert_eq!(jwt_parts(&token).1["sub"], id["sub"]);
    assert!(!still_signed_in(&app, &b).await);

    // Deleting: enabled again and signed in again, then deleted — the client hears of it.
    plain_client()
        .post(app.url(&format!("/admin/api/users/{uid}/enable")))
        .bearer_auth(&bearer)
        .send()
        .await
        .unwrap();
    signed_in(&app, &secret).await;
    let resp = plain_client()
        .delete(app.url(&format!("/admin/api/users/{uid}")))
        .bearer_auth(&bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    let body = tokio::time::timeout(std::time::Duration::from_secs(10), bodies.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(body.starts_with("logout_token="));
}

#[tokio::test]
async fn without_state_the_post_logout_redirect_is_the_registered_uri_exactly() {
    let (app, secret) = setup(None, false).await;
    let (b, tokens) = signed_in(&app, &secret).await;
    let url = format!(
        "{}?id_token_hint={}&post_logout_redirect_uri={}",
        app.url("/logout"),
        tokens["id_token"].as_str().unwrap(),
        url::form_urlencoded::byte_serialize(AFTER.as_bytes()).collect::<String>()
    );
    let resp = b.get(url).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), AFTER, "no stray `?`");
}

#[tokio::test]
async fn a_logout_token_is_no_id_token_hint() {
    let (uri, mut bodies) = receiver(200).await;
    let (app, secret) = setup(Some(uri), false).await;
    let (b, tokens) = signed_in(&app, &secret).await;
    let resp = b
        .get(format!(
            "{}?id_token_hint={}",
            app.url("/logout"),
            tokens["id_token"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let logout_token = next_logout_token(&mut bodies, 10).await;
    // Signed by us, for this client, with a `sub`: but it is not an ID token.
    let (b, _) = signed_in(&app, &secret).await;
    let resp = b
        .get(format!("{}?id_token_hint={logout_token}", app.url("/logout")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(still_signed_in(&app, &b).await, "nothing was ended");
    let resp = b
        .get(app.authorize_url("app", &[("id_token_hint", &logout_token)]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "invalid_request");
}
