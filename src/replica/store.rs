//! Replica targets as a flat set of named objects: a directory (`FileStore`) or an
//! S3-compatible bucket (`s3.rs`). Names are relative to the target and use `/`.

use std::io::Write;
use std::path::{Path, PathBuf};

/// One stored object, as a listing names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    pub name: String,
    pub size: u64,
}

/// Why a store call failed; `NotFound` is the one callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no object {0}")]
    NotFound(String),
    #[error("{0}")]
    Failed(String),
}

/// What replication needs of a target. Calls block (the shipper runs on a thread of
/// its own); `put` is atomic: a reader sees the whole object or none of it.
pub trait Store: Send + Sync {
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError>;
    fn get(&self, name: &str) -> Result<Vec<u8>, StoreError>;
    /// Every object whose name starts with `prefix`, in name order.
    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, StoreError>;
    /// Deleting a missing object succeeds.
    fn delete(&self, name: &str) -> Result<(), StoreError>;
    /// The target as messages name it.
    fn describe(&self) -> String;
}

/// A directory: each object a file (0600, directories 0700), written to a temporary
/// name, synced and renamed into place.
pub struct FileStore {
    root: PathBuf,
}

impl FileStore {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    fn path(&self, name: &str) -> Result<PathBuf, StoreError> {
        if name.is_empty() || name.split('/').any(|p| p.is_empty() || p == "." || p == "..") {
            return Err(StoreError::Failed(format!("`{name}` is not an object name")));
        }
        Ok(self.root.join(name))
    }
}

fn failed(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Failed(format!("{}: {e}", path.display()))
}

fn create_dirs(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

impl Store for FileStore {
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.path(name)?;
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        create_dirs(&dir).map_err(|e| failed(&dir, e))?;
        let tmp = dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            path.file_name().and_then(|n| n.to_str()).unwrap_or("object")
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = options.open(&tmp).and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(failed(&tmp, e));
        }
        std::fs::rename(&tmp, &path).map_err(|e| failed(&path, e))?;
        // The rename is durable once the directory is.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let path = self.path(name)?;
        std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::NotFound(name.to_string()),
            _ => failed(&path, e),
        })
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, StoreError> {
        let mut out = Vec::new();
        let mut stack = vec![(self.root.clone(), String::new())];
        while let Some((dir, rel)) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(failed(&dir, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| failed(&dir, e))?;
                let Some(file) = entry.file_name().to_str().map(str::to_string) else {
                    continue;
                };
                if file.starts_with('.') {
                    continue;
                }
                let name = if rel.is_empty() { file } else { format!("{rel}/{file}") };
                let kind = entry.file_type().map_err(|e| failed(&entry.path(), e))?;
                if kind.is_dir() {
                    // Only directories that can hold a match are walked.
                    if prefix.starts_with(&format!("{name}/")) || name.starts_with(prefix) || prefix.is_empty() {
                        stack.push((entry.path(), name));
                    }
                } else if kind.is_file() && name.starts_with(prefix) {
                    let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                    out.push(ObjectInfo { name, size });
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn delete(&self, name: &str) -> Result<(), StoreError> {
        let path = self.path(name)?;
        match std::fs::remove_file(&path) {
            Ok(()) => {
                // An emptied generation directory goes too (it fails while not empty).
                if let Some(parent) = path.parent().filter(|p| *p != self.root) {
                    let _ = std::fs::remove_dir(parent);
                }
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(failed(&path, e)),
        }
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_store_puts_lists_gets_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path().join("replica"));
        assert!(
            store.list("").unwrap().is_empty(),
            "a missing directory is an empty target"
        );
        store.put("g1/0001.wal", b"one").unwrap();
        store.put("g1/0002.wal", b"two!").unwrap();
        store.put("g2/0001.snap", b"three").unwrap();
        let names: Vec<_> = store
            .list("g1/")
            .unwrap()
            .into_iter()
            .map(|o| (o.name, o.size))
            .collect();
        assert_eq!(names, vec![("g1/0001.wal".into(), 3), ("g1/0002.wal".into(), 4)]);
        assert_eq!(store.list("").unwrap().len(), 3);
        assert_eq!(store.get("g1/0002.wal").unwrap(), b"two!");
        assert!(matches!(store.get("g1/none"), Err(StoreError::NotFound(_))));
        store.delete("g2/0001.snap").unwrap();
        store.delete("g2/0001.snap").unwrap();
        assert!(
            !dir.path().join("replica/g2").exists(),
            "an emptied directory is removed"
        );
        assert!(store.put("../escape", b"x").is_err());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("replica/g1/0001.wal"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
