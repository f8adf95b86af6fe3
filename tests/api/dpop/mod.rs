//! DPoP (RFC 9449): proofs at the token endpoint for every grant, bound access and
//! refresh tokens, server nonces, `dpop_jkt` at authorization, proofs at userinfo and
//! the binding in introspection.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use josekit::jwk::alg::ed::EdCurve;
use josekit::jwk::Jwk;
use josekit::jws::{EdDSA, JwsHeader, JwsSigner, ES256};
use josekit::jwt::{self, JwtPayload};
use serde_json::{json, Value};
use tessera::crypto::{random::random_id, sha256_b64};

use crate::helpers::*;

mod grants;

/// A client's DPoP key pair.
struct Key {
    public: Jwk,
    private: Jwk,
    alg: &'static str,
}

impl Key {
    fn es256() -> Self {
        let kp = ES256.generate_key_pair().unwrap();
        Self {
            public: kp.to_jwk_public_key(),
            private: kp.to_jwk_private_key(),
            alg: "ES256",
        }
    }

    fn ed25519() -> Self {
        let kp = EdDSA.generate_key_pair(EdCurve::Ed25519).unwrap();
        Self {
            public: kp.to_jwk_public_key(),
            private: kp.to_jwk_private_key(),
            alg: "EdDSA",
        }
    }

    /// RFC 7638 §3, computed here on its own rather than by the code under test.
    fn jkt(&self) -> String {
        let p = |n: &str| self.public.parameter(n).unwrap().as_str().unwrap().to_string();
        let canonical = match self.alg {
            "ES256" => format!(
                r#"{{"crv":"{}","kty":"EC","x":"{}","y":"{}"}}"#,
                p("crv"),
                p("x"),
                p("y")
            ),
            _ => format!(r#"{{"crv":"{}","kty":"OKP","x":"{}"}}"#, p("crv"), p("x")),
        };
        sha256_b64(canonical.as_bytes())
    }

    fn signer(&self) -> Box<dyn JwsSigner> {
        match self.alg {
            "ES256" => Box::new(ES256.signer_from_jwk(&self.private).unwrap()),
            _ => Box::new(EdDSA.signer_from_jwk(&self.private).unwrap()),
        }
    }

    /// A proof with these claims, `header_jwk` in its header, signed with this key.
    fn sign(&self, header_jwk: &Jwk, typ: &str, claims: Value) -> String {
        let mut header = JwsHeader::new();
        header.set_token_type(typ);
        header.set_jwk(header_jwk.clone());
        let payload = JwtPayload::from_map(claims.as_object().unwrap().clone()).unwrap();
        jwt::encode_with_signer(&payload, &header, self.signer().as_ref()).unwrap()
    }

    /// A proof signed over exactly these JSON texts, for claims josekit would refuse
    /// to encode.
    fn sign_raw(&self, header: Value, claims: Value) -> String {
        let enc = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let input = format!("{}.{}", enc(&header), enc(&claims));
        let signature = self.signer().sign(input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    fn raw_header(&self) -> Value {
        json!({ "typ": "dpop+jwt", "alg": self.alg, "jwk": self.public.as_ref() })
    }

    fn proof_with(&self, claims: Value) -> String {
        self.sign(&self.public, "dpop+jwt", claims)
    }

    /// A fresh, correct proof for `htm` at `path` of the app.
    fn proof(&self, app: &TestApp, htm: &str, path: &str) -> String {
        self.proof_with(claims(app, htm, path))
    }

    /// A fresh proof for a resource request carrying `token` (`ath`).
    fn resource_proof(&self, app: &TestApp, htm: &str, path: &str, token: &str) -> String {
        let mut c = claims(app, htm, path);
        c["ath"] = json!(sha256_b64(token.as_bytes()));
        self.proof_with(c)
    }
}

fn claims(app: &TestApp, htm: &str, path: &str) -> Value {
    json!({ "jti": random_id(), "htm": htm, "htu": app.url(path), "iat": app.clock.now() })
}

async fn token_with(
    app: &TestApp,
    basic: Option<(&str, &str)>,
    form: &[(&str, &str)],
    proofs: &[&str],
) -> reqwest::Response {
    let mut req = plain_client().post(app.url("/token")).form(form);
    if let Some((id, secret)) = basic {
        req = req.basic_auth(id, Some(secret));
    }
    for p in proofs {
        req = req.header("DPoP", *p);
    }
    req.send().await.unwrap()
}

async fn userinfo(app: &TestApp, scheme: &str, token: &str, proof: Option<&str>) -> reqwest::Response {
    let mut req = plain_client()
        .get(app.url("/userinfo"))
        .header("Authorization", format!("{scheme} {token}"));
    if let Some(p) = proof {
        req = req.header("DPoP", p);
    }
    req.send().await.unwrap()
}

async fn error_of(resp: reqwest::Response) -> (u16, String) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    (status, body["error"].as_str().unwrap_or_default().to_string())
}

fn challenge(resp: &reqwest::Response) -> String {
    resp.headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// A confidential client for client credentials, returning its secret.
async fn service(app: &TestApp, id: &str) -> String {
    app.add_client_with(id, false, |c| {
        c.grant_types = vec!["client_credentials".into()];
        c.client_scopes = vec!["reports:read".into()];
    })
    .await
    .unwrap()
}

async fn client_credentials(app: &TestApp, secret: &str, proofs: &[&str]) -> reqwest::Response {
    token_with(
        app,
        Some(("svc", secret)),
        &[("grant_type", "client_credentials")],
        proofs,
    )
    .await
}

/// Signs alice in for `client_id` with PKCE (and `extra` authorization parameters);
/// returns the code and its verifier.
async fn authorize(app: &TestApp, client_id: &str, extra: &[(&str, &str)]) -> (String, String) {
    let pkce = Pkce::new();
    let mut params = vec![
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    params.extend_from_slice(extra);
    let url = app.authorize_url(client_id, &params);
    let got = app.login(&browser(), &url, "alice").await;
    (got["code"].clone(), pkce.verifier)
}

async fn exchange(
    app: &TestApp,
    client: (&str, Option<&str>),
    code: &str,
    verifier: &str,
    proofs: &[&str],
) -> reqwest::Response {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
    ];
    let basic = match client {
        (id, Some(secret)) => Some((id, secret)),
        (id, None) => {
            form.push(("client_id", id));
            None
        }
    };
    token_with(app, basic, &form, proofs).await
}

/// Alice's bound tokens from a confidential client `rp`: (app, secret, key, tokens).
async fn bound_tokens() -> (TestApp, String, Key, Value) {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let key = Key::es256();
    let (code, verifier) = authorize(&app, "rp", &[]).await;
    let proof = key.proof(&app, "POST", "/token");
    let resp = exchange(&app, ("rp", Some(&secret)), &code, &verifier, &[&proof]).await;
    assert_eq!(resp.status(), 200);
    let tokens: Value = resp.json().await.unwrap();
    (app, secret, key, tokens)
}

#[tokio::test]
async fn a_code_exchange_with_a_proof_binds_the_access_token_to_the_key() {
    let (_app, _, key, tokens) = bound_tokens().await;
    assert_eq!(tokens["token_type"], "DPoP");
    let (_, at) = jwt_parts(tokens["access_token"].as_str().unwrap());
    assert_eq!(at["cnf"]["jkt"], key.jkt());
    // The ID token is not sender-constrained (RFC 9449 §6 binds access tokens only).
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert!(id.get("cnf").is_none());
}

#[tokio::test]
async fn userinfo_takes_a_bound_token_with_the_dpop_scheme_and_a_proof_of_its_key() {
    let (app, _, key, tokens) = bound_tokens().await;
    let at = tokens["access_token"].as_str().unwrap();
    let ok = userinfo(
        &app,
        "DPoP",
        at,
        Some(&key.resource_proof(&app, "GET", "/userinfo", at)),
    )
    .await;
    assert_eq!(ok.status(), 200);
    assert!(ok.json::<Value>().await.unwrap()["sub"].is_string());

    // RFC 9449 §7.2: a bound token sent as a bearer token is refused.
    let bearer = userinfo(&app, "Bearer", at, None).await;
    assert_eq!(bearer.status(), 401);
    assert!(challenge(&bearer).contains(r#"error="invalid_token""#));

    // The DPoP scheme without a proof, or with a proof of another key.
    let none = userinfo(&app, "DPoP", at, None).await;
    assert_eq!(none.status(), 401);
    let c = challenge(&none);
    assert!(c.starts_with("DPoP "), "{c}");
    assert!(c.contains(r#"error="invalid_dpop_proof""#), "{c}");
    let other = Key::ed25519().resource_proof(&app, "GET", "/userinfo", at);
    let resp = userinfo(&app, "DPoP", at, Some(&other)).await;
    assert_eq!(resp.status(), 401);
    assert!(challenge(&resp).contains(r#"error="invalid_dpop_proof""#));
}

#[tokio::test]
async fn userinfo_refuses_proofs_with_the_wrong_ath_htm_or_htu_and_replays() {
    let (app, _, key, tokens) = bound_tokens().await;
    let at = tokens["access_token"].as_str().unwrap();
    let refused = |resp: reqwest::Response| async move {
        assert_eq!(resp.status(), 401);
        assert!(
            challenge(&resp).contains(r#"error="invalid_dpop_proof""#),
            "{}",
            challenge(&resp)
        );
    };
    // ath of another token.
    let wrong_ath = key.resource_proof(&app, "GET", "/userinfo", "another-token");
    refused(userinfo(&app, "DPoP", at, Some(&wrong_ath)).await).await;
    // No ath at all.
    refused(userinfo(&app, "DPoP", at, Some(&key.proof(&app, "GET", "/userinfo"))).await).await;
    // POST's proof sent with GET, and a proof for /token.
    refused(
        userinfo(
            &app,
            "DPoP",
            at,
            Some(&key.resource_proof(&app, "POST", "/userinfo", at)),
        )
        .await,
    )
    .await;
    refused(userinfo(&app, "DPoP", at, Some(&key.resource_proof(&app, "GET", "/token", at))).await).await;
    // One good proof works once.
    let good = key.resource_proof(&app, "GET", "/userinfo", at);
    assert_eq!(userinfo(&app, "DPoP", at, Some(&good)).await.status(), 200);
    refused(userinfo(&app, "DPoP", at, Some(&good)).await).await;
}

#[tokio::test]
async fn an_unbound_token_is_refused_with_the_dpop_scheme_and_accepted_as_bearer() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let tokens = app.tokens("rp", &secret, "alice").await;
    assert_eq!(tokens["token_type"], "Bearer");
    let at = tokens["access_token"].as_str().unwrap();
    assert!(jwt_parts(at).1.get("cnf").is_none());
    let proof = Key::es256().resource_proof(&app, "GET", "/userinfo", at);
    let resp = userinfo(&app, "DPoP", at, Some(&proof)).await;
    assert_eq!(resp.status(), 401);
    assert!(challenge(&resp).contains(r#"error="invalid_token""#));
    assert_eq!(userinfo(&app, "Bearer", at, None).await.status(), 200);
    let seen = app.introspect(("rp", &secret), at).await;
    assert_eq!(seen["token_type"], "Bearer");
    assert!(seen.get("cnf").is_none());
}

#[tokio::test]
async fn introspection_shows_the_binding_of_a_bound_token() {
    let (app, secret, key, tokens) = bound_tokens().await;
    let seen = app
        .introspect(("rp", &secret), tokens["access_token"].as_str().unwrap())
        .await;
    assert_eq!(seen["active"], true);
    assert_eq!(seen["token_type"], "DPoP");
    assert_eq!(seen["cnf"]["jkt"], key.jkt());
}

#[tokio::test]
async fn client_credentials_with_a_proof_give_a_bound_token() {
    let app = spawn_app().await;
    let secret = service(&app, "svc").await;
    let key = Key::ed25519();
    let resp = client_credentials(&app, &secret, &[&key.proof(&app, "POST", "/token")]).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
    assert_eq!(
        jwt_parts(body["access_token"].as_str().unwrap()).1["cnf"]["jkt"],
        key.jkt()
    );
    // Without a proof the same client gets a bearer token, as before.
    let plain: Value = client_credentials(&app, &secret, &[]).await.json().await.unwrap();
    assert_eq!(plain["token_type"], "Bearer");
    assert!(jwt_parts(plain["access_token"].as_str().unwrap())
        .1
        .get("cnf")
        .is_none());
}

#[tokio::test]
async fn proofs_that_break_a_rule_are_refused_at_the_token_endpoint() {
    let app = spawn_app().await;
    let secret = service(&app, "svc").await;
    let key = Key::es256();
    let now = app.clock.now();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut c = claims(&app, "POST", "/token");
        change(&mut c);
        c
    };
    let unsigned = {
        let header = json!({ "typ": "dpop+jwt", "alg": "none", "jwk": key.public.as_ref() });
        let enc = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        format!("{}.{}.", enc(&header), enc(&claims(&app, "POST", "/token")))
    };
    let cases: Vec<(&str, String)> = vec![
        ("wrong htm", key.proof(&app, "GET", "/token")),
        ("wrong htu", key.proof(&app, "POST", "/userinfo")),
        (
            "htu of another host",
            key.proof_with(with(&|c| c["htu"] = json!("https://evil.example/token"))),
        ),
        ("stale iat", key.proof_with(with(&|c| c["iat"] = json!(now - 300)))),
        (
            "iat in the future",
            key.proof_with(with(&|c| c["iat"] = json!(now + 300))),
        ),
        (
            "iat far in the past",
            key.sign_raw(key.raw_header(), with(&|c| c["iat"] = json!(i64::MIN + 1))),
        ),
        (
            "iat as text",
            key.sign_raw(key.raw_header(), with(&|c| c["iat"] = json!(now.to_string()))),
        ),
        (
            "no jti",
            key.proof_with(with(&|c| {
                c.as_object_mut().unwrap().remove("jti").map(drop).unwrap_or(())
            })),
        ),
        ("alg none", unsigned),
        (
            "private key in jwk",
            key.sign(&key.private, "dpop+jwt", claims(&app, "POST", "/token")),
        ),
        (
            "signed by another key",
            key.sign(&Key::es256().public, "dpop+jwt", claims(&app, "POST", "/token")),
        ),
        ("typ JWT", key.sign(&key.public, "JWT", claims(&app, "POST", "/token"))),
        ("not a JWT", "not-a-jwt".into()),
    ];
    for (rule, proof) in &cases {
        let (status, error) = error_of(client_credentials(&app, &secret, &[proof]).await).await;
        assert_eq!((status, error.as_str()), (400, "invalid_dpop_proof"), "{rule}");
    }
    // Two DPoP headers (RFC 9449 §4.3 step 1), even both valid.
    let (a, b) = (key.proof(&app, "POST", "/token"), key.proof(&app, "POST", "/token"));
    let (status, error) = error_of(client_credentials(&app, &secret, &[&a, &b]).await).await;
    assert_eq!((status, error.as_str()), (400, "invalid_dpop_proof"));
    // The hand-signed form itself is fine: the cases above fail for their claim.
    let raw = key.sign_raw(key.raw_header(), claims(&app, "POST", "/token"));
    assert_eq!(client_credentials(&app, &secret, &[&raw]).await.status(), 200);
    // The htu comparison normalises (RFC 3986 §6.2.2, §6.2.3) and drops the query.
    let normalised = key.proof_with(with(&|c| {
        c["htu"] = json!(app.url("/token?x=1").replace("http://", "HTTP://"));
    }));
    assert_eq!(client_credentials(&app, &secret, &[&normalised]).await.status(), 200);
}

#[tokio::test]
async fn a_replayed_proof_is_refused_on_every_backend() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let secret = service(&app, "svc").await;
        let proof = Key::es256().proof(&app, "POST", "/token");
        assert_eq!(client_credentials(&app, &secret, &[&proof]).await.status(), 200);
        let (status, error) = error_of(client_credentials(&app, &secret, &[&proof]).await).await;
        assert_eq!((status, error.as_str()), (400, "invalid_dpop_proof"), "{backend:?}");
    }
}

#[tokio::test]
async fn a_proof_used_on_one_node_is_refused_on_another() {
    let Ok(url) = std::env::var("TESSERA_TEST_DATABASE_URL") else {
        eprintln!("SKIPPED: no TESSERA_TEST_DATABASE_URL for the two-node replay test");
        return;
    };
    let nodes = spawn_nodes(&url, 2).await;
    let secret = service(&nodes[0], "svc").await;
    // Both nodes speak as http://id.test, the URL a proof names.
    let mut c = claims(&nodes[0], "POST", "/token");
    c["htu"] = json!("http://id.test/token");
    let proof = Key::es256().proof_with(c);
    assert_eq!(client_credentials(&nodes[0], &secret, &[&proof]).await.status(), 200);
    let (status, error) = error_of(client_credentials(&nodes[1], &secret, &[&proof]).await).await;
    assert_eq!((status, error.as_str()), (400, "invalid_dpop_proof"));
}

#[tokio::test]
async fn a_client_registered_as_dpop_bound_must_send_a_proof() {
    let app = spawn_app().await;
    let secret = app
        .add_client_with("svc", false, |c| {
            c.grant_types = vec!["client_credentials".into()];
            c.client_scopes = vec!["reports:read".into()];
            c.dpop_bound = true;
        })
        .await
        .unwrap();
    let (status, error) = error_of(client_credentials(&app, &secret, &[]).await).await;
    assert_eq!((status, error.as_str()), (400, "invalid_dpop_proof"));
    let proof = Key::es256().proof(&app, "POST", "/token");
    assert_eq!(client_credentials(&app, &secret, &[&proof]).await.status(), 200);
}
