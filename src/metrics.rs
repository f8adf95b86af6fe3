//! Counters and latency histograms for `/metrics`, in the Prometheus text format
//! (version 0.0.4). Recording is a few atomic or briefly locked updates.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0];

#[derive(Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += secs;
    }
}

/// Grant types whose issued tokens are counted.
pub const GRANTS: [&str; 4] = [
    "authorization_code",
    "refresh_token",
    "client_credentials",
    "urn:ietf:params:oauth:grant-type:device_code",
];

/// Per route: answers by status and the latency histogram.
#[derive(Default, Clone)]
struct RouteStats {
    statuses: BTreeMap<u16, u64>,
    latency: Histogram,
}

#[derive(Default)]
pub struct Metrics {
    routes: Mutex<BTreeMap<String, RouteStats>>,
    pub logins_ok: AtomicU64,
    pub logins_failed: AtomicU64,
    pub logins_locked: AtomicU64,
    pub rate_limited: AtomicU64,
    tokens: [AtomicU64; 4],
}

/// Values sampled when `/metrics` is read.
#[derive(Clone, Copy)]
pub struct Gauges {
    pub hash_queue_depth: usize,
    pub hash_wait_seconds_total: f64,
    pub hash_jobs_total: u64,
    /// Verifications run two at a time.
    pub hash_paired_total: u64,
    /// The SQLite writer's counters (none on PostgreSQL).
    pub writer: Option<crate::db::WriterStats>,
    /// The PostgreSQL pool (none on SQLite).
    pub pool: Option<crate::db::PoolStats>,
    pub db_bytes: u64,
    /// `--replicate-to`.
    pub replication: Option<ReplicationGauges>,
    /// `--backup-dir`: copies written and failed, the last good one's Unix time.
    pub backups: Option<(u64, u64, i64)>,
}

/// The replication thread's state as `/metrics` shows it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplicationGauges {
    pub lag_seconds: f64,
    pub failures: u64,
    pub last_shipped_seconds: f64,
    pub shipped_bytes: u64,
    pub steps: u64,
    pub snapshots: u64,
}

impl Metrics {
    /// One lock, and no allocation once a route has been seen.
    pub fn request(&self, route: &str, status: u16, took: Duration) {
        let Ok(mut map) = self.routes.lock() else { return };
        let stats = match map.get_mut(route) {
            Some(stats) => stats,
            None => map.entry(route.to_string()).or_default(),
        };
        *stats.statuses.entry(status).or_default() += 1;
        stats.latency.observe(took.as_secs_f64());
    }

    pub fn token_issued(&self, grant_type: &str) {
        if let Some(i) = GRANTS.iter().position(|g| *g == grant_type) {
            self.tokens[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn render(&self, g: &Gauges) -> String {
        let mut out = String::new();
        let routes = self.routes.lock().map(|m| m.clone()).unwrap_or_default();
        render_routes(&mut out, &routes);
        self.render_counters(&mut out);
        for (name, help, kind, value) in gauge_rows(g) {
            gauge(&mut out, name, help, kind, value);
        }
        out
    }

    /// Sign-ins, rate limiting and tokens, counted as they happen.
    fn render_counters(&self, out: &mut String) {
        counter(out, "tessera_logins_total", "Sign-in attempts by outcome.");
        for (outcome, n) in [
            ("ok", &self.logins_ok),
            ("failed", &self.logins_failed),
            ("locked", &self.logins_locked),
        ] {
            let _ = writeln!(
                out,
                "tessera_logins_total{{outcome=\"{outcome}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
        counter(out, "tessera_rate_limited_total", "Requests answered 429.");
        let _ = writeln!(
            out,
            "tessera_rate_limited_total {}",
            self.rate_limited.load(Ordering::Relaxed)
        );
        counter(out, "tessera_tokens_issued_total", "Token responses by grant type.");
        for (grant, n) in GRANTS.iter().zip(self.tokens.iter()) {
            let _ = writeln!(
                out,
                "tessera_tokens_issued_total{{grant_type=\"{grant}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
    }
}

/// A counter's `HELP` and `TYPE` lines.
fn counter(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
}

/// A metric with one sample: its `HELP`, `TYPE` and value.
fn gauge(out: &mut String, name: &str, help: &str, kind: &str, value: String) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
}

/// Answers by route and status, and each route's latency histogram.
fn render_routes(out: &mut String, routes: &BTreeMap<String, RouteStats>) {
    counter(out, "tessera_http_requests_total", "HTTP requests by route and status.");
    for (route, stats) in routes {
        for (status, n) in &stats.statuses {
            let _ = writeln!(
                out,
                "tessera_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP tessera_http_request_duration_seconds Request latency by route.\n# TYPE tessera_http_request_duration_seconds histogram"
    );
    for (route, h) in routes.iter().map(|(r, s)| (r, &s.latency)) {
        for (bound, n) in BUCKETS.iter().zip(h.counts.iter()) {
            let _ = writeln!(
                out,
                "tessera_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "tessera_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(
            out,
            "tessera_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
            h.sum
        );
        let _ = writeln!(
            out,
            "tessera_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
            h.count
        );
    }
}

/// One sampled metric: name, help, type and value.
type Row = (&'static str, &'static str, &'static str, String);

/// The sampled values, in the order `/metrics` lists them; a part this node does not
/// have (the writer on PostgreSQL, the pool on SQLite, replication, backups) is left out.
fn gauge_rows(g: &Gauges) -> Vec<Row> {
    let mut rows: Vec<Row> = vec![
        (
            "tessera_hash_queue_depth",
            "Password checks waiting or running.",
            "gauge",
            g.hash_queue_depth.to_string(),
        ),
        (
            "tessera_hash_jobs_total",
            "Password hashing jobs done.",
            "counter",
            g.hash_jobs_total.to_string(),
        ),
        (
            "tessera_hash_paired_total",
            "Password verifications run two at a time.",
            "counter",
            g.hash_paired_total.to_string(),
        ),
        (
            "tessera_hash_wait_seconds_total",
            "Time password checks spent queued.",
            "counter",
            g.hash_wait_seconds_total.to_string(),
        ),
    ];
    if let Some(w) = &g.writer {
        rows.extend(writer_rows(w));
    }
    if let Some(p) = &g.pool {
        rows.extend(pool_rows(p));
    }
    rows.push((
        "tessera_database_bytes",
        "Database and WAL file size.",
        "gauge",
        g.db_bytes.to_string(),
    ));
    if let Some(r) = &g.replication {
        rows.extend(replication_rows(r));
    }
    if let Some(b) = g.backups {
        rows.extend(backup_rows(b));
    }
    rows
}

fn writer_rows(w: &crate::db::WriterStats) -> [Row; 3] {
    [
        (
            "tessera_writer_batches_total",
            "Group commits.",
            "counter",
            w.batches.to_string(),
        ),
        (
            "tessera_writer_operations_total",
            "Write operations committed.",
            "counter",
            w.operations.to_string(),
        ),
        (
            "tessera_writer_commit_seconds_total",
            "Time spent in group commits.",
            "counter",
            (w.commit_micros_total as f64 / 1e6).to_string(),
        ),
    ]
}

fn pool_rows(p: &crate::db::PoolStats) -> [Row; 4] {
    [
        (
            "tessera_pg_connections_max",
            "PostgreSQL connections this node may open.",
            "gauge",
            p.max.to_string(),
        ),
        (
            "tessera_pg_connections_open",
            "PostgreSQL connections open.",
            "gauge",
            p.open.to_string(),
        ),
        (
            "tessera_pg_connections_idle",
            "Open PostgreSQL connections not in use.",
            "gauge",
            p.idle.to_string(),
        ),
        (
            "tessera_pg_busy_total",
            "Operations answered busy: no PostgreSQL connection in time.",
            "counter",
            p.busy_total.to_string(),
        ),
    ]
}

fn replication_rows(r: &ReplicationGauges) -> [Row; 6] {
    [
        (
            "tessera_replication_lag_seconds",
            "Age of the oldest committed write not yet in the replica (0: caught up).",
            "gauge",
            r.lag_seconds.to_string(),
        ),
        (
            "tessera_replication_failures_total",
            "Failed attempts to ship to or read for the replica.",
            "counter",
            r.failures.to_string(),
        ),
        (
            "tessera_replication_last_shipped_timestamp_seconds",
            "Unix time of the last object stored in the replica.",
            "gauge",
            r.last_shipped_seconds.to_string(),
        ),
        (
            "tessera_replication_shipped_bytes_total",
            "Bytes stored in the replica.",
            "counter",
            r.shipped_bytes.to_string(),
        ),
        (
            "tessera_replication_steps_total",
            "Log shipments in this generation.",
            "counter",
            r.steps.to_string(),
        ),
        (
            "tessera_replication_snapshots_total",
            "Snapshots stored in this generation.",
            "counter",
            r.snapshots.to_string(),
        ),
    ]
}

fn backup_rows((written, failed, last): (u64, u64, i64)) -> [Row; 3] {
    [
        (
            "tessera_backups_total",
            "Scheduled backups written.",
            "counter",
            written.to_string(),
        ),
        (
            "tessera_backup_failures_total",
            "Scheduled backups that failed.",
            "counter",
            failed.to_string(),
        ),
        (
            "tessera_backup_last_success_timestamp_seconds",
            "Unix time of the last scheduled backup written.",
            "gauge",
            last.to_string(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.request("/token", 200, Duration::from_millis(3));
        m.request("/token", 200, Duration::from_millis(30));
        m.request("/token", 400, Duration::from_millis(1));
        m.token_issued("refresh_token");
        let g = Gauges {
            hash_queue_depth: 2,
            hash_wait_seconds_total: 0.5,
            hash_jobs_total: 9,
            hash_paired_total: 4,
            writer: Some(crate::db::WriterStats {
                batches: 1,
                operations: 4,
                commit_micros_total: 10_000,
            }),
            pool: None,
            db_bytes: 4096,
            replication: None,
            backups: None,
        };
        let text = m.render(&g);
        assert!(
            !text.contains("tessera_replication_"),
            "no replication gauges when it is off"
        );
        let replicating = m.render(&Gauges {
            replication: Some(ReplicationGauges {
                lag_seconds: 1.5,
                failures: 3,
                ..Default::default()
            }),
            backups: Some((4, 1, 1700000000)),
            ..g
        });
        assert!(replicating.contains("tessera_replication_lag_seconds 1.5"));
        assert!(replicating.contains("tessera_replication_failures_total 3"));
        assert!(replicating.contains("tessera_backups_total 4"));
        assert!(replicating.contains("tessera_backup_last_success_timestamp_seconds 1700000000"));
        assert!(text.contains("tessera_writer_operations_total 4"));
        assert!(text.contains("tessera_hash_paired_total 4"));
        assert!(text.contains("tessera_writer_commit_seconds_total 0.01"));
        assert!(!text.contains("tessera_pg_"), "no pool on SQLite");
        let on_postgres = m.render(&Gauges {
            writer: None,
            pool: Some(crate::db::PoolStats {
                max: 16,
                open: 3,
                idle: 2,
                busy_total: 5,
            }),
            ..g
        });
        assert!(!on_postgres.contains("tessera_writer_"), "no writer on PostgreSQL");
        assert!(on_postgres.contains("tessera_pg_connections_open 3"));
        assert!(on_postgres.contains("tessera_pg_busy_total 5"));
        assert!(text.contains("tessera_http_requests_total{route=\"/token\",status=\"200\"} 2"));
        assert!(text.contains("tessera_http_request_duration_seconds_bucket{route=\"/token\",le=\"0.005\"} 2"));
        assert!(text.contains("tessera_http_request_duration_seconds_bucket{route=\"/token\",le=\"+Inf\"} 3"));
        assert!(text.contains("tessera_tokens_issued_total{grant_type=\"refresh_token\"} 1"));
        assert!(text.contains("tessera_hash_queue_depth 2"));
    }
}
