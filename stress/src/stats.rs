//! Latency samples, percentiles and the report: a k6-like table, JSON, and the data
//! the chart draws.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

/// What one virtual user measured.
#[derive(Default)]
pub struct Recorder {
    /// (step, level, microseconds)
    pub samples: Vec<(&'static str, usize, u32)>,
    pub errors: BTreeMap<String, u64>,
    /// Completed iterations per level.
    pub iterations: BTreeMap<usize, u64>,
}

impl Recorder {
    pub fn record(&mut self, step: &'static str, level: usize, took: Duration) {
        let micros = u32::try_from(took.as_micros()).unwrap_or(u32::MAX);
        self.samples.push((step, level, micros));
    }

    pub fn error(&mut self, kind: String) {
        *self.errors.entry(kind).or_default() += 1;
    }

    pub fn iteration(&mut self, level: usize) {
        *self.iterations.entry(level).or_default() += 1;
    }

    pub fn merge(&mut self, other: Recorder) {
        self.samples.extend(other.samples);
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for (k, v) in other.iterations {
            *self.iterations.entry(k).or_default() += v;
        }
    }
}

/// Nearest-rank percentile of sorted values, in milliseconds.
pub fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

#[derive(Debug, Clone, Serialize)]
pub struct StepStats {
    pub step: String,
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub per_second: f64,
}

impl StepStats {
    fn of(step: &str, mut values: Vec<u32>, seconds: f64) -> Self {
        values.sort_unstable();
        Self {
            step: step.to_string(),
            count: values.len(),
            p50_ms: percentile(&values, 50.0),
            p95_ms: percentile(&values, 95.0),
            p99_ms: percentile(&values, 99.0),
            max_ms: percentile(&values, 100.0),
            per_second: if seconds > 0.0 {
                values.len() as f64 / seconds
            } else {
                0.0
            },
        }
    }
}

/// One VU level (a constant run has one; a ramp has one per stage).
#[derive(Debug, Clone, Serialize)]
pub struct Level {
    pub vus: usize,
    pub seconds: f64,
    pub iterations_per_second: f64,
    pub steps: Vec<StepStats>,
    /// The server's peak resident memory during this level, when it was sampled.
    pub rss_peak_mb: Option<f64>,
}

/// What the server process used over the run (`--server-pid`).
#[derive(Debug, Clone, Serialize)]
pub struct ServerUse {
    pub rss_idle_mb: f64,
    pub rss_peak_mb: f64,
    pub cpu_seconds: f64,
    /// Server CPU per completed iteration (per refresh in refresh-only, per flow in flow).
    pub cpu_ms_per_iteration: f64,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Report {
    pub scenario: String,
    /// The issuer tokens name, and the base URLs requests went to in turn.
    pub issuer: String,
    pub targets: Vec<String>,
    pub seconds: f64,
    pub iterations: u64,
    pub iterations_per_second: f64,
    pub steps: Vec<StepStats>,
    pub levels: Vec<Level>,
    pub errors: BTreeMap<String, u64>,
    pub server: Option<ServerUse>,
    pub notes: Vec<(String, String)>,
}

/// Step names in flow order, so tables read top to bottom like the flow.
pub const STEP_ORDER: &[&str] = &["authorize", "login", "token", "introspect", "refresh", "login page"];

fn ordered(names: impl Iterator<Item = &'static str>) -> Vec<&'static str> {
    let mut list: Vec<&'static str> = names.collect();
    list.sort_by_key(|n| STEP_ORDER.iter().position(|o| o == n).unwrap_or(usize::MAX));
    list.dedup();
    list
}

impl Report {
    pub fn note(notes: Vec<(String, String)>) -> Self {
        Self {
            notes,
            ..Default::default()
        }
    }

    /// `levels` gives each level's VU count and its measured duration.
    pub fn build(scenario: &str, rec: Recorder, wall: Duration, levels: &[(usize, Duration)]) -> Self {
        let seconds = wall.as_secs_f64();
        let names = ordered(rec.samples.iter().map(|(s, _, _)| *s));
        let steps = names
            .iter()
            .map(|n| {
                let values = rec
                    .samples
                    .iter()
                    .filter(|(s, _, _)| s == n)
                    .map(|(_, _, v)| *v)
                    .collect();
                StepStats::of(n, values, seconds)
            })
            .collect();
        let levels = levels
            .iter()
            .enumerate()
            .map(|(i, (vus, took))| {
                let secs = took.as_secs_f64();
                let steps = names
                    .iter()
                    .map(|n| {
                        let values = rec
                            .samples
                            .iter()
                            .filter(|(s, l, _)| s == n && *l == i)
                            .map(|(_, _, v)| *v)
                            .collect();
                        StepStats::of(n, values, secs)
                    })
                    .collect();
                let its = rec.iterations.get(&i).copied().unwrap_or(0);
                Level {
                    vus: *vus,
                    seconds: secs,
                    iterations_per_second: if secs > 0.0 { its as f64 / secs } else { 0.0 },
                    steps,
                    rss_peak_mb: None,
                }
            })
            .collect();
        let iterations: u64 = rec.iterations.values().sum();
        Self {
            scenario: scenario.to_string(),
            issuer: String::new(),
            targets: Vec::new(),
            seconds,
            iterations,
            iterations_per_second: if seconds > 0.0 {
                iterations as f64 / seconds
            } else {
                0.0
            },
            steps,
            levels,
            errors: rec.errors,
            server: None,
            notes: Vec::new(),
        }
    }

    /// Adds what the server used: overall, and the peak memory of each level (the
    /// samples taken within its stretch of the run).
    pub fn with_usage(mut self, usage: &crate::bench::Usage) -> Self {
        let mut from = 0.0;
        for level in &mut self.levels {
            let to = from + level.seconds;
            level.rss_peak_mb = usage
                .rss
                .iter()
                .filter(|(t, _)| (from..to).contains(&t.as_secs_f64()))
                .map(|(_, mb)| *mb)
                .reduce(f64::max);
            from = to;
        }
        self.server = Some(ServerUse {
            rss_idle_mb: usage.rss_idle_mb,
            rss_peak_mb: usage.rss_peak_mb(),
            cpu_seconds: usage.cpu_seconds,
            cpu_ms_per_iteration: 1000.0 * usage.cpu_seconds / self.iterations.max(1) as f64,
        });
        self
    }

    pub fn sent_to(mut self, issuer: &str, targets: &[String]) -> Self {
        self.issuer = issuer.to_string();
        self.targets = targets.to_vec();
        self
    }

    /// The header line naming where the requests went.
    fn targets_line(&self) -> String {
        match self.targets.as_slice() {
            [] => String::new(),
            [only] if *only == self.issuer => format!("target {only}\n"),
            many => format!("targets {}  (issuer {})\n", many.join(", "), self.issuer),
        }
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn table(&self) -> String {
        let mut out = String::new();
        if !self.scenario.is_empty() {
            out += &format!("scenario {}  ({:.1} s)\n", self.scenario, self.seconds);
            out += &self.targets_line();
            out += &format!(
                "{:<12} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
                "step", "count", "p50 ms", "p95 ms", "p99 ms", "max ms", "req/s"
            );
            for s in &self.steps {
                out += &format!(
                    "{:<12} {:>9} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.1}\n",
                    s.step, s.count, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms, s.per_second
                );
            }
            let attempts = self.iterations + self.errors_total();
            let rate = if attempts > 0 {
                100.0 * self.errors_total() as f64 / attempts as f64
            } else {
                0.0
            };
            out += &format!(
                "iterations {} ({:.2}/s)   errors {} ({rate:.2}%)\n",
                self.iterations,
                self.iterations_per_second,
                self.errors_total()
            );
            for (kind, n) in &self.errors {
                out += &format!("  error {kind}: {n}\n");
            }
            if self.levels.len() > 1 {
                out += "per VU level:\n";
                for l in &self.levels {
                    let p95 = |name: &str| l.steps.iter().find(|s| s.step == name).map(|s| s.p95_ms).unwrap_or(0.0);
                    let rss = l.rss_peak_mb.map(|mb| format!("  RSS {mb:.1} MB")).unwrap_or_default();
                    out += &format!(
                        "  {:>4} VUs  {:>7.2} it/s  login p95 {:>9.1}  token p95 {:>7.1}  introspect p95 {:>7.1}  refresh p95 {:>7.1}{rss}\n",
                        l.vus,
                        l.iterations_per_second,
                        p95("login"),
                        p95("token"),
                        p95("introspect"),
                        p95("refresh")
                    );
                }
            }
        }
        if let Some(u) = &self.server {
            out += &format!("server RSS idle: {:.1} MB\n", u.rss_idle_mb);
            out += &format!("server RSS peak: {:.1} MB\n", u.rss_peak_mb);
            out += &format!(
                "server CPU: {:.2} s, {:.3} ms per iteration\n",
                u.cpu_seconds, u.cpu_ms_per_iteration
            );
        }
        for (k, v) in &self.notes {
            out += &format!("{k}: {v}\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<u32> = (1..=100).map(|v| v * 1000).collect();
        assert_eq!(percentile(&values, 50.0), 50.0);
        assert_eq!(percentile(&values, 95.0), 95.0);
        assert_eq!(percentile(&values, 99.0), 99.0);
        assert_eq!(percentile(&values, 100.0), 100.0);
        assert_eq!(percentile(&[7000], 95.0), 7.0);
        assert_eq!(percentile(&[], 95.0), 0.0);
    }

    #[test]
    fn report_orders_steps_counts_rates_and_errors() {
        let mut rec = Recorder::default();
        for ms in [10u64, 20, 30, 40] {
            rec.record("token", 0, Duration::from_millis(ms));
            rec.record("login", 0, Duration::from_millis(ms * 10));
            rec.iteration(0);
        }
        rec.error("login: status 503".into());
        let report = Report::build("flow", rec, Duration::from_secs(2), &[(4, Duration::from_secs(2))])
            .sent_to("http://a", &["http://b".into(), "http://c".into()]);
        assert_eq!(report.steps[0].step, "login", "flow order, not alphabetical");
        assert_eq!(report.steps[1].count, 4);
        assert_eq!(report.steps[1].p50_ms, 20.0);
        assert_eq!(report.iterations_per_second, 2.0);
        assert_eq!(report.errors_total(), 1);
        let table = report.table();
        assert!(table.contains("errors 1 (20.00%)"), "{table}");
        assert!(
            table.contains("targets http://b, http://c  (issuer http://a)"),
            "{table}"
        );
        let single = Report::default().sent_to("http://a", &["http://a".into()]);
        assert_eq!(single.targets_line(), "target http://a\n");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["steps"][0]["step"], "login");
    }

    #[test]
    fn server_use_is_split_by_level_and_counted_per_iteration() {
        let mut rec = Recorder::default();
        for level in [0, 0, 1, 1] {
            rec.record("refresh", level, Duration::from_millis(1));
            rec.iteration(level);
        }
        let levels = [(10, Duration::from_secs(2)), (20, Duration::from_secs(2))];
        let usage = crate::bench::Usage {
            rss_idle_mb: 10.0,
            rss: vec![
                (Duration::from_millis(500), 12.0),
                (Duration::from_millis(1500), 14.0),
                (Duration::from_millis(2500), 30.0),
                (Duration::from_millis(3500), 20.0),
            ],
            cpu_seconds: 0.2,
        };
        let report = Report::build("refreshonly", rec, Duration::from_secs(4), &levels).with_usage(&usage);
        assert_eq!(report.levels[0].rss_peak_mb, Some(14.0));
        assert_eq!(report.levels[1].rss_peak_mb, Some(30.0));
        let server = report.server.as_ref().unwrap();
        assert_eq!(server.rss_peak_mb, 30.0);
        assert!((server.cpu_ms_per_iteration - 50.0).abs() < 1e-9);
        assert!(report.table().contains("server CPU: 0.20 s, 50.000 ms per iteration"));
    }
}
