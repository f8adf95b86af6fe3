//! Usernames that pass for another are refused where a name is chosen (open sign-up,
//! invitations, the admin API): invisible characters, mixed scripts, and names whose
//! UTS #39 skeleton is an existing account's. Names are stored in NFKC; existing
//! accounts sign in as before.

use serde_json::json;
use tessera::config::Signup;
use tessera::db;

use crate::helpers::*;

/// The refused names with a word of each refusal: a zero-width space, a Cyrillic `а`
/// among Latin letters, and a Latin dotless `ı` that only looks like `admin`.
const REFUSED: [(&str, &str); 3] = [
    ("admin\u{200b}", "invisible or formatting"),
    ("\u{430}dmin", "mix letters of different scripts"),
    ("adm\u{131}n", "too"),
];

async fn users(app: &TestApp) -> i64 {
    app.state.db.read(db::users::count).await.unwrap()
}

async fn stored(app: &TestApp, name: &'static str) -> Option<db::users::User> {
    app.state
        .db
        .read(move |c| db::users::find_by_username(c, name))
        .await
        .unwrap()
}

async fn sign_up(app: &TestApp, username: &str, email: &str) -> (u16, String) {
    let resp = browser()
        .post(app.url("/signup"))
        .form(&[
            ("username", username),
            ("email", email),
            ("name", "Someone"),
            ("password", "a long sign-up secret"),
            ("confirm", "a long sign-up secret"),
        ])
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn sign_up_refuses_look_alike_usernames_and_stores_names_in_nfkc() {
    let (app, _sink) = spawn_mail(|s| s.signup = Signup::Open).await;
    app.add_user("admin").await;
    for (i, (name, why)) in REFUSED.iter().enumerate() {
        let (status, page) = sign_up(&app, name, &format!("new{i}@example.org")).await;
        assert_eq!(status, 400, "{name:?}");
        assert!(page.contains(why), "{name:?}: {page}");
        assert_eq!(users(&app).await, 1, "{name:?}: nothing stored");
    }
    let (_, page) = sign_up(&app, "adm\u{131}n", "new9@example.org").await;
    assert!(page.contains("looks too much like an existing one"), "{page}");

    assert_eq!(sign_up(&app, "bob", "bob@example.org").await.0, 200);
    assert_eq!(sign_up(&app, "иван", "ivan@example.org").await.0, 200);
    assert_eq!(sign_up(&app, "ａｌｉｃｅ", "alice@example.org").await.0, 200);
    assert!(stored(&app, "bob").await.is_some());
    assert!(stored(&app, "иван").await.is_some());
    let alice = stored(&app, "alice")
        .await
        .expect("the fullwidth name is stored in NFKC");
    assert_eq!(alice.username, "alice");
    let (status, page) = sign_up(&app, "ａｌｉｃｅ", "alice2@example.org").await;
    assert_eq!(status, 400);
    assert!(page.contains("this username is taken"), "{page}");
    assert_eq!(users(&app).await, 4);
}

#[tokio::test]
async fn an_invitation_refuses_look_alike_usernames_and_stores_the_normalised_name() {
    let (app, sink) = spawn_mail(|s| s.signup = Signup::Invite).await;
    app.add_user("admin").await;
    let token = crate::admin_api::admin_token(&app).await;
    let resp = plain_client()
        .post(app.url("/admin/api/invitations"))
        .bearer_auth(&token)
        .json(&json!({"email": "newcomer@example.org"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let link = sink.nth("newcomer@example.org", 1).await.link("/invite");
    let link_token = crate::invite::token_of(&link);
    let accept = |username: &'static str| {
        let (app, link_token) = (&app, &link_token);
        async move {
            let resp = browser()
                .post(app.url("/invite"))
                .form(&[
                    ("token", link_token.as_str()),
                    ("username", username),
                    ("password", "a brand new secret"),
                    ("confirm", "a brand new secret"),
                ])
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        }
    };
    for (name, why) in REFUSED {
        let (status, page) = accept(name).await;
        assert_eq!(status, 400, "{name:?}");
        assert!(page.contains(why), "{name:?}: {page}");
        assert_eq!(users(&app).await, 1, "{name:?}: nothing stored");
    }
    let (status, _) = accept("ａｌｉｃｅ").await;
    assert_eq!(status, 200, "the link stays usable");
    let alice = stored(&app, "alice").await.expect("the normalised name is stored");
    assert_eq!(alice.username, "alice");
    assert_eq!(alice.email.as_deref(), Some("newcomer@example.org"));
}

#[tokio::test]
async fn the_admin_api_refuses_look_alike_usernames_with_a_field_error() {
    let app = spawn_app().await;
    app.add_user("admin").await;
    let token = crate::admin_api::admin_token(&app).await;
    let create = |username: &str| {
        let (app, token) = (&app, &token);
        let body = json!({"username": username, "password": "long enough pw"});
        async move {
            let resp = plain_client()
                .post(app.url("/admin/api/users"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.json::<serde_json::Value>().await.unwrap())
        }
    };
    for (name, why) in REFUSED {
        let (status, answer) = create(name).await;
        assert_eq!(status, 400, "{name:?}: {answer}");
        let field = answer["fields"]["username"].as_str().unwrap_or_default();
        assert!(field.contains(why), "{name:?}: {answer}");
    }
    let (_, answer) = create("adm\u{131}n").await;
    assert_eq!(
        answer["fields"]["username"],
        "this username is too similar to an existing username"
    );
    assert_eq!(users(&app).await, 1, "nothing stored");
    let (status, made) = create("ｂｏｂ").await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["username"], "bob");
    assert_eq!(create("иван").await.0, 201);
}

#[tokio::test]
async fn existing_accounts_sign_in_as_before_and_a_compatibility_form_reaches_its_account() {
    let app = spawn_app().await;
    // Made as storage allows (before the rules): a mixed-script, non-NFKC name.
    app.add_user("ｃarol\u{430}").await;
    app.add_user("alice").await;
    app.portal_login(&browser(), "ｃarol\u{430}", PASSWORD).await;
    app.portal_login(&browser(), "alice", PASSWORD).await;
    app.portal_login(&browser(), "ａｌｉｃｅ", PASSWORD).await;
}

/// Two accounts made at once with look-alike names: the unique skeleton index lets
/// one through on either engine.
#[tokio::test]
async fn of_two_look_alike_accounts_made_at_once_at_most_one_is_stored() {
    for backend in backends() {
        let db = empty_db(&backend).await;
        let make = |name: &'static str| {
            db.write(move |c| {
                db::users::insert(
                    c,
                    &db::users::NewUser {
                        sub: name,
                        username: name,
                        email: None,
                        name: None,
                        password_hash: "x",
                        is_admin: false,
                        now: 1,
                    },
                )
            })
        };
        let (a, b) = tokio::join!(make("admin"), make("\u{430}dmin"));
        let won = [&a, &b].iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "{backend:?}: {a:?} {b:?}");
        assert!(matches!(a.err().or(b.err()), Some(db::DbError::Conflict)));
        assert!(
            matches!(make("adm\u{131}n").await, Err(db::DbError::Conflict)),
            "{backend:?}"
        );
        assert!(make("иван").await.is_ok(), "{backend:?}");
        assert_eq!(db.read(db::users::count).await.unwrap(), 2, "{backend:?}");
        db.shutdown();
    }
}
