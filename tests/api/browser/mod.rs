//! The whole journey in a real browser: Debian's Chromium, driven by
//! tests/browser/journey.mjs (playwright-core), against the real binary on an empty
//! database — from the printed setup link to a TOTP sign-in through a client.
//! Screenshots land in test-artifacts/browser/.

mod federation;

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

/// A server process, stopped however the test ends.
pub(crate) struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The binary serving `db` on `port` as `issuer`, once its banner says it listens.
fn serve_as(db: &std::path::Path, port: u16, issuer: &str) -> Running {
    let mut command = Command::new(BIN);
    command
        .arg("--db")
        .arg(db)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--issuer", issuer]);
    listening(&mut command, issuer)
}

/// `command` (a `tessera serve` as `issuer`) started, once its banner says it listens.
pub(crate) fn listening(command: &mut Command, issuer: &str) -> Running {
    let mut server = Running(command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap());
    // The banner comes once the server is listening.
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    let listening = lines.by_ref().map_while(Result::ok).any(|l| l.contains("issuer:"));
    assert!(listening, "the server at {issuer} printed no issuer");
    std::thread::spawn(move || lines.for_each(drop));
    server
}

/// `n` free ports, all different.
pub(crate) fn free_ports(n: usize) -> Vec<u16> {
    let mut ports = Vec::new();
    while ports.len() < n {
        let p = free_port();
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    ports
}

/// test-artifacts/`name`/, emptied, for a script's screenshots.
pub(crate) fn shots_dir(name: &str) -> String {
    let shots = format!("{}/test-artifacts/{name}", env!("CARGO_MANIFEST_DIR"));
    let _ = std::fs::remove_dir_all(&shots);
    shots
}

/// `node` running tests/browser/`script` in Chromium, screenshots going to `shots`.
pub(crate) fn node(script: &str, shots: &str) -> Command {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut node = Command::new("node");
    node.arg(format!("{root}/tests/browser/{script}"))
        .current_dir(format!("{root}/tests/browser"))
        .env("SHOTS", shots)
        .env("CHROMIUM", CHROMIUM);
    node
}

/// Checks a script succeeded (`what` names it in the failure) and printed `done`.
pub(crate) fn assert_journey(out: &std::process::Output, stdout: &str, what: &str, done: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(done));
}

/// How many screenshots a script left.
pub(crate) fn screenshots(shots: &str) -> usize {
    std::fs::read_dir(shots).unwrap().count()
}

/// The `tessera` command on `db` with `args`, `stdin` written to it; its output.
pub(crate) fn cli_on(db: &std::path::Path, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> String {
    let db = db.to_str().unwrap();
    let args: Vec<&str> = ["--db", db].into_iter().chain(args.iter().copied()).collect();
    crate::helpers::tessera_ok(&args, env, stdin)
}

#[test]
fn setup_admin_client_user_totp_journey_in_chromium() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = Command::new(BIN)
        .arg("--db")
        .arg(dir.path().join("tessera.db"))
        // A host name, not an address: WebAuthn refuses IP addresses as relying parties.
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--issuer", &format!("http://localhost:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut server = Running(server);
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    let link = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.trim().strip_prefix("setup:").map(|s| s.trim().to_string()))
        .expect("a setup link on the console");
    std::thread::spawn(move || lines.for_each(drop));

    let shots = shots_dir("browser");
    let out = node("journey.mjs", &shots)
        // The issuer the link was printed with: forms are checked against its origin.
        .env("BASE", link.split("/setup").next().unwrap())
        .env("SETUP_URL", &link)
        .output()
        .unwrap();
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert_journey(&out, &stdout, "the browser journey", "journey complete");
    let pngs = screenshots(&shots);
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
    let server = Running(serve(&db, port, &env));
    let ready = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < ready, "the server did not start");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let shots = shots_dir(shots);
    let out = node(script, &shots)
        .env("BASE", &issuer)
        .envs(from_setup)
        .output()
        .unwrap();
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_journey(&out, &stdout, script, done);
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
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    let ports = free_ports(2);
    let (port, spa_port) = (ports[0], ports[1]);
    let issuer = format!("http://localhost:{port}");
    let spa = format!("http://localhost:{spa_port}");
    let password = "alice's spa password";

    let server = serve_as(&db, port, &issuer);
    add_the_spa_user_and_client(&db, &spa, password);

    let shots = shots_dir("browser-spa");
    let out = node("spa.mjs", &shots)
        .env("BASE", &issuer)
        .env("SPA_PORT", spa_port.to_string())
        .env("CLIENT_ID", "spa")
        .env("USERNAME", "alice")
        .env("PASSWORD", password)
        .output()
        .unwrap();
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert_journey(&out, &stdout, "the SPA journey", "spa journey complete");
    let pngs = screenshots(&shots);
    assert!(pngs >= 3, "screenshots of sign-in, signed in and signed out ({pngs})");
}

/// The user and the public client `spa` at `spa`, added beside the running server.
fn add_the_spa_user_and_client(db: &std::path::Path, spa: &str, password: &str) {
    cli_on(
        db,
        &[
            "user",
            "add",
            "alice",
            "--email",
            "alice@example.com",
            "--password-stdin",
        ],
        &[],
        Some(&format!("{password}\n")),
    );
    let (callback, silent, home) = (
        format!("{spa}/callback.html"),
        format!("{spa}/silent.html"),
        format!("{spa}/index.html"),
    );
    cli_on(
        db,
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
            spa,
            "--grant-type",
            "authorization_code",
            "--grant-type",
            "refresh_token",
        ],
        &[],
        Some(""),
    );
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
    let ports = free_ports(3);
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
    let secret = prepare_the_mail_database(&db, &env, rp_port);

    let shots = shots_dir("browser-mail");
    let mut journey = node("mail.mjs", &shots)
        .env("BASE", &issuer)
        .env("SMTP_PORT", smtp_port.to_string())
        .env("RP_PORT", rp_port.to_string())
        .env("CLIENT_SECRET", &secret)
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
    let server = Running(serve(&db, port, &env));
    said.extend(lines.map_while(Result::ok));
    let out = journey.wait_with_output().unwrap();
    drop(server);
    let stdout = said.join("\n");
    println!("{stdout}");
    assert_journey(&out, &stdout, "the mail journey", "mail journey complete");
    let pngs = screenshots(&shots);
    assert!(pngs >= 15, "a screenshot per page ({pngs})");
}

/// The database of the mail journeys: a client `demo` answering at `rp_port`, the
/// person `mia`, and an invitation queued for `nia`; the client's secret.
fn prepare_the_mail_database(db: &std::path::Path, env: &[(&str, &str)], rp_port: u16) -> String {
    cli_on(db, &["init"], env, None);
    let client: serde_json::Value = serde_json::from_str(&cli_on(
        db,
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
        env,
        None,
    ))
    .unwrap();
    let secret = client["client_secret"].as_str().unwrap().to_string();
    cli_on(
        db,
        &[
            "user",
            "add",
            "mia",
            "--email",
            "mia@example.com",
            "--email-verified",
            "--password-stdin",
        ],
        env,
        Some("the first passphrase 7\n"),
    );
    // Queued in the outbox now; the server's mailer sends it once it runs.
    let invited = cli_on(db, &["user", "invite", "nia@example.com"], env, None);
    assert!(invited.contains("/invite?token="), "{invited}");
    secret
}
