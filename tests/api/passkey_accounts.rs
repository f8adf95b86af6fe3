//! Passkey-only accounts: made by an invitation or a sign-up with a passkey instead of
//! a password (the only way under `--passkey-mode passkey-only`), reset by making a
//! new passkey, confirming with a passkey before a credential change, and keeping
//! their last passkey; driven by a software authenticator that sends what a browser
//! would.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use tessera::config::{PasskeyMode, Signup};
use tessera::crypto::webauthn_testing::Authenticator;
use tessera::db;

use crate::helpers::*;
use crate::invite::{admin_token, api, token_of};
use crate::passkeys::{passkey_sign_in, passkey_sign_in_at};

fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

/// Asks a link page's options (`path`/options) with `form`: the status and the JSON.
async fn options(app: &TestApp, b: &reqwest::Client, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let resp = b
        .post(app.url(&format!("{path}/options")))
        .form(form)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

/// Makes the passkey for `options` and posts it with `form` to `path`.
async fn make(
    app: &TestApp,
    b: &reqwest::Client,
    a: &mut Authenticator,
    path: &str,
    options: &Value,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let (cdj, att) = a.create(options["challenge"].as_str().unwrap());
    let (cd, at) = (b64(&cdj), b64(&att));
    let mut fields: Vec<(&str, &str)> = form.to_vec();
    fields.extend([("client_data", cd.as_str()), ("attestation_object", at.as_str())]);
    b.post(app.url(path)).form(&fields).send().await.unwrap()
}

/// An invitation for `email` made through the admin API: its link's token.
async fn invitation(app: &TestApp, admin: &str, email: &str) -> String {
    let (status, created) = api(
        app,
        admin,
        reqwest::Method::POST,
        "/invitations",
        Some(json!({"email": email})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    token_of(created["link"].as_str().unwrap())
}

/// Accepts an invitation with a passkey: the account's name is `username`.
async fn accept_with_passkey(app: &TestApp, token: &str, username: &str, a: &mut Authenticator) -> reqwest::Response {
    let b = browser();
    let form = [("token", token), ("username", username)];
    let (status, o) = options(app, &b, "/invite/passkey", &form).await;
    assert_eq!(status, 200, "{o}");
    make(app, &b, a, "/invite/passkey", &o, &form).await
}

/// A passkey-only account made through an invitation on `app` (mail and invitations
/// on), with its authenticator.
async fn passkey_account(app: &TestApp, username: &str, email: &str) -> (db::users::User, Authenticator) {
    let admin = admin_token(app).await;
    let token = invitation(app, &admin, email).await;
    let mut a = app.authenticator();
    let done = accept_with_passkey(app, &token, username, &mut a).await;
    assert_eq!(done.status(), 200);
    (app.user(username).await.unwrap(), a)
}

#[tokio::test]
async fn under_passkey_only_an_invitation_makes_an_account_without_a_password_that_signs_in_with_its_passkey() {
    let (app, sink) = spawn_mail(|s| {
        s.signup = Signup::Invite;
        s.passkey_mode = PasskeyMode::PasskeyOnly;
    })
    .await;
    app.add_client("rp", false).await.unwrap();
    let token = invitation(&app, &admin_token(&app).await, "grace@example.org").await;
    let mail = sink.nth("grace@example.org", 1).await.text();
    assert!(mail.contains("with a passkey instead of a password"), "{mail}");

    let b = browser();
    let html = b
        .get(app.url(&format!("/invite?token={token}")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("id=\"passkey-enrol\""), "{html}");
    assert!(html.contains("action=\"/invite/passkey\""));
    assert!(
        !html.contains("type=\"password\""),
        "no password fields under passkey-only"
    );

    the_invitation_refuses_a_password_and_bad_names(&app, &b, &token).await;

    let form = [("token", token.as_str()), ("username", "grace")];
    let (status, o) = options(&app, &b, "/invite/passkey", &form).await;
    assert_eq!(status, 200);
    assert_eq!(o["authenticatorSelection"]["residentKey"], "required");
    let mut a = app.authenticator();
    let (cdj, att) = a.create(o["challenge"].as_str().unwrap());
    let posted = [
        ("token", token.clone()),
        ("username", "grace".to_string()),
        ("client_data", b64(&cdj)),
        ("attestation_object", b64(&att)),
    ];
    let done = b.post(app.url("/invite/passkey")).form(&posted).send().await.unwrap();
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("Your account is ready"));

    let grace = app.user("grace").await.expect("the account exists");
    assert!(!tessera::crypto::password::has_password(&grace.password_hash));
    assert!(grace.email_verified, "the link proved the address");
    assert_eq!(app.passkey_count(grace.id).await, 1);
    let handle = URL_SAFE_NO_PAD.decode(o["user"]["id"].as_str().unwrap()).unwrap();
    assert_eq!(handle, grace.sub.as_bytes(), "the user handle is the account's subject");

    // The same ceremony again: the link is spent.
    let again = browser()
        .post(app.url("/invite/passkey"))
        .form(&posted)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 410);

    only_the_passkey_signs_grace_in(&app, &mut a).await;

    let events = app.audit().await;
    assert!(events
        .iter()
        .any(|(e, a, _)| e == "passkey.added" && a.as_deref() == Some("grace")));
    assert!(events
        .iter()
        .any(|(e, a, _)| e == "account.invitation_accepted" && a.as_deref() == Some("grace")));
}

/// A password posted anyway is refused and makes nothing; a bad username or a dead
/// link gets no challenge.
async fn the_invitation_refuses_a_password_and_bad_names(app: &TestApp, b: &reqwest::Client, token: &str) {
    // A password posted anyway is refused, and makes nothing.
    let forced = b
        .post(app.url("/invite"))
        .form(&[
            ("token", token),
            ("username", "grace"),
            ("password", "a brand new secret"),
            ("confirm", "a brand new secret"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(forced.status(), 400);
    let said = forced.text().await.unwrap();
    assert!(
        text_of(&said, "passkey-error").is_some_and(|e| e.contains("passkeys")),
        "{said}"
    );
    assert!(app.user("grace").await.is_none());

    // The username is checked before the ceremony starts.
    let (status, refused) = options(app, b, "/invite/passkey", &[("token", token), ("username", "a b")]).await;
    assert_eq!(status, 400);
    assert!(refused["error_description"].as_str().is_some_and(|d| !d.is_empty()));
    let (status, _) = options(app, b, "/invite/passkey", &[("token", "forged"), ("username", "grace")]).await;
    assert_eq!(status, 410, "a dead link gets no challenge");
}

/// Username-first asks for the passkey alone: no password to fall back on.
async fn only_the_passkey_signs_grace_in(app: &TestApp, a: &mut Authenticator) {
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    let step = b
        .post(app.url("/login/username"))
        .form(&[
            ("request_id", fields["request_id"].as_str()),
            ("csrf", fields["csrf"].as_str()),
            ("username", "grace"),
        ])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(step.contains("id=\"passkey-login\""), "{step}");
    assert!(!step.contains("name=\"password\""), "{step}");
    let (resp, _) = passkey_sign_in(app, a).await;
    assert_eq!(resp.status(), 303, "the passkey signs in");
    assert!(redirect_params(&resp).contains_key("code"));

    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    let refused = app.submit_login(&b, fields, "grace", "").await;
    assert_eq!(refused.status(), 401, "no password verifies against the account");
}

#[tokio::test]
async fn a_ceremony_started_for_one_link_or_name_does_not_accept_another() {
    let (app, _sink) = spawn_mail(|s| s.signup = Signup::Invite).await;
    let admin = admin_token(&app).await;
    let first = invitation(&app, &admin, "one@example.org").await;
    let second = invitation(&app, &admin, "two@example.org").await;
    let b = browser();

    // In the default mode the page offers both ways.
    let html = b
        .get(app.url(&format!("/invite?token={first}")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("type=\"password\"") && html.contains("id=\"passkey-enrol\""),
        "{html}"
    );

    let (_, o) = options(&app, &b, "/invite/passkey", &[("token", &first), ("username", "one")]).await;
    let mut a = app.authenticator();
    let crossed = make(
        &app,
        &b,
        &mut a,
        "/invite/passkey",
        &o,
        &[("token", &second), ("username", "one")],
    )
    .await;
    assert_eq!(crossed.status(), 400, "bound to the first link");
    assert!(text_of(&crossed.text().await.unwrap(), "passkey-error").is_some());
    assert!(app.user("one").await.is_none());

    // A name taken between the options and the passkey: refused, the link still works.
    let (_, o) = options(&app, &b, "/invite/passkey", &[("token", &first), ("username", "ada")]).await;
    app.add_user("ada").await;
    let taken = make(
        &app,
        &b,
        &mut app.authenticator(),
        "/invite/passkey",
        &o,
        &[("token", &first), ("username", "ada")],
    )
    .await;
    assert_eq!(taken.status(), 400);
    assert!(text_of(&taken.text().await.unwrap(), "username-error").is_some());
    let done = accept_with_passkey(&app, &first, "one", &mut app.authenticator()).await;
    assert_eq!(done.status(), 200);
    assert!(app.user("one").await.is_some());
}

#[tokio::test]
async fn a_reset_link_makes_a_new_passkey_for_a_passkey_only_account_and_ends_its_sessions() {
    let (app, sink) = spawn_mail(|s| s.signup = Signup::Invite).await;
    let (grace, mut old) = passkey_account(&app, "grace", "grace@example.org").await;
    app.add_client("rp", false).await.unwrap();
    let (signed_in, _) = passkey_sign_in(&app, &mut old).await;
    assert_eq!(signed_in.status(), 303);

    let asked = plain_client()
        .post(app.url("/password/forgot"))
        .form(&[("who", "grace")])
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 200);
    // The first mail was the invitation.
    let link = sink.nth("grace@example.org", 2).await.link("/password/reset");
    let token = token_of(&link);
    let b = browser();
    let html = b.get(&link).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("id=\"reset-passkey\""), "{html}");
    assert!(!html.contains("type=\"password\""));
    let forced = b
        .post(app.url("/password/reset"))
        .form(&[
            ("token", token.as_str()),
            ("password", "a new secret here"),
            ("confirm", "a new secret here"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(forced.status(), 400, "a passkey-only account gets no password this way");
    assert!(text_of(&forced.text().await.unwrap(), "passkey-error").is_some());

    let (status, o) = options(&app, &b, "/password/reset/passkey", &[("token", &token)]).await;
    assert_eq!(status, 200);
    assert_eq!(
        o["excludeCredentials"].as_array().map(Vec::len),
        Some(1),
        "the passkey it has is left out"
    );
    let mut new = app.authenticator();
    let done = make(&app, &b, &mut new, "/password/reset/passkey", &o, &[("token", &token)]).await;
    assert_eq!(done.status(), 200);
    assert!(text_of(&done.text().await.unwrap(), "reset-done").is_some());
    assert_eq!(app.passkey_count(grace.id).await, 2);
    let sessions = app
        .state
        .db
        .read(move |c| db::sessions::list_for_user(c, grace.id, 0))
        .await
        .unwrap();
    assert!(sessions.is_empty(), "every session ended");
    let notice = sink.nth("grace@example.org", 3).await;
    assert!(notice.subject().contains("passkey"), "{}", notice.subject());
    let (resp, _) = passkey_sign_in(&app, &mut new).await;
    assert_eq!(resp.status(), 303, "the new passkey signs in");
    let spent = make(
        &app,
        &b,
        &mut app.authenticator(),
        "/password/reset/passkey",
        &o,
        &[("token", &token)],
    )
    .await;
    assert_eq!(spent.status(), 410, "the link works once");
    assert!(app
        .audit()
        .await
        .iter()
        .any(|(e, a, _)| e == "password.reset" && a.as_deref() == Some("grace")));
}

#[tokio::test]
async fn under_passkey_only_a_reset_replaces_a_password_with_a_passkey() {
    let (app, sink) = spawn_mail(|s| s.passkey_mode = PasskeyMode::PasskeyOnly).await;
    let ada = app.add_user("ada").await;
    app.add_client("rp", false).await.unwrap();
    plain_client()
        .post(app.url("/password/forgot"))
        .form(&[("who", "ada")])
        .send()
        .await
        .unwrap();
    let email = ada.email.clone().unwrap();
    let token = token_of(&sink.nth(&email, 1).await.link("/password/reset"));
    let b = browser();
    let (_, o) = options(&app, &b, "/password/reset/passkey", &[("token", &token)]).await;
    let mut a = app.authenticator();
    let done = make(&app, &b, &mut a, "/password/reset/passkey", &o, &[("token", &token)]).await;
    assert_eq!(done.status(), 200);
    let after = app.user("ada").await.unwrap();
    assert!(
        !tessera::crypto::password::has_password(&after.password_hash),
        "the password is gone"
    );
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    let refused = app.submit_login(&b, fields, "ada", PASSWORD).await;
    assert_eq!(refused.status(), 401, "the old password no longer signs in");
    assert_eq!(passkey_sign_in(&app, &mut a).await.0.status(), 303);
}

#[tokio::test]
async fn a_sign_up_with_a_passkey_confirms_its_address_by_making_it() {
    let (app, sink) = spawn_mail(|s| s.signup = Signup::Open).await;
    app.add_client("rp", false).await.unwrap();
    let b = browser();
    let sent = b
        .post(app.url("/signup"))
        .form(&[
            ("username", "lin"),
            ("email", "lin@example.org"),
            ("name", ""),
            ("password", ""),
            ("confirm", ""),
            ("credential", "passkey"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);
    assert!(text_of(&sent.text().await.unwrap(), "signup-sent").is_some());
    let lin = app.user("lin").await.unwrap();
    assert!(!tessera::crypto::password::has_password(&lin.password_hash));

    let link = sink.nth("lin@example.org", 1).await.link("/email/verify");
    let token = token_of(&link);
    let html = b.get(&link).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("action=\"/email/verify/passkey\""), "{html}");
    // "Confirm" alone would leave an account nobody can sign in to.
    let plain = b
        .post(app.url("/email/verify"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 400);
    assert!(!app.user("lin").await.unwrap().email_verified);

    let (status, o) = options(&app, &b, "/email/verify/passkey", &[("token", &token)]).await;
    assert_eq!(status, 200);
    let mut a = app.authenticator();
    let done = make(&app, &b, &mut a, "/email/verify/passkey", &o, &[("token", &token)]).await;
    assert_eq!(done.status(), 200);
    assert!(text_of(&done.text().await.unwrap(), "verified").is_some());
    let lin = app.user("lin").await.unwrap();
    assert!(lin.email_verified);
    assert_eq!(app.passkey_count(lin.id).await, 1);
    assert_eq!(passkey_sign_in(&app, &mut a).await.0.status(), 303);
}

#[tokio::test]
async fn a_passkey_only_account_confirms_with_its_passkey_and_keeps_its_last_one() {
    let (app, _sink) = spawn_mail(|s| s.signup = Signup::Invite).await;
    let (grace, mut a) = passkey_account(&app, "grace", "grace@example.org").await;
    app.add_client("rp", false).await.unwrap();

    // A portal sign-in with the passkey, then the clock past the reauthentication window.
    let b = browser();
    let (signed, _) = passkey_sign_in_at(&app, &b, &app.url("/account"), &mut a).await;
    assert!(signed.status().is_redirection(), "{}", signed.status());
    let csrf = app.csrf(&b).await;
    app.clock.advance(3600);

    let listed = app
        .state
        .db
        .read(move |c| db::passkeys::list_for_user(c, grace.id))
        .await
        .unwrap();
    let last = b
        .post(app.url("/account/passkeys/delete"))
        .form(&[("csrf", csrf.clone()), ("id", listed[0].id.to_string())])
        .send()
        .await
        .unwrap();
    assert_eq!(last.status(), 409);
    assert_eq!(app.passkey_count(grace.id).await, 1, "the last way in stays");

    let refused = b
        .post(app.url("/account/passkeys/options"))
        .header("X-CSRF-Token", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403, "an hour after sign-in, a confirmation first");
    let confirm = b
        .get(app.url("/account/confirm?next=passkey"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(confirm.contains("id=\"passkey-confirm\""), "{confirm}");
    assert!(!confirm.contains("type=\"password\""), "no password to ask for");

    let o: Value = b
        .post(app.url("/account/confirm/passkey/options"))
        .header("X-CSRF-Token", &csrf)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(o["allowCredentials"].as_array().map(Vec::len), Some(1));
    // Another account's passkey, registered here, does not confirm this one.
    app.add_user("bob").await;
    let bob = browser();
    let bob_csrf = app.portal_login(&bob, "bob", PASSWORD).await;
    let mut bobs = app.authenticator();
    let added = crate::passkeys::register(&app, &bob, &bob_csrf, &mut bobs, "Bob's").await;
    assert_eq!(added.status(), 201);
    let wrong = confirm_with(&app, &b, &csrf, &mut bobs, &o).await;
    assert_eq!(wrong.status(), 401);
    let confirmed = confirm_with(&app, &b, &csrf, &mut a, &o).await;
    assert!(confirmed.status().is_redirection(), "{}", confirmed.status());
    assert_eq!(location(&confirmed), "/account#passkeys-h");
    let mut second = app.authenticator();
    let added = crate::passkeys::register(&app, &b, &csrf, &mut second, "Phone").await;
    assert_eq!(added.status(), 201, "{}", added.text().await.unwrap());
}

/// Posts the confirmation page's passkey form with an assertion from `a`.
async fn confirm_with(
    app: &TestApp,
    b: &reqwest::Client,
    csrf: &str,
    a: &mut Authenticator,
    options: &Value,
) -> reqwest::Response {
    let (cdj, ad, sig) = a.get(options["challenge"].as_str().unwrap());
    b.post(app.url("/account/confirm/passkey"))
        .form(&[
            ("csrf", csrf.to_string()),
            ("next", "passkey".into()),
            ("credential_id", b64(&a.credential_id)),
            ("client_data", b64(&cdj)),
            ("authenticator_data", b64(&ad)),
            ("signature", b64(&sig)),
        ])
        .send()
        .await
        .unwrap()
}
