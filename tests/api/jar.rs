//! Request objects (RFC 9101): a signed JWT is the authorization request, verified
//! with the client's registered keys; the outer parameters count for nothing.

use josekit::jws::{JwsHeader, JwsSigner, ES256, HS256, RS256};
use josekit::jwt::{self, JwtPayload};
use serde_json::{json, Value};
use url::Url;

use crate::helpers::*;

/// A relying party's signing keys and the JWK Set it registered.
struct Keys {
    es: Box<dyn JwsSigner>,
    rs: Box<dyn JwsSigner>,
    jwks: String,
}

fn keys() -> Keys {
    let es = ES256.generate_key_pair().unwrap();
    let rs = RS256.generate_key_pair(2048).unwrap();
    let mut es_jwk = es.to_jwk_public_key();
    es_jwk.set_key_id("es");
    let mut rs_jwk = rs.to_jwk_public_key();
    rs_jwk.set_key_id("rs");
    Keys {
        es: Box::new(ES256.signer_from_pem(es.to_pem_private_key()).unwrap()),
        rs: Box::new(RS256.signer_from_pem(rs.to_pem_private_key()).unwrap()),
        jwks: format!(r#"{{"keys":[{es_jwk},{rs_jwk}]}}"#),
    }
}

fn sign(signer: &dyn JwsSigner, kid: &str, claims: &Value) -> String {
    let mut header = JwsHeader::new();
    header.set_key_id(kid);
    header.set_token_type("oauth-authz-req+jwt");
    let payload = JwtPayload::from_map(claims.as_object().unwrap().clone()).unwrap();
    jwt::encode_with_signer(&payload, &header, signer).unwrap()
}

/// A complete authorization request as request object claims.
fn claims(app: &TestApp, client_id: &str, pkce: &Pkce) -> Value {
    let now = app.clock.now();
    json!({
        "iss": client_id, "aud": &*app.state.issuer, "exp": now + 60, "nbf": now, "iat": now,
        "jti": tessera::crypto::random::random_id(),
        "client_id": client_id, "response_type": "code", "redirect_uri": REDIRECT,
        "scope": "openid profile", "state": "from-object", "nonce": "object-nonce",
        "code_challenge": pkce.challenge, "code_challenge_method": "S256", "max_age": 3600,
    })
}

fn with(mut claims: Value, name: &str, value: Value) -> Value {
    claims[name] = value;
    claims
}

fn without(mut claims: Value, name: &str) -> Value {
    claims.as_object_mut().unwrap().remove(name);
    claims
}

/// /authorize with `request`; `extra` outer parameters beside it.
fn by_value(app: &TestApp, client_id: &str, request: &str, extra: &[(&str, &str)]) -> String {
    let mut url = Url::parse(&app.url("/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", client_id)
        .append_pair("request", request)
        .extend_pairs(extra);
    url.to_string()
}

/// Outer parameters that would make a different request, if they counted.
const OUTER: &[(&str, &str)] = &[
    ("redirect_uri", REDIRECT),
    ("response_type", "code"),
    ("scope", "openid email"),
    ("state", "outer-state"),
    ("nonce", "outer-nonce"),
];

async fn exchange(app: &TestApp, client_id: &str, code: &str, pkce: &Pkce) -> Value {
    let resp = app
        .token(
            None,
            &[
                ("grant_type", "authorization_code"),
                ("client_id", client_id),
                ("code", code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

async fn refused_with(url: &str) -> (String, String) {
    let resp = browser().get(url).send().await.unwrap();
    let p = redirect_params(&resp);
    assert!(!p.contains_key("code"));
    (
        p["error"].clone(),
        p.get("error_description").cloned().unwrap_or_default(),
    )
}

#[tokio::test]
async fn jar_es256_object_is_the_request_and_its_jti_is_used_once_on_each_backend() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        app.add_user("ada").await;
        let k = keys();
        app.add_client_with("rp", true, |c| c.jwks = Some(k.jwks.clone())).await;
        let pkce = Pkce::new();
        let object = sign(k.es.as_ref(), "es", &claims(&app, "rp", &pkce));
        let url = by_value(&app, "rp", &object, OUTER);
        let params = app.login(&browser(), &url, "ada").await;
        assert_eq!(params["state"], "from-object", "the outer state is ignored");
        let tokens = exchange(&app, "rp", &params["code"], &pkce).await;
        assert_eq!(
            tokens["scope"], "openid profile",
            "the object's scope, not the outer one"
        );
        let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
        assert_eq!(id["nonce"], "object-nonce");

        // RFC 9101 §10.8: the same jti again is a replay.
        let (error, description) = refused_with(&url).await;
        assert_eq!(error, "invalid_request_object");
        assert!(description.contains("already used"), "{description}");
    }
}

#[tokio::test]
async fn jar_rs256_object_is_accepted() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let k = keys();
    app.add_client_with("rp", true, |c| c.jwks = Some(k.jwks.clone())).await;
    let pkce = Pkce::new();
    let object = sign(k.rs.as_ref(), "rs", &claims(&app, "rp", &pkce));
    let params = app.login(&browser(), &by_value(&app, "rp", &object, &[]), "ada").await;
    assert_eq!(params["state"], "from-object");
    exchange(&app, "rp", &params["code"], &pkce).await;
}

#[tokio::test]
async fn jar_refuses_objects_that_fail_a_check() {
    let app = spawn_app().await;
    let k = keys();
    app.add_client_with("rp", true, |c| c.jwks = Some(k.jwks.clone())).await;
    app.add_client("keyless", true).await;
    let pkce = Pkce::new();
    let good = claims(&app, "rp", &pkce);
    let now = app.clock.now();
    let es = |c: &Value| sign(k.es.as_ref(), "es", c);
    let stranger = ES256
        .signer_from_pem(ES256.generate_key_pair().unwrap().to_pem_private_key())
        .unwrap();
    let hmac = HS256.signer_from_bytes(b"a-secret-of-at-least-32-bytes-long!").unwrap();
    let unsecured = jwt::encode_unsecured(
        &JwtPayload::from_map(good.as_object().unwrap().clone()).unwrap(),
        &JwsHeader::new(),
    )
    .unwrap();
    let cases: Vec<(&str, String)> = vec![
        ("expired", es(&with(good.clone(), "exp", json!(now - 120)))),
        ("exp too far ahead", es(&with(good.clone(), "exp", json!(now + 7200)))),
        ("nbf in the future", es(&with(good.clone(), "nbf", json!(now + 600)))),
        (
            "wrong aud",
            es(&with(good.clone(), "aud", json!("https://other.example"))),
        ),
        ("wrong iss", es(&with(good.clone(), "iss", json!("someone-else")))),
        (
            "inner client_id differs",
            es(&with(good.clone(), "client_id", json!("other"))),
        ),
        (
            "nested request_uri",
            es(&with(good.clone(), "request_uri", json!("urn:x"))),
        ),
        ("alg none", unsecured),
        ("HMAC", sign(&hmac, "es", &good)),
        ("unknown key", sign(&stranger, "es", &good)),
        ("encrypted (JWE)", "eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d".to_string()),
        ("not a JWT", "garbage".to_string()),
    ];
    for (what, object) in cases {
        let (error, _) = refused_with(&by_value(&app, "rp", &object, &[("redirect_uri", REDIRECT)])).await;
        assert_eq!(error, "invalid_request_object", "{what}");
    }
    // A client that registered no keys cannot send one.
    let keyless = sign(k.es.as_ref(), "es", &claims(&app, "keyless", &pkce));
    let (error, _) = refused_with(&by_value(&app, "keyless", &keyless, &[("redirect_uri", REDIRECT)])).await;
    assert_eq!(error, "invalid_request_object");
    // Without a registered redirect URI outside the object, a page, not a redirect.
    let expired = es(&with(good.clone(), "exp", json!(now - 120)));
    let page = browser().get(by_value(&app, "rp", &expired, &[])).send().await.unwrap();
    assert_eq!(page.status(), 400);
    assert!(page.text().await.unwrap().contains("invalid_request_object"));
}

#[tokio::test]
async fn jar_required_refuses_a_plain_request_and_accepts_a_signed_one() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let k = keys();
    app.add_client_with("rp", true, |c| {
        c.jwks = Some(k.jwks.clone());
        c.require_signed_request_object = true;
    })
    .await;
    let pkce = Pkce::new();
    let plain = app.authorize_url(
        "rp",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let (error, _) = refused_with(&plain).await;
    assert_eq!(error, "invalid_request");
    let object = sign(k.es.as_ref(), "es", &claims(&app, "rp", &pkce));
    let params = app.login(&browser(), &by_value(&app, "rp", &object, &[]), "ada").await;
    assert!(params.contains_key("code"));
}

#[tokio::test]
async fn jar_object_through_par_is_verified_when_pushed() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let k = keys();
    let secret = app
        .add_client_with("web", false, |c| {
            c.jwks = Some(k.jwks.clone());
            c.require_signed_request_object = true;
        })
        .await
        .unwrap();
    let basic = Some(("web", secret.as_str()));
    let pkce = Pkce::new();

    // Parameters beside the object are not the request (RFC 9126 §3).
    let object = sign(k.es.as_ref(), "es", &claims(&app, "web", &pkce));
    let resp = app
        .post_form("/par", basic, &[("request", &object), ("state", "outer")])
        .await;
    assert_eq!(resp.status(), 201);
    let uri = resp.json::<Value>().await.unwrap()["request_uri"]
        .as_str()
        .unwrap()
        .to_string();
    let mut url = Url::parse(&app.url("/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", "web")
        .append_pair("request_uri", &uri);
    let params = app.login(&browser(), url.as_str(), "ada").await;
    assert_eq!(params["state"], "from-object");

    // A bad object is refused at the push, as JSON.
    let expired = sign(
        k.es.as_ref(),
        "es",
        &with(claims(&app, "web", &pkce), "exp", json!(app.clock.now() - 120)),
    );
    let resp = app.post_form("/par", basic, &[("request", &expired)]).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"], "invalid_request_object");
    // This client must sign: plain pushed parameters are refused.
    let resp = app
        .post_form(
            "/par",
            basic,
            &[
                ("redirect_uri", REDIRECT),
                ("response_type", "code"),
                ("scope", "openid"),
                ("code_challenge", &pkce.challenge),
                ("code_challenge_method", "S256"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"], "invalid_request");
}

/// OpenID Connect Core §6.1 and RFC 9101 §4: `iss` and `aud` are a SHOULD and `exp`
/// is not asked for; an object with none of them (as the OpenID Foundation's
/// `OP-request-Sig` sends) is the request, checked by its signature alone.
#[tokio::test]
async fn jar_accepts_a_core_minimal_object_and_checks_what_it_carries() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let k = keys();
    app.add_client_with("rp", true, |c| c.jwks = Some(k.jwks.clone())).await;
    let pkce = Pkce::new();
    let mut minimal = claims(&app, "rp", &pkce);
    for envelope in ["iss", "aud", "exp", "nbf", "iat", "jti"] {
        minimal = without(minimal, envelope);
    }
    let object = sign(k.rs.as_ref(), "rs", &minimal);
    let params = app
        .login(&browser(), &by_value(&app, "rp", &object, OUTER), "ada")
        .await;
    assert_eq!(params["state"], "from-object");
    let tokens = exchange(&app, "rp", &params["code"], &pkce).await;
    assert_eq!(tokens["scope"], "openid profile");

    // What is present must be right.
    for (what, name, value) in [
        ("wrong iss", "iss", json!("someone-else")),
        ("wrong aud", "aud", json!("https://other.example")),
        ("expired exp", "exp", json!(app.clock.now() - 120)),
    ] {
        let object = sign(k.es.as_ref(), "es", &with(minimal.clone(), name, value));
        let (error, _) = refused_with(&by_value(&app, "rp", &object, &[("redirect_uri", REDIRECT)])).await;
        assert_eq!(error, "invalid_request_object", "{what}");
    }

    // A `jti` without `exp` is still accepted once (RFC 9101 §10.8).
    let once = sign(k.es.as_ref(), "es", &with(minimal.clone(), "jti", json!("only-once")));
    let params = app.login(&browser(), &by_value(&app, "rp", &once, OUTER), "ada").await;
    assert!(params.contains_key("code"));
    let (error, description) = refused_with(&by_value(&app, "rp", &once, OUTER)).await;
    assert_eq!(error, "invalid_request_object");
    assert!(description.contains("already used"), "{description}");
}

#[tokio::test]
async fn jar_core_minimal_object_is_accepted_through_par() {
    let app = spawn_app().await;
    let k = keys();
    let secret = app
        .add_client_with("web", false, |c| c.jwks = Some(k.jwks.clone()))
        .await
        .unwrap();
    let pkce = Pkce::new();
    let mut minimal = claims(&app, "web", &pkce);
    for envelope in ["iss", "aud", "exp", "nbf", "iat", "jti"] {
        minimal = without(minimal, envelope);
    }
    let object = sign(k.es.as_ref(), "es", &minimal);
    let resp = app
        .post_form("/par", Some(("web", &secret)), &[("request", &object)])
        .await;
    assert_eq!(resp.status(), 201, "RFC 9126 asks no more of an object than RFC 9101");
    let wrong = sign(k.es.as_ref(), "es", &with(minimal, "iss", json!("someone-else")));
    let resp = app
        .post_form("/par", Some(("web", &secret)), &[("request", &wrong)])
        .await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"], "invalid_request_object");
}
