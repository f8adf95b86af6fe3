//! Abuse and web-security protections: rate limits, trusted proxies, lockout without
//! enumeration, same-origin forms, HSTS, readiness and metrics.

use crate::helpers::*;

/// One sign-in attempt from a fresh browser (so an earlier success leaves no session).
async fn login_attempt(
    app: &TestApp,
    _: &reqwest::Client,
    user: &str,
    password: &str,
    xff: Option<&str>,
) -> reqwest::Response {
    let b = &browser();
    let fields = app.open_login(b, &app.authorize_url("app", &[])).await;
    let mut form = fields;
    form.insert("username".into(), user.into());
    form.insert("password".into(), password.into());
    let mut req = b.post(app.url("/login")).form(&form);
    if let Some(x) = xff {
        req = req.header("x-forwarded-for", x);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn login_attempts_per_address_are_limited_with_retry_after() {
    let app = spawn_with(|s| s.rate_limit = true).await;
    app.add_user("alice").await;
    app.add_client("app", false).await;
    let b = browser();
    let burst = tessera::auth::limits::LOGIN_QUOTA.1 as usize;
    let mut statuses = Vec::new();
    for i in 0..=burst {
        let resp = login_attempt(&app, &b, &format!("user{i}"), "wrong", None).await;
        statuses.push(resp.status().as_u16());
        if resp.status() == 429 {
            assert!(resp.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
            assert!(resp.text().await.unwrap().contains("Too many attempts"));
        }
    }
    assert_eq!(statuses.iter().filter(|s| **s == 401).count(), burst, "{statuses:?}");
    assert_eq!(statuses.last(), Some(&429));
}

#[tokio::test]
async fn protocol_endpoints_answer_429_in_json() {
    let app = spawn_with(|s| s.rate_limit = true).await;
    let mut last = None;
    let started = std::time::Instant::now();
    for _ in 0..1000 {
        let resp = app
            .token(Some(("nobody", "x")), &[("grant_type", "client_credentials")])
            .await;
        let limited = resp.status() == 429;
        last = Some(resp);
        if limited {
            break;
        }
    }
    let resp = last.unwrap();
    assert_eq!(resp.status(), 429, "not limited after {:?}", started.elapsed());
    assert!(resp.headers().contains_key("retry-after"));
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "temporarily_unavailable");
}

#[tokio::test]
async fn an_account_is_limited_whatever_address_the_attempts_come_from() {
    let app = spawn_with(|s| {
        s.rate_limit = true;
        s.trusted_proxies = vec![tessera::auth::client_ip::Cidr::parse("127.0.0.1/32").unwrap()];
    })
    .await;
    app.add_client("app", false).await;
    let b = browser();
    let mut statuses = Vec::new();
    for i in 0..6 {
        let xff = format!("198.51.100.{i}");
        statuses.push(
            login_attempt(&app, &b, "target", "guess", Some(&xff))
                .await
                .status()
                .as_u16(),
        );
    }
    assert_eq!(
        statuses,
        [401, 401, 401, 401, 401, 429],
        "per-account limit, unknown account included"
    );
}

#[tokio::test]
async fn forwarded_headers_count_only_from_trusted_proxies() {
    // Trusted: each forwarded address has its own budget.
    let trusted = spawn_with(|s| {
        s.rate_limit = true;
        s.trusted_proxies = vec![tessera::auth::client_ip::Cidr::parse("127.0.0.0/8").unwrap()];
    })
    .await;
    trusted.add_client("app", false).await;
    let b = browser();
    let burst = tessera::auth::limits::LOGIN_QUOTA.1 as usize;
    for i in 0..burst + 2 {
        let xff = format!("203.0.113.{i}");
        let status = login_attempt(&trusted, &b, &format!("u{i}"), "x", Some(&xff))
            .await
            .status();
        assert_eq!(status, 401, "a fresh address is not limited");
    }
    // Untrusted: the spoofed header changes nothing, all attempts share one budget.
    let untrusted = spawn_with(|s| s.rate_limit = true).await;
    untrusted.add_client("app", false).await;
    let mut limited = false;
    for i in 0..burst + 2 {
        let xff = format!("203.0.113.{i}");
        limited |= login_attempt(&untrusted, &b, &format!("u{i}"), "x", Some(&xff))
            .await
            .status()
            == 429;
    }
    assert!(limited, "spoofed X-Forwarded-For must not reset the limit");
}

#[tokio::test]
async fn repeated_failures_lock_an_account_until_unlocked_without_revealing_it() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client("app", false).await;
    let b = browser();
    let bodies = |s: String| s.split("<form").next().unwrap_or_default().to_string();
    let mut failed_page = String::new();
    for _ in 0..5 {
        let resp = login_attempt(&app, &b, "alice", "wrong", None).await;
        assert_eq!(resp.status(), 401);
        failed_page = bodies(resp.text().await.unwrap());
    }
    let resp = login_attempt(&app, &b, "alice", PASSWORD, None).await;
    assert_eq!(resp.status(), 401, "locked: the right password is refused");
    let locked_page = bodies(resp.text().await.unwrap());
    assert_eq!(locked_page, failed_page, "a locked account looks like a wrong password");
    let unknown = bodies(
        login_attempt(&app, &b, "ghost", "wrong", None)
            .await
            .text()
            .await
            .unwrap(),
    );
    assert_eq!(unknown, failed_page, "an unknown account looks the same too");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("--db")
        .arg(&app.state.settings.db_path)
        .args(["user", "unlock", "alice"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(login_attempt(&app, &b, "alice", PASSWORD, None).await.status(), 303);
}

#[tokio::test]
async fn a_lock_expires_and_success_resets_the_count() {
    let app = spawn_app().await;
    app.add_user("bob").await;
    app.add_client("app", false).await;
    let b = browser();
    for _ in 0..4 {
        login_attempt(&app, &b, "bob", "wrong", None).await;
    }
    assert_eq!(
        login_attempt(&app, &b, "bob", PASSWORD, None).await.status(),
        303,
        "four failures do not lock"
    );
    for _ in 0..4 {
        login_attempt(&app, &b, "bob", "wrong", None).await;
    }
    assert_eq!(
        login_attempt(&app, &b, "bob", PASSWORD, None).await.status(),
        303,
        "the count was reset"
    );
    for _ in 0..5 {
        login_attempt(&app, &b, "bob", "wrong", None).await;
    }
    assert_eq!(login_attempt(&app, &b, "bob", PASSWORD, None).await.status(), 401);
    app.clock.advance(61);
    assert_eq!(
        login_attempt(&app, &b, "bob", PASSWORD, None).await.status(),
        303,
        "the first lock lasts a minute"
    );
}

#[tokio::test]
async fn forms_posted_from_another_origin_are_refused() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client("app", false).await;
    let b = browser();
    let mut fields = app.open_login(&b, &app.authorize_url("app", &[])).await;
    fields.insert("username".into(), "alice".into());
    fields.insert("password".into(), PASSWORD.into());
    let evil = b
        .post(app.url("/login"))
        .header("origin", "https://evil.example")
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status(), 403);
    let ours = b
        .post(app.url("/login"))
        .header("origin", &app.address)
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(ours.status(), 303);
}

#[tokio::test]
async fn https_issuers_send_hsts() {
    let app = spawn_with(|s| s.issuer = Some(url::Url::parse("https://id.example.com").unwrap())).await;
    let resp = plain_client().get(app.url("/healthz")).send().await.unwrap();
    assert!(resp.headers()["strict-transport-security"]
        .to_str()
        .unwrap()
        .contains("max-age="));
    let plain = spawn_app().await;
    let resp = plain_client().get(plain.url("/healthz")).send().await.unwrap();
    assert!(resp.headers().get("strict-transport-security").is_none());
}

#[tokio::test]
async fn readiness_and_metrics_report_what_happened() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    assert_eq!(
        plain_client().get(app.url("/readyz")).send().await.unwrap().status(),
        200
    );
    app.tokens("app", &secret, "alice").await;
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("app", &[])).await;
    app.submit_login(&b, fields, "alice", "wrong").await;
    let text = plain_client()
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for expected in [
        "tessera_http_requests_total{route=\"/token\",status=\"200\"} 1",
        "tessera_logins_total{outcome=\"ok\"} 1",
        "tessera_logins_total{outcome=\"failed\"} 1",
        "tessera_tokens_issued_total{grant_type=\"authorization_code\"} 1",
        "tessera_http_request_duration_seconds_count{route=\"/login\"} 2",
        "tessera_writer_batches_total",
        "tessera_hash_queue_depth 0",
        "tessera_database_bytes",
    ] {
        assert!(text.contains(expected), "missing {expected} in\n{text}");
    }
}

#[tokio::test]
async fn a_metrics_token_closes_the_metrics_endpoint_to_others() {
    let app = spawn_with(|s| s.metrics_token = Some("scrape-me-please-1234".into())).await;
    let url = app.url("/metrics");
    let anonymous = plain_client().get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert!(anonymous.headers().contains_key("www-authenticate"));
    let wrong = plain_client()
        .get(&url)
        .bearer_auth("scrape-me-please-1235")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = plain_client()
        .get(&url)
        .bearer_auth("scrape-me-please-1234")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    assert!(right.text().await.unwrap().contains("tessera_writer_batches_total"));
}
