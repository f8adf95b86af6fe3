//! Rules that count and then write, under real parallelism on every backend of the run:
//! two transactions that both count before either writes must not both pass a rule
//! that only one of them may pass.

use std::time::Duration;

use tessera::db;

use crate::helpers::{backends, spawn_on};

/// Counts the active administrators, holds the count open as a slow request would,
/// then demotes `other` if the count allowed it: whether it did.
async fn demote_if_not_last(db: db::Db, other: i64) -> bool {
    db.write(move |c| {
        let admins = db::users::count_active_admins(c)?;
        std::thread::sleep(Duration::from_millis(300));
        if admins > 1 {
            db::users::set_admin(c, other, false, 0)?;
        }
        Ok(admins > 1)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_administrators_demoting_each_other_at_once_leave_one() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let ada = app.add_user("ada").await;
        let bea = app.add_user("bea").await;
        app.make_admin(ada.id).await;
        app.make_admin(bea.id).await;

        let first = tokio::spawn(demote_if_not_last(app.state.db.clone(), bea.id));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let second = tokio::spawn(demote_if_not_last(app.state.db.clone(), ada.id));
        let (first, second) = (first.await.unwrap(), second.await.unwrap());

        assert!(first ^ second, "exactly one demotion passes the rule: {first} {second}");
        let left = app.state.db.read(db::users::count_active_admins).await.unwrap();
        assert_eq!(left, 1, "one administrator is left");
    }
}
