//! The mail outbox: mail is queued with the action that causes it and sent by the
//! mailer, so an SMTP server that is down delays mail but never fails the action or
//! loses the mail, even across `kill -9` (of the only node on SQLite, of one of three
//! on PostgreSQL, where the others send it once); the admin API shows the queue with
//! the server's last answer.

use serde_json::Value;

use crate::admin_api::admin_token;
use crate::failover::node::Node;
use crate::helpers::*;
use crate::process::Server;
use crate::smtp::SmtpSink;

async fn ask_reset(base: &str, who: &str) -> u16 {
    plain_client()
        .post(format!("{base}/password/forgot"))
        .form(&[("who", who)])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn queue_view(app: &TestApp, token: &str, query: &str) -> Value {
    let resp = plain_client()
        .get(app.url(&format!("/admin/api/mail{query}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

/// Polls the queue until `ok` holds (at most 30 s).
async fn until(app: &TestApp, token: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..300 {
        let view = queue_view(app, token, "").await;
        if ok(&view) {
            return view;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{what}: {}", queue_view(app, token, "").await);
}

#[tokio::test]
async fn smtp_down_delays_mail_without_failing_the_action_and_the_queue_shows_why() {
    let (app, sink) = spawn_mail(|_| {}).await;
    let token = admin_token(&app).await;
    app.add_user("ada").await;
    sink.set_down(true);
    assert_eq!(
        ask_reset(&app.address, "ada").await,
        200,
        "the person's action succeeds"
    );
    let view = until(&app, &token, "a failed attempt is recorded", |v| {
        v["items"][0]["attempts"].as_i64() >= Some(1)
    })
    .await;
    let item = &view["items"][0];
    assert_eq!(
        (view["pending"].as_i64(), item["status"].as_str()),
        (Some(1), Some("pending"))
    );
    assert!(item["last_answer"].as_str().unwrap().contains("421"), "{item}");
    assert_eq!(item["kind"], "reset");
    assert!(
        item.get("text_body").is_none() && !item.to_string().contains("token="),
        "no bodies: {item}"
    );
    assert!(sink.messages().is_empty());

    sink.set_down(false);
    let mail = sink.nth("ada@example.com", 1).await;
    assert!(mail.subject().contains("Reset your password"));
    let view = until(&app, &token, "the mail is recorded as sent", |v| v["sent"] == 1).await;
    assert!(
        view["items"][0]["last_answer"].as_str().unwrap().starts_with("250"),
        "{view}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(sink.messages().len(), 1, "sent once");
    let sent_only = queue_view(&app, &token, "?status=sent").await;
    assert_eq!(sent_only["items"].as_array().unwrap().len(), 1);
    let bad = plain_client()
        .get(app.url("/admin/api/mail?status=lost"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn a_permanent_refusal_is_given_up_at_once_and_shown_as_failed() {
    let (app, sink) = spawn_mail(|_| {}).await;
    let token = admin_token(&app).await;
    app.add_user("ada").await;
    sink.refuse_recipients();
    assert_eq!(ask_reset(&app.address, "ada").await, 200);
    let view = until(&app, &token, "the mail is given up", |v| v["failed"] == 1).await;
    let item = &view["items"][0];
    assert_eq!(item["status"], "failed");
    assert_eq!(item["attempts"], 1, "a 5xx answer is not retried");
    assert!(item["last_answer"].as_str().unwrap().contains("550"), "{item}");
    // The admin pages list it too.
    let admin = app.add_user("root").await;
    app.make_admin(admin.id).await;
    let b = browser();
    app.portal_login(&b, "root", PASSWORD).await;
    let page = b.get(app.url("/admin/mail")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("550") && html.contains("no such mailbox here"), "{html}");
    assert!(html.contains("ada@example.com"));
}

/// SMTP is down when the action happens, the server is killed with SIGKILL, SMTP comes
/// back, the server restarts: the mail arrives, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_mail_survives_kill_9_and_is_delivered_once_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    let sink = SmtpSink::start().await;
    sink.set_down(true);
    let db_arg = db.to_str().unwrap().to_string();
    tessera_ok(&["--db", &db_arg, "init"], &[], None);
    tessera_ok(
        &[
            "--db",
            &db_arg,
            "user",
            "add",
            "ada",
            "--email",
            "ada@example.com",
            "--password-stdin",
        ],
        &[],
        Some(&format!("{PASSWORD}\n")),
    );
    let url = sink.url();
    let env = [("TESSERA_SMTP_URL", url.as_str()), ("TESSERA_SMTP_FROM", MAIL_FROM)];
    let server = Server::start_with(&db, &dir.path().join("log1"), 0, &env);
    let port = server.port();
    assert_eq!(ask_reset(&server.address, "ada").await, 200);
    // Wait until the mailer has tried the down server and recorded the failure (its
    // retry in 5 s), then kill. Killed between its claim and that record, the message
    // would wait for the claim's lease (3 minutes) instead: late, not lost, and not
    // what this test is about.
    // Read through the storage API, as another process would (the server holds the file).
    let recorded = || async {
        let store = tessera::db::Db::open_existing(&db, &tessera::db::SqliteOptions::default()).ok()?;
        let list = store.read(|c| tessera::db::outbox::list(c, None, 1)).await.ok()?;
        list.first().map(|m| m.attempts)
    };
    for _ in 0..150 {
        if recorded().await.is_some_and(|attempts| attempts > 0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(sink.connections() > 0, "the mailer tried while SMTP was down");
    assert_eq!(recorded().await, Some(1), "the failed attempt is recorded");
    server.signal("KILL");
    drop(server);
    assert!(sink.messages().is_empty());

    sink.set_down(false);
    let server = Server::start_with(&db, &dir.path().join("log2"), port, &env);
    let mail = sink.nth("ada@example.com", 1).await;
    assert!(mail.link("/password/reset").starts_with(&server.address));
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(sink.messages().len(), 1, "exactly once");
}

/// Three nodes on PostgreSQL: the node that queued a mail while SMTP was down is
/// killed with SIGKILL; once SMTP is back, the two others between them send it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_postgresql_a_killed_nodes_queued_mail_is_sent_once_by_the_others() {
    let Some(url) = required_cluster("outbox") else {
        return;
    };
    let schema = keyed_schema(&url).await;
    tessera_ok(
        &["user", "add", "ada", "--email", "ada@example.com", "--password-stdin"],
        &[("TESSERA_DATABASE_URL", schema.as_str())],
        Some(&format!("{PASSWORD}\n")),
    );
    let sink = SmtpSink::start().await;
    sink.set_down(true);
    let smtp = sink.url();
    let env = [("TESSERA_SMTP_URL", smtp.as_str()), ("TESSERA_SMTP_FROM", MAIL_FROM)];
    let dir = tempfile::tempdir().unwrap();
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::start_with(&schema, &dir.path().join(format!("node{i}.log")), &env))
        .collect();
    assert_eq!(ask_reset(&nodes[0].address, "ada").await, 200);
    for _ in 0..150 {
        if sink.connections() > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(sink.connections() > 0, "a mailer tried while SMTP was down");
    // Let the failed attempt be recorded (else its lease holds the mail for minutes).
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    nodes[0].kill_9();
    sink.set_down(false);
    let mail = sink.nth("ada@example.com", 1).await;
    assert!(mail.subject().contains("Reset your password"));
    // Both survivors poll every two seconds; a second copy would come within that.
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(sink.messages().len(), 1, "exactly once across the nodes");
}
