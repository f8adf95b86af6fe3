//! Relying parties that others wrote: Python's authlib and Node's openid-client run
//! code + PKCE, userinfo, refresh, introspection, logout and revocation against a
//! spawned server, and then the second wave: request objects pushed to PAR (both) and
//! DPoP-bound tokens (openid-client; authlib has no DPoP client). Scripts in
//! tests/interop; `.ci/run` installs their packages.

use std::process::Command;

use crate::helpers::*;

const AFTER_LOGOUT: &str = "http://localhost:8080/signed-out";

async fn run(program: &str, script: &str) {
    let app = spawn_app().await;
    let secret = app
        .add_client_with("interop-rp", false, |c| {
            c.post_logout_redirect_uris = vec![AFTER_LOGOUT.into()]
        })
        .await
        .unwrap();
    run_against(&app, &secret, program, script, &[]).await;
}

/// The second wave: the client signs request objects with its own RSA key (its
/// public half registered) and must push them (PAR and signed requests required),
/// and the server asks for DPoP nonces, so the library's nonce retry is exercised.
async fn run_wave2(program: &str, script: &str) {
    let app = spawn_with(|s| s.protocol.dpop_nonce = true).await;
    let keys = josekit::jws::RS256.generate_key_pair(2048).unwrap();
    let mut private = keys.to_jwk_private_key();
    private.set_key_id("rp-signing");
    let mut public = keys.to_jwk_public_key();
    public.set_key_id("rp-signing");
    let secret = app
        .add_client_with("interop-rp", false, |c| {
            c.jwks = Some(format!(r#"{{"keys":[{public}]}}"#));
            c.require_par = true;
            c.require_signed_request_object = true;
        })
        .await
        .unwrap();
    run_against(&app, &secret, program, script, &[("SIGNING_JWK", private.to_string())]).await;
}

async fn run_against(app: &TestApp, secret: &str, program: &str, script: &str, extra: &[(&str, String)]) {
    app.add_user("interop").await;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");
    let mut cmd = Command::new(program);
    cmd.envs(extra.iter().map(|(k, v)| (k, v)));
    cmd.arg(format!("{dir}/{script}"))
        .current_dir(dir)
        .env("ISSUER", &app.address)
        .env("CLIENT_ID", "interop-rp")
        .env("CLIENT_SECRET", secret)
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
async fn python_authlib_pushes_a_signed_request_object() {
    if available(
        Command::new("python3").args(["-c", "import authlib, requests"]),
        "Python authlib",
    ) {
        run_wave2("python3", "authlib_wave2.py").await;
    }
}

fn openid_client() -> bool {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");
    let mut probe = Command::new("node");
    probe.current_dir(dir).args([
        "-e",
        "import('openid-client').then(() => process.exit(0), () => process.exit(1))",
    ]);
    available(&mut probe, "Node openid-client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_openid_client_relying_party() {
    if openid_client() {
        run("node", "openid_client_rp.mjs").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_openid_client_with_par_jar_and_dpop() {
    if openid_client() {
        run_wave2("node", "openid_client_wave2.mjs").await;
    }
}

/// The resource server the agent client asks tokens for (RFC 8707).
const MCP_RESOURCE: &str = "https://mcp.example.test/mcp";

/// The flow MCP clients use, end to end with a real library: a public client known
/// only by its metadata document's URL, PKCE, a resource indicator and DPoP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_client_signs_in_by_its_metadata_document_with_pkce_and_dpop() {
    if !openid_client() {
        return;
    }
    let app = spawn_with(|s| {
        s.protocol.client_id_documents = true;
        // The script serves its document from loopback.
        s.protocol.fetch_private_addresses = true;
    })
    .await;
    let mut args = vec!["resource", "add", MCP_RESOURCE];
    let db = app.db_args();
    args.extend(db.iter().map(String::as_str));
    tessera_ok(&args, &[], None);
    run_against(
        &app,
        "",
        "node",
        "mcp_client.mjs",
        &[("RESOURCE", MCP_RESOURCE.to_string())],
    )
    .await;
}
