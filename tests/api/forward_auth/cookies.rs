//! Two cookies of one name (one tossed in by a sibling host under the shared cookie
//! domain, RFC 6265 §8.6): neither is believed, and the answer is the one for a browser
//! that carries none, for the forward-auth cookie and the SSO session cookie alike.

use std::net::SocketAddr;

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use super::{ask, browser_at, header, protect, sign_in_through, spawn_fa};
use crate::helpers::*;

/// The `name=value` pair of the response's `Set-Cookie` for `name`.
fn set_cookie(resp: &reqwest::Response, name: &str) -> String {
    resp.headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .find(|pair| pair.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie set"))
        .to_string()
}

/// Forward-auth's answer for `url` when the browser sends `cookies` (one Cookie
/// header per entry), asked as Traefik (`/authz/forward-auth`) or nginx
/// (`/authz/auth-request`).
async fn ask_with(tessera: SocketAddr, nginx: bool, url: &str, cookies: &[&str]) -> reqwest::Response {
    let at = |path: &str| format!("http://127.0.0.1:{}{path}", tessera.port());
    let mut req = if nginx {
        plain_client()
            .get(at("/authz/auth-request"))
            .header("X-Original-URL", url)
    } else {
        let u = url::Url::parse(url).unwrap();
        plain_client()
            .get(at("/authz/forward-auth"))
            .header("X-Forwarded-Proto", u.scheme())
            .header("X-Forwarded-Host", u.host_str().unwrap())
            .header("X-Forwarded-Uri", u.path())
    };
    for c in cookies {
        req = req.header(COOKIE, *c);
    }
    req.send().await.unwrap()
}

fn count(events: &[(String, Option<String>, Option<String>)], name: &str) -> usize {
    events.iter().filter(|(e, _, _)| e == name).count()
}

#[tokio::test]
async fn two_forward_auth_cookies_are_answered_as_none_and_audited_once_each() {
    let (app, addr) = spawn_fa(|_| {}).await;
    app.add_user("alice").await;
    app.add_user("mallory").await;
    protect(&app, "wiki", "http://wiki.example.test", |_| {}).await;
    let url = "http://wiki.example.test/page";
    let mut tokens = Vec::new();
    for who in ["alice", "mallory"] {
        let b = browser_at(addr, &[]);
        let sign_in = location(&ask(&app, &b, url).await);
        let resp = sign_in_through(&app, &b, &sign_in, who).await;
        tokens.push(set_cookie(&resp, "tessera_fa"));
    }
    let (alice, mallory) = (tokens[0].as_str(), tokens[1].as_str());
    let both = format!("{alice}; {mallory}");
    let reversed = format!("{mallory}; {alice}");
    let mut refused = 0;
    for nginx in [false, true] {
        let none = ask_with(addr, nginx, url, &[]).await;
        let expected = (none.status(), header(&none, LOCATION.as_str()));
        assert_eq!(expected.0, if nginx { 401 } else { 302 });
        let tossed: [&[&str]; 4] = [&[&both], &[&reversed], &[alice, mallory], &[alice, alice]];
        for cookies in tossed {
            let resp = ask_with(addr, nginx, url, cookies).await;
            refused += 1;
            assert_eq!(
                (resp.status(), header(&resp, LOCATION.as_str())),
                expected,
                "{cookies:?}"
            );
            assert!(header(&resp, "remote-user").is_none(), "{cookies:?}");
            assert!(header(&resp, SET_COOKIE.as_str()).is_none());
        }
        // One cookie of each still passes as its own account.
        let resp = ask_with(addr, nginx, url, &[alice]).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "remote-user").as_deref(), Some("alice"));
    }
    let events = app.audit().await;
    assert_eq!(count(&events, "forward_auth.cookie_conflict"), refused);
    let granted: Vec<_> = events.iter().filter(|(e, _, _)| e == "forward_auth.granted").collect();
    assert_eq!(
        granted.len(),
        1,
        "only alice's single cookie opened the app: {granted:?}"
    );
    assert_eq!(granted[0].1.as_deref(), Some("alice"));
}

#[tokio::test]
async fn two_session_cookies_are_answered_as_not_signed_in() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_user("mallory").await;
    let mut sessions = Vec::new();
    for who in ["alice", "mallory"] {
        let b = browser();
        let fields = app.open_login(&b, &app.url("/account")).await;
        let resp = app.submit_login(&b, fields, who, PASSWORD).await;
        assert_eq!(resp.status(), 302);
        sessions.push(set_cookie(&resp, "tessera_session"));
    }
    let account = |cookies: Vec<String>| {
        let mut req = plain_client().get(app.url("/account"));
        for c in cookies {
            req = req.header(COOKIE, c);
        }
        req.send()
    };
    let signed_out = account(vec![]).await.unwrap();
    assert_eq!(signed_out.status(), 200);
    let login_page = form_fields(&signed_out.text().await.unwrap());
    assert!(login_page.contains_key("password"), "not signed in: the sign-in form");

    let one = account(vec![sessions[0].clone()]).await.unwrap();
    assert_eq!(one.status(), 200);
    assert!(one.text().await.unwrap().contains("alice"));

    let (alice, mallory) = (&sessions[0], &sessions[1]);
    for cookies in [
        vec![format!("{alice}; {mallory}")],
        vec![format!("{mallory}; {alice}")],
        vec![alice.clone(), mallory.clone()],
    ] {
        let resp = account(cookies.clone()).await.unwrap();
        assert_eq!(resp.status(), 200, "{cookies:?}");
        let page = resp.text().await.unwrap();
        assert!(form_fields(&page).contains_key("password"), "{cookies:?}: {page}");
        assert!(!page.contains("mallory") && !page.contains("alice@"), "{cookies:?}");
    }
}
