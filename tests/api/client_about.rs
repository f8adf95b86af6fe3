//! What a registered client says about itself (Dynamic Client Registration 1.0 §2):
//! its logo, fetched through the outbound policy and served from Tessera's origin,
//! and links to its policy and terms on the login and consent pages.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tessera::db;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::*;
use crate::registration::initial_token;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

/// Serves a PNG at `/logo.png` and an SVG anywhere else, counting requests.
async fn image_server() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            let mut buf = vec![0u8; 4096];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let (kind, body): (&str, &[u8]) = if head.starts_with("GET /logo.png ") {
                ("image/png", PNG)
            } else {
                (
                    "image/svg+xml",
                    b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>",
                )
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = sock.write_all(reply.as_bytes()).await;
            let _ = sock.write_all(body).await;
            let _ = sock.shutdown().await;
        }
    });
    (base, hits)
}

async fn registered(app: &TestApp, id: &str, metadata: serde_json::Value) {
    app.add_client_with(id, true, |c| {
        c.origin = db::clients::ORIGIN_REGISTRATION.into();
        c.consent_required = true;
        c.registration_metadata = Some(metadata.to_string());
    })
    .await;
}

async fn login_page(app: &TestApp, b: &reqwest::Client, client_id: &str) -> (String, String) {
    let pkce = Pkce::new();
    let url = app.authorize_url(
        client_id,
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let resp = b.get(url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let csp = resp.headers()["content-security-policy"].to_str().unwrap().to_string();
    (resp.text().await.unwrap(), csp)
}

async fn consent_page(app: &TestApp, client_id: &str) -> String {
    let b = browser();
    let (page, _) = login_page(app, &b, client_id).await;
    let resp = app.submit_login(&b, form_fields(&page), "alice", PASSWORD).await;
    assert_eq!(resp.status(), 200, "the consent page");
    resp.text().await.unwrap()
}

#[tokio::test]
async fn the_login_and_consent_pages_show_a_registered_clients_logo_and_links() {
    let (base, hits) = image_server().await;
    let app = spawn_with(|s| s.protocol.fetch_private_addresses = true).await;
    app.add_user("alice").await;
    registered(
        &app,
        "agent",
        json!({"logo_uri": format!("{base}/logo.png"), "policy_uri": "https://agent.example/privacy",
               "tos_uri": "https://agent.example/terms"}),
    )
    .await;
    registered(&app, "bare", json!({"client_uri": "https://bare.example"})).await;

    let (login, csp) = login_page(&app, &browser(), "agent").await;
    let consent = consent_page(&app, "agent").await;
    for page in [&login, &consent] {
        assert!(
            page.contains(r#"<a href="https://agent.example/privacy" id="client-policy" rel="noopener noreferrer""#),
            "{page}"
        );
        assert!(page.contains(r#"<a href="https://agent.example/terms" id="client-terms" rel="noopener noreferrer""#));
        assert!(page.contains(r#"id="registered-logo" src="/branding/registered-logo?client_id=agent""#));
        assert!(!page.contains(&base), "the logo is never loaded from the client's host");
    }
    assert!(
        csp.contains("img-src 'self'") && !csp.contains("agent.example"),
        "the CSP is unchanged: {csp}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "showing the pages fetches nothing");

    for _ in 0..2 {
        let resp = plain_client()
            .get(app.url("/branding/registered-logo?client_id=agent"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "image/png");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        assert!(resp.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox"));
        assert_eq!(resp.bytes().await.unwrap().as_ref(), PNG);
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1, "fetched once, then kept");

    let (login, _) = login_page(&app, &browser(), "bare").await;
    let consent = consent_page(&app, "bare").await;
    for page in [&login, &consent] {
        assert!(!page.contains("client-about") && !page.contains("registered-logo"));
    }
    let resp = plain_client()
        .get(app.url("/branding/registered-logo?client_id=bare"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
}

#[tokio::test]
async fn a_logo_that_is_not_a_raster_image_is_not_served() {
    let (base, _) = image_server().await;
    let app = spawn_with(|s| s.protocol.fetch_private_addresses = true).await;
    registered(&app, "svg", json!({"logo_uri": format!("{base}/logo.svg")})).await;
    let resp = plain_client()
        .get(app.url("/branding/registered-logo?client_id=svg"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    // An administrator's client is branded by the administrator, not by metadata.
    app.add_client_with("admin-app", true, |c| {
        c.registration_metadata = Some(json!({"policy_uri": "https://a.example/p"}).to_string());
    })
    .await;
    let (page, _) = login_page(&app, &browser(), "admin-app").await;
    assert!(!page.contains("client-policy"));
}

#[tokio::test]
async fn a_policy_or_terms_uri_that_is_not_https_is_refused_at_registration() {
    let app = spawn_app().await;
    let token = initial_token(&app, "1h", None).await;
    for (field, uri) in [
        ("policy_uri", "javascript:alert(1)"),
        ("policy_uri", "http://agent.example/privacy"),
        ("tos_uri", "http://agent.example/terms"),
        ("tos_uri", "data:text/html,hi"),
    ] {
        let mut body = json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
        body[field] = uri.into();
        let resp = plain_client()
            .post(app.url("/register"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{field} {uri}");
        let error: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(error["error"], "invalid_client_metadata");
        assert!(error["error_description"].as_str().unwrap().starts_with(field));
    }
}
