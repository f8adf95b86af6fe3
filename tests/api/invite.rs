//! Invitations: made through the admin API, the admin page and `tessera user invite`,
//! mailed through a real SMTP server, followed and accepted as the invitee would;
//! and every refusal (expired, reused, revoked, forged, superseded, invitations off).

use serde_json::{json, Value};
use tessera::config::Signup;

use crate::helpers::*;

const NEW_PASSWORD: &str = "a brand new secret";

pub(crate) use crate::admin_api::admin_token;

/// Calls the admin API: the status and the JSON answer (`Null` for none).
pub(crate) async fn api(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    app.admin_api(token, method, path, body).await
}

async fn invite(app: &TestApp, token: &str, body: Value) -> (u16, Value) {
    api(app, token, reqwest::Method::POST, "/invitations", Some(body)).await
}

/// An app with mail and invitations on, an admin token and a group `staff`.
async fn setup() -> (TestApp, crate::smtp::SmtpSink, String) {
    let (app, sink) = spawn_mail(|s| s.signup = Signup::Invite).await;
    let token = admin_token(&app).await;
    let (status, _) = api(
        &app,
        &token,
        reqwest::Method::POST,
        "/groups",
        Some(json!({"name": "staff"})),
    )
    .await;
    assert_eq!(status, 201);
    (app, sink, token)
}

/// The path and query of a link, against this app (the issuer is the app's address).
fn on_app(app: &TestApp, link: &str) -> String {
    assert!(link.starts_with(&app.address), "links start with the issuer: {link}");
    link.to_string()
}

pub(crate) fn token_of(link: &str) -> String {
    url::Url::parse(link)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "token")
        .unwrap()
        .1
        .into_owned()
}

async fn accept(app: &TestApp, token: &str, username: &str, password: &str) -> reqwest::Response {
    browser()
        .post(app.url("/invite"))
        .form(&[
            ("token", token),
            ("username", username),
            ("password", password),
            ("confirm", password),
        ])
        .send()
        .await
        .unwrap()
}

async fn user(app: &TestApp, username: &str) -> Option<tessera::db::users::User> {
    let name = username.to_string();
    app.state
        .db
        .read(move |c| {
            let Some(mut u) = tessera::db::users::find_by_username(c, &name)? else {
                return Ok(None);
            };
            tessera::db::users::load_groups(c, &mut u)?;
            Ok(Some(u))
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_mailed_invitation_is_accepted_with_a_chosen_username_and_password() {
    let (app, sink, token) = setup().await;
    let (status, created) = invite(
        &app,
        &token,
        json!({"email": "Grace.Hopper@example.org", "groups": ["staff"], "admin": false}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["email"], "Grace.Hopper@example.org");
    assert_eq!(created["mailed"], true);
    let now = app.clock.now();
    let expires = created["expires_at"].as_i64().unwrap();
    assert!((now + 7 * 24 * 3600 - 5..=now + 7 * 24 * 3600).contains(&expires));

    let mail = sink.nth("grace.hopper@example.org", 1).await;
    assert!(mail.subject().contains("Example Org"), "{}", mail.subject());
    let link = on_app(&app, &mail.link("/invite"));
    assert_eq!(
        link,
        created["link"].as_str().unwrap(),
        "the mail holds the link the API gave"
    );

    // Following the link only shows the page; nothing is spent by a GET.
    let b = browser();
    for _ in 0..2 {
        let page = b.get(&link).send().await.unwrap();
        assert_eq!(page.status(), 200);
        let html = page.text().await.unwrap();
        assert_eq!(
            input_value(&html, "username").as_deref(),
            Some("grace.hopper"),
            "prefilled"
        );
        assert_eq!(text_of(&html, "email").as_deref(), Some("Grace.Hopper@example.org"));
    }
    let done = accept(&app, &token_of(&link), "grace", NEW_PASSWORD).await;
    assert_eq!(done.status(), 200);
    let html = done.text().await.unwrap();
    assert!(html.contains("Your account is ready"), "{html}");
    assert!(html.contains("href=\"/account\""));

    let grace = user(&app, "grace").await.expect("the account exists");
    assert_eq!(grace.email.as_deref(), Some("Grace.Hopper@example.org"));
    assert!(grace.email_verified, "the link proved the address");
    assert_eq!(grace.groups, vec!["staff".to_string()]);
    assert!(!grace.is_admin);
    app.portal_login(&browser(), "grace", NEW_PASSWORD).await;

    let events = app.audit().await;
    assert!(events.iter().any(|(e, a, t)| e == "admin.invitation_created"
        && a.as_deref() == Some("client:ops")
        && t.as_deref() == Some("Grace.Hopper@example.org")));
    assert!(events
        .iter()
        .any(|(e, a, _)| e == "account.invitation_accepted" && a.as_deref() == Some("grace")));

    // The link was spent: a second acceptance, or opening it, gets the readable page.
    let again = accept(&app, &token_of(&link), "grace2", NEW_PASSWORD).await;
    assert_eq!(again.status(), 410);
    assert!(again.text().await.unwrap().contains("no longer valid"));
    assert_eq!(b.get(&link).send().await.unwrap().status(), 410);
    assert!(user(&app, "grace2").await.is_none());
    let (_, live) = api(&app, &token, reqwest::Method::GET, "/invitations", None).await;
    assert_eq!(live, json!([]), "an accepted invitation is no longer live");
}

#[tokio::test]
async fn an_invitation_to_administer_gives_the_role_under_the_administrator_password_rules() {
    let (app, sink, token) = setup().await;
    let (status, created) = invite(&app, &token, json!({"email": "root@example.org", "admin": true})).await;
    assert_eq!(status, 201);
    sink.wait_for("root@example.org", 1).await;
    let t = token_of(created["link"].as_str().unwrap());
    // Eight characters do for a user, not for an administrator (the setup page's rule).
    let weak = accept(&app, &t, "root", "qwertyui").await;
    assert_eq!(weak.status(), 400);
    assert!(text_of(&weak.text().await.unwrap(), "password-error").is_some());
    let differ = browser()
        .post(app.url("/invite"))
        .form(&[
            ("token", t.as_str()),
            ("username", "root"),
            ("password", NEW_PASSWORD),
            ("confirm", "other"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(differ.status(), 400);
    assert!(text_of(&differ.text().await.unwrap(), "confirm-error").is_some());
    assert!(
        user(&app, "root").await.is_none(),
        "nothing is made from a refused form"
    );

    assert_eq!(accept(&app, &t, "root", NEW_PASSWORD).await.status(), 200);
    let root = user(&app, "root").await.unwrap();
    assert!(root.is_admin && root.email_verified);
    assert!(root.groups.is_empty());
}

#[tokio::test]
async fn expired_revoked_forged_and_superseded_links_get_a_readable_page() {
    let (app, sink, token) = setup().await;
    let (_, first) = invite(&app, &token, json!({"email": "ada@example.org"})).await;
    let (_, second) = invite(&app, &token, json!({"email": "ADA@example.org"})).await;
    sink.wait_for("ada@example.org", 2).await;
    let superseded = token_of(first["link"].as_str().unwrap());
    let r = accept(&app, &superseded, "ada", NEW_PASSWORD).await;
    assert_eq!(r.status(), 410, "a new invitation to the address voids the earlier one");
    assert!(r.text().await.unwrap().contains("no longer valid"));

    for forged in ["", "nonsense", &"x".repeat(500)] {
        let r = browser()
            .get(app.url(&format!("/invite?token={forged}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 410, "forged token {forged:?}");
        assert_eq!(accept(&app, forged, "ada", NEW_PASSWORD).await.status(), 410);
    }
    // Anything but a form body is the same readable page, never a 500.
    let r = browser().post(app.url("/invite")).body("{}").send().await.unwrap();
    assert_eq!(r.status(), 410);

    // Revoked: the API says 204 once, then 404, and the link is dead.
    let id = second["id"].as_i64().unwrap();
    let (status, listed) = api(&app, &token, reqwest::Method::GET, "/invitations", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "only the live invitation: {listed}"
    );
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["email"], "ADA@example.org");
    assert!(
        listed[0].get("link").is_none(),
        "the link is not stored, so never listed"
    );
    let path = format!("/invitations/{id}");
    assert_eq!(api(&app, &token, reqwest::Method::DELETE, &path, None).await.0, 204);
    assert_eq!(api(&app, &token, reqwest::Method::DELETE, &path, None).await.0, 404);
    assert_eq!(
        api(&app, &token, reqwest::Method::DELETE, "/invitations/x", None)
            .await
            .0,
        404
    );
    let revoked = token_of(second["link"].as_str().unwrap());
    assert_eq!(accept(&app, &revoked, "ada", NEW_PASSWORD).await.status(), 410);
    assert!(app
        .audit()
        .await
        .iter()
        .any(|(e, _, t)| e == "admin.invitation_revoked" && t.as_deref() == Some("ADA@example.org")));

    // Expired: seven days and a second later.
    let (_, third) = invite(&app, &token, json!({"email": "bob@example.org"})).await;
    let link = third["link"].as_str().unwrap().to_string();
    app.clock.advance(7 * 24 * 3600 + 1);
    assert_eq!(browser().get(&link).send().await.unwrap().status(), 410);
    assert_eq!(accept(&app, &token_of(&link), "bob", NEW_PASSWORD).await.status(), 410);
    assert!(user(&app, "ada").await.is_none() && user(&app, "bob").await.is_none());
}

#[tokio::test]
async fn a_taken_username_is_a_field_error_and_the_link_stays_usable() {
    let (app, _sink, token) = setup().await;
    app.add_user("grace").await;
    let (_, created) = invite(&app, &token, json!({"email": "grace@example.org"})).await;
    let t = token_of(created["link"].as_str().unwrap());
    for taken in ["grace", "GRACE"] {
        let r = accept(&app, &t, taken, NEW_PASSWORD).await;
        assert_eq!(r.status(), 400);
        let html = r.text().await.unwrap();
        assert!(text_of(&html, "username-error").unwrap().contains("taken"), "{html}");
        assert_eq!(
            input_value(&html, "token").as_deref(),
            Some(t.as_str()),
            "the form keeps the link"
        );
    }
    // The sign-up rules: an easy password, or one holding the username, is refused.
    for easy in ["aaaaaaaaaa", "grace.h-secret"] {
        let r = accept(&app, &t, "grace.h", easy).await;
        assert_eq!(r.status(), 400, "{easy}");
        assert!(text_of(&r.text().await.unwrap(), "password-error").is_some());
    }
    assert_eq!(accept(&app, &t, "grace.h", NEW_PASSWORD).await.status(), 200);
    assert!(user(&app, "grace.h").await.unwrap().email_verified);
}

#[tokio::test]
async fn of_two_parallel_acceptances_exactly_one_wins() {
    let (app, _sink, token) = setup().await;
    let (_, created) = invite(&app, &token, json!({"email": "pat@example.org", "groups": ["staff"]})).await;
    let t = token_of(created["link"].as_str().unwrap());
    let (a, b) = tokio::join!(
        accept(&app, &t, "pat-one", NEW_PASSWORD),
        accept(&app, &t, "pat-two", NEW_PASSWORD)
    );
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 410]);
    let made = [user(&app, "pat-one").await, user(&app, "pat-two").await];
    assert_eq!(
        made.iter().filter(|u| u.is_some()).count(),
        1,
        "one account from one link"
    );
}

#[tokio::test]
async fn unknown_groups_bad_addresses_and_existing_accounts_are_refused_up_front() {
    let (app, sink, token) = setup().await;
    app.add_user("ada").await;
    let (status, body) = invite(
        &app,
        &token,
        json!({"email": "new@example.org", "groups": ["staff", "nope"]}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(body["fields"]["groups"].as_str().unwrap().contains("nope"), "{body}");
    let (status, body) = invite(&app, &token, json!({"email": "not-an-address"})).await;
    assert_eq!(status, 400);
    assert!(body["fields"]["email"].is_string());
    let (status, body) = invite(&app, &token, json!({"email": "ada@example.com"})).await;
    assert_eq!(status, 400, "ada@example.com is ada's");
    assert!(body["fields"]["email"].as_str().unwrap().contains("exists"));
    let (status, _) = invite(&app, &token, json!({"email": "x@example.org", "role": "admin"})).await;
    assert_eq!(status, 400, "unknown fields are refused");
    let (_, live) = api(&app, &token, reqwest::Method::GET, "/invitations", None).await;
    assert_eq!(live, json!([]));
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(sink.messages().is_empty(), "no refused invitation is mailed");
}

#[tokio::test]
async fn with_signup_off_the_api_the_pages_and_the_command_line_refuse_in_one_line() {
    let (app, sink) = spawn_mail(|_| {}).await;
    let token = admin_token(&app).await;
    let (status, body) = invite(&app, &token, json!({"email": "new@example.org"})).await;
    assert_eq!(status, 409);
    assert_eq!(
        body["error_description"],
        "invitations are off: set --signup invite (or open)"
    );
    let r = browser().get(app.url("/invite?token=abc")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().contains("Invitations are off"));
    assert_eq!(accept(&app, "abc", "someone", NEW_PASSWORD).await.status(), 404);

    let mut args: Vec<String> = app.db_args();
    args.extend(["user", "invite", "new@example.org"].map(String::from));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(&args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invitations are off: set --signup invite (or open)"),
        "{err}"
    );
    assert!(sink.messages().is_empty());
}

#[tokio::test]
async fn the_command_line_prints_the_link_and_the_running_server_mails_it() {
    let (app, sink, _token) = setup().await;
    let mut args: Vec<String> = app.db_args();
    let smtp = sink.url();
    args.extend(
        [
            "--signup",
            "invite",
            "--smtp-url",
            &smtp,
            "--smtp-from",
            MAIL_FROM,
            "user",
            "invite",
            "lin@example.org",
            "--group",
            "staff",
            "--issuer",
            &app.address,
        ]
        .map(String::from),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tessera_ok(&refs, &[], None);
    let first = out.lines().next().unwrap();
    let prefix = format!("invitation for lin@example.org: {}/invite?token=", app.address);
    assert!(first.starts_with(&prefix), "{out}");
    assert!(out.contains("queued"), "{out}");
    let printed = first.split(": ").nth(1).unwrap().to_string();

    // The command sent nothing itself: the server's mailer finds it in the outbox.
    let mail = sink.nth("lin@example.org", 1).await;
    assert_eq!(mail.link("/invite"), printed);
    assert_eq!(
        accept(&app, &token_of(&printed), "lin", NEW_PASSWORD).await.status(),
        200
    );
    let lin = user(&app, "lin").await.unwrap();
    assert_eq!(lin.groups, vec!["staff".to_string()]);
    assert!(app
        .audit()
        .await
        .iter()
        .any(|(e, a, _)| e == "admin.invitation_created" && a.as_deref() == Some("cli")));

    // Without mail the link is printed and said not to be mailed; unknown groups refused.
    let mut args: Vec<String> = app.db_args();
    args.extend(["--signup", "invite", "user", "invite", "kim@example.org", "--admin"].map(String::from));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tessera_ok(&refs, &[], None);
    assert!(out.starts_with("invitation for kim@example.org: http"), "{out}");
    assert!(out.contains("not mailed"), "{out}");
    let mut args: Vec<String> = app.db_args();
    args.extend(
        [
            "--signup",
            "invite",
            "user",
            "invite",
            "x@example.org",
            "--group",
            "ghosts",
        ]
        .map(String::from),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(&args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no group named `ghosts`"));
}

#[tokio::test]
async fn administrators_invite_and_revoke_on_the_admin_page() {
    let (app, sink) = spawn_mail(|s| s.signup = Signup::Open).await;
    let boss = app.add_user("boss").await;
    app.make_admin(boss.id).await;
    app.add_user("eve").await;
    let p = app.portal("boss", PASSWORD).await;

    let page = p.get("/admin/invitations").await;
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("No invitations are waiting"));
    let no_csrf =
        p.b.post(app.url("/admin/invitations"))
            .form(&[("email", "new@example.org")])
            .send()
            .await
            .unwrap();
    assert_eq!(no_csrf.status(), 403);
    let link = invite_from_the_page(&p, &sink).await;
    revoke_from_the_page(&p, &link).await;
    others_get_neither_page_nor_actions(&app).await;
}

/// An invitation made on the page: its link shown once and mailed; a bad address
/// refused. The link.
async fn invite_from_the_page(p: &Portal<'_>, sink: &crate::smtp::SmtpSink) -> String {
    let made = p
        .post("/admin/invitations", &[("email", "new@example.org"), ("admin", "on")])
        .await;
    assert_eq!(made.status(), 200);
    let html = made.text().await.unwrap();
    let link = text_of(&html, "invitation-link").expect("the link is shown once");
    assert!(link.starts_with(&format!("{}/invite?token=", p.app.address)));
    assert!(html.contains("The link was mailed"));
    assert_eq!(sink.nth("new@example.org", 1).await.link("/invite"), link);
    let again = p.page("/admin/invitations").await;
    assert!(text_of(&again, "invitation-link").is_none(), "shown only when made");
    assert!(text_of(&again, "invitations").unwrap().contains("new@example.org"));
    assert!(text_of(&again, "invitations").unwrap().contains("administrator"));

    let bad = p.post("/admin/invitations", &[("email", "nope")]).await;
    assert_eq!(bad.status(), 400);
    assert!(text_of(&bad.text().await.unwrap(), "invite-email-error").is_some());
    link
}

/// Revoking needs the CSRF token; then the link is dead.
async fn revoke_from_the_page(p: &Portal<'_>, link: &str) {
    let app = p.app;
    let (_, live) = {
        let token = admin_token(app).await;
        api(app, &token, reqwest::Method::GET, "/invitations", None).await
    };
    let id = live[0]["id"].as_i64().unwrap();
    let path = format!("/admin/invitations/{id}/revoke");
    assert_eq!(
        p.b.post(app.url(&path))
            .form(&[("csrf", "guess")])
            .send()
            .await
            .unwrap()
            .status(),
        403
    );
    let revoked = p.post(&path, &[]).await;
    assert_eq!(revoked.status(), 302);
    assert_eq!(location(&revoked), "/admin/invitations?done=revoked");
    assert_eq!(browser().get(link).send().await.unwrap().status(), 410);
    let gone = p.post(&path, &[]).await;
    assert_eq!(gone.status(), 404);
}

/// Someone who is not an administrator gets neither the page nor the actions.
async fn others_get_neither_page_nor_actions(app: &TestApp) {
    let e = browser();
    app.portal_login(&e, "eve", PASSWORD).await;
    assert_eq!(e.get(app.url("/admin/invitations")).send().await.unwrap().status(), 403);
    for (method, path) in [
        ("GET", "/invitations"),
        ("POST", "/invitations"),
        ("DELETE", "/invitations/1"),
    ] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let url = app.url(&format!("/admin/api{path}"));
        assert_eq!(
            plain_client().request(m.clone(), &url).send().await.unwrap().status(),
            401
        );
        assert_eq!(
            e.request(m, &url).send().await.unwrap().status(),
            403,
            "{method} {path}"
        );
    }
}
