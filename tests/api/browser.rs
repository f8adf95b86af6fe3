//! The whole journey in a real browser: Debian's Chromium, driven by
//! tests/browser/journey.mjs (playwright-core), against the real binary on an empty
//! database — from the printed setup link to a TOTP sign-in through a client.
//! Screenshots land in test-artifacts/browser/.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_tessera");
const CHROMIUM: &str = "/usr/bin/chromium";

fn ready() -> bool {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/browser/node_modules/playwright-core"
    );
    let ok = std::path::Path::new(CHROMIUM).exists() && std::path::Path::new(dir).exists();
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium or playwright-core is missing; .ci/run installs them"
        );
        eprintln!("skipping: install chromium and run `npm ci --prefix tests/browser` (or .ci/run)");
    }
    ok
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

#[test]
fn setup_admin_client_user_totp_journey_in_chromium() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = Command::new(BIN)
        .arg("--db")
        .arg(dir.path().join("tessera.db"))
        // A host name, not an address: WebAuthn refuses IP addresses as relying parties.
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--issuer", &format!("http://localhost:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let link = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.trim().strip_prefix("setup:").map(|s| s.trim().to_string()))
        .expect("a setup link on the console");
    std::thread::spawn(move || lines.for_each(drop));

    let root = env!("CARGO_MANIFEST_DIR");
    let shots = format!("{root}/test-artifacts/browser");
    let _ = std::fs::remove_dir_all(&shots);
    let out = Command::new("node")
        .arg(format!("{root}/tests/browser/journey.mjs"))
        .current_dir(format!("{root}/tests/browser"))
        // The issuer the link was printed with: forms are checked against its origin.
        .env("BASE", link.split("/setup").next().unwrap())
        .env("SETUP_URL", &link)
        .env("SHOTS", &shots)
        .env("CHROMIUM", CHROMIUM)
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the browser journey failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("journey complete"));
    let pngs = std::fs::read_dir(&shots).unwrap().count();
    assert!(pngs >= 20, "a screenshot per page ({pngs})");
}
