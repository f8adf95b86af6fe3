//! `serve --backup-dir DIR --backup-every 1h --backup-keep 48`: consistent copies of
//! the SQLite file on a schedule, for operators who want plain files. Each copy is
//! the online backup `tessera backup` makes (`VACUUM INTO`: one snapshot, no write
//! lock, owner-only, signing keys and secrets sealed as in the database), named by
//! its UTC time so that names sort by age; the oldest beyond `keep` are deleted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::config::BackupSchedule;
use crate::db::Db;

#[derive(Default, Debug)]
pub struct Stats {
    pub written: AtomicU64,
    pub failed: AtomicU64,
    /// Unix time of the last good copy (0: none yet).
    pub last_ok: AtomicI64,
}

const PREFIX: &str = "tessera-";
const SUFFIX: &str = ".db";

/// Takes a copy at once, then one every interval, until the process ends.
pub fn spawn(db: Db, clock: Clock, schedule: BackupSchedule, stats: Arc<Stats>) {
    tokio::spawn(async move {
        loop {
            match once(&db, &clock, &schedule).await {
                Ok(path) => {
                    stats.written.fetch_add(1, Ordering::Relaxed);
                    stats.last_ok.store(clock.now(), Ordering::Relaxed);
                    tracing::info!(path = %path.display(), "scheduled backup written");
                }
                Err(e) => {
                    stats.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(error = %e, dir = %schedule.dir.display(), "scheduled backup failed; next attempt at the next interval");
                }
            }
            tokio::time::sleep(Duration::from_secs(schedule.every)).await;
        }
    });
}

fn file_name(now: i64, n: u32) -> String {
    let stamp = chrono::DateTime::from_timestamp(now, 0)
        .map(|t| t.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| now.to_string());
    match n {
        0 => format!("{PREFIX}{stamp}{SUFFIX}"),
        n => format!("{PREFIX}{stamp}-{n}{SUFFIX}"),
    }
}

async fn once(db: &Db, clock: &Clock, schedule: &BackupSchedule) -> Result<PathBuf, String> {
    create_dir(&schedule.dir).map_err(|e| format!("{}: {e}", schedule.dir.display()))?;
    let now = clock.now();
    let mut n = 0;
    let path = loop {
        let p = schedule.dir.join(file_name(now, n));
        if !p.exists() {
            break p;
        }
        n += 1;
    };
    db.backup(&path).await.map_err(|e| e.to_string())?;
    prune(&schedule.dir, schedule.keep).map_err(|e| format!("{}: {e}", schedule.dir.display()))?;
    Ok(path)
}

fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Deletes the oldest of this schedule's copies beyond `keep`; other files in the
/// directory are never touched.
fn prune(dir: &Path, keep: usize) -> std::io::Result<()> {
    let mut ours: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| {
            n.strip_prefix(PREFIX)
                .and_then(|r| r.strip_suffix(SUFFIX))
                .is_some_and(|stamp| stamp.len() >= 16 && stamp.as_bytes()[8] == b'T')
        })
        .collect();
    ours.sort();
    let excess = ours.len().saturating_sub(keep);
    for name in &ours[..excess] {
        std::fs::remove_file(dir.join(name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_time_and_pruning_keeps_the_newest_of_ours_only() {
        assert_eq!(file_name(0, 0), "tessera-19700101T000000Z.db");
        assert_eq!(file_name(0, 2), "tessera-19700101T000000Z-2.db");
        let dir = tempfile::tempdir().unwrap();
        for t in [100, 200, 300, 400] {
            std::fs::write(dir.path().join(file_name(t, 0)), b"x").unwrap();
        }
        std::fs::write(dir.path().join("tessera-notes.db"), b"mine").unwrap();
        std::fs::write(dir.path().join("other.db"), b"mine").unwrap();
        prune(dir.path(), 2).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec![
                "other.db".to_string(),
                file_name(300, 0),
                file_name(400, 0),
                "tessera-notes.db".to_string()
            ]
        );
    }
}
