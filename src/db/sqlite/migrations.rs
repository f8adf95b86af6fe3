//! Forward-only schema migrations, each applied in its own transaction, tracked in
//! `PRAGMA user_version`. A database newer than this binary is refused, not touched.

use rusqlite::Connection;

use crate::db::DbError;

/// Migrations in order; version N is `MIGRATIONS[N - 1]`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_protocol.sql"),
    include_str!("migrations/0003_lockout.sql"),
    include_str!("migrations/0004_setup.sql"),
    include_str!("migrations/0005_people.sql"),
    include_str!("migrations/0006_passkeys.sql"),
    include_str!("migrations/0007_security.sql"),
    include_str!("migrations/0008_portable.sql"),
    include_str!("migrations/0009_leases.sql"),
    include_str!("migrations/0010_mail.sql"),
    include_str!("migrations/0011_federation.sql"),
    include_str!("migrations/0012_apps.sql"),
    include_str!("migrations/0013_protocol2.sql"),
    include_str!("migrations/0014_branding.sql"),
    include_str!("migrations/0015_passkey_accounts.sql"),
    include_str!("migrations/0016_client_introspection.sql"),
    include_str!("migrations/0017_username_skeleton.sql"),
];

pub const LATEST: i64 = MIGRATIONS.len() as i64;

pub fn apply(conn: &mut Connection) -> Result<(), DbError> {
    apply_up_to(conn, LATEST)
}

/// Applies the migrations up to schema `target` (tests build older databases so).
pub(crate) fn apply_up_to(conn: &mut Connection, target: i64) -> Result<(), DbError> {
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
        if version >= target {
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
    fn allowed_groups_move_to_their_table_and_unknown_names_fail_closed() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("m.db")).unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        apply_up_to(&mut conn, 7).unwrap();
        conn.execute_batch(
            "INSERT INTO groups (name) VALUES ('staff');
             INSERT INTO clients (client_id, name, redirect_uris, post_logout_redirect_uris, created_at, updated_at,
                                  allowed_groups)
             VALUES ('wiki', 'Wiki', '[]', '[]', 0, 0, '[\"staff\",\"gone\"]'),
                    ('open', 'Open', '[]', '[]', 0, 0, '[]');",
        )
        .unwrap();
        apply(&mut conn).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT a.client_id, g.name FROM client_allowed_groups a JOIN groups g ON g.id = a.group_id
                 ORDER BY 1, 2",
            )
            .unwrap();
        let rows: Vec<(String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                ("wiki".to_string(), "gone".to_string()),
                ("wiki".to_string(), "staff".to_string())
            ],
            "an unknown name becomes an empty group: the client still admits only those"
        );
    }

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
