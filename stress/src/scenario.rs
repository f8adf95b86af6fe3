//! Virtual users, stages and think time, as k6 runs them, and the scenarios.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::flow::{Jar, Target};
use crate::stats::{Recorder, Report};
use crate::targets::Hop;
use crate::{Args, Kind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    pub duration: Duration,
    pub target: usize,
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len()));
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 30s, 3m, 500ms"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("`{s}` has an unknown unit")),
    };
    Ok(Duration::from_secs_f64(secs))
}

/// The stages given on the command line, as one value (clap would take a `Vec` for
/// a list of separate values).
#[derive(Clone, Debug)]
pub struct Stages(pub Vec<Stage>);

pub fn parse_stage_list(s: &str) -> Result<Stages, String> {
    parse_stages(s).map(Stages)
}

/// "30s:50,1m:100" — k6's stages: ramp linearly to `target` VUs over `duration`.
pub fn parse_stages(s: &str) -> Result<Vec<Stage>, String> {
    s.split(',')
        .map(|part| {
            let (d, t) = part
                .split_once(':')
                .ok_or_else(|| format!("stage `{part}` is not DURATION:VUS"))?;
            Ok(Stage {
                duration: parse_duration(d)?,
                target: t
                    .trim()
                    .parse()
                    .map_err(|_| format!("stage `{part}` has no VU count"))?,
            })
        })
        .collect()
}

/// The shapes of the k6 scripts in stress/, so both tools run the same scenario.
pub fn apply_preset(
    name: &str,
    vus: &mut usize,
    duration: &mut Duration,
    stages: &mut Option<Vec<Stage>>,
    think: &mut Duration,
) -> Result<(), String> {
    match name {
        "smoke" => (*vus, *duration, *think) = (1, Duration::from_secs(30), Duration::from_secs(1)),
        "load" => (*vus, *duration, *think) = (20, Duration::from_secs(180), Duration::from_secs(1)),
        "spike" => {
            *stages = Some(parse_stages("10s:10,10s:100,1m:100,10s:0")?);
            *think = Duration::from_millis(500);
        }
        "ceiling" => {
            *stages = Some(parse_stages("30s:50,30s:100,30s:200,30s:300,30s:500,1m:500")?);
            *think = Duration::from_millis(500);
        }
        other => return Err(format!("unknown preset `{other}` (smoke, load, spike, ceiling)")),
    }
    Ok(())
}

/// When and how many VUs run.
#[derive(Clone, Debug)]
pub struct Plan {
    stages: Vec<Stage>,
    constant: bool,
    pub think: Duration,
}

impl Plan {
    pub fn new(vus: usize, duration: Duration, stages: Option<Vec<Stage>>, think: Duration) -> Self {
        match stages {
            Some(stages) if !stages.is_empty() => Self {
                stages,
                constant: false,
                think,
            },
            _ => Self {
                stages: vec![Stage { duration, target: vus }],
                constant: true,
                think,
            },
        }
    }

    pub fn total(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    pub fn max_vus(&self) -> usize {
        self.stages.iter().map(|s| s.target).max().unwrap_or(0)
    }

    /// (stage index, VUs that should be running) at `t` since the start.
    pub fn at(&self, t: Duration) -> (usize, usize) {
        if self.constant {
            return (0, self.stages[0].target);
        }
        let mut start = Duration::ZERO;
        let mut from = 0usize;
        for (i, s) in self.stages.iter().enumerate() {
            if t < start + s.duration {
                let f = (t - start).as_secs_f64() / s.duration.as_secs_f64().max(1e-9);
                let vus = from as f64 + (s.target as f64 - from as f64) * f;
                return (i, vus.round() as usize);
            }
            start += s.duration;
            from = s.target;
        }
        (self.stages.len().saturating_sub(1), 0)
    }

    /// Each stage's label (its target VUs) and duration, for the report.
    pub fn levels(&self) -> Vec<(usize, Duration)> {
        self.stages.iter().map(|s| (s.target, s.duration)).collect()
    }
}

/// One VU's per-iteration state for the micro-scenarios.
struct Vu {
    id: usize,
    hop: Hop,
    jar: Jar,
    tokens: Option<crate::flow::Tokens>,
}

async fn timed<T>(
    rec: &mut Recorder,
    step: &'static str,
    level: usize,
    f: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    let started = Instant::now();
    let out = f.await;
    if out.is_ok() {
        rec.record(step, level, started.elapsed());
    }
    out
}

/// One iteration of `kind`; an error ends the iteration and is counted by kind.
async fn iteration(kind: Kind, t: &Target, vu: &mut Vu, rec: &mut Recorder, level: usize) -> Result<(), String> {
    match kind {
        Kind::Flow | Kind::LoginOnly | Kind::Storm => {
            let mut jar = Jar::default();
            let (url, verifier) = t.authorize_url();
            let hop = &mut vu.hop;
            let fields = timed(rec, "authorize", level, t.authorize(hop, &mut jar, &url)).await?;
            let user = t.username(vu.id);
            let code = timed(rec, "login", level, t.login(hop, &mut jar, fields, &user)).await?;
            if kind != Kind::Flow {
                return Ok(());
            }
            let tokens = timed(rec, "token", level, t.token(hop, &code, &verifier)).await?;
            timed(rec, "introspect", level, t.introspect(hop, &tokens.access)).await?;
            timed(rec, "refresh", level, t.refresh(hop, &tokens.refresh)).await?;
            Ok(())
        }
        Kind::AuthorizeOnly => {
            let mut jar = Jar::default();
            let (url, _) = t.authorize_url();
            timed(rec, "authorize", level, t.authorize(&mut vu.hop, &mut jar, &url))
                .await
                .map(|_| ())
        }
        Kind::TokenOnly | Kind::RefreshOnly | Kind::IntrospectOnly => {
            if vu.tokens.is_none() {
                sign_in(t, vu).await?;
            }
            match kind {
                Kind::TokenOnly => {
                    let (code, verifier) = t.code_with_session(&mut vu.hop, &mut vu.jar).await?;
                    timed(rec, "token", level, t.token(&mut vu.hop, &code, &verifier))
                        .await
                        .map(|_| ())
                }
                Kind::RefreshOnly => {
                    let current = vu.tokens.as_ref().map(|x| x.refresh.clone()).unwrap_or_default();
                    let next = timed(rec, "refresh", level, t.refresh(&mut vu.hop, &current)).await?;
                    vu.tokens = Some(next);
                    Ok(())
                }
                _ => {
                    let at = vu.tokens.as_ref().map(|x| x.access.clone()).unwrap_or_default();
                    timed(rec, "introspect", level, t.introspect(&mut vu.hop, &at)).await
                }
            }
        }
        Kind::Bcrypt | Kind::Writer | Kind::Sign | Kind::Ratelimit | Kind::SignIn => Ok(()),
    }
}

/// One sign-in's access token, for generators that replay one request (wrk).
pub async fn access_token(t: &Target) -> Result<String, String> {
    let mut vu = Vu {
        id: 0,
        hop: Hop::default(),
        jar: Jar::default(),
        tokens: None,
    };
    sign_in(t, &mut vu).await?;
    Ok(vu.tokens.map(|t| t.access).unwrap_or_default())
}

/// Signs a VU in once (not measured) so it holds a session and tokens.
async fn sign_in(t: &Target, vu: &mut Vu) -> Result<(), String> {
    let (url, verifier) = t.authorize_url();
    let fields = t.authorize(&mut vu.hop, &mut vu.jar, &url).await?;
    let code = t.login(&mut vu.hop, &mut vu.jar, fields, &t.username(vu.id)).await?;
    vu.tokens = Some(t.token(&mut vu.hop, &code, &verifier).await?);
    Ok(())
}

/// A probe of the storm: the login page (the authorization request a person's click
/// sends), token, introspect and refresh, measured while logins run.
async fn probe(t: &Target, vu: &mut Vu, rec: &mut Recorder, level: usize) -> Result<(), String> {
    if vu.tokens.is_none() {
        sign_in(t, vu).await?;
    }
    let hop = &mut vu.hop;
    let (url, _) = t.authorize_url();
    timed(rec, "login page", level, t.authorize(hop, &mut Jar::default(), &url)).await?;
    let (code, verifier) = t.code_with_session(hop, &mut vu.jar).await?;
    let tokens = timed(rec, "token", level, t.token(hop, &code, &verifier)).await?;
    timed(rec, "introspect", level, t.introspect(hop, &tokens.access)).await?;
    timed(rec, "refresh", level, t.refresh(hop, &tokens.refresh)).await?;
    Ok(())
}

/// Whether a VU of `kind` needs a session and tokens before it is measured.
fn signs_in_first(kind: Kind, is_probe: bool) -> bool {
    is_probe || matches!(kind, Kind::TokenOnly | Kind::RefreshOnly | Kind::IntrospectOnly)
}

/// A VU ready to run: signed in beforehand when its iterations need a session, so
/// that those logins fall outside the measured time (and the server CPU counted).
async fn ready_vu(kind: Kind, target: Arc<Target>, id: usize, is_probe: bool) -> Vu {
    let mut vu = Vu {
        id,
        hop: Hop::starting_at(id),
        jar: Jar::default(),
        tokens: None,
    };
    if signs_in_first(kind, is_probe) && sign_in(&target, &mut vu).await.is_err() {
        // Counted in the run: the iteration signs in again and records the error.
        vu.tokens = None;
        vu.jar = Jar::default();
    }
    vu
}

fn vu_loop(
    kind: Kind,
    target: Arc<Target>,
    plan: Arc<Plan>,
    mut vu: Vu,
    started: Instant,
    is_probe: bool,
) -> tokio::task::JoinHandle<Recorder> {
    tokio::spawn(async move {
        let mut rec = Recorder::default();
        let id = vu.id;
        let think = if is_probe {
            Duration::from_millis(100)
        } else {
            plan.think
        };
        loop {
            let elapsed = started.elapsed();
            if elapsed >= plan.total() {
                break;
            }
            let (level, active) = plan.at(elapsed);
            if !is_probe && id >= active {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            let result = if is_probe {
                probe(&target, &mut vu, &mut rec, level).await
            } else {
                iteration(kind, &target, &mut vu, &mut rec, level).await
            };
            match result {
                Ok(()) => rec.iteration(level),
                Err(e) => {
                    rec.error(e);
                    vu.tokens = None;
                    vu.jar = Jar::default();
                }
            }
            if !think.is_zero() {
                tokio::time::sleep(think).await;
            }
        }
        rec
    })
}

pub async fn run(kind: Kind, target: Target, plan: Plan, args: &Args) -> Result<Report, String> {
    let target = Arc::new(target);
    let plan = Arc::new(plan);
    let probe_vus = if kind == Kind::Storm { args.probe_vus } else { 0 };
    let (vus, probe_vus) = (plan.max_vus(), probe_vus);
    let readying: Vec<_> = (0..vus + probe_vus)
        .map(|id| tokio::spawn(ready_vu(kind, target.clone(), id, id >= vus)))
        .collect();
    let mut ready = Vec::with_capacity(readying.len());
    for r in readying {
        ready.push(r.await.map_err(|e| e.to_string())?);
    }
    let started = Instant::now();
    let sampler = crate::bench::ServerSampler::start(args.server_pid);
    let mut handles = Vec::new();
    let mut probes = Vec::new();
    for vu in ready {
        let is_probe = vu.id >= vus;
        let handle = vu_loop(kind, target.clone(), plan.clone(), vu, started, is_probe);
        if is_probe {
            probes.push(handle);
        } else {
            handles.push(handle);
        }
    }
    let mut logins = Recorder::default();
    for h in handles.drain(..) {
        logins.merge(h.await.map_err(|e| e.to_string())?);
    }
    let mut probed = Recorder::default();
    for h in probes {
        probed.merge(h.await.map_err(|e| e.to_string())?);
    }
    let wall = started.elapsed();
    let name = format!("{kind:?}").to_lowercase();
    let mut report = if kind == Kind::Storm {
        // The logins' iterations and errors count; probe latencies are the point.
        let iterations = logins.iterations.clone();
        logins.merge(probed);
        logins.iterations = iterations;
        Report::build(&name, logins, wall, &plan.levels())
    } else {
        Report::build(&name, logins, wall, &plan.levels())
    };
    report = report.sent_to(target.targets.issuer(), target.targets.all());
    if let Some(usage) = sampler.finish().await {
        report = report.with_usage(&usage);
    }
    if args.calibrate {
        let ceiling = crate::bench::bcrypt_rate(args.bcrypt_cost, Duration::from_secs(5)).await?;
        report
            .notes
            .push(("bcrypt ceiling".into(), format!("{ceiling:.1} verifications/s")));
        report.notes.push((
            "iterations per ceiling".into(),
            format!("{:.2}", report.iterations_per_second / ceiling.max(1e-9)),
        ));
    }
    Ok(report)
}

/// A constant 50 login attempts per second from one address, as ratelimit.js sends:
/// the limiter must answer most with 429 and a Retry-After, and none with a 5xx.
pub async fn ratelimit(t: &Target, duration: Duration) -> Result<Report, String> {
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut sent = Vec::new();
    let mut hop = Hop::default();
    while started.elapsed() < duration {
        tick.tick().await;
        let http = t.http.clone();
        let url = t.targets.url(&mut hop, "/login");
        sent.push(tokio::spawn(async move {
            let form = [
                ("request_id", "x"),
                ("csrf", "x"),
                ("username", "nobody"),
                ("password", "wrong"),
            ];
            let started = Instant::now();
            let resp = http.post(url).form(&form).send().await;
            let took = started.elapsed();
            resp.map(|r| (r.status().as_u16(), r.headers().contains_key("retry-after"), took))
        }));
    }
    let mut rec = Recorder::default();
    let (mut limited, mut total) = (0u64, 0u64);
    for s in sent {
        total += 1;
        match s.await.map_err(|e| e.to_string())? {
            Ok((429, true, took)) => {
                limited += 1;
                rec.record("login", 0, took);
                rec.iteration(0);
            }
            Ok((429, false, _)) => rec.error("429 without Retry-After".into()),
            Ok((status, _, _)) if status >= 500 => rec.error(format!("status {status}")),
            Ok((_, _, took)) => {
                rec.record("login", 0, took);
                rec.iteration(0);
            }
            Err(_) => rec.error("transport".into()),
        }
    }
    let share = limited as f64 / total.max(1) as f64;
    if share <= 0.5 {
        rec.error(format!("only {limited} of {total} attempts were rate limited"));
    }
    let mut report = Report::build("ratelimit", rec, started.elapsed(), &[(1, started.elapsed())])
        .sent_to(t.targets.issuer(), t.targets.all());
    report.notes.push((
        "429 with Retry-After".into(),
        format!("{limited} of {total} ({:.0}%)", share * 100.0),
    ));
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_stages_parse_like_k6() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("3m").unwrap(), Duration::from_secs(180));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("soon").is_err());
        let stages = parse_stages("30s:50, 1m:100").unwrap();
        assert_eq!(
            stages[1],
            Stage {
                duration: Duration::from_secs(60),
                target: 100
            }
        );
        assert!(parse_stages("30s").is_err());
    }

    #[test]
    fn ramps_interpolate_between_stage_targets() {
        let plan = Plan::new(
            0,
            Duration::ZERO,
            Some(parse_stages("10s:10,10s:100,10s:0").unwrap()),
            Duration::ZERO,
        );
        assert_eq!(plan.at(Duration::from_secs(5)), (0, 5));
        assert_eq!(plan.at(Duration::from_secs(15)), (1, 55));
        assert_eq!(plan.at(Duration::from_secs(29)), (2, 10));
        assert_eq!(plan.max_vus(), 100);
        assert_eq!(plan.total(), Duration::from_secs(30));
        let constant = Plan::new(20, Duration::from_secs(60), None, Duration::ZERO);
        assert_eq!(constant.at(Duration::from_secs(1)), (0, 20));
    }

    #[test]
    fn presets_match_the_k6_scripts() {
        let (mut vus, mut d, mut stages, mut think) = (0, Duration::ZERO, None, Duration::ZERO);
        apply_preset("ceiling", &mut vus, &mut d, &mut stages, &mut think).unwrap();
        let stages = stages.unwrap();
        assert_eq!(
            stages.iter().map(|s| s.target).collect::<Vec<_>>(),
            vec![50, 100, 200, 300, 500, 500]
        );
        assert_eq!(think, Duration::from_millis(500));
        apply_preset("load", &mut vus, &mut d, &mut None, &mut think).unwrap();
        assert_eq!((vus, d), (20, Duration::from_secs(180)));
        assert!(apply_preset("huge", &mut vus, &mut d, &mut None, &mut think).is_err());
    }
}
