//! Fresh databases on both engines for the storage unit tests: a temporary SQLite
//! file, and a schema of its own on the PostgreSQL cluster the run has.

use crate::db::Db;

pub(in crate::db) fn sqlite_db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("t.db"), &crate::domain::SqliteOptions::default()).unwrap();
    (dir, db)
}

/// A fresh schema on the cluster the run has, or `None` (said loudly) without one.
pub(in crate::db) async fn postgres_db() -> Option<Db> {
    let Some(url) = std::env::var("TESSERA_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI checks the export against PostgreSQL: set TESSERA_TEST_DATABASE_URL"
        );
        eprintln!("SKIPPED: the PostgreSQL half of this test (no TESSERA_TEST_DATABASE_URL)");
        return None;
    };
    let schema = format!(
        "transfer_{}",
        crate::crypto::random::random_id()
            .to_ascii_lowercase()
            .replace('-', "_")
    );
    crate::db::pg::testing::batch(&url, &format!("CREATE SCHEMA {schema}")).unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let own = format!("{url}{sep}options=-csearch_path%3D{schema}");
    Some(Db::open_postgres(&own, 2, true).await.unwrap())
}
