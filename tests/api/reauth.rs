//! Credential changes need a recent authentication, and every check of the current
//! password counts like a sign-in.

use tessera::db;

use crate::helpers::*;

fn options(app: &TestApp, b: &reqwest::Client, csrf: &str) -> reqwest::RequestBuilder {
    b.post(app.url("/account/passkeys/options"))
        .header("x-csrf-token", csrf)
}

#[tokio::test]
async fn adding_a_credential_needs_a_password_confirmed_in_the_last_five_minutes() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let b = browser();
    let csrf = app.portal_login(&b, "alice", PASSWORD).await;
    // Just signed in: fresh enough.
    assert_eq!(b.get(app.url("/account/totp")).send().await.unwrap().status(), 200);
    assert_eq!(options(&app, &b, &csrf).send().await.unwrap().status(), 200);

    app.clock.advance(301);
    let resp = b.get(app.url("/account/totp")).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), "/account/confirm?next=totp");
    let resp = options(&app, &b, &csrf).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "reauthentication_required");
    assert_eq!(body["confirm"], "/account/confirm?next=passkey");
    let resp = b
        .post(app.url("/account/passkeys"))
        .header("x-csrf-token", &csrf)
        .header("content-type", "application/json")
        .body(r#"{"client_data":"","attestation_object":""}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403, "registration itself checks too");

    let page = b.get(app.url("/account/confirm?next=totp")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let wrong = b
        .post(app.url("/account/confirm"))
        .form(&[("csrf", csrf.as_str()), ("next", "totp"), ("password", "not it")])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.text().await.unwrap().contains("not your current password"));
    let right = b
        .post(app.url("/account/confirm"))
        .form(&[("csrf", csrf.as_str()), ("next", "totp"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 302);
    assert_eq!(location(&right), "/account/totp");
    assert_eq!(b.get(app.url("/account/totp")).send().await.unwrap().status(), 200);
    assert_eq!(options(&app, &b, &csrf).send().await.unwrap().status(), 200);
    let events: Vec<String> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"account.reauth_failed".to_string()), "{events:?}");
    assert!(events.contains(&"account.reauthenticated".to_string()), "{events:?}");
}

#[tokio::test]
async fn wrong_current_passwords_count_toward_the_lockout() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let b = browser();
    let csrf = app.portal_login(&b, "alice", PASSWORD).await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let resp = b
            .post(app.url("/account/totp/disable"))
            .form(&[("csrf", csrf.as_str()), ("password", "guess")])
            .send()
            .await
            .unwrap();
        statuses.push(resp.status().as_u16());
    }
    assert_eq!(statuses, [400, 400, 400, 400, 429], "the fifth wrong password locks");
    let uid = alice.id;
    let lock = app.state.db.read(move |c| db::users::lock_state(c, uid)).await.unwrap();
    assert_eq!(lock.failed_logins, 5);
    assert!(lock.locked_until.is_some(), "five wrong passwords lock the account");
    // Locked: even the right password is refused until the lock lifts.
    let resp = b
        .post(app.url("/account/confirm"))
        .form(&[("csrf", csrf.as_str()), ("next", "passkey"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
}

#[tokio::test]
async fn re_authentication_obeys_the_per_account_limit() {
    let app = spawn_with(|s| {
        s.rate_limit = true;
        s.lockout = false;
    })
    .await;
    app.add_user("alice").await;
    let b = browser();
    let csrf = app.portal_login(&b, "alice", PASSWORD).await;
    let mut limited = false;
    for _ in 0..12 {
        let resp = b
            .post(app.url("/account/confirm"))
            .form(&[("csrf", csrf.as_str()), ("next", "totp"), ("password", "guess")])
            .send()
            .await
            .unwrap();
        limited |= resp.status() == 429;
    }
    assert!(limited, "the account's sign-in budget applies to password checks");
}

#[tokio::test]
async fn a_password_change_can_remove_every_passkey() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let (uid, now) = (alice.id, app.clock.now());
    app.state
        .db
        .write(move |c| {
            db::passkeys::insert(
                c,
                &db::passkeys::NewPasskey {
                    user_id: uid,
                    credential_id: b"planted",
                    public_jwk: "{}",
                    alg: "ES256",
                    sign_count: 0,
                    name: "planted",
                    now,
                },
            )
            .map(|_| ())
        })
        .await
        .unwrap();
    let b = browser();
    let csrf = app.portal_login(&b, "alice", PASSWORD).await;
    let page = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("name=\"remove_passkeys\""), "the password form offers it");
    let resp = b
        .post(app.url("/account/password"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("current", PASSWORD),
            ("password", "a brand new password"),
            ("confirm", "a brand new password"),
            ("remove_passkeys", "on"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    let left = app
        .state
        .db
        .read(move |c| db::passkeys::count_for_user(c, uid))
        .await
        .unwrap();
    assert_eq!(left, 0);
}
