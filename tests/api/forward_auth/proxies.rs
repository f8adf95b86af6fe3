//! Forward-auth behind real proxies: Debian's nginx (`auth_request`) and Caddy
//! (`forward_auth`), started on loopback ports with the configurations in
//! tests/forward_auth/ (docs/FORWARD_AUTH.md's, word for word), in front of two apps
//! that echo the headers they got: one restricted to a group, one open to anyone
//! signed in, each with a backend of its own so that reaching the wrong one shows.
//! Host names resolve to 127.0.0.1 in the client, so Tessera, the apps and the cookie
//! domain are what a deployment would have.

use std::collections::HashMap;
use std::net::SocketAddr;

use reqwest::header::{LOCATION, SET_COOKIE};
use url::Url;

use crate::helpers::{form_fields, spawn_with, tessera_ok, TestApp, PASSWORD};

mod chromium;
mod hardening;
mod harness;

pub use harness::*;

/// Tessera, one proxy and the two apps behind it, all on loopback.
struct Stack {
    proxy: Proxy,
    tessera: TestApp,
    issuer: String,
    port: u16,
    /// The backend of `app` (staff only), and of `wiki` (anyone signed in).
    app: EchoApp,
    open: EchoApp,
    _proxy: Running,
    _dir: tempfile::TempDir,
}

impl Stack {
    /// `None` when the proxy is not installed (outside CI).
    async fn start(proxy: Proxy) -> Option<Self> {
        if !proxy.installed() {
            return None;
        }
        let tport = free_port();
        let issuer = format!("http://{AUTH_HOST}:{tport}");
        let listen: SocketAddr = format!("127.0.0.1:{tport}").parse().unwrap();
        let parsed = tessera::config::parse_issuer(&issuer).unwrap();
        let tessera = spawn_with(move |s| {
            s.listen = listen;
            s.issuer = Some(parsed);
            s.forward_auth_cookie_domain = Some(DOMAIN.into());
            s.trusted_proxies = vec![tessera::domain::Cidr::parse("127.0.0.1/32").unwrap()];
        })
        .await;
        let (dir, port) = (tempfile::tempdir().unwrap(), free_port());
        let (app, open) = (EchoApp::start(), EchoApp::start());
        let mut sites = vec![
            Site {
                id: "app",
                host: proxy.app_host(),
                backend: app.port,
            },
            Site {
                id: "wiki",
                host: OPEN_HOST,
                backend: open.port,
            },
        ];
        let running = match proxy {
            // nginx has no block for the unregistered host: its default server gets it.
            Proxy::Nginx => start_nginx(dir.path(), port, tport, &sites),
            // A site for a host nobody registered, on the restricted app's backend, so
            // that letting it through would show there.
            Proxy::Caddy => {
                sites.push(Site {
                    id: "stranger",
                    host: STRANGER_HOST,
                    backend: app.port,
                });
                start_caddy(dir.path(), port, tport, &sites)
            }
        };
        let stack = Self {
            proxy,
            tessera,
            issuer,
            port,
            app,
            open,
            _proxy: running,
            _dir: dir,
        };
        stack.add_people_and_apps();
        Some(stack)
    }

    /// alice is staff (and ops), carol is staff with no address and no name, bob is in
    /// no group; `app` lets staff in, `wiki` anyone signed in.
    fn add_people_and_apps(&self) {
        // alice is staff (and ops), carol is staff with no address and no name, bob
        // is in no group.
        for (user, extra) in [
            (
                "alice",
                &[
                    "--email",
                    "alice@example.com",
                    "--name",
                    "Alice Liddell",
                    "--group",
                    "ops",
                ][..],
            ),
            ("bob", &["--email", "bob@example.com", "--name", "Bob"][..]),
            ("carol", &[][..]),
        ] {
            let mut args = vec!["user", "add", user, "--password-stdin"];
            args.extend_from_slice(extra);
            if user != "bob" {
                args.extend_from_slice(&["--group", "staff"]);
            }
            self.cli_stdin(&args, &format!("{PASSWORD}\n"));
        }
        // After the users: `user add --group` makes the group the app names.
        self.cli(&[
            "app",
            "add",
            "app",
            "--url",
            &self.origin(self.proxy.app_host()),
            "--allowed-group",
            "staff",
        ]);
        self.cli(&["app", "add", "wiki", "--url", &self.origin(OPEN_HOST)]);
    }

    fn cli(&self, args: &[&str]) -> String {
        self.cli_stdin(args, "")
    }

    fn cli_stdin(&self, args: &[&str], stdin: &str) -> String {
        let db = self.tessera.db_args();
        let all: Vec<&str> = db.iter().map(String::as_str).chain(args.iter().copied()).collect();
        tessera_ok(&all, &[], Some(stdin))
    }

    fn origin(&self, host: &str) -> String {
        format!("http://{host}:{}", self.port)
    }

    /// A browser: a cookie jar, no automatic redirects, every test host on loopback
    /// (the ports are in the URLs).
    fn browser(&self) -> reqwest::Client {
        Self::client(true)
    }

    /// A client without a cookie jar, which sends the `Cookie` header it is given.
    fn bare(&self) -> reqwest::Client {
        Self::client(false)
    }

    fn client(jar: bool) -> reqwest::Client {
        let mut b = reqwest::Client::builder()
            .cookie_store(jar)
            .redirect(reqwest::redirect::Policy::none());
        for host in [
            AUTH_HOST,
            Proxy::Nginx.app_host(),
            Proxy::Caddy.app_host(),
            OPEN_HOST,
            STRANGER_HOST,
        ] {
            b = b.resolve(host, "127.0.0.1:0".parse().unwrap());
        }
        b.build().unwrap()
    }

    /// Opens `url` through the proxy and follows every redirect by hand, as a browser
    /// would; the last answer, and the `tessera_fa` cookies set on the way.
    async fn follow(&self, b: &reqwest::Client, url: &str, hops: &mut Vec<String>) -> reqwest::Response {
        let mut resp = b.get(url).send().await.unwrap();
        for _ in 0..10 {
            hops.extend(fa_cookies(&resp));
            if !resp.status().is_redirection() {
                return resp;
            }
            let next = resp.url().join(resp.headers()[LOCATION].to_str().unwrap()).unwrap();
            resp = b.get(next).send().await.unwrap();
        }
        panic!("more than ten redirects from {url}");
    }

    /// The whole journey: the app sends the browser to sign in at Tessera, which sends
    /// it back with the cookie. Returns the app's answer and the `tessera_fa` cookie.
    async fn sign_in(&self, b: &reqwest::Client, url: &str, username: &str) -> (reqwest::Response, String) {
        let first = b.get(url).send().await.unwrap();
        assert_eq!(first.status(), 302, "{:?}: not signed in, sent to sign in", self.proxy);
        let to = Url::parse(first.headers()[LOCATION].to_str().unwrap()).unwrap();
        assert_eq!(to.origin().ascii_serialization(), self.issuer);
        assert_eq!(to.path(), "/authz/sign-in");
        let rd: HashMap<String, String> = to.query_pairs().into_owned().collect();
        assert_eq!(rd.get("rd").map(String::as_str), Some(url), "rd is the URL asked for");

        let mut cookies = Vec::new();
        let page = self.follow(b, to.as_str(), &mut cookies).await;
        assert_eq!(page.status(), 200);
        assert_eq!(page.url().host_str(), Some(AUTH_HOST), "the login form is Tessera's");
        let mut fields = form_fields(&page.text().await.unwrap());
        assert!(fields.contains_key("password"), "a login form");
        fields.insert("username".into(), username.into());
        fields.insert("password".into(), PASSWORD.into());
        let mut resp = b
            .post(format!("{}/login", self.issuer))
            .form(&fields)
            .send()
            .await
            .unwrap();
        for _ in 0..10 {
            cookies.extend(fa_cookies(&resp));
            if !resp.status().is_redirection() {
                break;
            }
            let next = resp.url().join(resp.headers()[LOCATION].to_str().unwrap()).unwrap();
            resp = b.get(next).send().await.unwrap();
        }
        assert_eq!(resp.url().as_str(), url, "back at the app");
        let [cookie] = &cookies[..] else {
            panic!("one tessera_fa cookie is set: {cookies:?}");
        };
        let attrs: Vec<String> = cookie.split(';').map(|a| a.trim().to_ascii_lowercase()).collect();
        for want in [
            format!("domain={DOMAIN}"),
            "httponly".into(),
            "samesite=lax".into(),
            "path=/".into(),
        ] {
            assert!(attrs.contains(&want), "{want} in {cookie}");
        }
        assert!(!attrs.contains(&"secure".to_string()), "not Secure on http: {cookie}");
        let value = cookie
            .split(';')
            .next()
            .unwrap()
            .trim_start_matches("tessera_fa=")
            .to_string();
        (resp, value)
    }

    /// Signs out at Tessera's own sign-out page (RP-Initiated Logout without a hint:
    /// the confirmation form).
    async fn sign_out(&self, b: &reqwest::Client) {
        let page = b.get(format!("{}/logout", self.issuer)).send().await.unwrap();
        assert_eq!(page.status(), 200);
        let fields = form_fields(&page.text().await.unwrap());
        let done = b
            .post(format!("{}/logout/confirm", self.issuer))
            .form(&fields)
            .send()
            .await
            .unwrap();
        assert_eq!(done.status(), 200);
        assert!(done.text().await.unwrap().contains("Signed out"));
    }
}

/// The `tessera_fa` Set-Cookie lines of a response.
fn fa_cookies(resp: &reqwest::Response) -> Vec<String> {
    resp.headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|v| v.starts_with("tessera_fa="))
        .map(str::to_string)
        .collect()
}

/// The spoofed identity a client sends, hoping the proxy passes it on.
const SPOOF: [(&str, &str); 4] = [
    ("Remote-User", "admin"),
    ("Remote-Email", "admin@example.com"),
    ("Remote-Name", "Administrator"),
    ("Remote-Groups", "staff,admins"),
];

fn spoofed(req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    SPOOF.iter().fold(req, |r, (n, v)| r.header(*n, *v))
}

async fn signed_in_journey(proxy: Proxy) {
    let Some(s) = Stack::start(proxy).await else { return };
    let b = s.browser();
    let url = format!("{}/reports/q3?view=full&x=1", s.origin(proxy.app_host()));

    // A spoofed identity signs nobody in: the proxy asks Tessera, which sends the
    // browser to sign in, and the app sees nothing.
    let resp = spoofed(b.get(&url)).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    assert!(s.app.seen().is_empty(), "the app was not reached: {:?}", s.app.seen());

    let (resp, token) = s.sign_in(&b, &url, "alice").await;
    assert_eq!(resp.status(), 200);
    let seen = s.app.seen();
    let [got] = &seen[..] else {
        panic!("one request reached the app: {seen:?}")
    };
    assert_eq!(got.target, "/reports/q3?view=full&x=1");
    assert_eq!(got.all("remote-user"), ["alice"]);
    assert_eq!(got.all("remote-email"), ["alice@example.com"]);
    assert_eq!(got.all("remote-name"), ["Alice Liddell"]);
    let groups: Vec<&str> = got.all("remote-groups")[0].split(',').collect();
    assert_eq!(groups.len(), 2);
    assert!(groups.contains(&"ops") && groups.contains(&"staff"), "{groups:?}");
    // The cookie reached the app's host (the 200 says Tessera got it through the
    // proxy), but the proxy kept it from the app.
    let cookies = got.all("cookie").join("; ");
    assert!(
        !cookies.contains("tessera_fa") && !cookies.contains(&token),
        "the app never sees the token: {cookies}"
    );
    assert!(s.open.seen().is_empty(), "nothing went to the other app's backend");

    // Signed in, a spoofed identity still does not reach the app: each header once,
    // Tessera's value.
    let resp = spoofed(b.get(&url))
        .header("X-Forwarded-User", "admin")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let got = s.app.seen().pop().unwrap();
    for (name, _) in SPOOF {
        let values = got.all(&name.to_ascii_lowercase());
        assert_eq!(values.len(), 1, "{name} once: {values:?}");
        assert!(!values[0].contains("admin"), "{name}: {values:?}");
    }
    assert_eq!(got.all("remote-user"), ["alice"]);
}

async fn sign_out_cuts_access(proxy: Proxy) {
    let Some(s) = Stack::start(proxy).await else { return };
    let b = s.browser();
    let url = format!("{}/", s.origin(proxy.app_host()));
    let (resp, token) = s.sign_in(&b, &url, "alice").await;
    assert_eq!(resp.status(), 200);
    let reached = s.app.seen().len();

    s.sign_out(&b).await;
    let resp = b.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 302, "signed out: sent to sign in again");
    assert!(resp.headers()[LOCATION]
        .to_str()
        .unwrap()
        .starts_with(&format!("{}/authz/sign-in?", s.issuer)));
    // Not only the browser's cookie: the token itself no longer opens the app.
    let replay = s
        .browser()
        .get(&url)
        .header("Cookie", format!("tessera_fa={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 302, "the old token is refused");
    assert_eq!(s.app.seen().len(), reached, "nothing reached the app after sign-out");
}

async fn refusals(proxy: Proxy) {
    let Some(s) = Stack::start(proxy).await else { return };
    let b = s.browser();
    let open = format!("{}/page", s.origin(OPEN_HOST));
    let (resp, _) = s.sign_in(&b, &open, "bob").await;
    assert_eq!(resp.status(), 200, "bob is signed in and may use the open app");
    assert_eq!(s.open.seen().len(), 1, "through the open app's own backend");
    assert!(s.app.seen().is_empty());

    let app = format!("{}/", s.origin(proxy.app_host()));
    let resp = b.get(&app).send().await.unwrap();
    assert_eq!(resp.status(), 403, "bob is not staff");
    // Forwarded headers from the client cannot point the question at the open app:
    // the proxy pins the URL to the site the request reached and names its app.
    let resp = b
        .get(&app)
        .header("X-Original-URL", &open)
        .header("X-Forwarded-Host", format!("{OPEN_HOST}:{}", s.port))
        .header("X-Forwarded-Uri", "/page")
        .header("X-Forwarded-Proto", "http")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403, "still the app's rule");

    let resp = b.get(format!("{}/", s.origin(STRANGER_HOST))).send().await;
    match proxy {
        Proxy::Nginx => assert!(
            resp.is_err(),
            "nginx's default server closes the connection unanswered: {resp:?}"
        ),
        Proxy::Caddy => assert_eq!(
            resp.unwrap().status(),
            403,
            "a site whose app is not registered is refused"
        ),
    }
    assert!(s.app.seen().is_empty(), "no refused request reached the app");
    assert_eq!(s.open.seen().len(), 1, "nor the open app");
}

/// An account without an address or a name: Tessera sends both headers empty, and the
/// app is told nothing of them (an empty header or none), never a proxy's placeholder
/// text.
async fn missing_attributes(proxy: Proxy) {
    let Some(s) = Stack::start(proxy).await else { return };
    let b = s.browser();
    let url = format!("{}/", s.origin(proxy.app_host()));
    let (resp, _) = s.sign_in(&b, &url, "carol").await;
    assert_eq!(resp.status(), 200);
    let got = s.app.seen().pop().unwrap();
    assert_eq!(got.all("remote-user"), ["carol"]);
    assert_eq!(got.all("remote-groups"), ["staff"]);
    for name in ["remote-email", "remote-name"] {
        assert!(
            got.all(name).iter().all(|v| v.is_empty()),
            "{name}: {:?}",
            got.all(name)
        );
    }
}

#[tokio::test]
async fn nginx_signed_in_journey_reaches_the_app_with_tesseras_headers_only() {
    signed_in_journey(Proxy::Nginx).await;
}

#[tokio::test]
async fn caddy_signed_in_journey_reaches_the_app_with_tesseras_headers_only() {
    signed_in_journey(Proxy::Caddy).await;
}

#[tokio::test]
async fn nginx_sign_out_at_tessera_cuts_access_at_once() {
    sign_out_cuts_access(Proxy::Nginx).await;
}

#[tokio::test]
async fn caddy_sign_out_at_tessera_cuts_access_at_once() {
    sign_out_cuts_access(Proxy::Caddy).await;
}

#[tokio::test]
async fn nginx_refuses_users_outside_the_group_and_unregistered_hosts() {
    refusals(Proxy::Nginx).await;
}

#[tokio::test]
async fn caddy_refuses_users_outside_the_group_and_unregistered_hosts() {
    refusals(Proxy::Caddy).await;
}

#[tokio::test]
async fn nginx_tells_the_app_nothing_of_attributes_an_account_lacks() {
    missing_attributes(Proxy::Nginx).await;
}

#[tokio::test]
async fn caddy_tells_the_app_nothing_of_attributes_an_account_lacks() {
    missing_attributes(Proxy::Caddy).await;
}

/// docs/FORWARD_AUTH.md shows the tested configurations: each template's documented
/// lines, with the docs' addresses, appear in one of its code blocks in order.
#[test]
fn the_docs_show_the_tested_configurations() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/FORWARD_AUTH.md")).unwrap();
    let blocks: Vec<Vec<String>> = docs
        .split("```")
        .skip(1)
        .step_by(2)
        .map(|b| b.lines().skip(1).map(|l| l.trim().to_string()).collect())
        .collect();
    let values = |origin: &str| {
        vec![
            ("PREFIX", "/unused".to_string()),
            ("LISTEN", "443 ssl".to_string()),
            ("APP_ID", "grafana".to_string()),
            ("APP_HOST", "grafana.example.org".to_string()),
            ("APP_ORIGIN", origin.to_string()),
            ("TESSERA", "127.0.0.1:9000".to_string()),
            ("BACKEND", "127.0.0.1:8080".to_string()),
        ]
    };
    for (file, origin) in [
        ("nginx.conf.in", "https://grafana.example.org"),
        ("nginx-app.conf.in", "https://grafana.example.org"),
        ("Caddyfile.in", "grafana.example.org"),
    ] {
        let want = documented(&render(&template(file), &values(origin)));
        assert!(want.len() > 10, "{file} marks its documented lines");
        let shown = blocks
            .iter()
            .any(|b| b.windows(want.len()).any(|w| w == want.as_slice()));
        assert!(
            shown,
            "docs/FORWARD_AUTH.md shows {file}'s documented lines:\n{}",
            want.join("\n")
        );
    }
}
