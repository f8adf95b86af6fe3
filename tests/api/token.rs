//! The token, introspection, revocation and userinfo endpoints: each refusal asserts
//! the error code, the status and that nothing was issued.

use crate::helpers::*;

struct Setup {
    app: TestApp,
    secret: String,
}

async fn setup() -> Setup {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    app.add_client("other", false).await;
    Setup { app, secret }
}

/// A fresh code with its PKCE verifier.
async fn code(app: &TestApp) -> (String, Pkce) {
    let pkce = Pkce::new();
    let url = app.authorize_url(
        "app",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let params = app.login(&browser(), &url, "alice").await;
    (params["code"].clone(), pkce)
}

async fn expect_error(resp: reqwest::Response, status: u16, code: &str) {
    assert_eq!(resp.status().as_u16(), status);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"], code, "{body}");
    assert!(body.get("access_token").is_none());
}

#[tokio::test]
async fn a_code_is_single_use_and_its_reuse_revokes_what_it_issued() {
    let Setup { app, secret } = setup().await;
    let (code, pkce) = code(&app).await;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    let first: serde_json::Value = app.token(Some(("app", &secret)), &form).await.json().await.unwrap();
    let access = first["access_token"].as_str().unwrap();
    assert_eq!(app.introspect(("app", &secret), access).await["active"], true);

    expect_error(app.token(Some(("app", &secret)), &form).await, 400, "invalid_grant").await;
    assert_eq!(app.introspect(("app", &secret), access).await["active"], false);
    let refresh = first["refresh_token"].as_str().unwrap();
    let resp = app.refresh(("app", &secret), refresh, &[]).await;
    expect_error(resp, 400, "invalid_grant").await;
}

#[tokio::test]
async fn a_code_is_bound_to_its_client_redirect_verifier_and_lifetime() {
    let Setup { app, secret } = setup().await;
    let other_secret = set_a_secret_for_other(&app).await;
    let cases = misbound_codes(&secret, &other_secret);
    for (name, make, (id, sec)) in cases {
        let (code, pkce) = code(&app).await;
        let mut form = make(&code, &pkce);
        form.push(kv("grant_type", "authorization_code"));
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let resp = app.token(Some((&id, &sec)), &pairs).await;
        assert_eq!(resp.status(), 400, "{name}");
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["error"], "invalid_grant", "{name}");
    }

    let (code, pkce) = code(&app).await;
    app.clock.advance(61);
    let resp = app
        .token(
            Some(("app", &secret)),
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await;
    expect_error(resp, 400, "invalid_grant").await;
}

/// Gives the client `other` a new secret; the secret.
async fn set_a_secret_for_other(app: &TestApp) -> String {
    let s = tessera::domain::Secret::generate();
    let hash = s.hash();
    app.state
        .db
        .write(move |c| tessera::db::clients::set_secret(c, "other", &hash, None, 0))
        .await
        .unwrap();
    s.expose().to_string()
}

/// Token requests for a code that does not fit: each named, its form, and who asks.
fn misbound_codes(secret: &str, other_secret: &str) -> Vec<(&'static str, FormMaker, (String, String))> {
    vec![
        (
            "wrong verifier",
            Box::new(|c, _| {
                vec![
                    kv("code", c),
                    kv("redirect_uri", REDIRECT),
                    kv("code_verifier", &Pkce::new().verifier),
                ]
            }),
            ("app".into(), secret.to_string()),
        ),
        (
            "missing verifier",
            Box::new(|c, _| vec![kv("code", c), kv("redirect_uri", REDIRECT)]),
            ("app".into(), secret.to_string()),
        ),
        (
            "wrong redirect",
            Box::new(|c, p| {
                vec![
                    kv("code", c),
                    kv("redirect_uri", "http://localhost:8080/other"),
                    kv("code_verifier", &p.verifier),
                ]
            }),
            ("app".into(), secret.to_string()),
        ),
        (
            "another client",
            Box::new(|c, p| {
                vec![
                    kv("code", c),
                    kv("redirect_uri", REDIRECT),
                    kv("code_verifier", &p.verifier),
                ]
            }),
            ("other".into(), other_secret.to_string()),
        ),
        (
            "unknown code",
            Box::new(|_, p| {
                vec![
                    kv("code", "nope"),
                    kv("redirect_uri", REDIRECT),
                    kv("code_verifier", &p.verifier),
                ]
            }),
            ("app".into(), secret.to_string()),
        ),
    ]
}

/// Builds a token request form from a fresh code and its PKCE pair.
type FormMaker = Box<dyn Fn(&str, &Pkce) -> Vec<(String, String)>>;

fn kv(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

#[tokio::test]
async fn client_authentication_failures_are_401_with_a_challenge() {
    let Setup { app, secret } = setup().await;
    let (code, pkce) = code(&app).await;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    for basic in [Some(("app", "wrong")), Some(("ghost", secret.as_str())), None] {
        let resp = app.token(basic, &form).await;
        assert_eq!(resp.status(), 401, "{basic:?}");
        assert!(resp.headers().contains_key("www-authenticate"));
        expect_error(resp, 401, "invalid_client").await;
    }
    // A confidential client cannot pretend to be public.
    let mut public = form.to_vec();
    public.push(("client_id", "app"));
    expect_error(app.token(None, &public).await, 401, "invalid_client").await;
    // The code survived all of that: authentication comes before redemption.
    let resp = app.token(Some(("app", &secret)), &form).await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn malformed_token_requests_are_invalid_request() {
    let Setup { app, secret } = setup().await;
    let json = plain_client()
        .post(app.url("/token"))
        .basic_auth("app", Some(&secret))
        .json(&serde_json::json!({"grant_type": "authorization_code"}))
        .send()
        .await
        .unwrap();
    expect_error(json, 400, "invalid_request").await;
    let dup = app
        .token(
            Some(("app", &secret)),
            &[("grant_type", "refresh_token"), ("grant_type", "refresh_token")],
        )
        .await;
    expect_error(dup, 400, "invalid_request").await;
    let two_methods = app
        .token(
            Some(("app", &secret)),
            &[("grant_type", "refresh_token"), ("client_secret", &secret)],
        )
        .await;
    expect_error(two_methods, 400, "invalid_request").await;
    // `password` is a known grant now (off per client: tests/api/password_grant.rs).
    let grant = app.token(Some(("app", &secret)), &[("grant_type", "implicit")]).await;
    expect_error(grant, 400, "unsupported_grant_type").await;
    let missing = app
        .token(Some(("app", &secret)), &[("grant_type", "authorization_code")])
        .await;
    expect_error(missing, 400, "invalid_request").await;
    let resp = plain_client()
        .post(app.url("/token"))
        .header("authorization", "Basic !!!notbase64")
        .form(&[("grant_type", "refresh_token")])
        .send()
        .await
        .unwrap();
    expect_error(resp, 401, "invalid_client").await;
}

#[tokio::test]
async fn client_secret_post_works() {
    let Setup { app, secret } = setup().await;
    let (code, pkce) = code(&app).await;
    let resp = app
        .token(
            None,
            &[
                ("grant_type", "authorization_code"),
                ("client_id", "app"),
                ("client_secret", &secret),
                ("code", &code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn refresh_rotation_detects_reuse_and_refuses_scope_growth() {
    let Setup { app, secret } = setup().await;
    let first = app.tokens("app", &secret, "alice").await;
    let r1 = first["refresh_token"].as_str().unwrap();

    let narrow = app.refresh(("app", &secret), r1, &[("scope", "openid")]).await;
    assert_eq!(narrow.status(), 200);
    let second: serde_json::Value = narrow.json().await.unwrap();
    assert_eq!(second["scope"], "openid", "scope narrowing on refresh");
    let r2 = second["refresh_token"].as_str().unwrap();

    let wider = app
        .refresh(("app", &secret), r2, &[("scope", "openid offline_access admin")])
        .await;
    expect_error(wider, 400, "invalid_scope").await;

    // r1 again: after the retry window, reuse of a rotated token revokes the whole
    // family, r2 included.
    app.clock.advance(tessera::oidc::token::REFRESH_RETRY_GRACE + 1);
    let reuse = app.refresh(("app", &secret), r1, &[]).await;
    expect_error(reuse, 400, "invalid_grant").await;
    let after = app.refresh(("app", &secret), r2, &[]).await;
    expect_error(after, 400, "invalid_grant").await;
    let at = second["access_token"].as_str().unwrap();
    assert_eq!(app.introspect(("app", &secret), at).await["active"], false);
}

#[tokio::test]
async fn another_client_cannot_use_or_burn_a_refresh_token() {
    let Setup { app, secret } = setup().await;
    let other = app.add_client("third", false).await.unwrap();
    let tokens = app.tokens("app", &secret, "alice").await;
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let stolen = app.refresh(("third", &other), refresh, &[]).await;
    expect_error(stolen, 400, "invalid_grant").await;
    let revoke = app
        .post_form("/revoke", Some(("third", &other)), &[("token", refresh)])
        .await;
    expect_error(revoke, 400, "unauthorized_client").await;
    let owner = app.refresh(("app", &secret), refresh, &[]).await;
    assert_eq!(owner.status(), 200);
}

#[tokio::test]
async fn introspection_needs_a_confidential_client_and_reports_refresh_tokens() {
    let Setup { app, secret } = setup().await;
    app.add_client("spa", true).await;
    let tokens = app.tokens("app", &secret, "alice").await;
    let at = tokens["access_token"].as_str().unwrap();
    let unauth = plain_client()
        .post(app.url("/introspect"))
        .form(&[("token", at)])
        .send()
        .await
        .unwrap();
    expect_error(unauth, 401, "invalid_client").await;
    let public = app
        .post_form("/introspect", None, &[("token", at), ("client_id", "spa")])
        .await;
    expect_error(public, 401, "invalid_client").await;

    assert_eq!(
        app.introspect(("app", &secret), "garbage").await,
        serde_json::json!({"active": false})
    );
    assert_eq!(app.introspect(("app", &secret), "a.b.c").await["active"], false);
    let id_token = tokens["id_token"].as_str().unwrap();
    assert_eq!(
        app.introspect(("app", &secret), id_token).await["active"],
        false,
        "an ID token is not an access token"
    );
    let rt = app
        .introspect(("app", &secret), tokens["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(rt["active"], true);
    assert_eq!(rt["token_type"], "refresh_token");

    app.clock.advance(901);
    assert_eq!(app.introspect(("app", &secret), at).await["active"], false, "expired");
}

#[tokio::test]
async fn revoking_an_access_token_ends_it_everywhere() {
    let Setup { app, secret } = setup().await;
    let tokens = app.tokens("app", &secret, "alice").await;
    let at = tokens["access_token"].as_str().unwrap();
    let info = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(at)
        .send()
        .await
        .unwrap();
    assert_eq!(info.status(), 200);

    let bad_hint = app
        .post_form(
            "/revoke",
            Some(("app", &secret)),
            &[("token", at), ("token_type_hint", "id_token")],
        )
        .await;
    expect_error(bad_hint, 400, "unsupported_token_type").await;
    let unknown = app
        .post_form("/revoke", Some(("app", &secret)), &[("token", "never-issued")])
        .await;
    assert_eq!(unknown.status(), 200, "RFC 7009 §2.2: unknown tokens are not an error");

    let resp = app.post_form("/revoke", Some(("app", &secret)), &[("token", at)]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(app.introspect(("app", &secret), at).await["active"], false);
    let info = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(at)
        .send()
        .await
        .unwrap();
    assert_eq!(info.status(), 401);
    assert!(info.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .contains("invalid_token"));
}

#[tokio::test]
async fn userinfo_accepts_header_or_body_and_refuses_the_rest() {
    let Setup { app, secret } = setup().await;
    let tokens = app.tokens("app", &secret, "alice").await;
    let at = tokens["access_token"].as_str().unwrap();

    let none = plain_client().get(app.url("/userinfo")).send().await.unwrap();
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["www-authenticate"], r#"Bearer realm="tessera""#);

    let body = plain_client()
        .post(app.url("/userinfo"))
        .form(&[("access_token", at)])
        .send()
        .await
        .unwrap();
    assert_eq!(body.status(), 200);
    let claims: serde_json::Value = body.json().await.unwrap();
    assert_eq!(claims["preferred_username"], "alice");
    assert_eq!(claims["email"], "alice@example.com");

    let both = plain_client()
        .post(app.url("/userinfo"))
        .bearer_auth(at)
        .form(&[("access_token", at)])
        .send()
        .await
        .unwrap();
    assert_eq!(both.status(), 400);
    let id_token = tokens["id_token"].as_str().unwrap();
    let wrong = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(id_token)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
}

#[tokio::test]
async fn disabling_a_user_ends_their_tokens_and_sign_in() {
    let Setup { app, secret } = setup().await;
    let tokens = app.tokens("app", &secret, "alice").await;
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| tessera::db::users::set_disabled(c, "alice", true, now))
        .await
        .unwrap();
    let at = tokens["access_token"].as_str().unwrap();
    assert_eq!(app.introspect(("app", &secret), at).await["active"], false);
    let rt = tokens["refresh_token"].as_str().unwrap();
    let resp = app.refresh(("app", &secret), rt, &[]).await;
    expect_error(resp, 400, "invalid_grant").await;
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("app", &[])).await;
    assert_eq!(app.submit_login(&b, fields, "alice", PASSWORD).await.status(), 401);
}

#[tokio::test]
async fn a_retried_refresh_within_the_grace_window_does_not_revoke_the_family() {
    let Setup { app, secret } = setup().await;
    let first = app.tokens("app", &secret, "alice").await;
    let r1 = first["refresh_token"].as_str().unwrap();
    let form = [("grant_type", "refresh_token"), ("refresh_token", r1)];
    let lost: serde_json::Value = app.token(Some(("app", &secret)), &form).await.json().await.unwrap();
    let retry = app.token(Some(("app", &secret)), &form).await;
    assert_eq!(retry.status(), 200, "a prompt retry is answered");
    let retried: serde_json::Value = retry.json().await.unwrap();
    let r2 = retried["refresh_token"].as_str().unwrap();
    assert_ne!(r2, lost["refresh_token"].as_str().unwrap());
    let next = app.refresh(("app", &secret), r2, &[]).await;
    assert_eq!(next.status(), 200, "the family is intact");
}

/// `--access-token-alg`: every access token, at the code exchange and on refresh, is
/// signed with it, while the ID token keeps the client's algorithm; introspection and
/// UserInfo accept it.
#[tokio::test]
async fn the_access_token_algorithm_setting_signs_access_tokens_and_leaves_id_tokens_alone() {
    for alg in ["EdDSA", "ES256"] {
        let app = spawn_with(|s| s.access_token_alg = tessera::crypto::keys::Alg::parse(alg)).await;
        app.add_user("ada").await;
        let secret = app.add_client("rp", false).await.unwrap();
        let tokens = app.tokens("rp", &secret, "ada").await;
        let (at_header, _) = jwt_parts(tokens["access_token"].as_str().unwrap());
        let (id_header, _) = jwt_parts(tokens["id_token"].as_str().unwrap());
        assert_eq!(at_header["alg"], alg);
        assert_eq!(id_header["alg"], "RS256", "the client's own ID token algorithm");
        let active = app
            .introspect(("rp", &secret), tokens["access_token"].as_str().unwrap())
            .await;
        assert_eq!(active["active"], true, "{active}");
        let info = plain_client()
            .get(app.url("/userinfo"))
            .bearer_auth(tokens["access_token"].as_str().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(info.status(), 200);
        let refreshed: serde_json::Value = app
            .token(
                Some(("rp", &secret)),
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
                ],
            )
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(jwt_parts(refreshed["access_token"].as_str().unwrap()).0["alg"], alg);
        assert_eq!(jwt_parts(refreshed["id_token"].as_str().unwrap()).0["alg"], "RS256");
    }
}
