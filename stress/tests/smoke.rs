//! A few seconds of the load driver against a spawned Tessera: every step of the flow
//! runs, is measured, and nothing fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tessera::clock::Clock;
use tessera::config::Settings;
use tessera::crypto::random::random_id;
use tessera::db::{self, clients::Client};
use tessera::domain::Secret;
use tessera::startup::Application;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_runs_the_full_flow_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (issuer, secret) = spawn_with_client_and_users(dir.path()).await;

    let svg = dir.path().join("chart.svg");
    let args = [
        "flow",
        "--vus",
        "3",
        "--duration",
        "2s",
        "--users",
        "3",
        "--json",
        "--svg",
    ];
    let report = drive(
        args.iter().map(|a| a.to_string()).chain([svg.display().to_string()]),
        &issuer,
        &secret,
    )
    .await;
    assert_eq!(report["errors"], serde_json::json!({}), "{report}");
    assert!(report["iterations"].as_u64().unwrap() > 0);
    assert_eq!(steps(&report), ["authorize", "login", "token", "introspect", "refresh"]);
    assert!(std::fs::read_to_string(dir.path().join("chart.svg"))
        .unwrap()
        .contains("<svg"));

    // The storm's probes measure the login page beside the token endpoints, and the
    // server's CPU is read from /proc for the process given.
    let args = [
        "storm",
        "--vus",
        "2",
        "--probe-vus",
        "1",
        "--duration",
        "2s",
        "--users",
        "3",
        "--json",
        "--server-pid",
    ];
    let pid = std::process::id().to_string();
    let report = drive(args.iter().map(|a| a.to_string()).chain([pid]), &issuer, &secret).await;
    assert_eq!(
        steps(&report),
        ["authorize", "login", "token", "introspect", "refresh", "login page"]
    );
    assert!(report["server"]["cpu_seconds"].as_f64().unwrap() > 0.0, "{report}");
}

/// A server on a database in `dir` with the client `stress` and the people stress1 to
/// stress3: its issuer and the client's secret.
async fn spawn_with_client_and_users(dir: &std::path::Path) -> (String, String) {
    let settings = Settings {
        db_path: dir.join("smoke.db"),
        listen: "127.0.0.1:0".parse().unwrap(),
        bcrypt_cost: 4,
        workers: 2,
        hash_threads: 2,
        rate_limit: false,
        lockout: false,
        ..Settings::default()
    };
    let app = Application::build(settings, Clock::system()).await.unwrap();
    let issuer = format!("http://127.0.0.1:{}", app.port());
    let state = app.state().clone();
    tokio::spawn(app.run_until_stopped());

    let secret = Secret::generate();
    let hash = secret.hash();
    let password_hash = bcrypt::hash("stress-password", 4).unwrap();
    state
        .db
        .write(move |c| {
            let client = Client::new(
                "stress",
                "Stress",
                Some(hash),
                vec!["http://127.0.0.1:9999/callback".into()],
            );
            db::clients::insert(c, &client)?;
            for i in 1..=3 {
                let name = format!("stress{i}");
                db::users::insert(
                    c,
                    &db::users::NewUser {
                        sub: &random_id(),
                        username: &name,
                        email: None,
                        name: None,
                        password_hash: &password_hash,
                        is_admin: false,
                        now: 0,
                    },
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
    (issuer, secret.expose().to_string())
}

/// The driver run with `args` against `issuer`, off the async threads; it must
/// succeed, and its JSON report is returned.
async fn drive(args: impl Iterator<Item = String>, issuer: &str, secret: &str) -> serde_json::Value {
    let args: Vec<String> = args.collect();
    let (issuer, secret) = (issuer.to_string(), secret.to_string());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera-stress"))
            .args(&args)
            .env("TESSERA_ISSUER", &issuer)
            .env("STRESS_CLIENT_SECRET", &secret)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The names of the steps a report measured, in order.
fn steps(report: &serde_json::Value) -> Vec<&str> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect()
}
