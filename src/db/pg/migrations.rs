//! Forward-only schema migrations for PostgreSQL, tracked in `tessera_schema`. Each is
//! applied in its own transaction while this connection holds an advisory lock, so
//! that nodes starting together apply each migration exactly once and the others wait
//! for it; a database newer than this binary is refused, not touched.

use crate::db::DbError;

/// Migrations in order; version N is `MIGRATIONS[N - 1]`. Version 1 is the schema
/// SQLite reaches with its migrations 1–8; from there each SQLite migration has its
/// twin here (SQLite's 9 is this 2).
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_leases.sql"),
    include_str!("migrations/0003_mail.sql"),
    include_str!("migrations/0004_federation.sql"),
    include_str!("migrations/0005_apps.sql"),
    include_str!("migrations/0006_protocol2.sql"),
    include_str!("migrations/0007_branding.sql"),
    include_str!("migrations/0008_passkey_accounts.sql"),
    include_str!("migrations/0009_client_introspection.sql"),
    include_str!("migrations/0010_username_skeleton.sql"),
];

pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// The advisory lock key of migrations ("tessera" + 1, any fixed number will do, as
/// long as no other lock of ours uses it).
const MIGRATION_LOCK: i64 = 0x7465_7373_6572_6101;

pub fn apply(client: &mut postgres::Client) -> Result<(), DbError> {
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = apply_locked(client);
    // Unlocked whatever happened (the lock is the session's and would otherwise stay
    // with the pooled connection).
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    result?;
    unlocked?;
    Ok(())
}

fn apply_locked(client: &mut postgres::Client) -> Result<(), DbError> {
    client.batch_execute("CREATE TABLE IF NOT EXISTS tessera_schema (version BIGINT NOT NULL)")?;
    loop {
        let mut tx = client.transaction()?;
        let version = version_in(&mut tx)?;
        if version > LATEST {
            return Err(DbError::SchemaTooNew {
                found: version,
                supported: LATEST,
            });
        }
        if version == LATEST {
            return Ok(());
        }
        tx.batch_execute(MIGRATIONS[version as usize])
            .map_err(|e| DbError::Migration(format!("migration {} failed: {e}", version + 1)))?;
        tx.execute("DELETE FROM tessera_schema", &[])?;
        tx.execute("INSERT INTO tessera_schema (version) VALUES ($1)", &[&(version + 1)])?;
        tx.commit()?;
    }
}

fn version_in(tx: &mut postgres::Transaction<'_>) -> Result<i64, DbError> {
    let row = tx.query_opt("SELECT max(version) FROM tessera_schema", &[])?;
    Ok(row.and_then(|r| r.get::<_, Option<i64>>(0)).unwrap_or(0))
}

/// What `tessera check` reports for PostgreSQL: a schema this binary does not match,
/// constraints not validated, indexes left invalid by an interrupted build.
pub fn check(client: &mut postgres::Client) -> Result<Vec<String>, DbError> {
    let mut problems = Vec::new();
    let mut tx = client.build_transaction().read_only(true).start()?;
    let exists: bool = tx
        .query_one("SELECT to_regclass('tessera_schema') IS NOT NULL", &[])?
        .get(0);
    let version = if exists { version_in(&mut tx)? } else { 0 };
    if version != LATEST {
        problems.push(format!(
            "schema: version {version}, this binary expects {LATEST} (run `tessera migrate`)"
        ));
    }
    for row in tx.query(
        "SELECT conrelid::regclass::text, conname FROM pg_constraint
         WHERE NOT convalidated AND connamespace = current_schema()::regnamespace",
        &[],
    )? {
        problems.push(format!(
            "constraint: {} on {} is not validated",
            row.get::<_, String>(1),
            row.get::<_, String>(0)
        ));
    }
    for row in tx.query(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE NOT i.indisvalid AND c.relnamespace = current_schema()::regnamespace",
        &[],
    )? {
        problems.push(format!("index: {} is invalid", row.get::<_, String>(0)));
    }
    tx.commit()?;
    Ok(problems)
}
