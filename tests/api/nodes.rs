//! Several nodes on one PostgreSQL database: whichever node a request reaches, a flow
//! behaves as on one node (needs the run's cluster; required in CI).

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flow_alternating_between_three_nodes_behaves_as_on_one() {
    let Some(url) = required_cluster("multi-node") else {
        return;
    };
    let nodes = spawn_nodes(&url, 3).await;
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    a.add_user("ada").await;
    let secret = b.add_client("app", false).await.unwrap();
    let browser = browser();

    // Authorize on A, sign in on B (the parked request and the browser binding are in
    // the database), redeem the code on C.
    let pkce = Pkce::new();
    let url = a.authorize_url(
        "app",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let fields = a.open_login(&browser, &url).await;
    let resp = b.submit_login(&browser, fields, "ada", PASSWORD).await;
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    let code = redirect_params(&resp)["code"].clone();
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    let resp = c.token(Some(("app", &secret)), &exchange).await;
    assert_eq!(resp.status(), 200);
    let tokens: serde_json::Value = resp.json().await.unwrap();
    let (_, claims) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(claims["iss"], "http://id.test", "every node speaks as the one issuer");
    // The same code on another node is a replay, and revokes what it gave.
    assert_eq!(a.token(Some(("app", &secret)), &exchange).await.status(), 400);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(b.introspect(("app", &secret), access).await["active"], false);

    // A second sign-in: a returning browser gets a code from any node.
    let pkce = Pkce::new();
    let url = c.authorize_url(
        "app",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let resp = browser.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 302, "the session made on B is known on C");
    let code = redirect_params(&resp)["code"].clone();
    let resp = a
        .token(
            Some(("app", &secret)),
            &[
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", REDIRECT),
                ("code_verifier", pkce.verifier.as_str()),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let tokens: serde_json::Value = resp.json().await.unwrap();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_string();

    // Refresh on B, introspect on C, reuse of the old refresh token on A revokes all.
    let resp = b.refresh(("app", &secret), refresh.as_str(), &[]).await;
    assert_eq!(resp.status(), 200);
    let renewed: serde_json::Value = resp.json().await.unwrap();
    let access = renewed["access_token"].as_str().unwrap().to_string();
    assert_eq!(c.introspect(("app", &secret), &access).await["active"], true);
    // Past the retry window of confidential clients, on A's clock.
    a.clock.advance(tessera::oidc::token::REFRESH_RETRY_GRACE + 1);
    let reuse = a.refresh(("app", &secret), refresh.as_str(), &[]).await;
    assert_eq!(reuse.status(), 400);
    assert_eq!(
        b.introspect(("app", &secret), &access).await["active"],
        false,
        "reuse detected on A ends the family on B"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rotated_client_secret_is_refused_on_every_node_within_a_second() {
    let Some(url) = required_cluster("multi-node") else {
        return;
    };
    let nodes = spawn_nodes(&url, 3).await;
    nodes[0].add_user("ada").await;
    let secret = nodes[0].add_client("app", false).await.unwrap();
    let grant = |node: &TestApp, secret: String| {
        let url = node.url("/token");
        async move {
            plain_client()
                .post(url)
                .basic_auth("app", Some(secret))
                .form(&[("grant_type", "refresh_token"), ("refresh_token", "x")])
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    // Each node has the client cached: a wrong refresh token, but the client passes.
    for n in &nodes {
        assert_eq!(grant(n, secret.clone()).await, 400);
    }
    let fresh = tessera::domain::Secret::generate();
    let hash = fresh.hash();
    nodes[1]
        .state
        .db
        .write(move |c| tessera::db::clients::set_secret(c, "app", &hash, None, 0))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    for n in &nodes {
        assert_eq!(
            grant(n, secret.clone()).await,
            401,
            "the old secret is refused everywhere"
        );
        assert_eq!(grant(n, fresh.expose().to_string()).await, 400, "the new one works");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_signed_with_a_key_rotated_on_another_node_verifies_at_once() {
    let Some(url) = required_cluster("multi-node") else {
        return;
    };
    let nodes = spawn_nodes(&url, 2).await;
    let (a, b) = (&nodes[0], &nodes[1]);
    a.add_user("ada").await;
    let secret = a.add_client("app", false).await.unwrap();
    let actor = tessera::admin::Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    };
    let rotated = tessera::admin::overview::rotate_key(&a.state.ctx(), &actor, "RS256")
        .await
        .unwrap();
    let kid = rotated["kid"].as_str().unwrap().to_string();
    // B has not reloaded yet (its reloader runs every 10 s); on A, time passes beyond
    // the publication wait, as if B had missed it.
    assert!(!b.state.keys.current().knows(&kid));
    a.clock.advance(a.state.settings.key_publish_delay());
    let tokens = a.tokens("app", &secret, "ada").await;
    let access = tokens["access_token"].as_str().unwrap();
    let (header, _) = jwt_parts(access);
    assert_eq!(header["kid"], kid.as_str(), "A signs with the new key");
    assert_eq!(
        b.introspect(("app", &secret), access).await["active"],
        true,
        "B meets an unknown kid of ours, reloads and verifies"
    );
    assert!(b.state.keys.current().knows(&kid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rotated_key_is_in_every_nodes_jwks_before_any_token_carries_it() {
    let Some(url) = required_cluster("multi-node") else {
        return;
    };
    // Reloads every two seconds, so the wait before signing is six.
    let nodes = spawn_nodes_with(&url, 3, |s| s.key_reload_every = 2).await;
    nodes[0].add_user("ada").await;
    let secret = nodes[0].add_client("app", false).await.unwrap();
    let mut refresh = nodes[0].tokens("app", &secret, "ada").await["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();
    let actor = tessera::admin::Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    };
    let rotated = tessera::admin::overview::rotate_key(&nodes[1].state.ctx(), &actor, "RS256")
        .await
        .unwrap();
    let kid = serde_json::Value::from(rotated["kid"].as_str().unwrap());
    let started = std::time::Instant::now();
    let mut round = 0usize;
    let mut saw_unpublished = false;
    loop {
        assert!(started.elapsed().as_secs() < 20, "the new key never signed");
        // Each node's JWKS first, then a token from one of them.
        let mut published = Vec::new();
        for n in &nodes {
            published.push(n.jwks_kids().await.contains(&kid));
        }
        saw_unpublished |= published.contains(&false);
        let node = &nodes[round % 3];
        round += 1;
        let resp = node.refresh(("app", &secret), refresh.as_str(), &[]).await;
        assert_eq!(resp.status(), 200);
        let tokens: serde_json::Value = resp.json().await.unwrap();
        refresh = tokens["refresh_token"].as_str().unwrap().to_string();
        let (header, _) = jwt_parts(tokens["id_token"].as_str().unwrap());
        if header["kid"] == kid {
            assert_eq!(
                published,
                [true, true, true],
                "a token carried the new kid while a node's JWKS lacked it"
            );
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The wait was real: right after the rotation, some node had not published yet or
    // the old key still signed for at least the publication delay.
    assert!(
        saw_unpublished || started.elapsed().as_secs_f64() >= 1.0,
        "the new key signed without waiting"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mfa_and_logout_alternating_between_nodes_deliver_one_back_channel_logout() {
    use tessera::auth::totp;
    let Some(url) = required_cluster("multi-node") else {
        return;
    };
    let nodes = spawn_nodes(&url, 3).await;
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    let (uri, mut bodies) = crate::logout::receiver(200).await;
    a.add_user("ada").await;
    let secret = b
        .add_client_with("app", false, |client| {
            client.backchannel_logout_uri = Some(uri);
            client.backchannel_logout_session_required = true;
        })
        .await
        .unwrap();

    let key = enrol_totp_across_nodes(a, b, c).await;

    // Authorize on A, password on B, second factor on C, code on A.
    let rp = browser();
    let fields = a.open_login(&rp, &a.authorize_url("app", &[])).await;
    let resp = b.submit_login(&rp, fields, "ada", PASSWORD).await;
    assert_eq!(resp.status(), 200);
    let mut fields = form_fields(&resp.text().await.unwrap());
    let step = totp::code_at(&key, c.clock.now() + totp::STEP).unwrap();
    fields.insert("code".into(), step.clone());
    let resp = rp.post(c.url("/login/mfa")).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 303, "the second factor on another node");
    let tokens = a.exchange("app", &secret, &redirect_params(&resp)["code"]).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(id["amr"], serde_json::json!(["pwd", "otp", "mfa"]));

    a_totp_step_is_used_once_across_nodes(&nodes, &step).await;

    // Refresh on B, introspect on C, log out on A.
    let resp = b
        .token(
            Some(("app", &secret)),
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let renewed: serde_json::Value = resp.json().await.unwrap();
    let access = renewed["access_token"].as_str().unwrap();
    assert_eq!(c.introspect(("app", &secret), access).await["active"], true);
    let hint = tokens["id_token"].as_str().unwrap();
    let resp = rp
        .get(format!("{}?id_token_hint={hint}", a.url("/logout")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    // Three deliverers, one delivery.
    let token = crate::logout::next_logout_token(&mut bodies, 15).await;
    let (_, claims) = jwt_parts(&token);
    assert_eq!(claims["sid"], id["sid"]);
    assert_eq!(claims["iss"], "http://id.test");
    let second = tokio::time::timeout(std::time::Duration::from_secs(4), bodies.recv()).await;
    assert!(second.is_err(), "the logout was delivered more than once");

    // The session and its grants are over on every node.
    for n in &nodes {
        assert_eq!(n.introspect(("app", &secret), access).await["active"], false);
        let resp = rp
            .get(n.authorize_url("app", &[("prompt", "none")]))
            .send()
            .await
            .unwrap();
        assert!(!redirect_params(&resp).contains_key("code"), "signed out everywhere");
    }
}

/// Enrol TOTP: the account page on A, the key shown by B, the code confirmed on C;
/// the key.
async fn enrol_totp_across_nodes(a: &TestApp, b: &TestApp, c: &TestApp) -> String {
    use tessera::auth::totp;
    let portal = browser();
    let csrf = a.portal_login(&portal, "ada", PASSWORD).await;
    let html = portal
        .get(b.url("/account/totp"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let key = text_of(&html, "totp-secret").expect("the key is shown");
    let enrol = totp::code_at(&key, c.clock.now()).unwrap();
    let done = portal
        .post(c.url("/account/totp"))
        .form(&[("csrf", csrf.as_str()), ("code", enrol.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200, "the pending key enrolled on B is confirmed on C");
    key
}

/// The same TOTP step in another sign-in, on yet another node: a replay.
async fn a_totp_step_is_used_once_across_nodes(nodes: &[TestApp], step: &str) {
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    let other = browser();
    let fields = b.open_login(&other, &b.authorize_url("app", &[])).await;
    let resp = c.submit_login(&other, fields, "ada", PASSWORD).await;
    let mut fields = form_fields(&resp.text().await.unwrap());
    fields.insert("code".into(), step.to_string());
    let replay = other.post(a.url("/login/mfa")).form(&fields).send().await.unwrap();
    assert_eq!(replay.status(), 401, "a TOTP step is used once across the cluster");
}
