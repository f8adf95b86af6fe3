//! Measurements beside the HTTP scenarios: the bcrypt ceiling, the storage writer's
//! commit rate, a signature's cost, and what the server process uses (memory, CPU).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera::db::{self, Db, SqliteOptions, Synchronous};

/// bcrypt verifications per second with one thread per core at `cost`: a login costs
/// one, so this is the most full flows per second the machine can do.
pub async fn bcrypt_rate(cost: u32, duration: Duration) -> Result<f64, String> {
    let hash = bcrypt::hash("stress-password", cost).map_err(|e| e.to_string())?;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (hash, done) = (hash.clone(), done.clone());
            std::thread::spawn(move || {
                while started.elapsed() < duration {
                    let _ = bcrypt::verify("stress-password", &hash);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::task::spawn_blocking(move || {
        for w in workers {
            let _ = w.join();
        }
    })
    .await
    .map_err(|e| e.to_string())?;
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

pub async fn bcrypt_ceiling(cost: u32, duration: Duration) -> Result<Vec<(String, String)>, String> {
    let rate = bcrypt_rate(cost, duration).await?;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    Ok(vec![
        ("bcrypt cost".into(), cost.to_string()),
        ("threads".into(), threads.to_string()),
        ("bcrypt ceiling".into(), format!("{rate:.1} verifications/s")),
    ])
}

/// Microseconds per signature of an access-token-shaped claim set, for each algorithm
/// Tessera signs with, through `tessera::crypto::jwt::sign` (header, claims, base64 and
/// the signature, as a token response pays), one thread, `duration` split among them.
/// Server CPU per refresh less two of these is what a refresh costs besides signing.
pub async fn sign(duration: Duration) -> Result<Vec<(String, String)>, String> {
    use tessera::crypto::keys::{Alg, KeySet};
    use tessera::crypto::{jwt, SigningKeyRecord};
    let each = duration / Alg::ALL.len() as u32;
    tokio::task::spawn_blocking(move || {
        let now = tessera::clock::Clock::system().now();
        let mut notes = Vec::new();
        for alg in Alg::ALL {
            let rec =
                SigningKeyRecord::generate(alg, format!("bench-{}", alg.as_str()), now).map_err(|e| e.to_string())?;
            let keys = KeySet::from_records(&[rec], now, 0).map_err(|e| e.to_string())?;
            let claims: serde_json::Map<String, serde_json::Value> = [
                ("iss", serde_json::json!("http://127.0.0.1:9100")),
                ("sub", serde_json::json!("a3f1c2d4e5b6")),
                ("aud", serde_json::json!("stress")),
                ("client_id", serde_json::json!("stress")),
                ("scope", serde_json::json!("openid profile email offline_access")),
                ("iat", serde_json::json!(now)),
                ("exp", serde_json::json!(now + 900)),
                ("jti", serde_json::json!("Xb2k9vQ4mT7pL1sN8rE3wY6u")),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            let started = Instant::now();
            let mut n = 0u32;
            while started.elapsed() < each || n == 0 {
                jwt::sign(&keys, alg, "at+jwt", claims.clone(), now).map_err(|e| e.to_string())?;
                n += 1;
            }
            let micros = started.elapsed().as_secs_f64() * 1e6 / f64::from(n);
            notes.push((
                format!("{} sign", alg.as_str()),
                format!("{micros:.1} µs ({n} signatures)"),
            ));
        }
        Ok(notes)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Single-row writes through the group-committing writer, from many concurrent
/// requests, each acknowledged only once its batch is committed.
pub async fn writer(durable: bool, duration: Duration) -> Result<Vec<(String, String)>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let sqlite = SqliteOptions {
        synchronous: if durable {
            Synchronous::Full
        } else {
            Synchronous::Normal
        },
        ..SqliteOptions::default()
    };
    let db = Db::open(&dir.path().join("bench.db"), &sqlite).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..256)
        .map(|t| {
            let (db, stop) = (db.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let jti = format!("{t}-{n}");
                    if db
                        .write(move |c| db::grants::revoke_jti(c, &jti, i64::MAX))
                        .await
                        .is_ok()
                    {
                        n += 1;
                    }
                }
                n
            })
        })
        .collect();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for t in tasks {
        total += t.await.map_err(|e| e.to_string())?;
    }
    let secs = started.elapsed().as_secs_f64();
    let stats = db
        .writer_stats()
        .ok_or_else(|| "the writer benchmark runs on SQLite".to_string())?;
    Ok(vec![
        (
            "mode".into(),
            if durable {
                "WAL, synchronous=FULL"
            } else {
                "WAL, synchronous=NORMAL"
            }
            .into(),
        ),
        (
            "acknowledged single-row writes".into(),
            format!("{:.0}/s", total as f64 / secs),
        ),
        (
            "transactions (fsyncs)".into(),
            format!("{:.0}/s", stats.batches as f64 / secs),
        ),
        (
            "rows per transaction".into(),
            format!("{:.1}", stats.operations as f64 / (stats.batches.max(1)) as f64),
        ),
    ])
}

/// Samples the server process while a scenario runs: its resident memory every 250 ms,
/// and the CPU time it used (user + system, from `/proc/PID/stat`) from start to finish.
pub struct ServerSampler {
    task: Option<Sampling>,
}

/// The sampling task and its stop flag.
type Sampling = (tokio::task::JoinHandle<Usage>, Arc<AtomicBool>);

/// What the server used during a run.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub rss_idle_mb: f64,
    /// (time since the start, MB), every 250 ms.
    pub rss: Vec<(Duration, f64)>,
    pub cpu_seconds: f64,
}

impl Usage {
    pub fn rss_peak_mb(&self) -> f64 {
        self.rss.iter().map(|(_, mb)| *mb).fold(self.rss_idle_mb, f64::max)
    }
}

fn rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Linux reports a process's times in USER_HZ, which is 100 on every architecture it
/// exposes to user space (x86, arm, riscv), whatever the kernel's own tick.
const USER_HZ: f64 = 100.0;

/// User plus system CPU seconds of `pid` (and of its threads) so far.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    cpu_of_stat(&stat)
}

/// Fields 14 and 15 of `/proc/PID/stat` (utime, stime), counted after the command name,
/// which is in parentheses and may itself hold spaces or parentheses.
fn cpu_of_stat(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: f64 = fields.next()?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

impl ServerSampler {
    pub fn start(pid: Option<u32>) -> Self {
        let Some(pid) = pid else { return Self { task: None } };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let cpu_before = cpu_seconds(pid).unwrap_or(0.0);
            let mut usage = Usage {
                rss_idle_mb: rss_mb(pid).unwrap_or(0.0),
                ..Usage::default()
            };
            while !flag.load(Ordering::Relaxed) {
                if let Some(mb) = rss_mb(pid) {
                    usage.rss.push((started.elapsed(), mb));
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            usage.cpu_seconds = (cpu_seconds(pid).unwrap_or(0.0) - cpu_before).max(0.0);
            usage
        });
        Self {
            task: Some((task, stop)),
        }
    }

    pub async fn finish(self) -> Option<Usage> {
        let (task, stop) = self.task?;
        stop.store(true, Ordering::Relaxed);
        task.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        let stat = "4242 (tessera (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 9 0";
        assert_eq!(cpu_of_stat(stat), Some(3.8));
        assert_eq!(cpu_of_stat("garbage"), None);
    }

    #[test]
    fn this_process_has_used_some_cpu() {
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {
            std::hint::black_box(spin.elapsed());
        }
        assert!(cpu_seconds(std::process::id()).is_some_and(|s| s > 0.0));
    }
}
