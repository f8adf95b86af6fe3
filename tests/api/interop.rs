//! Relying parties that others wrote: Python's authlib and Node's openid-client run
//! code + PKCE, userinfo, refresh, introspection, logout and revocation against a
//! spawned server (scripts in tests/interop; `.ci/run` installs their packages).

use std::process::Command;

use crate::helpers::*;

const AFTER_LOGOUT: &str = "http://localhost:8080/signed-out";

/// Whether the runtime and packages are present; in CI their absence is a failure.
fn available(check: &mut Command, what: &str) -> bool {
    let ok = check.output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is not installed; .ci/run installs it"
        );
        eprintln!("SKIPPED: {what} is not installed (run .ci/run or see tests/interop)");
    }
    ok
}

async fn run(program: &str, script: &str) {
    let app = spawn_app().await;
    app.add_user("interop").await;
    let secret = app
        .add_client_with("interop-rp", false, |c| {
            c.post_logout_redirect_uris = vec![AFTER_LOGOUT.into()]
        })
        .await
        .unwrap();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");
    let mut cmd = Command::new(program);
    cmd.arg(format!("{dir}/{script}"))
        .current_dir(dir)
        .env("ISSUER", &app.address)
        .env("CLIENT_ID", "interop-rp")
        .env("CLIENT_SECRET", &secret)
        .env("USERNAME", "interop")
        .env("PASSWORD", PASSWORD)
        .env("REDIRECT_URI", REDIRECT)
        .env("POST_LOGOUT_URI", AFTER_LOGOUT);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("interop: ok"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_authlib_relying_party() {
    if available(
        Command::new("python3").args(["-c", "import authlib, requests"]),
        "Python authlib",
    ) {
        run("python3", "authlib_rp.py").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_openid_client_relying_party() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");
    let mut probe = Command::new("node");
    probe.current_dir(dir).args([
        "-e",
        "import('openid-client').then(() => process.exit(0), () => process.exit(1))",
    ]);
    if available(&mut probe, "Node openid-client") {
        run("node", "openid_client_rp.mjs").await;
    }
}
