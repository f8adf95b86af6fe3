//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document) and
//! `jwks_uri`: documents served by a small local HTTP server that counts its hits,
//! fetched through the outbound limits (test mode allows loopback targets).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use josekit::jws::{JwsHeader, ES256};
use josekit::jwt::{self, JwtPayload};
use serde_json::{json, Value};
use tessera::config::Settings;
use tessera::db;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::*;

/// What the server answers for a path: the body and extra header lines.
#[derive(Clone)]
struct Doc {
    body: String,
    headers: String,
}

/// A tiny HTTP/1.1 server on 127.0.0.1 with per-path documents and a hit counter.
#[derive(Clone)]
struct DocServer {
    base: String,
    docs: Arc<Mutex<HashMap<String, Doc>>>,
    hits: Arc<AtomicUsize>,
}

impl DocServer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = DocServer {
            base: format!("http://127.0.0.1:{port}"),
            docs: Arc::default(),
            hits: Arc::default(),
        };
        let s = server.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    s.hits.fetch_add(1, Ordering::SeqCst);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    let path = text.split(' ').nth(1).unwrap_or("/").to_string();
                    let doc = s.docs.lock().unwrap().get(&path).cloned();
                    let answer = match doc {
                        Some(d) => format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
                            d.body.len(),
                            d.headers,
                            d.body
                        ),
                        None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
                    };
                    let _ = sock.write_all(answer.as_bytes()).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        server
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn serve(&self, path: &str, body: &Value, headers: &str) {
        self.serve_text(path, &body.to_string(), headers);
    }

    fn serve_text(&self, path: &str, body: &str, headers: &str) {
        self.docs.lock().unwrap().insert(
            path.to_string(),
            Doc {
                body: body.to_string(),
                headers: headers.to_string(),
            },
        );
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn documents(s: &mut Settings) {
    s.protocol.client_id_documents = true;
    s.protocol.fetch_private_addresses = true;
}

async fn spawn_for(backend: &Backend, adjust: impl FnOnce(&mut Settings)) -> TestApp {
    match backend {
        Backend::Sqlite => spawn_sqlite_with(adjust).await,
        Backend::Postgres(url) => spawn_on_url(&keyed_schema(url).await, adjust).await,
    }
}

/// An MCP-style client's document: public, loopback redirect, code and refresh.
fn document(client_id: &str) -> Value {
    json!({
        "client_id": client_id,
        "client_name": "Inspector",
        "client_uri": "https://inspector.example",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    })
}

/// Opens the authorization URL (with PKCE, as a public client must); the status (200:
/// the login page for a known client; 400: the error page) and the page.
async fn open(app: &TestApp, client_id: &str) -> (u16, String) {
    let pkce = Pkce::new();
    let url = app.authorize_url(
        client_id,
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let resp = browser().get(url).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn a_document_client_completes_a_code_flow_with_pkce() {
    for backend in backends() {
        let docs = DocServer::start().await;
        let client_id = docs.url("/oauth/client.json");
        docs.serve("/oauth/client.json", &document(&client_id), "");
        let app = spawn_for(&backend, documents).await;
        app.add_user("alice").await;
        let pkce = Pkce::new();
        let url = app.authorize_url(
            &client_id,
            &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
        );
        // A document client asks for consent, and is named with its host.
        let (page, params) = app.login_and_allow(&url, "alice").await;
        assert!(page.contains("Inspector (127.0.0.1)"), "{page}");
        let resp = app
            .token(
                None,
                &[
                    ("grant_type", "authorization_code"),
                    ("client_id", &client_id),
                    ("code", &params["code"]),
                    ("redirect_uri", REDIRECT),
                    ("code_verifier", &pkce.verifier),
                ],
            )
            .await;
        assert_eq!(resp.status(), 200);
        let tokens: Value = resp.json().await.unwrap();
        let (_, claims) = jwt_parts(tokens["id_token"].as_str().unwrap());
        assert_eq!(claims["aud"], client_id.as_str());
        let key = client_id.clone();
        let stored = app
            .state
            .db
            .read(move |c| db::clients::find(c, &key))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.origin, "metadata_document");
        assert!(stored.consent_required);
        assert!(stored.registration_metadata.unwrap().contains("inspector.example"));
    }
}

#[tokio::test]
async fn a_document_is_used_within_its_max_age_and_fetched_again_after() {
    let docs = DocServer::start().await;
    let client_id = docs.url("/client");
    docs.serve(
        "/client",
        &document(&client_id),
        "Cache-Control: public, max-age=600\r\n",
    );
    let app = spawn_with(documents).await;
    assert_eq!(open(&app, &client_id).await.0, 200);
    assert_eq!(docs.hits(), 1);
    // Past the in-memory second, within max-age: the stored copy, no fetch.
    app.clock.advance(5);
    assert_eq!(open(&app, &client_id).await.0, 200);
    app.clock.advance(300);
    assert_eq!(open(&app, &client_id).await.0, 200);
    assert_eq!(docs.hits(), 1, "cached for its max-age");
    app.clock.advance(300);
    let mut changed = document(&client_id);
    changed["client_name"] = json!("Inspector 2");
    docs.serve("/client", &changed, "Cache-Control: max-age=600\r\n");
    assert_eq!(open(&app, &client_id).await.0, 200);
    assert_eq!(docs.hits(), 2, "fetched again once stale");
    let key = client_id.clone();
    let stored = app
        .state
        .db
        .read(move |c| db::clients::find(c, &key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.name, "Inspector 2 (127.0.0.1)", "the change is stored");
}

#[tokio::test]
async fn a_document_at_a_private_address_is_refused_outside_test_mode() {
    let docs = DocServer::start().await;
    let port = docs.base.rsplit(':').next().unwrap().to_string();
    let app = spawn_with(|s| s.protocol.client_id_documents = true).await;
    for client_id in [
        format!("https://localhost:{port}/client"),
        format!("https://127.0.0.1:{port}/client"),
        format!("https://[::1]:{port}/client"),
    ] {
        docs.serve("/client", &document(&client_id), "");
        let (status, page) = open(&app, &client_id).await;
        assert_eq!(status, 400, "{client_id}");
        assert!(page.contains("not registered"), "{page}");
    }
    // http is no document URL outside the test mode.
    let plain = docs.url("/client");
    docs.serve("/client", &document(&plain), "");
    assert_eq!(open(&app, &plain).await.0, 400);
    assert_eq!(docs.hits(), 0, "no connection was made");
}

#[tokio::test]
async fn an_oversize_document_is_refused() {
    let docs = DocServer::start().await;
    let client_id = docs.url("/big");
    let mut big = document(&client_id);
    big["padding"] = json!("x".repeat(6 * 1024));
    docs.serve("/big", &big, "");
    let app = spawn_with(documents).await;
    assert_eq!(open(&app, &client_id).await.0, 400);
    assert_eq!(docs.hits(), 1);
    let resp = app
        .token(
            None,
            &[
                ("grant_type", "authorization_code"),
                ("client_id", &client_id),
                ("code", "x"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "invalid_client");
    // Just under the limit is fine.
    let mut fits = document(&client_id);
    fits["padding"] = json!("x".repeat(4 * 1024));
    docs.serve("/big", &fits, "");
    assert_eq!(open(&app, &client_id).await.0, 200);
}

#[tokio::test]
async fn a_document_with_another_client_id_or_a_secret_is_refused() {
    let docs = DocServer::start().await;
    let app = spawn_with(documents).await;
    let client_id = docs.url("/a");
    docs.serve("/a", &document(&docs.url("/b")), "");
    assert_eq!(open(&app, &client_id).await.0, 400, "client_id mismatch");
    let secret_id = docs.url("/s");
    let mut secret = document(&secret_id);
    secret["token_endpoint_auth_method"] = json!("client_secret_basic");
    docs.serve("/s", &secret, "");
    assert_eq!(open(&app, &secret_id).await.0, 400, "no shared secrets");
    let missing = docs.url("/missing");
    assert_eq!(open(&app, &missing).await.0, 400, "404");
    let not_json = docs.url("/text");
    docs.serve_text("/text", "hello", "");
    assert_eq!(open(&app, &not_json).await.0, 400);
    let none = app.state.db.read(db::clients::list).await.unwrap();
    assert!(none.iter().all(|c| c.origin != "metadata_document"), "nothing stored");
}

#[tokio::test]
async fn with_documents_off_a_url_client_id_is_unknown_and_never_fetched() {
    let docs = DocServer::start().await;
    let client_id = docs.url("/client");
    docs.serve("/client", &document(&client_id), "");
    let app = spawn_with(|s| s.protocol.fetch_private_addresses = true).await;
    assert_eq!(open(&app, &client_id).await.0, 400);
    assert_eq!(docs.hits(), 0);
}

#[tokio::test]
async fn a_jwks_uri_is_fetched_cached_and_refetched_for_a_new_key() {
    let docs = DocServer::start().await;
    let app = spawn_with(|s| s.protocol.fetch_private_addresses = true).await;
    let publish = |kid: &str| {
        let keys = ES256.generate_key_pair().unwrap();
        let mut jwk = keys.to_jwk_public_key();
        jwk.set_key_id(kid);
        docs.serve_text("/jwks", &format!(r#"{{"keys":[{jwk}]}}"#), "");
        ES256.signer_from_pem(keys.to_pem_private_key()).unwrap()
    };
    let signer = publish("k1");
    let jwks_uri = docs.url("/jwks");
    app.add_client_with("by-uri", true, |c| {
        c.auth_method = "private_key_jwt".into();
        c.jwks_uri = Some(jwks_uri);
        c.grant_types = vec!["client_credentials".into()];
    })
    .await;
    let assertion = |signer: &dyn josekit::jws::JwsSigner, kid: &str| {
        let now = app.clock.now();
        let claims = json!({"iss": "by-uri", "sub": "by-uri", "aud": app.url("/token"), "exp": now + 60,
            "jti": tessera::crypto::random::random_id()});
        let mut header = JwsHeader::new();
        header.set_key_id(kid);
        let payload = JwtPayload::from_map(claims.as_object().unwrap().clone()).unwrap();
        jwt::encode_with_signer(&payload, &header, signer).unwrap()
    };
    let cc = |a: String| {
        let app = &app;
        async move {
            app.token(
                None,
                &[
                    ("grant_type", "client_credentials"),
                    (
                        "client_assertion_type",
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    ),
                    ("client_assertion", &a),
                ],
            )
            .await
            .status()
        }
    };
    assert_eq!(cc(assertion(&signer, "k1")).await, 200);
    assert_eq!(cc(assertion(&signer, "k1")).await, 200);
    assert_eq!(docs.hits(), 1, "the key set is cached");
    // The client rotates its key at the URI: an unknown key fetches the set again.
    let rotated = publish("k2");
    app.clock.advance(31);
    assert_eq!(cc(assertion(&rotated, "k2")).await, 200);
    assert_eq!(docs.hits(), 2);
    // A key nobody published fails, and does not refetch within 30 s.
    let stranger = ES256
        .signer_from_pem(ES256.generate_key_pair().unwrap().to_pem_private_key())
        .unwrap();
    assert_eq!(cc(assertion(&stranger, "k3")).await, 401);
    assert_eq!(docs.hits(), 2);
}

#[tokio::test]
async fn a_document_may_send_people_back_after_logout_only_to_its_origin_or_loopback() {
    let docs = DocServer::start().await;
    let app = spawn_with(documents).await;
    let elsewhere = docs.url("/elsewhere");
    let mut doc = document(&elsewhere);
    doc["post_logout_redirect_uris"] = json!(["https://evil.example/landing"]);
    docs.serve("/elsewhere", &doc, "");
    assert_eq!(
        open(&app, &elsewhere).await.0,
        400,
        "a foreign post-logout URI refuses the document"
    );

    let home = docs.url("/home");
    let mut doc = document(&home);
    doc["post_logout_redirect_uris"] = json!([docs.url("/signed-out"), "http://localhost:7/bye"]);
    docs.serve("/home", &doc, "");
    assert_eq!(open(&app, &home).await.0, 200, "its own origin and loopback are fine");
    let stored = app.state.db.read(db::clients::list).await.unwrap();
    let origins: Vec<_> = stored
        .iter()
        .map(|c| (c.client_id.as_str(), c.origin.as_str()))
        .collect();
    assert!(origins.contains(&(home.as_str(), "metadata_document")), "{origins:?}");
    assert!(
        !origins.iter().any(|(id, _)| *id == elsewhere),
        "the refused document is not stored"
    );
}
