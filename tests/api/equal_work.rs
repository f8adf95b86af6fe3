//! "Forgot your password?" and "Sign in by email" do the same work for a known and an
//! unknown name: the same writes, in the same order, and a mail rendered (with the
//! same reads: the hourly limits, the branding) and stored either way. Only the reads
//! of the account itself differ: a name that matches a row reads that row, by its id. The decoy is never sent,
//! its link opens nothing, and it is purged like other expired rows. Statements are
//! observed through `db::testing::recorded`, on whichever engine the suite runs.

use tessera::crypto::TokenHash;
use tessera::db::{self, sessions::NewLoginRequest};
use tessera::lifecycle::reset;
use tessera::signin::link as signin;
use tessera::signin::Pending;

use crate::helpers::*;

const IP: &str = "203.0.113.9";

/// Every statement a reset request for `who` runs.
async fn reset_statements(app: &TestApp, who: &str) -> Vec<String> {
    let asked = reset::Asked::new(&app.state.ctx(), who, IP);
    let (_, log) = app
        .state
        .db
        .write(move |c| db::testing::recorded(c, |tx| reset::request_in(tx, &asked)))
        .await
        .unwrap();
    log
}

/// Every statement a sign-in mail for `who` runs, from a freshly parked request.
async fn signin_statements(app: &TestApp, who: &str) -> Vec<String> {
    let request_id = format!("parked for {who}");
    let pending = Pending::Portal("/account".into());
    let browser = TokenHash::of("a browser");
    let sending = signin::Sending::new(&app.state.ctx(), &request_id, &pending, &browser, who, IP).unwrap();
    let (id_hash, params, now) = (
        TokenHash::of(&request_id),
        serde_json::to_string(&pending).unwrap(),
        app.clock.now(),
    );
    app.state
        .db
        .write(move |c| {
            db::sessions::create_login_request(
                c,
                &NewLoginRequest {
                    id_hash: &id_hash,
                    csrf_hash: &TokenHash::of("csrf"),
                    browser_hash: &browser,
                    params: &params,
                    now,
                    expires_at: now + 600,
                },
            )?;
            let (sent, log) = db::testing::recorded(c, |tx| signin::send_in(tx, sending))?;
            assert!(sent.is_some(), "the parked request was live");
            Ok(log)
        })
        .await
        .unwrap()
}

fn writes(log: &[String]) -> Vec<String> {
    log.iter()
        .filter(|s| s.starts_with("INSERT") || s.starts_with("UPDATE") || s.starts_with("DELETE"))
        .cloned()
        .collect()
}

/// The reads the mail's rendering and limits make (the outbox counts, the branding).
fn mail_reads(log: &[String]) -> Vec<String> {
    let reads: Vec<String> = log
        .iter()
        .filter(|s| s.contains("FROM mail_outbox") || s.contains("FROM branding"))
        .cloned()
        .collect();
    assert_eq!(reads.len(), 3, "two hourly counts and the branding: {log:#?}");
    reads
}

fn writes_to(log: &[String], table: &str) -> bool {
    log.iter().any(|s| s.starts_with(&format!("INSERT INTO {table} ")))
}

#[tokio::test]
async fn a_reset_for_a_known_and_an_unknown_name_runs_the_same_statements() {
    let (app, _sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    for (known, unknown) in [("ada@example.com", "nobody@example.com"), ("ada", "nobody")] {
        let (k, u) = (
            reset_statements(&app, known).await,
            reset_statements(&app, unknown).await,
        );
        assert_eq!(writes(&k), writes(&u), "{known} and {unknown}");
        assert_eq!(mail_reads(&k), mail_reads(&u), "{known} and {unknown}");
        for table in ["mail_outbox", "email_tokens", "audit_log"] {
            assert!(writes_to(&u, table), "{table}: {u:#?}");
        }
    }
}

#[tokio::test]
async fn a_sign_in_link_for_a_known_and_an_unknown_name_makes_the_same_writes() {
    // For a matching account its lockout and pending verification are read too, by
    // its id, which an unknown name has none of.
    let (app, _sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    for (known, unknown) in [("ada@example.com", "nobody@example.com"), ("ada", "nobody")] {
        let (k, u) = (
            signin_statements(&app, known).await,
            signin_statements(&app, unknown).await,
        );
        assert_eq!(writes(&k), writes(&u), "{known} and {unknown}");
        assert_eq!(mail_reads(&k), mail_reads(&u), "{known} and {unknown}");
        for table in ["mail_outbox", "email_tokens", "audit_log", "login_requests"] {
            assert!(writes_to(&u, table), "{table}: {u:#?}");
        }
    }
}

#[tokio::test]
async fn a_decoy_mail_is_never_sent_opens_nothing_and_is_purged() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_client("rp", false).await;
    for who in ["nobody@example.com", "nobody"] {
        let resp = plain_client()
            .post(app.url("/password/forgot"))
            .form(&[("who", who)])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        crate::signin_link::ask_by_mail(&app, &browser(), who).await;
    }
    let stored = app.state.db.read(db::testing::outbox).await.unwrap();
    assert_eq!(stored.len(), 4, "a decoy is stored for each");
    for (kind, to, text, sent_at, failed_at) in &stored {
        assert_eq!(kind, db::outbox::DECOY);
        assert!(to.starts_with("unknown:"), "filed under a pseudonym: {to}");
        assert!(!text.contains("nobody"), "what was typed is not kept");
        assert!(sent_at.is_none() && failed_at.is_some());
        // The rendered link opens nothing.
        let link = text
            .split_whitespace()
            .find(|w| w.starts_with(&app.address))
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(browser().get(link).send().await.unwrap().status(), 410, "{link}");
    }
    // The mailer runs every two seconds: give it a pass or two.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert!(sink.messages().is_empty(), "nothing is sent");
    let queue = tessera::lifecycle::queue_view(&app.state.ctx(), None, 50)
        .await
        .unwrap();
    assert_eq!(
        (queue.pending, queue.sent, queue.failed, queue.items.len()),
        (0, 0, 0, 0)
    );

    app.clock.advance(3601);
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| db::purge::purge_expired(c, now, 0))
        .await
        .unwrap();
    assert!(
        app.state.db.read(db::testing::outbox).await.unwrap().is_empty(),
        "purged"
    );
}
