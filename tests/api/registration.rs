//! Dynamic client registration (RFC 7591) and client configuration (RFC 7592):
//! initial access tokens, open registration's limits, metadata errors, the
//! registration access token, and the tokens' CLI, admin API and page.

use serde_json::{json, Value};
use tessera::admin::{registration::TokenInput, Actor};
use tessera::config::Registration;
use tessera::db;

use crate::helpers::*;

/// An initial access token made as an administrator would.
pub(crate) async fn initial_token(app: &TestApp, ttl: &str, uses: Option<i64>) -> String {
    let actor = Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    };
    let input = TokenInput {
        ttl: Some(ttl.into()),
        uses,
    };
    tessera::admin::registration::create(&app.state.ctx(), &actor, input)
        .await
        .unwrap()
        .token
}

async fn register(app: &TestApp, token: Option<&str>, body: &Value) -> reqwest::Response {
    let mut req = plain_client().post(app.url("/register")).json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

/// A public client with a loopback redirect URI (the helpers' REDIRECT is localhost).
fn native_client() -> Value {
    json!({
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "client_name": "Agent",
        "logo_uri": "https://agent.example/logo.png",
        "software_id": "agent-cli",
        "some_future_field": {"ignored": true},
    })
}

async fn error_of(resp: reqwest::Response) -> (u16, String, String) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    (
        status,
        body["error"].as_str().unwrap_or_default().to_string(),
        body["error_description"].as_str().unwrap_or_default().to_string(),
    )
}

async fn client_count(app: &TestApp) -> i64 {
    app.state.db.read(db::clients::count).await.unwrap()
}

#[tokio::test]
async fn registration_without_an_initial_access_token_is_refused_in_token_mode() {
    let app = spawn_app().await;
    let before = client_count(&app).await;
    let resp = register(&app, None, &native_client()).await;
    let challenge = resp.headers()["www-authenticate"].to_str().unwrap().to_string();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    let (status, error, description) = error_of(resp).await;
    assert_eq!((status, error.as_str()), (401, "invalid_token"));
    assert!(description.contains("registration-token"), "{description}");
    let resp = register(&app, Some("made-up"), &native_client()).await;
    assert_eq!(error_of(resp).await.1, "invalid_token");
    assert_eq!(client_count(&app).await, before, "nothing was registered");
}

#[tokio::test]
async fn an_initial_access_token_allows_its_number_of_registrations_then_no_more() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let token = initial_token(&app, "1h", Some(2)).await;
        for _ in 0..2 {
            let resp = register(&app, Some(&token), &native_client()).await;
            assert_eq!(resp.status(), 201);
        }
        let resp = register(&app, Some(&token), &native_client()).await;
        let (status, error, _) = error_of(resp).await;
        assert_eq!((status, error.as_str()), (401, "invalid_token"), "used up");
    }
}

#[tokio::test]
async fn an_expired_initial_access_token_is_refused() {
    let app = spawn_app().await;
    let token = initial_token(&app, "1m", None).await;
    assert_eq!(register(&app, Some(&token), &native_client()).await.status(), 201);
    app.clock.advance(61);
    let (status, error, _) = error_of(register(&app, Some(&token), &native_client()).await).await;
    assert_eq!((status, error.as_str()), (401, "invalid_token"));
}

#[tokio::test]
async fn a_registration_answers_with_the_client_information_of_rfc_7591() {
    let app = spawn_app().await;
    let token = initial_token(&app, "1h", None).await;
    let body = json!({
        "redirect_uris": ["https://rp.example/cb"],
        "client_name": "Web app",
        "contacts": ["ops@rp.example"],
    });
    let resp = register(&app, Some(&token), &body).await;
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let info: Value = resp.json().await.unwrap();
    let id = info["client_id"].as_str().unwrap();
    assert_eq!(
        info["token_endpoint_auth_method"], "client_secret_basic",
        "RFC 7591 §2 default"
    );
    assert_eq!(
        info["grant_types"],
        json!(["authorization_code"]),
        "RFC 7591 §2 default"
    );
    assert_eq!(info["response_types"], json!(["code"]));
    assert_eq!(info["client_secret_expires_at"], 0);
    assert_eq!(info["contacts"], json!(["ops@rp.example"]));
    assert_eq!(
        info["registration_client_uri"],
        format!("{}/register/{id}", app.state.issuer)
    );
    let secret = info["client_secret"].as_str().unwrap();
    // The secret authenticates the client at the token endpoint.
    let resp = app
        .token(
            Some((id, secret)),
            &[("grant_type", "authorization_code"), ("code", "x")],
        )
        .await;
    assert_ne!(resp.status(), 401, "the secret authenticates the client");
    assert_ne!(error_of(resp).await.1, "invalid_client");
    let id = id.to_string();
    let stored = app
        .state
        .db
        .read(move |c| db::clients::find(c, &id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.origin, "registration");
    assert!(stored.consent_required && !stored.admin, "a third party");
    assert!(stored.registration_token_hash.is_some());
    let audit = app.audit().await;
    assert!(audit
        .iter()
        .any(|(e, a, t)| e == "client.registered" && a.as_deref() == Some("registration") && t.is_some()));
}

#[tokio::test]
async fn open_registration_takes_a_public_loopback_client_without_a_token() {
    let app = spawn_with(|s| s.protocol.registration = Registration::Open).await;
    let resp = register(&app, None, &native_client()).await;
    assert_eq!(resp.status(), 201);
    let info: Value = resp.json().await.unwrap();
    assert!(info.get("client_secret").is_none());
    let native = json!({"redirect_uris": ["com.example.agent:/cb"], "token_endpoint_auth_method": "none"});
    assert_eq!(register(&app, None, &native).await.status(), 201, "private-use scheme");
}

#[tokio::test]
async fn open_registration_refuses_a_confidential_client_without_a_token() {
    let app = spawn_with(|s| s.protocol.registration = Registration::Open).await;
    let before = client_count(&app).await;
    let body = json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"});
    let (status, error, description) = error_of(register(&app, None, &body).await).await;
    assert_eq!((status, error.as_str()), (401, "invalid_token"));
    assert!(description.contains("only public clients"), "{description}");
    assert_eq!(client_count(&app).await, before);
    // With a token it is fine.
    let token = initial_token(&app, "1h", None).await;
    assert_eq!(register(&app, Some(&token), &body).await.status(), 201);
}

#[tokio::test]
async fn open_registration_refuses_a_public_client_with_an_https_redirect_without_a_token() {
    let app = spawn_with(|s| s.protocol.registration = Registration::Open).await;
    let body = json!({"redirect_uris": ["https://spa.example/cb"], "token_endpoint_auth_method": "none"});
    let (status, error, _) = error_of(register(&app, None, &body).await).await;
    assert_eq!((status, error.as_str()), (401, "invalid_token"));
    let mixed = json!({"redirect_uris": [REDIRECT, "https://spa.example/cb"], "token_endpoint_auth_method": "none"});
    assert_eq!(error_of(register(&app, None, &mixed).await).await.0, 401);
}

#[tokio::test]
async fn a_bad_redirect_uri_is_invalid_redirect_uri() {
    let app = spawn_app().await;
    let token = initial_token(&app, "1h", None).await;
    for uris in [
        json!(["https://rp.example/cb#fragment"]),
        json!(["javascript:alert(1)"]),
        json!([]),
    ] {
        let body = json!({"redirect_uris": uris});
        let (status, error, _) = error_of(register(&app, Some(&token), &body).await).await;
        assert_eq!((status, error.as_str()), (400, "invalid_redirect_uri"), "{uris}");
    }
}

#[tokio::test]
async fn bad_metadata_is_invalid_client_metadata() {
    let app = spawn_app().await;
    let token = initial_token(&app, "1h", None).await;
    let cases = [
        json!({"redirect_uris": [REDIRECT], "grant_types": ["password"]}),
        json!({"redirect_uris": [REDIRECT], "response_types": ["token"]}),
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "magic"}),
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"}),
        json!({"redirect_uris": [REDIRECT], "jwks": {"keys": []}, "jwks_uri": "https://rp.example/jwks"}),
        json!({"redirect_uris": "https://rp.example/cb"}),
        json!({"redirect_uris": [REDIRECT], "logo_uri": "javascript:x"}),
    ];
    for body in cases {
        let (status, error, _) = error_of(register(&app, Some(&token), &body).await).await;
        assert_eq!((status, error.as_str()), (400, "invalid_client_metadata"), "{body}");
    }
    let resp = plain_client()
        .post(app.url("/register"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(resp).await.1, "invalid_client_metadata");
    let resp = plain_client()
        .post(app.url("/register"))
        .bearer_auth(&token)
        .form(&[("redirect_uris", REDIRECT)])
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(resp).await.1,
        "invalid_client_metadata",
        "not application/json"
    );
}

#[tokio::test]
async fn a_software_statement_is_refused_politely() {
    let app = spawn_app().await;
    let token = initial_token(&app, "1h", Some(1)).await;
    let mut body = native_client();
    body["software_statement"] = json!("eyJhbGciOiJSUzI1NiJ9.e30.sig");
    let (status, error, description) = error_of(register(&app, Some(&token), &body).await).await;
    assert_eq!((status, error.as_str()), (400, "unapproved_software_statement"));
    assert!(description.contains("register without one"), "{description}");
    // The refusal did not use the token's only registration.
    assert_eq!(register(&app, Some(&token), &native_client()).await.status(), 201);
}

#[tokio::test]
async fn a_registered_client_completes_a_code_flow_with_pkce_after_consent() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        app.add_user("alice").await;
        let token = initial_token(&app, "1h", None).await;
        let info: Value = register(&app, Some(&token), &native_client())
            .await
            .json()
            .await
            .unwrap();
        let id = info["client_id"].as_str().unwrap();
        let pkce = Pkce::new();
        let url = app.authorize_url(
            id,
            &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
        );
        // A registered client asks for consent, named on the page.
        let (page, params) = app.login_and_allow(&url, "alice").await;
        assert!(page.contains("Agent"), "{page}");
        let resp = app
            .token(
                None,
                &[
                    ("grant_type", "authorization_code"),
                    ("client_id", id),
                    ("code", &params["code"]),
                    ("redirect_uri", REDIRECT),
                    ("code_verifier", &pkce.verifier),
                ],
            )
            .await;
        assert_eq!(resp.status(), 200);
        let tokens: Value = resp.json().await.unwrap();
        assert!(tokens["access_token"].is_string() && tokens["id_token"].is_string());
        assert!(
            tokens.get("refresh_token").is_none(),
            "a third party gets refresh tokens only with offline_access"
        );
    }
}

async fn manage(
    app: &TestApp,
    method: reqwest::Method,
    id: &str,
    token: &str,
    body: Option<&Value>,
) -> reqwest::Response {
    let mut req = plain_client()
        .request(method, app.url(&format!("/register/{id}")))
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(b);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn the_registration_access_token_reads_updates_and_deletes_the_client() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let token = initial_token(&app, "1h", None).await;
        let info: Value = register(&app, Some(&token), &native_client())
            .await
            .json()
            .await
            .unwrap();
        let id = info["client_id"].as_str().unwrap().to_string();
        let access = info["registration_access_token"].as_str().unwrap().to_string();

        let resp = manage(&app, reqwest::Method::GET, &id, &access, None).await;
        assert_eq!(resp.status(), 200);
        let read: Value = resp.json().await.unwrap();
        assert_eq!(read["client_id"], id.as_str());
        assert_eq!(read["client_name"], "Agent");
        assert_eq!(read["logo_uri"], "https://agent.example/logo.png");

        let mut changed = native_client();
        changed["client_id"] = json!(id);
        changed["client_name"] = json!("Agent 2");
        let resp = manage(&app, reqwest::Method::PUT, &id, &access, Some(&changed)).await;
        assert_eq!(resp.status(), 200);
        let updated: Value = resp.json().await.unwrap();
        assert_eq!(updated["client_name"], "Agent 2");
        let rotated = updated["registration_access_token"].as_str().unwrap().to_string();
        assert_ne!(rotated, access, "the token is rotated on update");
        let (status, error, _) = error_of(manage(&app, reqwest::Method::GET, &id, &access, None).await).await;
        assert_eq!(
            (status, error.as_str()),
            (401, "invalid_token"),
            "the old token is gone"
        );
        let read: Value = manage(&app, reqwest::Method::GET, &id, &rotated, None)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(read["client_name"], "Agent 2");

        let resp = manage(&app, reqwest::Method::DELETE, &id, &rotated, None).await;
        assert_eq!(resp.status(), 204);
        let key = id.clone();
        let gone = app.state.db.read(move |c| db::clients::find(c, &key)).await.unwrap();
        assert!(gone.is_none(), "the client is deleted");
        assert_eq!(
            manage(&app, reqwest::Method::GET, &id, &rotated, None).await.status(),
            401
        );
    }
}

#[tokio::test]
async fn an_update_must_name_the_client_and_keep_open_registration_limits() {
    let app = spawn_with(|s| s.protocol.registration = Registration::Open).await;
    let info: Value = register(&app, None, &native_client()).await.json().await.unwrap();
    let id = info["client_id"].as_str().unwrap().to_string();
    let access = info["registration_access_token"].as_str().unwrap().to_string();
    let mut other = native_client();
    other["client_id"] = json!("someone-else");
    let (status, error, _) = error_of(manage(&app, reqwest::Method::PUT, &id, &access, Some(&other)).await).await;
    assert_eq!((status, error.as_str()), (400, "invalid_client_metadata"));
    // Registered without a token: it cannot widen itself to a web redirect URI.
    let mut web = native_client();
    web["client_id"] = json!(id);
    web["redirect_uris"] = json!(["https://evil.example/cb"]);
    let (status, _, _) = error_of(manage(&app, reqwest::Method::PUT, &id, &access, Some(&web)).await).await;
    assert_eq!(status, 401);
    let read: Value = manage(&app, reqwest::Method::GET, &id, &access, None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(read["redirect_uris"], json!([REDIRECT]), "unchanged");
}

#[tokio::test]
async fn a_wrong_registration_access_token_is_refused_without_revealing_ids() {
    let app = spawn_app().await;
    let token = initial_token(&app, "1h", None).await;
    let info: Value = register(&app, Some(&token), &native_client())
        .await
        .json()
        .await
        .unwrap();
    let id = info["client_id"].as_str().unwrap().to_string();
    let known = error_of(manage(&app, reqwest::Method::GET, &id, "wrong", None).await).await;
    let unknown = error_of(manage(&app, reqwest::Method::GET, "no-such-client", "wrong", None).await).await;
    assert_eq!(known.0, 401);
    assert_eq!(known, unknown, "the same answer whether the id exists or not");
    // An administrator's client is not managed through RFC 7592, whatever is sent.
    app.add_client("admin-made", true).await;
    let (status, _, _) = error_of(manage(&app, reqwest::Method::DELETE, "admin-made", &token, None).await).await;
    assert_eq!(status, 401);
    assert!(app.client("admin-made").await.is_some());
    let resp = plain_client()
        .get(app.url(&format!("/register/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401, "no token at all");
    assert!(resp.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .starts_with("Bearer"));
}

#[tokio::test]
async fn with_registration_off_there_is_no_endpoint() {
    let app = spawn_with(|s| s.protocol.registration = Registration::Off).await;
    assert_eq!(register(&app, None, &native_client()).await.status(), 404);
    let discovery: Value = plain_client()
        .get(app.url("/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(discovery.get("registration_endpoint").is_none());
}

#[tokio::test]
async fn the_cli_prints_a_registration_token_alone_or_as_json() {
    let app = spawn_app().await;
    let db_args = app.db_args();
    let mut args = vec!["client", "registration-token", "--uses", "1"];
    args.extend(db_args.iter().map(String::as_str));
    let out = tessera_ok(&args, &[], None);
    assert_eq!(out.lines().count(), 1, "{out}");
    let token = out.trim();
    assert!(token.len() >= 40 && !token.contains(' '), "{out}");
    assert_eq!(register(&app, Some(token), &native_client()).await.status(), 201);
    assert_eq!(
        register(&app, Some(token), &native_client()).await.status(),
        401,
        "--uses 1"
    );

    let mut args = vec!["client", "registration-token", "--ttl", "2h", "--json"];
    args.extend(db_args.iter().map(String::as_str));
    let out = tessera_ok(&args, &[], None);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let expires = v["expires_at"].as_i64().expect("expires_at in Unix seconds");
    let now = app.clock.now();
    assert!((now + 7200 - 5..=now + 7200 + 5).contains(&expires), "{v}");
    let token = v["token"].as_str().unwrap();
    assert_eq!(register(&app, Some(token), &native_client()).await.status(), 201);
}

#[tokio::test]
async fn the_admin_api_creates_lists_and_revokes_registration_tokens() {
    let app = spawn_app().await;
    let admin = crate::admin_api::admin_token(&app).await;
    let call = |method: reqwest::Method, path: &str| {
        plain_client()
            .request(method, app.url(&format!("/admin/api{path}")))
            .bearer_auth(&admin)
    };
    let resp = call(reqwest::Method::POST, "/registration-tokens")
        .json(&json!({"ttl": "10m", "uses": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let created: Value = resp.json().await.unwrap();
    let (id, token) = (created["id"].as_str().unwrap(), created["token"].as_str().unwrap());
    let listed: Value = call(reqwest::Method::GET, "/registration-tokens")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let row = &listed.as_array().unwrap()[0];
    assert_eq!(row["id"], id);
    assert_eq!(row["uses_left"], 3);
    assert!(row.get("token").is_none(), "a listed token never shows its value");
    assert!(!listed.to_string().contains(token));
    let resp = call(reqwest::Method::POST, "/registration-tokens")
        .json(&json!({"ttl": "90d"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400, "at most 30 days");
    let resp = call(reqwest::Method::DELETE, &format!("/registration-tokens/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    assert_eq!(
        register(&app, Some(token), &native_client()).await.status(),
        401,
        "revoked"
    );
    let resp = call(reqwest::Method::DELETE, &format!("/registration-tokens/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let events: Vec<String> = app.audit().await.into_iter().map(|(e, _, _)| e).collect();
    assert!(events.iter().any(|e| e == "admin.registration_token_created"));
    assert!(events.iter().any(|e| e == "admin.registration_token_revoked"));
}

#[tokio::test]
async fn the_admin_page_shows_a_new_token_once_and_revokes_it() {
    let app = spawn_app().await;
    let user = app.add_user("root").await;
    app.make_admin(user.id).await;
    let b = browser();
    let csrf = app.portal_login(&b, "root", PASSWORD).await;
    let resp = b
        .post(app.url("/admin/registration-tokens"))
        .form(&[("csrf", csrf.as_str()), ("ttl", "1h"), ("uses", "2")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let html = resp.text().await.unwrap();
    let token = text_of(&html, "registration-token").expect("the token is shown");
    assert_eq!(register(&app, Some(&token), &native_client()).await.status(), 201);
    let html = b
        .get(app.url("/admin/registration-tokens"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!html.contains(&token), "shown once");
    assert!(html.contains("registration-tokens"));
    let tokens = tessera::admin::registration::list(&app.state.ctx()).await.unwrap();
    let id = &tokens[0].id;
    assert_eq!(tokens[0].uses_left, Some(1));
    let resp = b
        .post(app.url(&format!("/admin/registration-tokens/{id}/revoke")))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(register(&app, Some(&token), &native_client()).await.status(), 401);
    let bad = b
        .post(app.url("/admin/registration-tokens"))
        .form(&[("csrf", csrf.as_str()), ("ttl", "forever")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}
