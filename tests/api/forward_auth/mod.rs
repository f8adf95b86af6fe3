//! Forward-auth (`/authz/forward-auth`, `/authz/auth-request`, `/authz/sign-in`):
//! here the test plays the proxy, sending the `X-Forwarded-*` headers itself from
//! 127.0.0.1; `proxies.rs` puts real nginx and Caddy in front.

mod cookies;
mod proxies;
mod registry;

use std::net::SocketAddr;

use reqwest::header::{LOCATION, SET_COOKIE};
use tessera::admin::apps::AppSpec;
use tessera::db;

use crate::federation::actor;
use crate::helpers::*;

/// Tessera's host name in these tests; apps are on other hosts of `example.test`.
pub const AUTH_HOST: &str = "auth.example.test";
pub const COOKIE_DOMAIN: &str = "example.test";

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Tessera answering as `http://auth.example.test:PORT`, with forward-auth's cookie on
/// `example.test` and 127.0.0.1 as its trusted proxy, after `adjust`.
pub async fn spawn_fa(adjust: impl FnOnce(&mut tessera::config::Settings)) -> (TestApp, SocketAddr) {
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut app = spawn_with(|s| {
        s.listen = addr;
        s.issuer = Some(tessera::config::parse_issuer(&format!("http://{AUTH_HOST}:{port}")).unwrap());
        s.forward_auth_cookie_domain = Some(COOKIE_DOMAIN.into());
        s.trusted_proxies = vec![tessera::domain::Cidr::parse("127.0.0.1/32").unwrap()];
        adjust(s);
    })
    .await;
    app.address = app.state.issuer.to_string();
    (app, addr)
}

/// A browser that resolves Tessera's name (and any `extra` names) to loopback.
pub fn browser_at(tessera: SocketAddr, extra: &[(&str, SocketAddr)]) -> reqwest::Client {
    let mut b = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .resolve(AUTH_HOST, tessera);
    for (name, addr) in extra {
        b = b.resolve(name, *addr);
    }
    b.build().unwrap()
}

pub async fn protect(app: &TestApp, id: &str, url: &str, adjust: impl FnOnce(&mut AppSpec)) {
    let mut spec = AppSpec {
        id: id.into(),
        url: url.into(),
        ..AppSpec::default()
    };
    adjust(&mut spec);
    tessera::admin::apps::create(&app.state.ctx(), &actor(), &spec)
        .await
        .unwrap();
}

pub async fn join(app: &TestApp, user_id: i64, group: &str) {
    let group = group.to_string();
    app.state
        .db
        .write(move |c| {
            let gid = match db::groups::id_of(c, &group)? {
                Some(id) => id,
                None => db::groups::create(c, &group)?,
            };
            db::groups::set_member(c, gid, user_id, true).map(|_| ())
        })
        .await
        .unwrap();
}

/// What the test, as the proxy, asks about `url` (X-Forwarded-* for forward-auth).
async fn ask(app: &TestApp, b: &reqwest::Client, url: &str) -> reqwest::Response {
    let u = url::Url::parse(url).unwrap();
    let host = match u.port() {
        Some(p) => format!("{}:{p}", u.host_str().unwrap()),
        None => u.host_str().unwrap().to_string(),
    };
    let uri = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    };
    b.get(app.url("/authz/forward-auth"))
        .header("X-Forwarded-Proto", u.scheme())
        .header("X-Forwarded-Host", host)
        .header("X-Forwarded-Uri", uri)
        .header("X-Forwarded-Method", "GET")
        .send()
        .await
        .unwrap()
}

/// Follows a sign-in from the proxy's redirect to the app: the login form, then
/// `/authz/sign-in` again, which sets the cookie and returns to `rd`. Returns the
/// final response (the redirect to the app).
pub async fn sign_in_through(app: &TestApp, b: &reqwest::Client, sign_in: &str, username: &str) -> reqwest::Response {
    let fields = app.open_login(b, sign_in).await;
    let resp = app.submit_login(b, fields, username, PASSWORD).await;
    assert_eq!(resp.status(), 302, "the sign-in failed");
    let back = location(&resp);
    assert!(back.starts_with("/authz/sign-in?rd="), "{back}");
    b.get(app.url(&back)).send().await.unwrap()
}

fn header(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers().get(name).map(|v| v.to_str().unwrap().to_string())
}

#[tokio::test]
async fn a_signed_in_browser_passes_with_its_identity_and_one_audit_event() {
    let (app, addr) = spawn_fa(|_| {}).await;
    let alice = app.add_user("alice").await;
    join(&app, alice.id, "staff").await;
    join(&app, alice.id, "wiki-users").await;
    protect(&app, "wiki", "http://wiki.example.test", |_| {}).await;
    let b = browser_at(addr, &[]);

    let original = "http://wiki.example.test/page/1?x=a%2Fb";
    let resp = ask(&app, &b, original).await;
    assert_eq!(resp.status(), 302);
    let sign_in = location(&resp);
    let expected = url::Url::parse_with_params(&app.url("/authz/sign-in"), &[("rd", original)]).unwrap();
    assert_eq!(sign_in, expected.as_str());

    let resp = sign_in_through(&app, &b, &sign_in, "alice").await;
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), original);
    let set = header(&resp, SET_COOKIE.as_str()).unwrap();
    assert!(set.starts_with("tessera_fa="), "{set}");
    for part in ["Domain=example.test", "HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set.contains(part), "{part} missing in {set}");
    }
    assert!(!set.contains("Secure"), "an http app gets no Secure cookie: {set}");
    // The cookie is a token of its own, never the session id.
    let token = set
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("tessera_fa=")
        .to_string();
    let hash = tessera::crypto::TokenHash::of(&token);
    let (tokens, is_session) = app
        .state
        .db
        .read(move |c| {
            Ok((
                db::testing::count_rows(c, "forward_auth_tokens")?,
                db::testing::is_session_id(c, &hash)?,
            ))
        })
        .await
        .unwrap();
    assert_eq!((tokens, is_session), (1, false));

    for _ in 0..5 {
        let resp = ask(&app, &b, original).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "remote-user").as_deref(), Some("alice"));
        assert_eq!(header(&resp, "remote-email").as_deref(), Some("alice@example.com"));
        assert_eq!(header(&resp, "remote-name").as_deref(), Some("Test User"));
        assert_eq!(header(&resp, "remote-groups").as_deref(), Some("staff,wiki-users"));
        assert_eq!(header(&resp, "cache-control").as_deref(), Some("no-store"));
    }
    let granted: Vec<_> = app
        .audit()
        .await
        .into_iter()
        .filter(|(e, _, _)| e == "forward_auth.granted")
        .collect();
    assert_eq!(
        granted,
        vec![(
            "forward_auth.granted".to_string(),
            Some("alice".to_string()),
            Some("app:wiki".to_string())
        )]
    );
}

#[tokio::test]
async fn auth_request_answers_401_with_the_sign_in_url_and_a_prefix_of_its_own() {
    let (app, addr) = spawn_fa(|_| {}).await;
    app.add_user("bob").await;
    protect(&app, "grafana", "https://grafana.example.test", |s| {
        s.header_prefix = Some("X-Auth-".into())
    })
    .await;
    let b = browser_at(addr, &[]);
    let ask = || {
        b.get(app.url("/authz/auth-request"))
            .header("X-Original-URL", "https://grafana.example.test/d/abc")
            .header("X-Original-Method", "GET")
            .send()
    };
    let resp = ask().await.unwrap();
    assert_eq!(resp.status(), 401);
    let sign_in = header(&resp, LOCATION.as_str()).unwrap();
    assert!(sign_in.starts_with(&app.url("/authz/sign-in?rd=https%3A%2F%2Fgrafana.example.test")));
    let resp = sign_in_through(&app, &b, &sign_in, "bob").await;
    assert_eq!(location(&resp), "https://grafana.example.test/d/abc");
    assert!(header(&resp, SET_COOKIE.as_str()).unwrap().contains("Secure"));
    // reqwest keeps a Secure cookie for https only; the proxy would forward the
    // browser's Cookie header, which this test sends itself.
    let token = header(&resp, SET_COOKIE.as_str()).unwrap();
    let token = token.split(';').next().unwrap().to_string();
    let resp = plain_client()
        .get(format!("http://127.0.0.1:{}/authz/auth-request", addr.port()))
        .header("X-Original-URL", "https://grafana.example.test/d/abc")
        .header("Cookie", token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-auth-user").as_deref(), Some("bob"));
    assert!(header(&resp, "remote-user").is_none());
}

#[tokio::test]
async fn untrusted_peers_unregistered_hosts_and_spoofed_headers_get_nothing() {
    let (app, addr) = spawn_fa(|s| s.trusted_proxies.clear()).await;
    protect(&app, "wiki", "http://wiki.example.test", |_| {}).await;
    let b = browser_at(addr, &[]);
    let resp = ask(&app, &b, "http://wiki.example.test/").await;
    assert_eq!(resp.status(), 403, "an untrusted peer's X-Forwarded-* decide nothing");

    let (app, addr) = spawn_fa(|_| {}).await;
    protect(&app, "wiki", "http://wiki.example.test", |_| {}).await;
    let b = browser_at(addr, &[]);
    assert_eq!(ask(&app, &b, "http://other.example.test/").await.status(), 403);
    assert_eq!(ask(&app, &b, "http://wiki.example.test:8080/").await.status(), 403);
    // Identity headers a client sends are not a sign-in.
    let resp = b
        .get(app.url("/authz/forward-auth"))
        .header("X-Forwarded-Proto", "http")
        .header("X-Forwarded-Host", "wiki.example.test")
        .header("X-Forwarded-Uri", "/")
        .header("Remote-User", "admin")
        .header("Remote-Groups", "admins")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    assert!(resp.headers().get("remote-user").is_none());
}

#[tokio::test]
async fn malformed_or_ambiguous_targets_are_refused() {
    let (app, addr) = spawn_fa(|_| {}).await;
    protect(&app, "wiki", "http://wiki.example.test", |_| {}).await;
    app.add_user("alice").await;
    let b = browser_at(addr, &[]);
    for (host, uri) in [
        ("wiki.example.test", "//evil.example/"),
        ("wiki.example.test", "/a%2Fb"),
        ("wiki.example.test", "/a/../admin"),
        ("wiki.example.test", "no-slash"),
        ("wiki.example.test, evil.example", "/"),
        ("evil.example@wiki.example.test", "/"),
    ] {
        let resp = b
            .get(app.url("/authz/forward-auth"))
            .header("X-Forwarded-Proto", "http")
            .header("X-Forwarded-Host", host)
            .header("X-Forwarded-Uri", uri)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{host} {uri}");
    }
    let twice = b
        .get(app.url("/authz/forward-auth"))
        .header("X-Forwarded-Proto", "http")
        .header("X-Forwarded-Host", "wiki.example.test")
        .header("X-Forwarded-Host", "evil.example")
        .header("X-Forwarded-Uri", "/")
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), 400);

    // A signed-in browser still never gets a cookie for, or a redirect to, these.
    app.portal_login(&b, "alice", PASSWORD).await;
    for rd in [
        "http://evil.example/",
        "http://wiki.example.test@evil.example/",
        "http://evil.example\\@wiki.example.test/",
        "http://wiki.example.test/a%2Fb",
        "http://wiki.example.test//evil.example",
        "//wiki.example.test/",
        "http://wiki.example.test/\r\nSet-Cookie:%20x=y",
        "javascript:alert(1)//wiki.example.test/",
        "http://wiki.other.test/",
        "https://wiki.example.test/",
        "",
    ] {
        let url = url::Url::parse_with_params(&app.url("/authz/sign-in"), &[("rd", rd)]).unwrap();
        let resp = b.get(url.as_str()).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{rd:?}");
        assert!(resp.headers().get(SET_COOKIE).is_none(), "{rd:?}");
        assert!(resp.headers().get(LOCATION).is_none(), "{rd:?}");
    }
}

#[tokio::test]
async fn group_and_second_factor_rules_are_enforced_per_app() {
    let (app, addr) = spawn_fa(|_| {}).await;
    let carol = app.add_user("carol").await;
    join(&app, carol.id, "operators").await;
    protect(&app, "ops", "http://ops.example.test", |s| {
        s.allowed_groups = vec!["operators".into()]
    })
    .await;
    protect(&app, "vault", "http://vault.example.test", |s| s.require_mfa = true).await;
    let b = browser_at(addr, &[]);
    let resp = ask(&app, &b, "http://ops.example.test/").await;
    sign_in_through(&app, &b, &location(&resp), "carol").await;
    assert_eq!(ask(&app, &b, "http://ops.example.test/").await.status(), 200);
    // Membership is read on every question: leaving the group closes the app.
    app.state
        .db
        .write(move |c| {
            let gid = db::groups::id_of(c, "operators")?.unwrap();
            db::groups::set_member(c, gid, carol.id, false)
        })
        .await
        .unwrap();
    let resp = ask(&app, &b, "http://ops.example.test/").await;
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("not in a group allowed"));
    // A password-only session does not open an app that needs a second factor.
    let resp = ask(&app, &b, "http://vault.example.test/").await;
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("second factor"));
}

#[tokio::test]
async fn signing_out_disabling_the_account_and_expiry_end_access_at_once() {
    let (app, addr) = spawn_fa(|_| {}).await;
    app.add_user("dave").await;
    protect(&app, "wiki", "http://wiki.example.test", |_| {}).await;
    let page = "http://wiki.example.test/";

    // Sign-out at Tessera.
    let b = browser_at(addr, &[]);
    let resp = ask(&app, &b, page).await;
    sign_in_through(&app, &b, &location(&resp), "dave").await;
    assert_eq!(ask(&app, &b, page).await.status(), 200);
    let html = b.get(app.url("/logout")).send().await.unwrap().text().await.unwrap();
    let resp = b
        .post(app.url("/logout/confirm"))
        .form(&form_fields(&html))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let cleared: Vec<_> = resp
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    assert!(cleared
        .iter()
        .any(|c| c.starts_with("tessera_fa=;") && c.contains("Domain=example.test")));
    assert_eq!(ask(&app, &b, page).await.status(), 302);

    // An administrator disabling the account.
    let b = browser_at(addr, &[]);
    let resp = ask(&app, &b, page).await;
    sign_in_through(&app, &b, &location(&resp), "dave").await;
    assert_eq!(ask(&app, &b, page).await.status(), 200);
    app.state
        .db
        .write(move |c| db::users::set_disabled(c, "dave", true, 0))
        .await
        .unwrap();
    assert_eq!(ask(&app, &b, page).await.status(), 302);
    app.state
        .db
        .write(move |c| db::users::set_disabled(c, "dave", false, 0))
        .await
        .unwrap();

    // The session running out.
    let b = browser_at(addr, &[]);
    let resp = ask(&app, &b, page).await;
    sign_in_through(&app, &b, &location(&resp), "dave").await;
    assert_eq!(ask(&app, &b, page).await.status(), 200);
    app.clock.advance(app.state.settings.lifetimes.session + 1);
    assert_eq!(ask(&app, &b, page).await.status(), 302);
}

#[tokio::test]
async fn a_pinned_proxy_site_a_scheme_switch_and_a_second_visit_change_nothing() {
    let (app, addr) = spawn_fa(|_| {}).await;
    app.add_user("erin").await;
    protect(&app, "wiki", "http://wiki.example.test", |_| {}).await;
    protect(&app, "vault", "https://vault.example.test", |_| {}).await;
    let b = browser_at(addr, &[]);
    let resp = ask(&app, &b, "http://wiki.example.test/").await;
    sign_in_through(&app, &b, &location(&resp), "erin").await;
    let pinned = |query: &'static str, host: &'static str| {
        b.get(format!("{}?{query}", app.url("/authz/forward-auth")))
            .header("X-Forwarded-Proto", "http")
            .header("X-Forwarded-Host", host)
            .header("X-Forwarded-Uri", "/")
            .send()
    };
    assert_eq!(pinned("app=wiki", "wiki.example.test").await.unwrap().status(), 200);
    // The site is the vault's: whatever host the client claims, wiki's rules never apply.
    assert_eq!(pinned("app=vault", "wiki.example.test").await.unwrap().status(), 403);
    assert_eq!(pinned("app=nope", "wiki.example.test").await.unwrap().status(), 403);
    assert_eq!(
        pinned("app=wiki&app=vault", "wiki.example.test")
            .await
            .unwrap()
            .status(),
        400
    );

    // An https app is never returned to over http (its cookie is Secure).
    let url = url::Url::parse_with_params(&app.url("/authz/sign-in"), &[("rd", "http://vault.example.test/")]).unwrap();
    let resp = b.get(url.as_str()).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.headers().get(SET_COOKIE).is_none());

    // Coming back to sign-in with a live cookie of the same session adds no token.
    let url = url::Url::parse_with_params(&app.url("/authz/sign-in"), &[("rd", "http://wiki.example.test/")]).unwrap();
    for _ in 0..3 {
        assert_eq!(b.get(url.as_str()).send().await.unwrap().status(), 302);
    }
    let tokens = app
        .state
        .db
        .read(|c| db::testing::count_rows(c, "forward_auth_tokens"))
        .await
        .unwrap();
    assert_eq!(tokens, 1);
}

#[tokio::test]
async fn apps_stay_within_the_cookie_domain_and_keep_their_groups() {
    let (app, _) = spawn_fa(|_| {}).await;
    let spec = |id: &str, url: &str| AppSpec {
        id: id.into(),
        url: url.into(),
        ..AppSpec::default()
    };
    for (id, url, why) in [
        (
            "far",
            "https://app.elsewhere.org",
            "outside the forward-auth cookie domain",
        ),
        ("own", "http://auth.example.test", "Tessera's own host"),
    ] {
        let err = tessera::admin::apps::create(&app.state.ctx(), &actor(), &spec(id, url))
            .await
            .unwrap_err();
        assert!(format!("{err:?}").contains(why), "{err:?}");
    }
    // A group an app admits alone cannot be deleted: the app would open to everyone.
    let user = app.add_user("frank").await;
    join(&app, user.id, "ops").await;
    protect(&app, "ops", "https://ops.example.test", |s| {
        s.allowed_groups = vec!["ops".into()]
    })
    .await;
    let gid = app
        .state
        .db
        .read(|c| db::groups::id_of(c, "ops"))
        .await
        .unwrap()
        .unwrap();
    let err = tessera::admin::groups::delete(&app.state.ctx(), &actor(), gid)
        .await
        .unwrap_err();
    assert!(format!("{err:?}").contains("apps ops admit only this group"), "{err:?}");
}

#[tokio::test]
async fn an_administrator_ending_every_session_ends_them_all_however_many() {
    let (app, addr) = spawn_fa(|_| {}).await;
    let gina = app.add_user("gina").await;
    protect(&app, "wiki", "http://wiki.example.test", |_| {}).await;
    let b = browser_at(addr, &[]);
    let resp = ask(&app, &b, "http://wiki.example.test/").await;
    sign_in_through(&app, &b, &location(&resp), "gina").await;
    assert_eq!(ask(&app, &b, "http://wiki.example.test/").await.status(), 200);
    // More newer sessions than a page of the session list holds.
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| {
            for i in 0..205 {
                let hash = tessera::crypto::TokenHash::of(&format!("extra-{i}"));
                db::sessions::create(
                    c,
                    &db::sessions::NewSession {
                        id_hash: &hash,
                        sid: &format!("extra-sid-{i}"),
                        user_id: gina.id,
                        auth_time: now,
                        now: now + 1,
                        expires_at: now + 3600,
                        amr: "pwd",
                        user_agent: None,
                        ip: None,
                    },
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let ended = tessera::admin::users::end_sessions(&app.state.ctx(), &actor(), gina.id, None)
        .await
        .unwrap();
    assert_eq!(ended, 206);
    assert_eq!(ask(&app, &b, "http://wiki.example.test/").await.status(), 302);
}
