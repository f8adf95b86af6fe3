//! The whole journey in a real browser: Debian's Chromium, driven by
//! tests/browser/journey.mjs (playwright-core), against the real binary on an empty
//! database — from the printed setup link to a TOTP sign-in through a client.
//! Screenshots land in test-artifacts/browser/.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_tessera");
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// Whether Chromium and playwright-core are there (tests/api/forward_auth/proxies.rs
/// asks too, for its journey in Chromium).
pub(crate) fn ready() -> bool {
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
        eprintln!("SKIPPED: the browser tests need Chromium and playwright-core: install chromium and run `npm ci --prefix tests/browser` (or .ci/run)");
    }
    ok
}

/// Chosen before the servers start, unlike the other process tests' port 0: the issuer
/// must be `localhost` (passkeys and cookies need it) and is fixed by `--issuer`, and
/// the single-page app's origin is registered with its client before either runs.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// The binary serving `db` on `port` with the settings in `env` (bcrypt at its
/// cheapest: the browser tests measure pages, not hashing).
fn serve(db: &std::path::Path, port: u16, env: &[(&str, &str)]) -> std::process::Child {
    Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("TESSERA_BCRYPT_COST", "4")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
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
    assert!(pngs >= 35, "a screenshot per page ({pngs})");
}

/// Starts a server on a fresh database with `env` (after `setup` has run the CLI on
/// it; its output is handed to the script as `from_setup`), runs the Chromium script
/// `script` against it and checks it printed `done`. Screenshots land in
/// test-artifacts/`shots`/.
fn passkey_script(
    script: &str,
    shots: &str,
    env: &[(&str, &str)],
    setup: impl FnOnce(&str, &[(&str, &str)]) -> Vec<(String, String)>,
    done: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    let db_arg = db.to_str().unwrap().to_string();
    let port = free_port();
    let issuer = format!("http://localhost:{port}");
    let mut env = env.to_vec();
    env.push(("TESSERA_ISSUER", issuer.as_str()));
    crate::helpers::tessera_ok(&["--db", &db_arg, "init"], &env, None);
    let from_setup = setup(&db_arg, &env);
    let mut server = serve(&db, port, &env);
    let ready = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < ready, "the server did not start");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let shots = format!("{root}/test-artifacts/{shots}");
    let _ = std::fs::remove_dir_all(&shots);
    let out = Command::new("node")
        .arg(format!("{root}/tests/browser/{script}"))
        .current_dir(format!("{root}/tests/browser"))
        .env("BASE", &issuer)
        .env("SHOTS", &shots)
        .env("CHROMIUM", CHROMIUM)
        .envs(from_setup)
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(done));
}

/// Username-first sign-in in Chromium with its virtual authenticator (driven by
/// tests/browser/passkey_modes.mjs): the username, then the password or the account's
/// passkey. Screenshots land in test-artifacts/browser-passkeys/.
#[test]
fn username_first_sign_in_with_a_passkey_in_chromium() {
    if !ready() {
        return;
    }
    let env = [("TESSERA_PASSKEY_MODE", "username-first")];
    let setup = |db: &str, env: &[(&str, &str)]| {
        crate::helpers::tessera_ok(
            &["--db", db, "user", "add", "nora", "--password-stdin"],
            env,
            Some("nora's long passphrase\n"),
        );
        Vec::new()
    };
    passkey_script(
        "passkey_modes.mjs",
        "browser-passkeys",
        &env,
        setup,
        "passkey modes complete",
    );
}

/// Passkey-only accounts in Chromium with its virtual authenticator (driven by
/// tests/browser/passkey_only.mjs): an invitation accepted with a passkey and no
/// password, the username step asking for the passkey alone, and a confirmation with
/// it. Screenshots land in test-artifacts/browser-passkey-only/.
#[test]
fn passkey_only_accounts_in_chromium() {
    if !ready() {
        return;
    }
    let env = [("TESSERA_PASSKEY_MODE", "passkey-only"), ("TESSERA_SIGNUP", "invite")];
    let setup = |db: &str, env: &[(&str, &str)]| {
        let out = crate::helpers::tessera_ok(&["--db", db, "user", "invite", "iris@example.org"], env, None);
        let link = out
            .split_whitespace()
            .find(|w| w.contains("/invite?token="))
            .expect("the invitation link is printed")
            .to_string();
        vec![("INVITE".to_string(), link)]
    };
    passkey_script(
        "passkey_only.mjs",
        "browser-passkey-only",
        &env,
        setup,
        "passkey-only complete",
    );
}

/// A single-page app on another origin: the pinned oidc-client-ts in Chromium, driven
/// by tests/browser/spa.mjs, signs in with PKCE, renews with its refresh token and
/// through a prompt=none iframe, and signs out at the end_session_endpoint — after
/// which prompt=none says login_required. Screenshots land in test-artifacts/browser-spa/.
#[test]
fn oidc_client_ts_spa_signs_in_renews_and_logs_out_cross_origin() {
    use std::io::Write;

    fn cli(db: &std::path::Path, args: &[&str], stdin: &str) {
        let mut child = Command::new(BIN)
            .arg("--db")
            .arg(db)
            .args(args)
            .env("TESSERA_BCRYPT_COST", "4")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The server, stopped however the test ends.
    struct Running(std::process::Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    let port = free_port();
    let spa_port = std::iter::repeat_with(free_port).find(|p| *p != port).unwrap();
    let issuer = format!("http://localhost:{port}");
    let spa = format!("http://localhost:{spa_port}");
    let password = "alice's spa password";

    let mut server = Running(
        Command::new(BIN)
            .arg("--db")
            .arg(&db)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--issuer", &issuer])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The banner comes once the server is listening.
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    let listening = lines.by_ref().map_while(Result::ok).any(|l| l.contains("issuer:"));
    assert!(listening, "the server printed no issuer");
    std::thread::spawn(move || lines.for_each(drop));

    // The user and the client, added beside the running server.
    cli(
        &db,
        &[
            "user",
            "add",
            "alice",
            "--email",
            "alice@example.com",
            "--password-stdin",
        ],
        &format!("{password}\n"),
    );
    let (callback, silent, home) = (
        format!("{spa}/callback.html"),
        format!("{spa}/silent.html"),
        format!("{spa}/index.html"),
    );
    cli(
        &db,
        &[
            "client",
            "add",
            "spa",
            "--public",
            "--redirect-uri",
            &callback,
            "--redirect-uri",
            &silent,
            "--post-logout-redirect-uri",
            &home,
            "--web-origin",
            &spa,
            "--grant-type",
            "authorization_code",
            "--grant-type",
            "refresh_token",
        ],
        "",
    );

    let root = env!("CARGO_MANIFEST_DIR");
    let shots = format!("{root}/test-artifacts/browser-spa");
    let _ = std::fs::remove_dir_all(&shots);
    let out = Command::new("node")
        .arg(format!("{root}/tests/browser/spa.mjs"))
        .current_dir(format!("{root}/tests/browser"))
        .env("BASE", &issuer)
        .env("SPA_PORT", spa_port.to_string())
        .env("CLIENT_ID", "spa")
        .env("USERNAME", "alice")
        .env("PASSWORD", password)
        .env("SHOTS", &shots)
        .env("CHROMIUM", CHROMIUM)
        .output()
        .unwrap();
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the SPA journey failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("spa journey complete"));
    let pngs = std::fs::read_dir(&shots).unwrap().count();
    assert!(pngs >= 3, "screenshots of sign-in, signed in and signed out ({pngs})");
}

/// The mail journeys in Chromium against the real binary with a real SMTP server (in
/// tests/browser/mail.mjs): invitation, open sign-up with verification, password reset
/// then a second factor that remembers the device, a sign-in link, account deletion.
/// Screenshots land in test-artifacts/browser-mail/.
#[test]
fn mail_journeys_in_chromium() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    let db_arg = db.to_str().unwrap().to_string();
    let mut ports = Vec::new();
    while ports.len() < 3 {
        let p = free_port();
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    let (port, smtp_port, rp_port) = (ports[0], ports[1], ports[2]);
    let issuer = format!("http://localhost:{port}");
    let smtp_url = format!("smtp://127.0.0.1:{smtp_port}");
    let env = [
        ("TESSERA_SMTP_URL", smtp_url.as_str()),
        ("TESSERA_SMTP_FROM", "Example ID <id@example.org>"),
        ("TESSERA_SIGNUP", "open"),
        ("TESSERA_ORG_NAME", "Example Org"),
        ("TESSERA_ISSUER", issuer.as_str()),
    ];
    let run = |args: &[&str], stdin: Option<&str>| {
        let args: Vec<&str> = ["--db", db_arg.as_str()]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        crate::helpers::tessera_ok(&args, &env, stdin)
    };
    run(&["init"], None);
    let client: serde_json::Value = serde_json::from_str(&run(
        &[
            "client",
            "add",
            "demo",
            "--name",
            "Demo app",
            "--redirect-uri",
            &format!("http://127.0.0.1:{rp_port}/cb"),
            "--json",
        ],
        None,
    ))
    .unwrap();
    let secret = client["client_secret"].as_str().unwrap().to_string();
    run(
        &[
            "user",
            "add",
            "mia",
            "--email",
            "mia@example.com",
            "--email-verified",
            "--password-stdin",
        ],
        Some("the first passphrase 7\n"),
    );
    // Queued in the outbox now; the server's mailer sends it once it runs.
    let invited = run(&["user", "invite", "nia@example.com"], None);
    assert!(invited.contains("/invite?token="), "{invited}");

    let root = env!("CARGO_MANIFEST_DIR");
    let shots = format!("{root}/test-artifacts/browser-mail");
    let _ = std::fs::remove_dir_all(&shots);
    let mut journey = Command::new("node")
        .arg(format!("{root}/tests/browser/mail.mjs"))
        .current_dir(format!("{root}/tests/browser"))
        .env("BASE", &issuer)
        .env("SMTP_PORT", smtp_port.to_string())
        .env("RP_PORT", rp_port.to_string())
        .env("CLIENT_SECRET", &secret)
        .env("SHOTS", &shots)
        .env("CHROMIUM", CHROMIUM)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(journey.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        let done = line.contains("listening");
        said.push(line);
        if done {
            break;
        }
    }
    let mut server = serve(&db, port, &env);
    said.extend(lines.map_while(Result::ok));
    let out = journey.wait_with_output().unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let stdout = said.join("\n");
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the mail journey failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("mail journey complete"));
    let pngs = std::fs::read_dir(&shots).unwrap().count();
    assert!(pngs >= 15, "a screenshot per page ({pngs})");
}

/// "Sign in with Company SSO" in Chromium, driven by tests/browser/federation.mjs:
/// two real binaries, each on its own database — an upstream Tessera on 127.0.0.1 with
/// the user and a client for the downstream, and a downstream Tessera on `localhost`
/// (another host, so the browser keeps their cookies apart) with the upstream as a
/// just-in-time provider, all set up through the CLI. The relying party gets the
/// upstream's user with amr "fed"; the account page shows the link and no password.
/// Screenshots land in test-artifacts/browser-federation/.
#[test]
fn upstream_sign_in_journey_in_chromium() {
    /// A server, stopped however the test ends.
    struct Running(std::process::Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    fn serve(db: &std::path::Path, port: u16, issuer: &str) -> Running {
        let mut server = Running(
            Command::new(BIN)
                .arg("--db")
                .arg(db)
                .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
                .args(["--issuer", issuer])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        // The banner comes once the server is listening.
        let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
        let listening = lines.by_ref().map_while(Result::ok).any(|l| l.contains("issuer:"));
        assert!(listening, "the server at {issuer} printed no issuer");
        std::thread::spawn(move || lines.for_each(drop));
        server
    }

    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (up_db, down_db) = (dir.path().join("upstream.db"), dir.path().join("downstream.db"));
    let mut ports = Vec::new();
    while ports.len() < 3 {
        let p = free_port();
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    let (up_port, down_port, rp_port) = (ports[0], ports[1], ports[2]);
    let up = format!("http://127.0.0.1:{up_port}");
    let down = format!("http://localhost:{down_port}");
    let (username, password) = ("dana", "dana's upstream passphrase 9");
    let cli = |db: &std::path::Path, args: &[&str], stdin: Option<&str>| {
        let db = db.to_str().unwrap();
        let args: Vec<&str> = ["--db", db].into_iter().chain(args.iter().copied()).collect();
        crate::helpers::tessera_ok(&args, &[], stdin)
    };
    let secret_of = |json: String| -> String {
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["client_secret"].as_str().expect("a client secret").to_string()
    };

    cli(&up_db, &["init"], None);
    cli(&down_db, &["init"], None);

    // The upstream: its user, and the downstream as its client.
    cli(
        &up_db,
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
        Some(&format!("{password}\n")),
    );
    let down_secret = secret_of(cli(
        &up_db,
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
        None,
    ));

    // The downstream: the upstream as provider `up`, and this test's relying party.
    let added = cli(
        &down_db,
        &[
            "provider",
            "add",
            "up",
            "--issuer",
            &up,
            "--client-id",
            "tessera-down",
            "--client-secret-stdin",
            "--name",
            "Company SSO",
            "--jit",
            "--tessera-issuer",
            &down,
        ],
        Some(&format!("{down_secret}\n")),
    );
    assert!(
        added.contains(&format!("{down}/federation/up/callback")),
        "provider add prints the callback to register: {added}"
    );
    assert!(!added.contains(&down_secret), "the secret is never printed");
    let rp_secret = secret_of(cli(
        &down_db,
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
        None,
    ));

    let upstream = serve(&up_db, up_port, &up);
    let downstream = serve(&down_db, down_port, &down);

    let root = env!("CARGO_MANIFEST_DIR");
    let shots = format!("{root}/test-artifacts/browser-federation");
    let _ = std::fs::remove_dir_all(&shots);
    let out = Command::new("node")
        .arg(format!("{root}/tests/browser/federation.mjs"))
        .current_dir(format!("{root}/tests/browser"))
        .env("DOWN", &down)
        .env("UP", &up)
        .env("RP_PORT", rp_port.to_string())
        .env("CLIENT_ID", "demo")
        .env("CLIENT_SECRET", &rp_secret)
        .env("USERNAME", username)
        .env("NAME", "Dana Upstream")
        .env("PASSWORD", password)
        .env("SHOTS", &shots)
        .env("CHROMIUM", CHROMIUM)
        .output()
        .unwrap();
    drop(downstream);
    drop(upstream);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the federation journey failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("federation journey: ok"));
    let pngs = std::fs::read_dir(&shots).unwrap().count();
    assert!(
        pngs >= 4,
        "screenshots of both login pages, the client and the account ({pngs})"
    );
}
