//! The storage engine under concurrency: group commit loses nothing, a failing or
//! panicking operation harms no neighbour, and single-use values are used once.

use tessera::db::{self, Db, DbError, SqliteOptions};

use crate::helpers::*;

fn settings(wal: bool) -> SqliteOptions {
    SqliteOptions {
        wal,
        ..SqliteOptions::default()
    }
}

async fn count(db: &Db) -> i64 {
    db.read(|c| db::testing::count_rows(c, "revoked_tokens")).await.unwrap()
}

async fn many_writers(wal: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let db = Db::open(&path, &settings(wal)).unwrap();
    // A second handle with a writer of its own on the same file, as a CLI command
    // beside the server has.
    let cli_path = path.clone();
    let cli = tokio::spawn(async move {
        let other = Db::open_existing(&cli_path, &settings(wal)).unwrap();
        for i in 0..200 {
            let jti = format!("cli-{i}");
            other.write(move |c| db::grants::revoke_jti(c, &jti, 0)).await.unwrap();
        }
        other.shutdown();
    });
    let mut tasks = Vec::new();
    for t in 0..50 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..40 {
                let jti = format!("t{t}-{i}");
                db.write(move |c| db::grants::revoke_jti(c, &jti, 0)).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    cli.await.unwrap();
    assert_eq!(count(&db).await, 50 * 40 + 200, "every write committed exactly once");
    let stats = db.writer_stats().expect("a SQLite writer");
    assert_eq!(stats.operations, 2000);
    assert!(
        stats.batches < stats.operations,
        "writes were grouped into shared commits"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_in_wal_mode_lose_nothing() {
    many_writers(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_with_the_rollback_journal_lose_nothing() {
    many_writers(false).await;
}

#[tokio::test]
async fn a_failing_or_panicking_operation_leaves_its_batch_intact() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("f.db"), &settings(true)).unwrap();
    let ok1 = db.write(|c| db::grants::revoke_jti(c, "a", 0));
    let failing = db.write(|c| {
        db::grants::revoke_jti(c, "rolled-back", 0)?;
        Err::<(), _>(DbError::Conflict)
    });
    let panicking = db.write(|c| -> Result<(), DbError> {
        db::grants::revoke_jti(c, "also-rolled-back", 0)?;
        panic!("bug in an operation")
    });
    let ok2 = db.write(|c| db::grants::revoke_jti(c, "b", 0));
    let (r1, r2, r3, r4) = tokio::join!(ok1, failing, panicking, ok2);
    assert!(r1.is_ok() && r4.is_ok());
    assert!(matches!(r2, Err(DbError::Conflict)));
    assert!(matches!(r3, Err(DbError::Panicked)));
    assert_eq!(count(&db).await, 2);
    db.write(|c| db::grants::revoke_jti(c, "c", 0)).await.unwrap();
    assert_eq!(count(&db).await, 3, "the writer survives a panic");
}

/// Starts a write that holds the writer until `release` is sent, and waits until the
/// writer has taken it, so that what is written next queues up behind it.
async fn hold_writer(
    db: &Db,
) -> (
    std::sync::mpsc::Sender<()>,
    tokio::task::JoinHandle<Result<(), DbError>>,
) {
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let d = db.clone();
    let blocker = tokio::spawn(async move {
        d.write(move |_| {
            let _ = hold.recv();
            Ok(())
        })
        .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    (release, blocker)
}

/// The first operations of a batch run outside any savepoint: one that fails there
/// rolls back the transaction, which begins again for the rest of the batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_begins_with_failures_keeps_what_follows() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("b.db"), &settings(true)).unwrap();
    let before = db.writer_stats().unwrap();
    // Everything below queues up behind the blocker and is drained as one batch.
    let (release, blocker) = hold_writer(&db).await;
    type Op = Box<dyn FnOnce(&db::Tx<'_>) -> Result<(), DbError> + Send>;
    let ops: Vec<Op> = vec![
        Box::new(|c| {
            db::grants::revoke_jti(c, "first-fails", 0)?;
            Err(DbError::Conflict)
        }),
        Box::new(|c| {
            db::grants::revoke_jti(c, "then-panics", 0)?;
            panic!("bug in an operation")
        }),
        Box::new(|c| db::grants::revoke_jti(c, "kept-1", 0)),
        Box::new(|c| {
            db::grants::revoke_jti(c, "fails-in-savepoint", 0)?;
            Err(DbError::Conflict)
        }),
        Box::new(|c| db::grants::revoke_jti(c, "kept-2", 0)),
    ];
    let mut queued = Vec::new();
    for op in ops {
        let d = db.clone();
        queued.push(tokio::spawn(async move { d.write(op).await }));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    let mut results = Vec::new();
    for q in queued {
        results.push(q.await.unwrap());
    }
    assert!(matches!(results[0], Err(DbError::Conflict)), "{:?}", results[0]);
    assert!(matches!(results[1], Err(DbError::Panicked)), "{:?}", results[1]);
    assert!(results[2].is_ok() && results[4].is_ok());
    assert!(matches!(results[3], Err(DbError::Conflict)), "{:?}", results[3]);
    let kept = db.read(db::testing::revoked_jtis).await.unwrap();
    assert_eq!(
        kept,
        ["kept-1", "kept-2"],
        "only the operations that succeeded are kept"
    );
    let after = db.writer_stats().unwrap();
    assert_eq!(
        after.batches - before.batches,
        2,
        "the blocker's batch, then one batch of five"
    );
}

#[tokio::test]
async fn a_full_queue_answers_busy_instead_of_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(true);
    s.writer_queue = 1;
    let db = Db::open(&dir.path().join("q.db"), &s).unwrap();
    let (release, blocker) = hold_writer(&db).await;
    let d = db.clone();
    let queued = tokio::spawn(async move { d.write(|c| db::grants::revoke_jti(c, "q", 0)).await });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let refused = db.write(|c| db::grants::revoke_jti(c, "r", 0)).await;
    assert!(matches!(refused, Err(DbError::Busy)));
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    queued.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_redemptions_of_one_code_yield_exactly_one_token() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let pkce = Pkce::new();
    let url = app.authorize_url(
        "app",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let code = app.login(&browser(), &url, "alice").await["code"].clone();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (address, secret, code, verifier) =
            (app.address.clone(), secret.clone(), code.clone(), pkce.verifier.clone());
        tasks.push(tokio::spawn(async move {
            plain_client()
                .post(format!("{address}/token"))
                .basic_auth("app", Some(secret))
                .form(&[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", REDIRECT),
                    ("code_verifier", &verifier),
                ])
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 400).count(), 7, "{statuses:?}");
}

#[tokio::test]
async fn expired_rows_are_purged_and_live_ones_kept() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let live = app.tokens("app", &secret, "alice").await;
    let now = app.clock.now();
    let db = &app.state.db;
    db.write(move |c| {
        for i in 0..1200 {
            db::grants::revoke_jti(c, &format!("old-{i}"), now - 1)?;
        }
        db::grants::revoke_jti(c, "fresh", now + 3600)
    })
    .await
    .unwrap();
    let mut rounds = 0;
    loop {
        let n = db.write(move |c| db::purge::purge_expired(c, now, 0)).await.unwrap();
        rounds += 1;
        if n == 0 {
            break;
        }
        assert!(n <= db::purge::BATCH * 9, "each round is bounded");
    }
    assert!(rounds >= 3, "1200 rows take several batches of {}", db::purge::BATCH);
    assert_eq!(count(db).await, 1, "only the unexpired revocation remains");
    let rt = live["refresh_token"].as_str().unwrap();
    assert_eq!(
        app.introspect(("app", &secret), rt).await["active"],
        true,
        "live grants survive"
    );
}

#[tokio::test]
async fn audit_entries_older_than_the_retention_are_purged() {
    // The server's own purger keeps everything here; the test drives each retention.
    let app = spawn_with(|s| s.audit_retention_days = 0).await;
    let now = app.clock.now();
    let db = &app.state.db;
    db.write(move |c| {
        for (i, age) in [(0, 100), (1, 40 * 86_400), (2, 91 * 86_400), (3, 400 * 86_400)] {
            let event = tessera::audit::Event::new("login.ok").actor(format!("user{i}"));
            event.write(c, now - age)?;
        }
        Ok(())
    })
    .await
    .unwrap();
    let total = || async {
        db.read(|c| db::audit::list(c, &db::audit::Filter::default(), 100, 0))
            .await
            .unwrap()
            .1
    };
    db.write(move |c| db::purge::purge_expired(c, now, 0)).await.unwrap();
    assert_eq!(total().await, 4, "retention 0 keeps everything");
    db.write(move |c| db::purge::purge_expired(c, now, 90 * 86_400))
        .await
        .unwrap();
    assert_eq!(total().await, 2, "entries older than 90 days go");
    db.write(move |c| db::purge::purge_expired(c, now, 30 * 86_400))
        .await
        .unwrap();
    assert_eq!(total().await, 1);
}
