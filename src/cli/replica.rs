//! `tessera restore`, `tessera replica status` and `tessera backup verify`: reading a
//! replica (`serve --replicate-to`) or a backup file. They run on this thread, not in
//! a runtime: a replica store's calls block.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::clock::Clock;
use crate::config::Settings;
use crate::replica::format::ObjectKey;
use crate::replica::{restore as rebuild, status, Store, Target};

fn open_store(settings: &Settings, target: &str) -> Result<Box<dyn Store>, String> {
    Target::parse(target)?.open(&settings.s3)
}

fn key(settings: &Settings) -> Option<ObjectKey> {
    settings.master_key.as_ref().map(ObjectKey::from_master)
}

/// `--at`: RFC 3339, to the second (fractions are kept when given).
fn parse_at(text: &str) -> Result<i64, String> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|_| format!("--at `{text}` is not an RFC 3339 time such as 2026-12-01T14:30:00Z"))
}

/// `integrity_check` and `foreign_key_check` of a rebuilt file, as `tessera check`.
fn check(settings: &Settings, path: &Path) -> Result<(), String> {
    let problems = crate::db::check_file(path, &settings.sqlite).map_err(|e| e.to_string())?;
    if problems.is_empty() {
        return Ok(());
    }
    for p in &problems {
        eprintln!("{p}");
    }
    Err(format!("{}: {} problems found", path.display(), problems.len()))
}

pub fn restore(settings: &Settings, from: &str, to: &Path, at: Option<&str>) -> Result<(), String> {
    let at_ms = at.map(parse_at).transpose()?;
    let store = open_store(settings, from)?;
    let started = Instant::now();
    let done = rebuild::restore(store.as_ref(), key(settings).as_ref(), to, at_ms)?;
    let took = started.elapsed();
    check(settings, to)?;
    println!(
        "restored {} from {} in {:.2} s: generation {}, step {}, state as of {} ({} transactions after the snapshot, {} bytes); integrity ok, foreign keys ok",
        to.display(),
        store.describe(),
        took.as_secs_f64(),
        done.generation,
        done.step,
        status::rfc3339(done.at_ms),
        done.transactions,
        done.bytes
    );
    Ok(())
}

pub fn replica_status(settings: &Settings, target: &str, json: bool) -> Result<(), String> {
    let store = open_store(settings, target)?;
    let status = status::status(store.as_ref(), Clock::system().now_millis())?;
    if json {
        let text = serde_json::to_string_pretty(&status).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", status.text());
    }
    Ok(())
}

/// A path in the temporary directory that is removed, with any log beside it, at
/// the end.
struct TempDb(PathBuf);

impl TempDb {
    fn new() -> Self {
        let name = format!("tessera-verify-{}-{:08x}.db", std::process::id(), rand::random::<u32>());
        Self(std::env::temp_dir().join(name))
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = self.0.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }
}

/// `tessera backup verify FILE|TARGET`: a restore drill. A backup file is copied, a
/// replica restored, to a temporary file, which then must pass `check`.
pub fn backup_verify(settings: &Settings, what: &str) -> Result<(), String> {
    let temp = TempDb::new();
    let started = Instant::now();
    let path = Path::new(what);
    if path.is_file() {
        let mut head = [0u8; 16];
        let read = std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
        if read.is_err() || &head != b"SQLite format 3\0" {
            return Err(format!("{what} is not a SQLite database file"));
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut out = options
            .open(&temp.0)
            .map_err(|e| format!("{}: {e}", temp.0.display()))?;
        let mut input = std::fs::File::open(path).map_err(|e| format!("{what}: {e}"))?;
        std::io::copy(&mut input, &mut out).map_err(|e| format!("cannot copy {what}: {e}"))?;
        check(settings, &temp.0).map_err(|e| format!("{what} is not a sound backup: {e}"))?;
        println!(
            "{what}: a sound backup ({} bytes, checked in {:.2} s): integrity ok, foreign keys ok",
            out.metadata().map(|m| m.len()).unwrap_or(0),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let store = open_store(settings, what)?;
    let done = rebuild::restore(store.as_ref(), key(settings).as_ref(), &temp.0, None)?;
    check(settings, &temp.0).map_err(|e| format!("the restore of {what} is not sound: {e}"))?;
    println!(
        "{}: restored generation {} to step {} (state as of {}, {} bytes) and checked in {:.2} s: integrity ok, foreign keys ok",
        store.describe(),
        done.generation,
        done.step,
        status::rfc3339(done.at_ms),
        done.bytes,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
