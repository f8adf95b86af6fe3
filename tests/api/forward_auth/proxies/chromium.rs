//! The forward-auth journey in a real browser: Debian's Chromium, driven by
//! tests/browser/forward_auth.mjs (playwright-core), through the real nginx and Caddy
//! of the harness in front of the real binary, set up through the CLI.

use std::process::Command;

use super::harness::{start_caddy, start_nginx, EchoApp, Proxy, Site, AUTH_HOST, DOMAIN};
use crate::browser::{assert_journey, cli_on, free_ports, listening, node, ready, screenshots, shots_dir};

const BIN: &str = env!("CARGO_BIN_EXE_tessera");

/// Forward-auth in Chromium through both real proxies, driven by
/// tests/browser/forward_auth.mjs: the real binary on `auth.example.test`, an app behind
/// nginx (`auth_request`) and one behind Caddy (`forward_auth`), both on the cookie
/// domain `example.test`, set up through the CLI. Signing in for the first app opens
/// the second, signing out at Tessera closes both, and a user outside the apps' group
/// is refused. Screenshots land in test-artifacts/browser-forward-auth/.
#[test]
fn forward_auth_journey_through_nginx_and_caddy_in_chromium() {
    if !ready() || !Proxy::Nginx.installed() || !Proxy::Caddy.installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    let ports = free_ports(3);
    let (port, nginx_port, caddy_port) = (ports[0], ports[1], ports[2]);
    let issuer = format!("http://{}:{port}", AUTH_HOST);
    let nginx_app = format!("http://{}:{nginx_port}", Proxy::Nginx.app_host());
    let caddy_app = format!("http://{}:{caddy_port}", Proxy::Caddy.app_host());
    let password = "a forward-auth passphrase 5";
    add_people_and_apps(&db, password, &nginx_app, &caddy_app);

    let server = listening(
        Command::new(BIN)
            .arg("--db")
            .arg(&db)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--issuer", &issuer])
            .args(["--trusted-proxies", "127.0.0.1/32"])
            .args(["--forward-auth-cookie-domain", DOMAIN]),
        &issuer,
    );
    let app = EchoApp::start();
    let site = |id, proxy: Proxy| Site {
        id,
        host: proxy.app_host(),
        backend: app.port,
    };
    let _nginx = start_nginx(dir.path(), nginx_port, port, &[site("app", Proxy::Nginx)]);
    let _caddy = start_caddy(dir.path(), caddy_port, port, &[site("app2", Proxy::Caddy)]);

    let shots = shots_dir("browser-forward-auth");
    let out = node("forward_auth.mjs", &shots)
        .env("ISSUER", &issuer)
        .env("NGINX_APP", &nginx_app)
        .env("CADDY_APP", &caddy_app)
        .env("USERNAME", "alice")
        .env("PASSWORD", password)
        .env("OUTSIDER", "bob")
        .output()
        .unwrap();
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert_journey(&out, &stdout, "the forward-auth journey", "forward-auth journey: ok");
    let pngs = screenshots(&shots);
    assert!(pngs >= 7, "a screenshot per page ({pngs})");
}

/// alice (staff) and bob (in no group) with `password`, and the apps behind nginx and
/// Caddy for staff only.
fn add_people_and_apps(db: &std::path::Path, password: &str, nginx_app: &str, caddy_app: &str) {
    cli_on(db, &["init"], &[], None);
    let stdin = format!("{password}\n");
    let alice = [
        "--email",
        "alice@example.com",
        "--name",
        "Alice Liddell",
        "--group",
        "staff",
    ];
    for (user, extra) in [("alice", &alice[..]), ("bob", &[][..])] {
        let mut args = vec!["user", "add", user, "--password-stdin"];
        args.extend_from_slice(extra);
        cli_on(db, &args, &[], Some(&stdin));
    }
    cli_on(
        db,
        &["app", "add", "app", "--url", nginx_app, "--allowed-group", "staff"],
        &[],
        None,
    );
    cli_on(
        db,
        &["app", "add", "app2", "--url", caddy_app, "--allowed-group", "staff"],
        &[],
        None,
    );
}
