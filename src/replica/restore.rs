//! Rebuilding a database file from a replica: the chosen snapshot, then each later
//! transaction's pages written at their place and the file cut to the size its
//! commit frame names — what a checkpoint does — up to the latest or to a point in
//! time. The file is built beside the destination and linked into place only when
//! complete, so an interrupted restore leaves nothing that looks like a database.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::format::{self, ObjectKey};
use super::layout;
use super::store::Store;

#[derive(Debug)]
pub struct Restored {
    pub generation: String,
    /// The last position applied, and the time of the last transaction.
    pub step: u64,
    pub at_ms: i64,
    pub transactions: usize,
    pub bytes: u64,
}

/// A file that is removed unless it is kept.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn create_private(path: &Path) -> Result<std::fs::File, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}

/// Restores the replica in `store` to the new file `to` (never replacing one), at
/// its latest state or as of `at_ms`.
pub fn restore(store: &dyn Store, key: Option<&ObjectKey>, to: &Path, at_ms: Option<i64>) -> Result<Restored, String> {
    let mut wal = to.as_os_str().to_owned();
    wal.push("-wal");
    if to.exists() || Path::new(&wal).exists() {
        return Err(format!(
            "{} already exists; restore writes a new file and never replaces one",
            to.display()
        ));
    }
    let objects = layout::parse(&store.list("").map_err(|e| e.to_string())?);
    let plan = layout::plan(objects, at_ms)?;
    let name = to.file_name().and_then(|n| n.to_str()).unwrap_or("tessera.db");
    let scratch = Scratch(to.with_file_name(format!(".{name}.restoring-{}", std::process::id())));
    let mut file = create_private(&scratch.0)?;
    let io = |e: std::io::Error| format!("{}: {e}", scratch.0.display());

    let snap_name = &plan.snapshot.name;
    let bytes = store.get(snap_name).map_err(|e| e.to_string())?;
    let body = format::unwrap(key, snap_name, &bytes).map_err(|e| e.to_string())?;
    let snapshot = format::decode_snapshot(snap_name, &body).map_err(|e| e.to_string())?;
    file.write_all(&snapshot.db).map_err(io)?;
    let page = u64::from(snapshot.page_size);
    let mut applied = snapshot.step;
    let mut last_ms = snapshot.ts_ms;
    let mut transactions = 0;
    'objects: for object in &plan.wals {
        if object.last <= applied {
            // Covered already, by a merged object read before it.
            continue;
        }
        let bytes = store.get(&object.name).map_err(|e| e.to_string())?;
        let body = format::unwrap(key, &object.name, &bytes).map_err(|e| e.to_string())?;
        let (page_size, commits) = format::decode_wal(&object.name, &body).map_err(|e| e.to_string())?;
        if page_size != snapshot.page_size {
            return Err(format!(
                "{}: page size {page_size} differs from the snapshot's",
                object.name
            ));
        }
        for commit in commits {
            if commit.seq <= applied {
                continue;
            }
            if commit.from > applied + 1 {
                return Err(format!(
                    "the replica is missing position {} of generation {} (next found: {})",
                    applied + 1,
                    plan.generation,
                    commit.from
                ));
            }
            if at_ms.is_some_and(|at| commit.ts_ms > at) {
                break 'objects;
            }
            // Each page's last version and the final size: laid over a state at or
            // after `from - 1` this gives the state at `seq`, as a checkpoint does.
            for frame in &commit.frames {
                file.seek(SeekFrom::Start((u64::from(frame.pgno) - 1) * page))
                    .map_err(io)?;
                file.write_all(&frame.data).map_err(io)?;
                if frame.db_size != 0 {
                    file.set_len(u64::from(frame.db_size) * page).map_err(io)?;
                }
            }
            applied = commit.seq;
            last_ms = commit.ts_ms;
            transactions += 1;
        }
    }
    // A plain file in rollback-journal mode: no log beside it is needed, and Tessera
    // switches it back to WAL when it opens it (file format bytes 18-19).
    file.seek(SeekFrom::Start(18)).map_err(io)?;
    file.write_all(&[1, 1]).map_err(io)?;
    file.sync_all().map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    drop(file);
    // A hard link fails if the destination appeared meanwhile: never a replacement.
    std::fs::hard_link(&scratch.0, to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    Ok(Restored {
        generation: plan.generation,
        step: applied,
        at_ms: last_ms,
        transactions,
        bytes: size,
    })
}
