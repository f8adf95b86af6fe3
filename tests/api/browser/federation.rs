//! "Sign in with Company SSO" in Chromium: an upstream and a downstream Tessera, each
//! the real binary on its own database, set up through the command line.

use super::{assert_journey, cli_on, free_ports, node, ready, screenshots, serve_as, shots_dir};

/// "Sign in with Company SSO" in Chromium, driven by tests/browser/federation.mjs:
/// two real binaries, each on its own database — an upstream Tessera on 127.0.0.1 with
/// the user and a client for the downstream, and a downstream Tessera on `localhost`
/// (another host, so the browser keeps their cookies apart) with the upstream as a
/// just-in-time provider, all set up through the CLI. The relying party gets the
/// upstream's user with amr "fed"; the account page shows the link and no password.
/// Screenshots land in test-artifacts/browser-federation/.
#[test]
fn upstream_sign_in_journey_in_chromium() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (up_db, down_db) = (dir.path().join("upstream.db"), dir.path().join("downstream.db"));
    let ports = free_ports(3);
    let (up_port, down_port, rp_port) = (ports[0], ports[1], ports[2]);
    let up = format!("http://127.0.0.1:{up_port}");
    let down = format!("http://localhost:{down_port}");
    let (username, password) = ("dana", "dana's upstream passphrase 9");

    cli_on(&up_db, &["init"], &[], None);
    cli_on(&down_db, &["init"], &[], None);
    let down_secret = prepare_the_upstream(&up_db, &down, username, password);
    let rp_secret = prepare_the_downstream(&down_db, &up, &down, &down_secret, rp_port);

    let upstream = serve_as(&up_db, up_port, &up);
    let downstream = serve_as(&down_db, down_port, &down);

    let shots = shots_dir("browser-federation");
    let out = node("federation.mjs", &shots)
        .env("DOWN", &down)
        .env("UP", &up)
        .env("RP_PORT", rp_port.to_string())
        .env("CLIENT_ID", "demo")
        .env("CLIENT_SECRET", &rp_secret)
        .env("USERNAME", username)
        .env("NAME", "Dana Upstream")
        .env("PASSWORD", password)
        .output()
        .unwrap();
    drop(downstream);
    drop(upstream);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert_journey(&out, &stdout, "the federation journey", "federation journey: ok");
    let pngs = screenshots(&shots);
    assert!(
        pngs >= 4,
        "screenshots of both login pages, the client and the account ({pngs})"
    );
}

/// The client secret in `client add --json` output.
fn secret_of(json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["client_secret"].as_str().expect("a client secret").to_string()
}

/// The upstream: its user, and the downstream as its client; that client's secret.
fn prepare_the_upstream(up_db: &std::path::Path, down: &str, username: &str, password: &str) -> String {
    cli_on(
        up_db,
        &[
            "user",
            "add",
            username,
            "--email",
            "dana@example.com",
            "--email-verified",
            "--name",
            "Dana Upstream",
            "--password-stdin",
        ],
        &[],
        Some(&format!("{password}\n")),
    );
    secret_of(&cli_on(
        up_db,
        &[
            "client",
            "add",
            "tessera-down",
            "--name",
            "Downstream Tessera",
            "--redirect-uri",
            &format!("{down}/federation/up/callback"),
            "--json",
        ],
        &[],
        None,
    ))
}

/// The downstream: the upstream as provider `up`, and this test's relying party
/// `demo`; its secret.
fn prepare_the_downstream(down_db: &std::path::Path, up: &str, down: &str, down_secret: &str, rp_port: u16) -> String {
    let added = cli_on(
        down_db,
        &[
            "provider",
            "add",
            "up",
            "--issuer",
            up,
            "--client-id",
            "tessera-down",
            "--client-secret-stdin",
            "--name",
            "Company SSO",
            "--jit",
            "--tessera-issuer",
            down,
        ],
        &[],
        Some(&format!("{down_secret}\n")),
    );
    assert!(
        added.contains(&format!("{down}/federation/up/callback")),
        "provider add prints the callback to register: {added}"
    );
    assert!(!added.contains(down_secret), "the secret is never printed");
    secret_of(&cli_on(
        down_db,
        &[
            "client",
            "add",
            "demo",
            "--name",
            "Demo app",
            "--redirect-uri",
            &format!("http://localhost:{rp_port}/callback"),
            "--json",
        ],
        &[],
        None,
    ))
}
