//! First run: the one-time setup link creates the first administrator, once.

use crate::helpers::*;

async fn submit(app: &TestApp, token: &str, user: &str, email: &str, pass: &str, confirm: &str) -> (u16, String) {
    let resp = browser()
        .post(app.url("/setup"))
        .form(&[
            ("token", token),
            ("username", user),
            ("email", email),
            ("password", pass),
            ("confirm", confirm),
        ])
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn the_setup_link_creates_the_first_administrator_once() {
    let app = spawn_app().await;
    let token = tessera::auth::setup::start(&app.state.ctx()).await.unwrap().unwrap();
    let token = token.expose();
    let page = browser()
        .get(app.url(&format!("/setup?token={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(form_fields(&page.text().await.unwrap()).contains_key("confirm"));

    let (status, body) = submit(
        &app,
        token,
        "root",
        "root@example.com",
        "correct horse battery",
        "correct horse",
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body.contains(r#"id="confirm-error">the two passwords differ"#),
        "error next to the field"
    );
    let (status, body) = submit(&app, token, "root", "not-an-email", "1234567890", "1234567890").await;
    assert_eq!(status, 400);
    assert!(body.contains(r#"id="email-error""#) && body.contains(r#"id="password-error">this password is too easy"#));
    assert!(body.contains(r#"value="root""#), "what was typed is kept");

    let (status, body) = submit(
        &app,
        token,
        "root",
        "root@example.com",
        "correct horse battery",
        "correct horse battery",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Administrator created"));
    let user = app.user("root").await.unwrap();
    assert!(user.is_admin);

    let (status, _) = submit(
        &app,
        token,
        "evil",
        "e@example.com",
        "correct horse battery",
        "correct horse battery",
    )
    .await;
    assert_eq!(status, 410, "the link is dead once used");
    let page = browser()
        .get(app.url(&format!("/setup?token={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 410);
    assert!(
        tessera::auth::setup::start(&app.state.ctx()).await.unwrap().is_none(),
        "no new link once users exist"
    );
}

#[tokio::test]
async fn a_setup_link_expires_after_an_hour_and_wrong_tokens_do_nothing() {
    let app = spawn_app().await;
    let token = tessera::auth::setup::start(&app.state.ctx()).await.unwrap().unwrap();
    let page = browser().get(app.url("/setup?token=guess")).send().await.unwrap();
    assert_eq!(page.status(), 410);
    app.clock.advance(tessera::auth::setup::LIFETIME + 1);
    let (status, _) = submit(
        &app,
        token.expose(),
        "root",
        "r@example.com",
        "correct horse battery",
        "correct horse battery",
    )
    .await;
    assert_eq!(status, 410);
    let count = app.state.db.read(tessera::db::users::count).await.unwrap();
    assert_eq!(count, 0);
}

#[tokio::test]
async fn the_setup_link_stays_valid_until_an_administrator_exists() {
    let app = spawn_app().await;
    // A user made first with the command line, not an administrator.
    app.add_user("bob").await;
    let token = tessera::auth::setup::start(&app.state.ctx()).await.unwrap();
    let token = token.expect("no administrator yet: a link is made");
    let page = browser()
        .get(app.url(&format!("/setup?token={}", token.expose())))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let (status, _) = submit(
        &app,
        token.expose(),
        "root",
        "root@example.com",
        "correct horse battery",
        "correct horse battery",
    )
    .await;
    assert!(status == 302 || status == 303 || status == 200, "{status}");
    let admins = app
        .state
        .db
        .read(tessera::db::users::count_active_admins)
        .await
        .unwrap();
    assert_eq!(admins, 1);
    assert!(
        tessera::auth::setup::start(&app.state.ctx()).await.unwrap().is_none(),
        "with an administrator there is no link"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tessera_setup_link_prints_a_working_link_until_an_administrator_exists() {
    let app = spawn_app().await;
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(app.db_args())
            .args(["setup-link", "--issuer", &app.address])
            .output()
            .unwrap()
    };
    let out = run();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let link = stdout.lines().next().unwrap().to_string();
    assert!(link.starts_with(&format!("{}/setup?token=", app.address)), "{link}");
    let page = browser().get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Create the first administrator"));

    let token = link.split("token=").nth(1).unwrap().to_string();
    let (status, body) = submit(&app, &token, "root", "root@example.com", PASSWORD, PASSWORD).await;
    assert_eq!(status, 200);
    assert!(body.contains("Administrator created"));
    let refused = run();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("an administrator exists already"), "{err}");
}
