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

/// Counts this hour's mail to `to`, holds the count open as a slow request would, then
/// queues one more if the count is under `limit`: whether it did.
async fn queue_if_under(db: db::Db, to: &'static str, limit: i64, now: i64) -> bool {
    db.write(move |c| {
        let (_, to_addr) = db::outbox::count_since(c, None, to, &["reset"], now - 3600)?;
        std::thread::sleep(Duration::from_millis(200));
        if to_addr < limit {
            let mail = db::outbox::NewMail {
                to,
                subject: "s",
                text: "t",
                html: "<p>t</p>",
                kind: "reset",
                user_id: None,
                decoy: false,
            };
            db::outbox::queue(c, &mail, now)?;
        }
        Ok(to_addr < limit)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_mails_to_one_address_never_pass_the_hourly_limit() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let now = app.clock.now();
        let tries: Vec<_> = (0..6)
            .map(|_| tokio::spawn(queue_if_under(app.state.db.clone(), "erin@example.org", 2, now)))
            .collect();
        let mut queued = 0;
        for t in tries {
            queued += i64::from(t.await.unwrap());
        }
        assert_eq!(queued, 2, "the limit lets exactly two through");
        let (_, counted) = app
            .state
            .db
            .write(move |c| db::outbox::count_since(c, None, "erin@example.org", &["reset"], now - 3600))
            .await
            .unwrap();
        assert_eq!(counted, 2, "two are stored");
    }
}
