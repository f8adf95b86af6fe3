//! Forward-only schema migrations, each applied in its own transaction, tracked in
//! `PRAGMA user_version`. A database newer than this binary is refused, not touched.

use rusqlite::Connection;

use super::DbError;

/// Migrations in order; version N is `MIGRATIONS[N - 1]`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_protocol.sql"),
    include_str!("migrations/0003_lockout.sql"),
    include_str!("migrations/0004_setup.sql"),
    include_str!("migrations/0005_people.sql"),
    include_str!("migrations/0006_passkeys.sql"),
    include_str!("migrations/0007_security.sql"),
];

pub const LATEST: i64 = MIGRATIONS.len() as i64;

pub fn apply(conn: &mut Connection) -> Result<(), DbError> {
    loop {
        // BEGIN IMMEDIATE takes the write lock before the version is read, so two
        // processes starting on one file cannot both apply the same migration.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > LATEST {
            return Err(DbError::SchemaTooNew {
                found: version,
                supported: LATEST,
            });
        }
        if version == LATEST {
            return Ok(());
        }
        let sql = MIGRATIONS[version as usize];
        tx.execute_batch(sql)
            .map_err(|e| DbError::Migration(format!("migration {} failed: {e}", version + 1)))?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_once_and_refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("m.db")).unwrap();
        apply(&mut conn).unwrap();
        apply(&mut conn).unwrap();
        let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(v, LATEST);
        conn.pragma_update(None, "user_version", LATEST + 1).unwrap();
        assert!(matches!(apply(&mut conn), Err(DbError::SchemaTooNew { .. })));
    }
}
