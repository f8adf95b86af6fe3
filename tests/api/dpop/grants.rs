//! DPoP across the flows: server nonces, `dpop_jkt` at authorization, refresh tokens of
//! public and confidential clients, the device grant, admin tokens, browser apps and
//! pushed requests.

use super::*;

#[tokio::test]
async fn the_nonce_flow_at_the_token_endpoint_and_userinfo() {
    let app = spawn_with(|s| s.protocol.dpop_nonce = true).await;
    app.add_user("alice").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let key = Key::es256();
    let (code, verifier) = authorize(&app, "rp", &[]).await;

    // First attempt: no nonce → use_dpop_nonce with the nonce to use (RFC 9449 §8).
    let first = exchange(
        &app,
        ("rp", Some(&secret)),
        &code,
        &verifier,
        &[&key.proof(&app, "POST", "/token")],
    )
    .await;
    let nonce = first.headers()["dpop-nonce"].to_str().unwrap().to_string();
    assert_eq!(error_of(first).await, (400, "use_dpop_nonce".into()));
    // A made-up nonce is no better.
    let mut c = claims(&app, "POST", "/token");
    c["nonce"] = json!("made-up");
    let made_up = exchange(&app, ("rp", Some(&secret)), &code, &verifier, &[&key.proof_with(c)]).await;
    assert_eq!(error_of(made_up).await, (400, "use_dpop_nonce".into()));
    // The retry with the nonce succeeds, and the code was not burnt by the refusals.
    let mut c = claims(&app, "POST", "/token");
    c["nonce"] = json!(nonce);
    let ok = exchange(&app, ("rp", Some(&secret)), &code, &verifier, &[&key.proof_with(c)]).await;
    assert_eq!(ok.status(), 200);
    assert!(ok.headers().contains_key("dpop-nonce"));
    let tokens: Value = ok.json().await.unwrap();
    assert_eq!(tokens["token_type"], "DPoP");
    let at = tokens["access_token"].as_str().unwrap();

    // At userinfo: 401 with the DPoP challenge and the nonce; the retry works.
    let resp = userinfo(
        &app,
        "DPoP",
        at,
        Some(&key.resource_proof(&app, "GET", "/userinfo", at)),
    )
    .await;
    assert_eq!(resp.status(), 401);
    assert!(challenge(&resp).contains(r#"error="use_dpop_nonce""#));
    let nonce = resp.headers()["dpop-nonce"].to_str().unwrap().to_string();
    let mut c = claims(&app, "GET", "/userinfo");
    c["ath"] = json!(sha256_b64(at.as_bytes()));
    c["nonce"] = json!(nonce);
    assert_eq!(userinfo(&app, "DPoP", at, Some(&key.proof_with(c))).await.status(), 200);
}

#[tokio::test]
async fn dpop_jkt_at_authorization_binds_the_code_to_that_key() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let key = Key::es256();
    let jkt = key.jkt();
    let rp = ("rp", Some(secret.as_str()));

    // Another key's proof, or none, cannot redeem the code (RFC 9449 §10.1).
    let (code, verifier) = authorize(&app, "rp", &[("dpop_jkt", &jkt)]).await;
    let other = Key::ed25519().proof(&app, "POST", "/token");
    assert_eq!(
        error_of(exchange(&app, rp, &code, &verifier, &[&other]).await).await,
        (400, "invalid_grant".into())
    );
    let (code, verifier) = authorize(&app, "rp", &[("dpop_jkt", &jkt)]).await;
    assert_eq!(
        error_of(exchange(&app, rp, &code, &verifier, &[]).await).await,
        (400, "invalid_grant".into())
    );
    // The key named at authorization does.
    let (code, verifier) = authorize(&app, "rp", &[("dpop_jkt", &jkt)]).await;
    let resp = exchange(&app, rp, &code, &verifier, &[&key.proof(&app, "POST", "/token")]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap()["token_type"], "DPoP");

    // A dpop_jkt that is not a thumbprint is an invalid request, sent back to the client.
    let url = app.authorize_url("rp", &[("dpop_jkt", "not-a-thumbprint")]);
    let resp = browser().get(&url).send().await.unwrap();
    assert_eq!(redirect_params(&resp)["error"], "invalid_request");
}

#[tokio::test]
async fn a_public_clients_refresh_token_is_bound_to_the_key_and_not_rotated() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        app.add_user("alice").await;
        app.add_client("spa", true).await;
        let key = Key::es256();
        let (code, verifier) = authorize(&app, "spa", &[]).await;
        let resp = exchange(
            &app,
            ("spa", None),
            &code,
            &verifier,
            &[&key.proof(&app, "POST", "/token")],
        )
        .await;
        assert_eq!(resp.status(), 200);
        let tokens: Value = resp.json().await.unwrap();
        let rt = tokens["refresh_token"].as_str().unwrap().to_string();
        let form = [
            ("grant_type", "refresh_token"),
            ("client_id", "spa"),
            ("refresh_token", rt.as_str()),
        ];

        // Without a proof, or with another key's: invalid_grant (RFC 9449 §5).
        assert_eq!(
            error_of(token_with(&app, None, &form, &[]).await).await,
            (400, "invalid_grant".into())
        );
        let other = Key::ed25519().proof(&app, "POST", "/token");
        assert_eq!(
            error_of(token_with(&app, None, &form, &[&other]).await).await,
            (400, "invalid_grant".into())
        );

        // With the key: a new bound access token and no new refresh token, and the
        // presented one keeps working (RFC 9700 §4.14.2, RFC 6749 §6).
        for _ in 0..2 {
            let resp = token_with(&app, None, &form, &[&key.proof(&app, "POST", "/token")]).await;
            assert_eq!(resp.status(), 200, "{backend:?}");
            let body: Value = resp.json().await.unwrap();
            assert!(body.get("refresh_token").is_none(), "{body}");
            assert_eq!(body["token_type"], "DPoP");
            assert_eq!(
                jwt_parts(body["access_token"].as_str().unwrap()).1["cnf"]["jkt"],
                key.jkt()
            );
        }
    }
}

#[tokio::test]
async fn a_confidential_client_keeps_rotating_and_binds_each_access_token_it_proves() {
    let (app, secret, _, tokens) = bound_tokens().await;
    let rt = tokens["refresh_token"].as_str().unwrap();
    let form = [("grant_type", "refresh_token"), ("refresh_token", rt)];
    let key = Key::ed25519();
    let resp = token_with(
        &app,
        Some(("rp", &secret)),
        &form,
        &[&key.proof(&app, "POST", "/token")],
    )
    .await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
    assert_eq!(
        jwt_parts(body["access_token"].as_str().unwrap()).1["cnf"]["jkt"],
        key.jkt()
    );
    let next = body["refresh_token"].as_str().unwrap();
    assert_ne!(next, rt, "a confidential client's refresh token still rotates");
    // Without a proof the next refresh gives a bearer token.
    let form = [("grant_type", "refresh_token"), ("refresh_token", next)];
    let body: Value = token_with(&app, Some(("rp", &secret)), &form, &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["token_type"], "Bearer");
}

#[tokio::test]
async fn a_device_grant_poll_with_a_proof_binds_its_tokens() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client_with("tv", true, |c| {
        c.grant_types = vec![
            "urn:ietf:params:oauth:grant-type:device_code".into(),
            "refresh_token".into(),
        ];
    })
    .await;
    let codes: Value = app
        .post_form(
            "/device_authorization",
            None,
            &[("client_id", "tv"), ("scope", "openid")],
        )
        .await
        .json()
        .await
        .unwrap();
    // The person's side, as tests/api/device.rs drives it.
    let b = browser();
    let fields = app
        .open_login(&b, codes["verification_uri_complete"].as_str().unwrap())
        .await;
    let resp = app.submit_login(&b, fields, "alice", PASSWORD).await;
    assert_eq!(resp.status(), 303);
    let page = b.get(app.url(&location(&resp))).send().await.unwrap();
    let mut fields = form_fields(&page.text().await.unwrap());
    fields.insert("decision".into(), "allow".into());
    let resp = b.post(app.url("/device")).form(&fields).send().await.unwrap();
    assert!(resp.text().await.unwrap().contains("Device connected"));
    let key = Key::es256();
    let form = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
        ("client_id", "tv"),
        ("device_code", codes["device_code"].as_str().unwrap()),
    ];
    let resp = token_with(&app, None, &form, &[&key.proof(&app, "POST", "/token")]).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
    assert_eq!(
        jwt_parts(body["access_token"].as_str().unwrap()).1["cnf"]["jkt"],
        key.jkt()
    );
    // The public device client's refresh token is bound too.
    let rt = body["refresh_token"].as_str().unwrap();
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", "tv"),
        ("refresh_token", rt),
    ];
    assert_eq!(
        error_of(token_with(&app, None, &form, &[]).await).await,
        (400, "invalid_grant".into())
    );
}

#[tokio::test]
async fn a_bound_admin_token_is_refused_as_a_bearer_token_at_the_admin_api() {
    let app = spawn_app().await;
    let secret = app
        .add_client_with("ops", false, |c| {
            c.admin = true;
            c.grant_types = vec!["client_credentials".into()];
        })
        .await
        .unwrap();
    let form = [("grant_type", "client_credentials"), ("scope", "tessera:admin")];
    let get = |token: String| {
        let url = app.url("/admin/api/users");
        async move {
            plain_client()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    let plain: Value = token_with(&app, Some(("ops", &secret)), &form, &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(get(plain["access_token"].as_str().unwrap().to_string()).await, 200);
    let proof = Key::es256().proof(&app, "POST", "/token");
    let bound: Value = token_with(&app, Some(("ops", &secret)), &form, &[&proof])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(bound["token_type"], "DPoP");
    assert_eq!(get(bound["access_token"].as_str().unwrap().to_string()).await, 401);
}

#[tokio::test]
async fn browser_apps_may_send_proofs_and_read_the_nonce() {
    let app = spawn_with(|s| s.protocol.dpop_nonce = true).await;
    let secret = service(&app, "svc").await;
    let origin = "http://localhost:8080";
    let preflight = plain_client()
        .request(reqwest::Method::OPTIONS, app.url("/token"))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "dpop")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204);
    let allowed = preflight.headers()["access-control-allow-headers"].to_str().unwrap();
    assert!(allowed.contains("DPoP"), "{allowed}");
    let resp = plain_client()
        .post(app.url("/token"))
        .basic_auth("svc", Some(&secret))
        .header("Origin", origin)
        .header("DPoP", Key::es256().proof(&app, "POST", "/token"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400, "no nonce yet");
    assert!(resp.headers().contains_key("dpop-nonce"));
    let exposed = resp.headers()["access-control-expose-headers"].to_str().unwrap();
    assert!(exposed.contains("DPoP-Nonce"), "{exposed}");
}

/// Pushes the authorization request of `rp` for alice with `proofs` as DPoP headers.
async fn push_with(
    app: &TestApp,
    secret: &str,
    pkce: &Pkce,
    extra: &[(&str, &str)],
    proofs: &[&str],
) -> reqwest::Response {
    let mut form = vec![
        ("response_type", "code"),
        ("client_id", "rp"),
        ("redirect_uri", REDIRECT),
        ("scope", "openid"),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    form.extend_from_slice(extra);
    let mut req = plain_client()
        .post(app.url("/par"))
        .basic_auth("rp", Some(secret))
        .form(&form);
    for p in proofs {
        req = req.header("DPoP", *p);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn a_proof_sent_with_a_pushed_request_binds_its_code_to_that_key() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let key = Key::es256();
    let rp = ("rp", Some(secret.as_str()));
    let sign_in = async |pushed: reqwest::Response| {
        assert_eq!(pushed.status(), 201);
        let uri = pushed.json::<Value>().await.unwrap()["request_uri"]
            .as_str()
            .unwrap()
            .to_string();
        let mut url = url::Url::parse(&app.url("/authorize")).unwrap();
        url.query_pairs_mut()
            .append_pair("client_id", "rp")
            .append_pair("request_uri", &uri);
        app.login(&browser(), url.as_str(), "alice").await["code"].clone()
    };

    // RFC 9449 §10.1: the proof at PAR stands for dpop_jkt; another key cannot redeem.
    let pkce = Pkce::new();
    let code = sign_in(push_with(&app, &secret, &pkce, &[], &[&key.proof(&app, "POST", "/par")]).await).await;
    let other = Key::ed25519().proof(&app, "POST", "/token");
    assert_eq!(
        error_of(exchange(&app, rp, &code, &pkce.verifier, &[&other]).await).await,
        (400, "invalid_grant".into())
    );
    let pkce = Pkce::new();
    let code = sign_in(push_with(&app, &secret, &pkce, &[], &[&key.proof(&app, "POST", "/par")]).await).await;
    let resp = exchange(&app, rp, &code, &pkce.verifier, &[&key.proof(&app, "POST", "/token")]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap()["token_type"], "DPoP");

    // A proof for another endpoint, a replayed one, or a dpop_jkt naming another key
    // are refused at the push.
    let pkce = Pkce::new();
    let wrong_htu = key.proof(&app, "POST", "/token");
    assert_eq!(
        error_of(push_with(&app, &secret, &pkce, &[], &[&wrong_htu]).await).await,
        (400, "invalid_dpop_proof".into())
    );
    let proof = key.proof(&app, "POST", "/par");
    assert_eq!(push_with(&app, &secret, &pkce, &[], &[&proof]).await.status(), 201);
    assert_eq!(
        error_of(push_with(&app, &secret, &pkce, &[], &[&proof]).await).await,
        (400, "invalid_dpop_proof".into())
    );
    let other_jkt = Key::ed25519().jkt();
    let fresh = key.proof(&app, "POST", "/par");
    assert_eq!(
        error_of(push_with(&app, &secret, &pkce, &[("dpop_jkt", &other_jkt)], &[&fresh]).await).await,
        (400, "invalid_dpop_proof".into())
    );
}
