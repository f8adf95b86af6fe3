//! The forward-auth journey in a real browser: Debian's Chromium, driven by
//! tests/browser/forward_auth.mjs (playwright-core), through the real nginx and Caddy
//! of the harness in front of the real binary, set up through the CLI.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use super::harness::{free_port, start_caddy, start_nginx, EchoApp, Proxy, Site, AUTH_HOST, DOMAIN};
use crate::browser::{ready, CHROMIUM};

const BIN: &str = env!("CARGO_BIN_EXE_tessera");

/// Forward-auth in Chromium through both real proxies, driven by
/// tests/browser/forward_auth.mjs: the real binary on `auth.example.test`, an app behind
/// nginx (`auth_request`) and one behind Caddy (`forward_auth`), both on the cookie
/// domain `example.test`, set up through the CLI. Signing in for the first app opens
/// the second, signing out at Tessera closes both, and a user outside the apps' group
/// is refused. Screenshots land in test-artifacts/browser-forward-auth/.
#[test]
fn forward_auth_journey_through_nginx_and_caddy_in_chromium() {
    /// The server, stopped however the test ends.
    struct Running(std::process::Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    if !ready() || !Proxy::Nginx.installed() || !Proxy::Caddy.installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    let mut ports = Vec::new();
    while ports.len() < 3 {
        let p = free_port();
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    let (port, nginx_port, caddy_port) = (ports[0], ports[1], ports[2]);
    let issuer = format!("http://{}:{port}", AUTH_HOST);
    let nginx_app = format!("http://{}:{nginx_port}", Proxy::Nginx.app_host());
    let caddy_app = format!("http://{}:{caddy_port}", Proxy::Caddy.app_host());
    let password = "a forward-auth passphrase 5";
    let cli = |args: &[&str], stdin: Option<&str>| {
        let db = db.to_str().unwrap();
        let args: Vec<&str> = ["--db", db].into_iter().chain(args.iter().copied()).collect();
        crate::helpers::tessera_ok(&args, &[], stdin)
    };
    cli(&["init"], None);
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
        cli(&args, Some(&stdin));
    }
    cli(
        &["app", "add", "app", "--url", &nginx_app, "--allowed-group", "staff"],
        None,
    );
    cli(
        &["app", "add", "app2", "--url", &caddy_app, "--allowed-group", "staff"],
        None,
    );

    let mut server = Running(
        Command::new(BIN)
            .arg("--db")
            .arg(&db)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--issuer", &issuer])
            .args(["--trusted-proxies", "127.0.0.1/32"])
            .args(["--forward-auth-cookie-domain", DOMAIN])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    let listening = lines.by_ref().map_while(Result::ok).any(|l| l.contains("issuer:"));
    assert!(listening, "the server printed no issuer");
    std::thread::spawn(move || lines.for_each(drop));
    let app = EchoApp::start();
    let site = |id, proxy: Proxy| Site {
        id,
        host: proxy.app_host(),
        backend: app.port,
    };
    let _nginx = start_nginx(dir.path(), nginx_port, port, &[site("app", Proxy::Nginx)]);
    let _caddy = start_caddy(dir.path(), caddy_port, port, &[site("app2", Proxy::Caddy)]);

    let root = env!("CARGO_MANIFEST_DIR");
    let shots = format!("{root}/test-artifacts/browser-forward-auth");
    let _ = std::fs::remove_dir_all(&shots);
    let out = Command::new("node")
        .arg(format!("{root}/tests/browser/forward_auth.mjs"))
        .current_dir(format!("{root}/tests/browser"))
        .env("ISSUER", &issuer)
        .env("NGINX_APP", &nginx_app)
        .env("CADDY_APP", &caddy_app)
        .env("USERNAME", "alice")
        .env("PASSWORD", password)
        .env("OUTSIDER", "bob")
        .env("SHOTS", &shots)
        .env("CHROMIUM", CHROMIUM)
        .output()
        .unwrap();
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the forward-auth journey failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("forward-auth journey: ok"));
    let pngs = std::fs::read_dir(&shots).unwrap().count();
    assert!(pngs >= 7, "a screenshot per page ({pngs})");
}
