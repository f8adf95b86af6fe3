//! Passkeys: registering one from the account page and signing in with it through an
//! authorization, driven by a software authenticator that sends what a browser would.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use tessera::crypto::webauthn::RelyingParty;
use tessera::crypto::webauthn_testing::Authenticator;

use crate::helpers::*;

fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

pub(crate) async fn register(
    app: &TestApp,
    b: &reqwest::Client,
    csrf: &str,
    a: &mut Authenticator,
    name: &str,
) -> reqwest::Response {
    let options: Value = b
        .post(app.url("/account/passkeys/options"))
        .header("X-CSRF-Token", csrf)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(options["authenticatorSelection"]["userVerification"], "required");
    let (cdj, att) = a.create(options["challenge"].as_str().unwrap());
    b.post(app.url("/account/passkeys"))
        .header("X-CSRF-Token", csrf)
        .json(&json!({"name": name, "client_data": b64(&cdj), "attestation_object": b64(&att)}))
        .send()
        .await
        .unwrap()
}

/// Opens the login page of an authorization and signs in with the passkey.
pub(crate) async fn passkey_sign_in(
    app: &TestApp,
    a: &mut Authenticator,
) -> (reqwest::Response, Vec<(String, String)>) {
    passkey_sign_in_at(app, &browser(), &app.authorize_url("rp", &[]), a).await
}

/// Opens the login page at `url` in `b` and signs in with the passkey: the answer and
/// the form posted.
pub(crate) async fn passkey_sign_in_at(
    app: &TestApp,
    b: &reqwest::Client,
    url: &str,
    a: &mut Authenticator,
) -> (reqwest::Response, Vec<(String, String)>) {
    let fields = app.open_login(b, url).await;
    let base = [
        ("request_id", fields["request_id"].clone()),
        ("csrf", fields["csrf"].clone()),
    ];
    let options: Value = b
        .post(app.url("/login/passkey/options"))
        .form(&base)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (cdj, ad, sig) = a.get(options["challenge"].as_str().unwrap());
    let mut form: Vec<(String, String)> = base.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    form.extend([
        ("credential_id".to_string(), b64(&a.credential_id)),
        ("client_data".to_string(), b64(&cdj)),
        ("authenticator_data".to_string(), b64(&ad)),
        ("signature".to_string(), b64(&sig)),
    ]);
    let resp = b.post(app.url("/login/passkey")).form(&form).send().await.unwrap();
    (resp, form)
}

#[tokio::test]
async fn a_registered_passkey_signs_in_through_an_authorization_as_two_factors() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let rp = RelyingParty::of_issuer(&app.address).unwrap();
    let mut a = Authenticator::new(&rp).unwrap();

    let refused = b.post(app.url("/account/passkeys/options")).send().await.unwrap();
    assert_eq!(refused.status(), 403, "the CSRF header is required");
    let added = register(&app, &b, &csrf, &mut a, "Laptop").await;
    assert_eq!(added.status(), 201, "{}", added.text().await.unwrap());
    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("<td>Laptop</td>"));
    let again = register(&app, &b, &csrf, &mut a, "Laptop").await;
    assert_eq!(again.status(), 400, "one credential is registered once");

    let (resp, form) = passkey_sign_in(&app, &mut a).await;
    assert_eq!(resp.status(), 303);
    let code = redirect_params(&resp)["code"].clone();
    let tokens = app.exchange("rp", &secret, &code).await;
    let (_, claims) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(claims["amr"], json!(["swk", "user", "mfa"]));
    assert_eq!(claims["acr"], "urn:tessera:acr:mfa");

    // The same assertion again (its challenge is spent): refused.
    let replay = browser()
        .post(app.url("/login/passkey"))
        .form(&form)
        .send()
        .await
        .unwrap();
    // The sign-in it belonged to is spent: the page says it expired, nothing is issued.
    assert_eq!(replay.status(), 400);
    assert!(replay.text().await.unwrap().contains("Sign-in expired"));
    // A key that was never registered, or one for another site: refused.
    let mut stranger = Authenticator::new(&rp).unwrap();
    assert_eq!(passkey_sign_in(&app, &mut stranger).await.0.status(), 401);
    let mut elsewhere = Authenticator::new(&RelyingParty::of_issuer("https://evil.example").unwrap()).unwrap();
    elsewhere.credential_id = a.credential_id.clone();
    assert_eq!(passkey_sign_in(&app, &mut elsewhere).await.0.status(), 401);

    let events: Vec<_> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"passkey.added".to_string()));
}

#[tokio::test]
async fn passkeys_are_removed_only_by_their_owner() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    app.add_user("bob").await;
    app.add_client("rp", false).await;
    let (ada, bob) = (browser(), browser());
    let ada_csrf = app.portal_login(&ada, "ada", PASSWORD).await;
    let bob_csrf = app.portal_login(&bob, "bob", PASSWORD).await;
    let mut a = Authenticator::new(&RelyingParty::of_issuer(&app.address).unwrap()).unwrap();
    assert_eq!(register(&app, &ada, &ada_csrf, &mut a, "Phone").await.status(), 201);
    let html = ada.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    let doc = scraper::Html::parse_document(&html);
    let sel = scraper::Selector::parse("#passkeys input[name=id]").unwrap();
    let id = doc
        .select(&sel)
        .next()
        .unwrap()
        .value()
        .attr("value")
        .unwrap()
        .to_string();

    let stolen = bob
        .post(app.url("/account/passkeys/delete"))
        .form(&[("csrf", bob_csrf.as_str()), ("id", id.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(stolen.status(), 404);
    let gone = ada
        .post(app.url("/account/passkeys/delete"))
        .form(&[("csrf", ada_csrf.as_str()), ("id", id.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 302);
    assert_eq!(
        passkey_sign_in(&app, &mut a).await.0.status(),
        401,
        "a removed passkey no longer signs in"
    );
}

#[tokio::test]
async fn an_administrator_can_remove_a_users_passkeys() {
    let app = spawn_app().await;
    let ada = app.add_user("ada").await;
    let root = app.add_user("root").await;
    app.make_admin(root.id).await;
    app.add_client("rp", false).await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let mut a = Authenticator::new(&RelyingParty::of_issuer(&app.address).unwrap()).unwrap();
    assert_eq!(register(&app, &b, &csrf, &mut a, "Phone").await.status(), 201);
    let admin = browser();
    let admin_csrf = app.portal_login(&admin, "root", PASSWORD).await;
    let user: Value = admin
        .get(app.url(&format!("/admin/api/users/{}", ada.id)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(user["passkeys"], 1);
    let reset = admin
        .post(app.url(&format!("/admin/api/users/{}/mfa/reset", ada.id)))
        .header("X-CSRF-Token", &admin_csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 200);
    assert_eq!(reset.json::<Value>().await.unwrap()["passkeys"], 0);
    assert_eq!(passkey_sign_in(&app, &mut a).await.0.status(), 401);
}

/// `POST /login/username` of username-first: the next step's page.
async fn name_step(
    app: &TestApp,
    b: &reqwest::Client,
    fields: &std::collections::HashMap<String, String>,
    username: &str,
) -> String {
    let resp = b
        .post(app.url("/login/username"))
        .form(&[
            ("request_id", fields["request_id"].as_str()),
            ("csrf", fields["csrf"].as_str()),
            ("username", username),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

fn has_input(page: &str, name: &str, kind: &str) -> bool {
    page.contains(&format!("name=\"{name}\" type=\"{kind}\""))
        || page.contains(&format!("type=\"{kind}\" name=\"{name}\""))
}

#[tokio::test]
async fn username_first_asks_an_account_with_a_passkey_for_it_and_any_other_for_its_password() {
    let app = spawn_with(|s| s.passkey_mode = tessera::config::PasskeyMode::UsernameFirst).await;
    app.add_user("ada").await;
    app.add_user("bob").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let rp = RelyingParty::of_issuer(&app.address).unwrap();
    let mut a = Authenticator::new(&rp).unwrap();
    {
        let b = browser();
        let csrf = app.portal_login(&b, "ada", PASSWORD).await;
        assert_eq!(register(&app, &b, &csrf, &mut a, "Phone").await.status(), 201);
    }

    // The first page asks for the username alone.
    let b = browser();
    let first = b
        .get(app.authorize_url("rp", &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(first.contains("action=\"/login/username\""), "{first}");
    assert!(first.contains("autocomplete=\"username webauthn\""));
    assert!(!first.contains("name=\"password\""), "no password field yet");
    let fields = form_fields(&first);

    // An account with a passkey is asked for it first, its password the alternative.
    let page = name_step(&app, &b, &fields, "ada").await;
    assert!(text_of(&page, "signing-in-as").unwrap().contains("ada"));
    assert!(
        text_of(&page, "or-password").is_some(),
        "the password stays an alternative"
    );
    let passkey_at = page.find("id=\"passkey-login\"").unwrap();
    assert!(
        passkey_at < page.find("name=\"password\"").unwrap(),
        "the passkey comes first"
    );
    let options: Value = b
        .post(app.url("/login/passkey/options"))
        .form(&[("request_id", &fields["request_id"]), ("csrf", &fields["csrf"])])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (cdj, ad, sig) = a.get(options["challenge"].as_str().unwrap());
    let signed = b
        .post(app.url("/login/passkey"))
        .form(&[
            ("request_id", fields["request_id"].clone()),
            ("csrf", fields["csrf"].clone()),
            ("credential_id", b64(&a.credential_id)),
            ("client_data", b64(&cdj)),
            ("authenticator_data", b64(&ad)),
            ("signature", b64(&sig)),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 303, "no password was asked for");
    let tokens = app.exchange("rp", &secret, &redirect_params(&signed)["code"]).await;
    let (_, claims) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(claims["amr"], json!(["swk", "user", "mfa"]));

    others_are_asked_for_a_password_alike(&app).await;
}

/// An account without a passkey, and a name no account has, are asked for a password
/// alike; a wrong password keeps the step, another account starts over, the right one
/// signs in.
async fn others_are_asked_for_a_password_alike(app: &TestApp) {
    // An account without one, and a name no account has, are asked for a password alike.
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    for name in ["bob", "nobody"] {
        let page = name_step(app, &b, &fields, name).await;
        assert!(text_of(&page, "or-password").is_none(), "{name}: no passkey first");
        assert!(
            has_input(&page, "password", "password"),
            "{name}: the password is asked for"
        );
        assert!(
            page.contains(&format!("name=\"username\" value=\"{name}\"")),
            "{name}: the name is kept"
        );
    }
    // A wrong password keeps the step; another account starts over; the right one signs in.
    let wrong = app.submit_login(&b, fields.clone(), "bob", "not it").await;
    assert_eq!(wrong.status(), 401);
    let wrong = wrong.text().await.unwrap();
    assert!(text_of(&wrong, "login-error").is_some());
    assert!(text_of(&wrong, "signing-in-as").unwrap().contains("bob"), "{wrong}");
    let again = name_step(app, &b, &fields, "").await;
    assert!(again.contains("action=\"/login/username\"") && !again.contains("name=\"password\""));
    let done = app.submit_login(&b, fields, "bob", PASSWORD).await;
    assert_eq!(done.status(), 303);
}

#[tokio::test]
async fn the_username_step_refuses_a_forged_form() {
    let app = spawn_with(|s| s.passkey_mode = tessera::config::PasskeyMode::UsernameFirst).await;
    app.add_client("rp", false).await;
    let b = browser();
    let mut fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    fields.insert("csrf".into(), "forged".into());
    let resp = b
        .post(app.url("/login/username"))
        .form(&[
            ("request_id", &fields["request_id"]),
            ("csrf", &fields["csrf"]),
            ("username", &"ada".to_string()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let resp = b.post(app.url("/login/username")).body("x").send().await.unwrap();
    assert_eq!(resp.status(), 400, "not a form");
}
