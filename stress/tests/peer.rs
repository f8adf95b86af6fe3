//! The load driver against the peer of `make stress-peer` (node oidc-provider, started
//! from stress/peer): the same flow runs there through its interaction pages, so the
//! side-by-side comparison cannot rot unnoticed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/peer");

/// Whether node and the pinned packages are there; under CI they must be.
fn ready() -> bool {
    let installed = Path::new(PEER).join("node_modules/oidc-provider").exists()
        && Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "node or stress/peer's packages are missing; .ci/run installs them"
        );
        eprintln!("SKIPPED: the peer needs node and `npm ci --prefix stress/peer` (or .ci/run)");
    }
    installed
}

struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn driver(issuer: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tessera-stress"))
        .args(args)
        .env("TESSERA_ISSUER", issuer)
        .env("STRESS_CLIENT_SECRET", "peer-test-secret")
        .env("STRESS_USERS", "3")
        .env("STRESS_SCOPE", "openid profile email offline_access")
        .env("STRESS_PROMPT", "consent")
        .env_remove("STRESS_TARGETS")
        .output()
        .unwrap()
}

#[test]
fn the_driver_runs_the_full_flow_against_oidc_provider() {
    if !ready() {
        return;
    }
    let port = free_port();
    let peer = Command::new("node")
        .arg(Path::new(PEER).join("server.mjs"))
        .env("PEER_PORT", port.to_string())
        .env("STRESS_USERS", "3")
        .env("STRESS_CLIENT_SECRET", "peer-test-secret")
        .env("BCRYPT_COST", "4")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = peer.id().to_string();
    let _peer = Peer(peer);
    let issuer = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "the peer did not start");
        std::thread::sleep(Duration::from_millis(100));
    }

    let out = driver(
        &issuer,
        &["flow", "--vus", "2", "--duration", "2s", "--json", "--server-pid", &pid],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["errors"], serde_json::json!({}), "{report}");
    assert!(report["iterations"].as_u64().unwrap() > 0, "{report}");
    assert!(report["server"]["cpu_seconds"].as_f64().unwrap() > 0.0, "{report}");

    // A refresh token comes only with offline_access and prompt=consent: without the
    // prompt the flow fails at the token step, so the driver's flags are what work.
    let token = driver(&issuer, &["sign-in"]);
    assert!(token.status.success(), "{}", String::from_utf8_lossy(&token.stderr));
    assert!(!String::from_utf8_lossy(&token.stdout).trim().is_empty());
    let without = Command::new(env!("CARGO_BIN_EXE_tessera-stress"))
        .args(["flow", "--vus", "1", "--duration", "1s", "--json"])
        .env("TESSERA_ISSUER", &issuer)
        .env("STRESS_CLIENT_SECRET", "peer-test-secret")
        .env("STRESS_USERS", "3")
        .env("STRESS_SCOPE", "openid profile email offline_access")
        .env_remove("STRESS_PROMPT")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&without.stdout).unwrap();
    assert!(
        report["errors"]["token: tokens missing"].as_u64().unwrap_or(0) > 0,
        "{report}"
    );
}
