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
        s.trusted_proxies = vec![tessera::domain::Cidr::parse("127.0.0.1/32").unwrap()];
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
        s.trusted_proxies = vec![tessera::domain::Cidr::parse("127.0.0.0/8").unwrap()];
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
        .args(app.db_args())
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
        "tessera_hash_queue_depth 0",
        "tessera_database_bytes",
    ] {
        assert!(text.contains(expected), "missing {expected} in\n{text}");
    }
    // Each engine reports what it has: SQLite its writer, PostgreSQL its pool.
    let (has, lacks) = engine_metrics();
    assert!(text.contains(has), "missing {has} in\n{text}");
    assert!(!text.contains(lacks), "{lacks} on the wrong engine");
}

/// The metric only this run's engine reports, and the one only the other does.
pub(crate) fn engine_metrics() -> (&'static str, &'static str) {
    match postgres_url() {
        Some(_) => ("tessera_pg_connections_open", "tessera_writer_batches_total"),
        None => ("tessera_writer_batches_total", "tessera_pg_connections_open"),
    }
}

#[tokio::test]
async fn a_metrics_token_closes_the_metrics_endpoint_to_others() {
    let app =
        spawn_with(|s| s.metrics_token = Some(tessera::domain::Secret::from_string("scrape-me-please-1234".into())))
            .await;
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
    assert!(right.text().await.unwrap().contains(engine_metrics().0));
}

/// The address the audit log recorded for the latest failed sign-in.
async fn last_failed_login_ip(app: &TestApp) -> Option<String> {
    let filter = tessera::db::audit::Filter {
        event: Some("login.failed".into()),
        ..Default::default()
    };
    let (entries, _) = app
        .state
        .db
        .read(move |c| tessera::db::audit::list(c, &filter, 1, 0))
        .await
        .unwrap();
    entries.into_iter().next().and_then(|e| e.ip)
}

/// A sign-in attempt with the forwarding headers given, each (name, value) one line.
async fn login_with_headers(app: &TestApp, headers: &[(&str, &str)]) -> u16 {
    let b = &browser();
    let mut form = app.open_login(b, &app.authorize_url("app", &[])).await;
    form.insert("username".into(), "nobody".into());
    form.insert("password".into(), "wrong".into());
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        map.append(
            reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    let resp = b.post(app.url("/login")).headers(map).form(&form).send().await.unwrap();
    resp.status().as_u16()
}

#[tokio::test]
async fn a_client_sent_forwarded_header_does_not_override_the_proxys_x_forwarded_for() {
    let app = spawn_with(|s| {
        s.trusted_proxies = vec![tessera::domain::Cidr::parse("127.0.0.0/8").unwrap()];
    })
    .await;
    app.add_client("app", false).await;
    let status = login_with_headers(
        &app,
        &[("forwarded", "for=6.6.6.6"), ("x-forwarded-for", "198.51.100.7")],
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(last_failed_login_ip(&app).await.as_deref(), Some("198.51.100.7"));
}

#[tokio::test]
async fn every_x_forwarded_for_line_is_read_and_the_proxys_own_line_wins() {
    let app = spawn_with(|s| {
        s.trusted_proxies = vec![tessera::domain::Cidr::parse("127.0.0.0/8").unwrap()];
    })
    .await;
    app.add_client("app", false).await;
    // The client sent the first line; the proxy (HAProxy) appended the second.
    login_with_headers(
        &app,
        &[("x-forwarded-for", "6.6.6.6"), ("x-forwarded-for", "198.51.100.8")],
    )
    .await;
    assert_eq!(last_failed_login_ip(&app).await.as_deref(), Some("198.51.100.8"));
}

#[tokio::test]
async fn with_forwarded_chosen_only_the_rfc_7239_header_is_read() {
    let app = spawn_with(|s| {
        s.trusted_proxies = vec![tessera::domain::Cidr::parse("127.0.0.0/8").unwrap()];
        s.forwarded_header = tessera::domain::ForwardedHeader::Forwarded;
    })
    .await;
    app.add_client("app", false).await;
    login_with_headers(
        &app,
        &[
            ("x-forwarded-for", "6.6.6.6"),
            ("forwarded", "for=\"198.51.100.9:1234\""),
        ],
    )
    .await;
    assert_eq!(last_failed_login_ip(&app).await.as_deref(), Some("198.51.100.9"));
}

#[test]
fn types_that_hold_secrets_never_print_them_with_debug() {
    use tessera::crypto::keys::{Alg, SigningKeyRecord};
    let key = SigningKeyRecord::generate(Alg::Rs256, "k1".into(), 0).unwrap();
    let printed = format!("{key:?}");
    assert!(printed.contains("k1") && !printed.contains("PRIVATE KEY"), "{printed}");

    let mut client = tessera::db::clients::Client::new("c", "C", None, vec![]);
    client.secret_for_hmac = Some("hmac-secret-value".into());
    assert!(!format!("{client:?}").contains("hmac-secret-value"));

    let master = tessera::crypto::sealed::MasterKey::parse(&"A".repeat(43)).unwrap();
    assert!(!format!("{master:?}").contains("AAAA"));

    let settings = tessera::config::Settings {
        metrics_token: Some(tessera::domain::Secret::from_string("metrics-token-value".into())),
        ..Default::default()
    };
    assert!(!format!("{settings:?}").contains("metrics-token-value"));
    let raw = tessera::config::RawSettings {
        master_key: Some("master-key-text".into()),
        metrics_token: Some("metrics-token-value".into()),
        ..Default::default()
    };
    let printed = format!("{raw:?}");
    assert!(!printed.contains("master-key-text") && !printed.contains("metrics-token-value"));

    let totp = tessera::db::mfa::Totp {
        secret: "JBSWY3DPEHPK3PXP".into(),
        confirmed: true,
        last_step: 0,
        confirmed_at: None,
    };
    assert!(!format!("{totp:?}").contains("JBSWY3DP"));

    let input = tessera::admin::users::UserInput {
        password: Some("typed-password-value".into()),
        ..Default::default()
    };
    assert!(!format!("{input:?}").contains("typed-password-value"));
}

#[test]
fn second_factor_attempts_have_a_keyspace_no_username_reaches() {
    let limits = tessera::auth::limits::RateLimits::new(true);
    // Someone types `#mfa:4` (or anything) as a username over and over.
    for _ in 0..50 {
        let _ = limits.check_account("#mfa:4");
        let _ = limits.check_account("4");
    }
    assert!(limits.check_second_factor(4).is_ok(), "user 4's codes are untouched");
}

#[tokio::test]
async fn a_hash_of_another_cost_is_replaced_at_the_next_sign_in() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let uid = alice.id;
    let old = bcrypt::hash(PASSWORD, 5).unwrap();
    let stored = old.clone();
    app.state
        .db
        .write(move |c| tessera::db::users::set_password_by_id(c, uid, &stored, 0).map(|_| ()))
        .await
        .unwrap();
    app.add_client("app", false).await;
    app.login(&browser(), &app.authorize_url("app", &[]), "alice").await;
    let now = app
        .state
        .db
        .read(move |c| tessera::db::users::find_by_id(c, uid))
        .await
        .unwrap()
        .unwrap()
        .password_hash;
    assert_ne!(now, old);
    assert_eq!(tessera::crypto::password::cost_of(&now), Some(4), "the configured cost");
    assert!(bcrypt::verify(PASSWORD, &now).unwrap(), "the same password");
}

#[tokio::test]
async fn an_unknown_name_costs_what_a_stored_hash_costs() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let uid = alice.id;
    // Stored hashes at cost 12 while the server is configured for 4.
    let slow = bcrypt::hash(PASSWORD, 12).unwrap();
    app.state
        .db
        .write(move |c| tessera::db::users::set_password_by_id(c, uid, &slow, 0).map(|_| ()))
        .await
        .unwrap();
    app.add_client("app", false).await;
    let b = browser();
    let mut form = app.open_login(&b, &app.authorize_url("app", &[])).await;
    // Warm the dummy of that cost, then time an unknown name.
    for _ in 0..2 {
        form.insert("username".into(), "nobody-here".into());
        form.insert("password".into(), "x".into());
        let started = std::time::Instant::now();
        let resp = b.post(app.url("/login")).form(&form).send().await.unwrap();
        assert_eq!(resp.status(), 401);
        let took = started.elapsed();
        // A cost-4 dummy takes about a millisecond; cost 12 takes a hundred or more.
        assert!(took >= std::time::Duration::from_millis(60), "{took:?}");
        form = app.open_login(&b, &app.authorize_url("app", &[])).await;
    }
}

#[tokio::test]
async fn an_unknown_sign_in_name_is_audited_only_as_a_pseudonym() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client("app", false).await;
    let b = browser();
    let mut form = app.open_login(&b, &app.authorize_url("app", &[])).await;
    form.insert("username".into(), "MyPassword123!".into());
    form.insert("password".into(), "x".into());
    assert_eq!(
        b.post(app.url("/login")).form(&form).send().await.unwrap().status(),
        401
    );
    let mut form = app.open_login(&b, &app.authorize_url("app", &[])).await;
    form.insert("username".into(), "alice".into());
    form.insert("password".into(), "wrong".into());
    assert_eq!(
        b.post(app.url("/login")).form(&form).send().await.unwrap().status(),
        401
    );
    let failed: Vec<String> = app
        .audit()
        .await
        .into_iter()
        .filter(|e| e.0 == "login.failed")
        .filter_map(|e| e.1)
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed[0].starts_with("unknown:") && !failed[0].contains("MyPassword"),
        "{failed:?}"
    );
    assert_eq!(failed[1], "alice", "a real account is named");
}
