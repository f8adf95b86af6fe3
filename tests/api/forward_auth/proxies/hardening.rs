//! What a client may try against the documented proxy configurations beyond spoofed
//! `Remote-*` headers: a request line naming one app while `Host` names another
//! (RFC 9112 §3.2.2: the request line's host wins), a Host no site names, forwarded
//! headers of its own, a forged client address; and the app must never be handed the
//! `tessera_fa` token, which opens every app under the cookie domain.

use super::{raw_http, status_of, Proxy, Stack, OPEN_HOST, STRANGER_HOST};

/// A raw HTTP/1.1 request to the proxy: `target` in the request line, `host` in Host.
fn request(target: &str, host: &str, token: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nCookie: tessera_fa={token}\r\nConnection: close\r\n\r\n")
}

/// Whether an answer came from one of the echo backends (they answer JSON naming the
/// request target).
fn from_a_backend(answer: &Option<String>) -> bool {
    answer.as_deref().is_some_and(|a| a.contains("\"target\""))
}

async fn host_confusion(proxy: Proxy) {
    let Some(s) = Stack::start(proxy).await else { return };
    let b = s.browser();
    // bob may use the open wiki, not the staff-only app.
    let (resp, token) = s.sign_in(&b, &format!("{}/", s.origin(OPEN_HOST)), "bob").await;
    assert_eq!(resp.status(), 200);
    let wiki_seen = s.open.seen().len();
    let (app_host, wiki_host) = (
        format!("{}:{}", proxy.app_host(), s.port),
        format!("{OPEN_HOST}:{}", s.port),
    );

    // The request line names the app and Host the wiki: the proxy routes by the request
    // line, so the app's rule must be the one applied.
    let absolute = format!("http://{app_host}/secret");
    let answer = raw_http(s.port, &request(&absolute, &wiki_host, &token)).await;
    let answer = answer.expect("an answer to an absolute-form request");
    assert_eq!(status_of(&answer), 403, "judged as the app it reaches: {answer}");
    assert!(!from_a_backend(&Some(answer)));

    // The other way round the wiki answers, from its own backend.
    let absolute = format!("http://{wiki_host}/page");
    let answer = raw_http(s.port, &request(&absolute, &app_host, &token)).await;
    let answer = answer.expect("an answer");
    assert_eq!(status_of(&answer), 200, "{answer}");
    assert_eq!(s.open.seen().last().map(|r| r.target.as_str()), Some("/page"));

    // A Host no site is configured for, and one a proxy only knows as its address.
    let hosts = [
        format!("{STRANGER_HOST}:{}", s.port),
        format!("127.0.0.1:{}", s.port),
        format!("intranet.example.test:{}", s.port),
    ];
    for host in &hosts {
        let answer = raw_http(s.port, &request("/secret", host, &token)).await;
        assert!(!from_a_backend(&answer), "Host {host}: {answer:?}");
        // Caddy answers a Host no site names with an empty 200 of its own, and the
        // unregistered site's app with Tessera's 403; nginx's default server closes
        // the connection.
        if proxy == Proxy::Nginx {
            assert_eq!(answer, None, "nginx's default server closes the connection unanswered");
        }
    }

    // The client's own forwarded headers name the wiki while the request is for the
    // app: nginx sends none of them, Caddy's header_up puts the real host in their place.
    let spoof = format!(
        "GET /secret HTTP/1.1\r\nHost: {app_host}\r\nX-Forwarded-Host: {wiki_host}\r\n\
         X-Forwarded-Proto: http\r\nX-Forwarded-Uri: /page\r\nCookie: tessera_fa={token}\r\n\
         Connection: close\r\n\r\n"
    );
    let answer = raw_http(s.port, &spoof).await.expect("an answer");
    assert_eq!(status_of(&answer), 403, "still the app's rule: {answer}");

    assert!(
        s.app.seen().is_empty(),
        "the staff-only backend saw nothing: {:?}",
        s.app.seen()
    );
    assert_eq!(s.open.seen().len(), wiki_seen + 1, "the wiki saw only its own request");
}

/// The app gets the browser's other cookies, in order, and never `tessera_fa`.
async fn cookie_kept_from_the_app(proxy: Proxy) {
    let Some(s) = Stack::start(proxy).await else { return };
    let url = format!("{}/", s.origin(proxy.app_host()));
    let (resp, token) = s.sign_in(&s.browser(), &url, "alice").await;
    assert_eq!(resp.status(), 200);
    let fa = format!("tessera_fa={token}");
    let cases = [
        (format!("theme=dark; {fa}; lang=en"), Some("theme=dark; lang=en")),
        (format!("{fa}; theme=dark"), Some("theme=dark")),
        (format!("theme=dark; {fa}"), Some("theme=dark")),
        (format!("theme=dark;{fa};lang=en"), Some("theme=dark;lang=en")),
        (fa.clone(), None),
    ];
    let b = s.bare();
    for (sent, want) in cases {
        let resp = b.get(&url).header("Cookie", &sent).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{sent}: Tessera still got the token");
        let got = s.app.seen().pop().unwrap();
        let cookies: Vec<&str> = got.all("cookie").into_iter().filter(|c| !c.is_empty()).collect();
        assert!(
            cookies.iter().all(|c| !c.contains("tessera_fa") && !c.contains(&token)),
            "{sent}: the app got {cookies:?}"
        );
        match want {
            Some(w) => assert_eq!(cookies, [w], "{sent}"),
            None if proxy == Proxy::Nginx => assert!(cookies.is_empty(), "{sent}: {cookies:?}"),
            None => assert!(cookies.iter().all(|c| c.trim() == "theme=dark"), "{sent}: {cookies:?}"),
        }
    }
    // A second tessera_fa another host under the domain planted: Tessera believes
    // neither, so the browser is sent to sign in and the app sees nothing.
    let seen = s.app.seen().len();
    let sent = format!("{fa}; theme=dark; tessera_fa=planted");
    let resp = b.get(&url).header("Cookie", &sent).send().await.unwrap();
    assert_eq!(resp.status(), 302, "{sent}: sent to sign in");
    let to = resp.headers()["location"].to_str().unwrap();
    assert!(to.contains("/authz/sign-in?rd="), "{to}");
    assert_eq!(s.app.seen().len(), seen, "{sent}: the app saw the request");
}

/// The address audited for a grant is the one the proxy saw, not one the client wrote.
async fn audited_address(proxy: Proxy) {
    let Some(s) = Stack::start(proxy).await else { return };
    let b = s.browser();
    let (resp, _) = s.sign_in(&b, &format!("{}/", s.origin(OPEN_HOST)), "alice").await;
    assert_eq!(resp.status(), 200);
    // The first use of this token for the app: the grant is audited now.
    let resp = b
        .get(format!("{}/", s.origin(proxy.app_host())))
        .header("X-Forwarded-For", "203.0.113.9")
        .header("Forwarded", "for=203.0.113.9")
        .header("X-Real-IP", "203.0.113.9")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (entries, _) = s
        .tessera
        .state
        .db
        .read(|c| tessera::db::audit::list(c, &tessera::db::audit::Filter::default(), 1_000, 0))
        .await
        .unwrap();
    let grant = entries
        .iter()
        .find(|e| e.event == "forward_auth.granted" && e.target.as_deref() == Some("app:app"))
        .expect("the grant for the app is audited");
    assert_eq!(grant.ip.as_deref(), Some("127.0.0.1"), "{grant:?}");
}

#[tokio::test]
async fn nginx_judges_each_request_as_the_app_it_reaches_whatever_host_the_client_names() {
    host_confusion(Proxy::Nginx).await;
}

#[tokio::test]
async fn caddy_judges_each_request_as_the_app_it_reaches_whatever_host_the_client_names() {
    host_confusion(Proxy::Caddy).await;
}

#[tokio::test]
async fn nginx_keeps_the_forward_auth_cookie_from_the_app() {
    cookie_kept_from_the_app(Proxy::Nginx).await;
}

#[tokio::test]
async fn caddy_keeps_the_forward_auth_cookie_from_the_app() {
    cookie_kept_from_the_app(Proxy::Caddy).await;
}

#[tokio::test]
async fn nginx_audits_the_address_it_saw_not_a_forwarded_one() {
    audited_address(Proxy::Nginx).await;
}

#[tokio::test]
async fn caddy_audits_the_address_it_saw_not_a_forwarded_one() {
    audited_address(Proxy::Caddy).await;
}
