//! tessera-stress: drives a running Tessera with the same flows as the k6 scripts in
//! `stress/`, plus micro-scenarios, and reports k6-like statistics, JSON and an SVG chart.

mod bench;
mod chart;
mod flow;
mod scenario;
mod stats;
mod targets;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::scenario::{Plan, Stage};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// The full PKCE flow: authorize, login, token, introspect, refresh
    Flow,
    /// Authorize and login only (password hashing bound)
    LoginOnly,
    /// Code exchange with an SSO session (no password per iteration)
    TokenOnly,
    /// Refresh-token rotation
    RefreshOnly,
    /// Introspection of an access token
    IntrospectOnly,
    /// The authorization request that shows the login page
    AuthorizeOnly,
    /// Logins saturating the CPU while probes measure token, refresh, introspect
    Storm,
    /// bcrypt verifications per second on all cores: the ceiling of full flows
    Bcrypt,
    /// Single-row durable commits per second through the storage writer
    Writer,
    /// One thread signing access-token-shaped JWTs with the server's own code, per
    /// algorithm: what a signature costs, to tell it from the rest of a request
    Sign,
    /// 50 login attempts per second; expects 429 with Retry-After
    Ratelimit,
    /// Sign in once and print the access token (for wrk and curl)
    SignIn,
}

#[derive(Parser, Debug)]
#[command(name = "tessera-stress", about = "Load driver for Tessera")]
struct Args {
    /// What to run
    #[arg(value_enum)]
    kind: Kind,
    /// A k6 script's shape: smoke, load, spike or ceiling (sets VUs, stages, think time)
    #[arg(long)]
    preset: Option<String>,
    /// Issuer URL of the server under test
    #[arg(long, env = "TESSERA_ISSUER", default_value = "http://127.0.0.1:9000")]
    issuer: String,
    /// Comma-separated base URLs of the nodes behind the issuer, taken in turn per
    /// request (several nodes on one database); default: the issuer itself
    #[arg(long, env = "STRESS_TARGETS")]
    targets: Option<String>,
    #[arg(long, env = "STRESS_CLIENT_ID", default_value = "stress")]
    client_id: String,
    #[arg(long, env = "STRESS_CLIENT_SECRET", default_value = "")]
    client_secret: String,
    #[arg(long, env = "STRESS_REDIRECT_URI", default_value = "http://127.0.0.1:9999/callback")]
    redirect_uri: String,
    /// Users are PREFIX1 … PREFIXN, one per VU
    #[arg(long, env = "STRESS_USER_PREFIX", default_value = "stress")]
    user_prefix: String,
    #[arg(long, env = "STRESS_USERS", default_value_t = 500)]
    users: usize,
    #[arg(long, env = "STRESS_PASSWORD", default_value = "stress-password")]
    password: String,
    /// Scopes of each authorization request
    #[arg(long, env = "STRESS_SCOPE", default_value = "openid profile email")]
    scope: String,
    /// `prompt` of each authorization request (a peer that issues refresh tokens only
    /// for offline_access with prompt=consent needs "consent")
    #[arg(long, env = "STRESS_PROMPT")]
    prompt: Option<String>,
    /// Constant number of virtual users (ignored with --stages)
    #[arg(long, default_value_t = 10)]
    vus: usize,
    /// How long to run at constant VUs, e.g. 30s, 3m
    #[arg(long, default_value = "30s", value_parser = scenario::parse_duration)]
    duration: Duration,
    /// Ramping stages like k6: "30s:50,30s:100,1m:100,10s:0"
    #[arg(long, value_parser = scenario::parse_stage_list)]
    stages: Option<scenario::Stages>,
    /// Pause after each iteration, e.g. 1s, 500ms
    #[arg(long, default_value = "0s", value_parser = scenario::parse_duration)]
    think: Duration,
    /// Storm: virtual users measuring token/refresh/introspect beside the logins
    #[arg(long, default_value_t = 4)]
    probe_vus: usize,
    /// bcrypt cost for the ceiling calibration (match the server's)
    #[arg(long, default_value_t = 10)]
    bcrypt_cost: u32,
    /// Measure the bcrypt ceiling first and report flows per ceiling
    #[arg(long)]
    calibrate: bool,
    /// PID of the server, to sample its resident memory
    #[arg(long)]
    server_pid: Option<u32>,
    /// Print JSON instead of the table
    #[arg(long)]
    json: bool,
    /// Write an SVG chart of latency percentiles and throughput per VU level
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Writer scenario: synchronous=FULL (durable) instead of NORMAL
    #[arg(long)]
    durable: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = Args::parse();
    let mut stages: Option<Vec<Stage>> = args.stages.take().map(|s| s.0);
    if let Some(name) = args.preset.clone() {
        if let Err(e) = scenario::apply_preset(&name, &mut args.vus, &mut args.duration, &mut stages, &mut args.think) {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    let plan = Plan::new(args.vus, args.duration, stages, args.think);
    let report = match args.kind {
        Kind::Bcrypt => bench::bcrypt_ceiling(args.bcrypt_cost, Duration::from_secs(5))
            .await
            .map(stats::Report::note),
        Kind::Writer => bench::writer(args.durable, args.duration)
            .await
            .map(stats::Report::note),
        Kind::Sign => bench::sign(args.duration).await.map(stats::Report::note),
        Kind::Ratelimit => match flow::Target::new(&args).await {
            Ok(target) => scenario::ratelimit(&target, args.duration).await,
            Err(e) => Err(e),
        },
        Kind::SignIn => {
            let token = match flow::Target::new(&args).await {
                Ok(target) => scenario::access_token(&target).await,
                Err(e) => Err(e),
            };
            return match token {
                Ok(token) => {
                    println!("{token}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            };
        }
        kind => {
            let target = flow::Target::new(&args).await;
            match target {
                Ok(target) => scenario::run(kind, target, plan, &args).await,
                Err(e) => Err(e),
            }
        }
    };
    match report {
        Ok(report) => {
            if args.json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.table());
            }
            if let Some(path) = &args.svg {
                if let Err(e) = std::fs::write(path, chart::svg(&report)) {
                    eprintln!("error: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
            if report.errors_total() > 0 {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_scope_and_prompt_parse_from_the_command_line() {
        let args = Args::try_parse_from([
            "tessera-stress",
            "flow",
            "--stages",
            "10s:500,1m:500",
            "--scope",
            "openid offline_access",
            "--prompt",
            "consent",
        ])
        .unwrap();
        let stages = args.stages.unwrap().0;
        assert_eq!(stages.len(), 2);
        assert_eq!(stages[1].target, 500);
        assert_eq!(args.scope, "openid offline_access");
        assert_eq!(args.prompt.as_deref(), Some("consent"));
        assert!(Args::try_parse_from(["tessera-stress", "flow", "--stages", "soon"]).is_err());
    }
}
