//! Measurements beside the HTTP scenarios: the bcrypt ceiling, the storage writer's
//! commit rate, and the server's resident memory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera::config::{Settings, Synchronous};
use tessera::db::{self, Db};

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

/// Single-row writes through the group-committing writer, from many concurrent
/// requests, each acknowledged only once its batch is committed.
pub async fn writer(durable: bool, duration: Duration) -> Result<Vec<(String, String)>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut sqlite = Settings::default().sqlite;
    sqlite.synchronous = if durable {
        Synchronous::Full
    } else {
        Synchronous::Normal
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

/// Samples a process's resident memory while a scenario runs.
pub struct RssSampler {
    task: Option<Sampling>,
}

/// The sampling task (returning idle and peak MB) and its stop flag.
type Sampling = (tokio::task::JoinHandle<(f64, f64)>, Arc<AtomicBool>);

fn rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

impl RssSampler {
    pub fn start(pid: Option<u32>) -> Self {
        let Some(pid) = pid else { return Self { task: None } };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let idle = rss_mb(pid).unwrap_or(0.0);
            let mut peak = idle;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(rss_mb(pid).unwrap_or(0.0));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            (idle, peak)
        });
        Self {
            task: Some((task, stop)),
        }
    }

    pub async fn finish(self) -> Option<(f64, f64)> {
        let (task, stop) = self.task?;
        stop.store(true, Ordering::Relaxed);
        task.await.ok()
    }
}
