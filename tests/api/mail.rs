//! Mail through a real SMTP server on loopback: `tessera mail test`, the rules for
//! `--smtp-url`, and a client that requires STARTTLS refusing a server without it.

use std::process::{Command, Output};

use crate::smtp::SmtpSink;

fn tessera(args: &[&str], env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .current_dir(dir.path())
        .env_remove("TESSERA_SMTP_URL")
        .env_remove("TESSERA_SMTP_FROM")
        .env_remove("TESSERA_SMTP_PASSWORD_FILE")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_test_delivers_a_message_and_reports_the_servers_answer() {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let out = tokio::task::spawn_blocking(move || {
        tessera(
            &["mail", "test", "ada@example.org"],
            &[
                ("TESSERA_SMTP_URL", &url),
                ("TESSERA_SMTP_FROM", "Example ID <id@example.org>"),
            ],
        )
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("250 2.0.0 queued as sink-1"),
        "the server's own answer: {said}"
    );
    assert!(said.contains("ada@example.org"), "{said}");
    let messages = sink.messages();
    assert_eq!(messages.len(), 1);
    let m = &messages[0];
    assert!(m.from.contains("<id@example.org>"), "{}", m.from);
    assert_eq!(m.to.len(), 1);
    assert!(m.to[0].contains("<ada@example.org>"));
    assert!(m.data.contains("Subject: Tessera test message"), "{}", m.data);
    assert!(
        m.data.contains("From: \"Example ID\" <id@example.org>")
            || m.data.contains("From: Example ID <id@example.org>"),
        "{}",
        m.data
    );
    assert!(
        m.data.contains("Tessera can send mail through smtp://127.0.0.1:"),
        "{}",
        m.data
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starttls_required_refuses_a_server_without_it() {
    let sink = SmtpSink::start().await;
    let url = format!("smtp://127.0.0.1:{}?tls=starttls", sink.port);
    let out = tokio::task::spawn_blocking(move || {
        tessera(
            &["mail", "test", "ada@example.org"],
            &[("TESSERA_SMTP_URL", &url), ("TESSERA_SMTP_FROM", "id@example.org")],
        )
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("cannot send mail"), "{err}");
    assert!(sink.messages().is_empty(), "nothing sent in the clear");
    assert!(
        !sink.commands().iter().any(|c| c == "MAIL"),
        "the envelope never left: {:?}",
        sink.commands()
    );
}

#[test]
fn smtp_settings_are_checked_in_one_line() {
    for (env, why) in [
        (
            vec![
                ("TESSERA_SMTP_URL", "smtp://mail.example.org:25"),
                ("TESSERA_SMTP_FROM", "id@example.org"),
            ],
            "only to a loopback host",
        ),
        (vec![("TESSERA_SMTP_URL", "smtps://mail.example.org")], "--smtp-from"),
        (
            vec![
                ("TESSERA_SMTP_URL", "ftp://mail.example.org"),
                ("TESSERA_SMTP_FROM", "id@example.org"),
            ],
            "not SMTP",
        ),
        (vec![], "mail is off"),
    ] {
        let out = tessera(&["mail", "test", "ada@example.org"], &env);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains(why), "{why}: {err}");
        assert!(!err.contains("panicked"));
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none").display().to_string();
    let out = tessera(
        &["mail", "test", "ada@example.org"],
        &[
            ("TESSERA_SMTP_URL", "smtps://u@mail.example.org"),
            ("TESSERA_SMTP_FROM", "id@example.org"),
            ("TESSERA_SMTP_PASSWORD_FILE", &missing),
        ],
    );
    assert!(
        text(&out.stderr).contains("smtp_password_file"),
        "{}",
        text(&out.stderr)
    );
    let out = tessera(
        &["mail", "test", "not an address"],
        &[
            ("TESSERA_SMTP_URL", "smtp://127.0.0.1:9"),
            ("TESSERA_SMTP_FROM", "id@example.org"),
        ],
    );
    assert!(
        text(&out.stderr).contains("is not an email address"),
        "{}",
        text(&out.stderr)
    );
}
