//! `tessera export FILE` and `tessera import FILE`: the whole database as one JSON
//! document (`db/transfer.rs` says what is in it), to move between SQLite and
//! PostgreSQL. `-` is standard output for an export and standard input for an import.

use std::io::{Read, Write};
use std::path::Path;

use super::{db_err, runtime};
use crate::clock::Clock;
use crate::config::Settings;
use crate::db::transfer::{Export, TransferError};
use crate::startup::{self, Open};

fn is_stdio(file: &Path) -> bool {
    file.as_os_str() == "-"
}

/// Reads the database on one snapshot and writes it to `file`, a new file made
/// owner-only (it holds password hashes and keys), or to standard output for `-`.
pub fn export(settings: &Settings, file: &Path) -> Result<(), String> {
    runtime()?.block_on(async {
        let db = startup::open_database(settings, Open::Existing)
            .await
            .map_err(|e| e.to_string())?;
        let result = async {
            let doc = db.export(Clock::system().now()).await.map_err(db_err)?;
            let summary = format!(
                "exported {} rows of {} tables from {}",
                doc.row_count(),
                doc.table_count(),
                settings.database_label()
            );
            if is_stdio(file) {
                let mut out = std::io::stdout().lock();
                doc.to_writer(&mut out)
                    .and_then(|()| out.flush())
                    .map_err(|e| format!("cannot write the export to standard output: {e}"))?;
                // Standard output is the document; the summary goes beside it.
                eprintln!("{summary}");
            } else {
                write_new(file, &doc)?;
                println!("{summary} to {}", file.display());
            }
            Ok(())
        }
        .await;
        db.shutdown();
        result
    })
}

/// Creates `file` (never replacing one) owner-only and writes the document, durably;
/// a failed write removes what it created, so that a retry is not refused.
fn write_new(file: &Path, doc: &Export) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let created = options.open(file).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            format!(
                "{} already exists; export writes a new file and never replaces one",
                file.display()
            )
        }
        _ => format!("cannot create {}: {e}", file.display()),
    })?;
    let mut out = std::io::BufWriter::new(created);
    let written = doc
        .to_writer(&mut out)
        .and_then(|()| out.flush())
        .and_then(|()| out.get_ref().sync_all());
    if let Err(e) = written {
        drop(out);
        let _ = std::fs::remove_file(file);
        return Err(format!("cannot write {}: {e}", file.display()));
    }
    Ok(())
}

/// Checks the whole file, then migrates the target (creating a SQLite file if there is
/// none) and loads it in one transaction, if the target is empty.
pub fn import(settings: &Settings, file: &Path) -> Result<(), String> {
    let mut text = String::new();
    let read = if is_stdio(file) {
        std::io::stdin().read_to_string(&mut text)
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_string(&mut text))
    };
    let source = if is_stdio(file) {
        "standard input".to_string()
    } else {
        file.display().to_string()
    };
    read.map_err(|e| format!("cannot read {source}: {e}"))?;
    // A bad file is refused before the target is touched (or a SQLite file created).
    let doc = Export::parse(&text)
        .and_then(Export::prepare)
        .map_err(|e| format!("{source}: {e}"))?;
    drop(text);
    runtime()?.block_on(async {
        let db = startup::open_database(settings, Open::Create)
            .await
            .map_err(|e| e.to_string())?;
        let result = async {
            db.migrate().await.map_err(db_err)?;
            match db.import(doc).await {
                Ok(done) => {
                    println!(
                        "imported {} rows of {} tables into {}",
                        done.rows,
                        done.tables,
                        settings.database_label()
                    );
                    Ok(())
                }
                Err(TransferError::Db(e)) => Err(format!("import failed, nothing was imported: {e}")),
                Err(e) => Err(e.to_string()),
            }
        }
        .await;
        db.shutdown();
        result
    })
}
