//! Linking upstream accounts to local ones: by an address both sides have verified
//! (never when either has not), from the account page, and unlinking, which refuses
//! to take away an account's only way in.

use super::*;

/// A user of `app` whose address is `email`, verified or not.
async fn user_with_email(app: &TestApp, username: &str, email: &str, verified: bool) -> db::users::User {
    let user = app.add_user(username).await;
    let (id, email, now) = (user.id, email.to_string(), app.clock.now());
    app.state
        .db
        .write(move |c| {
            db::users::set_email(c, id, &email, now)?;
            db::users::set_email_verified(c, id, verified)
        })
        .await
        .unwrap();
    user
}

/// The upstream accounts linked to a local one, as (provider, upstream subject).
async fn identities(app: &TestApp, user_id: i64) -> Vec<(String, String)> {
    app.state
        .db
        .read(move |c| db::identities::of_user(c, user_id))
        .await
        .unwrap()
        .into_iter()
        .map(|i| (i.provider_id, i.subject))
        .collect()
}

/// The account page of a signed-in browser.
async fn account_page(app: &TestApp, b: &reqwest::Client, query: &str) -> String {
    let resp = b.get(app.url(&format!("/account{query}"))).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

/// The flash message at the top of the account page.
fn flash(html: &str) -> Option<String> {
    let doc = scraper::Html::parse_document(html);
    let sel = scraper::Selector::parse("p.notice[role=\"status\"]").unwrap();
    doc.select(&sel)
        .next()
        .map(|e| e.text().collect::<String>().trim().to_string())
}

/// Presses the account page's Link button for `up`, signs in at the upstream as
/// `username` and returns where Tessera sends the browser after the callback.
async fn press_link(pair: &Pair, b: &reqwest::Client, username: &str) -> String {
    let html = account_page(&pair.down, b, "").await;
    assert_eq!(text_of(&html, "link-up-button").as_deref(), Some("Link"));
    let fields = form_for(&html, "/account/federation/up/link");
    let resp = b
        .post(pair.down.url("/account/federation/up/link"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303, "Link goes to the upstream");
    let back = pair.callback_from(b, &location(&resp), username).await;
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    location(&resp)
}

/// The upstream refuses with the "not linked" page.
async fn refused_as_not_linked(pair: &Pair, username: &str) {
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), username).await;
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let html = resp.text().await.unwrap();
    let error = text_of(&html, "login-error").unwrap_or_default();
    assert!(error.contains("is not linked to an account here"), "{error}");
}

/// A pair whose upstream links by verified address, with or without just-in-time
/// accounts.
async fn linking_by_email(jit: bool) -> Pair {
    pair(|s| {
        s.link_by_email = true;
        s.jit = jit;
    })
    .await
}

/// lovelace is refused as not linked, and nothing was linked to `local_id` or signed in.
async fn refused_and_nothing_linked(pair: &Pair, local_id: i64) {
    refused_as_not_linked(pair, "lovelace").await;
    assert!(identities(&pair.down, local_id).await.is_empty());
    assert_eq!(links_of(&pair.down, "up").await, 0);
    assert_eq!(live_sessions(&pair.down).await, 0);
}

#[tokio::test]
async fn an_address_verified_on_both_sides_links_to_the_existing_account() {
    let pair = linking_by_email(false).await;
    let local = user_with_email(&pair.down, "ada", "ada@corp.example", true).await;
    // Another username upstream: the address links, not the name.
    user_with_email(&pair.up, "lovelace", "ada@corp.example", true).await;
    let users = user_count(&pair.down).await;

    let claims = pair.id_token(&pair.sign_in(&browser(), "lovelace").await).await;
    assert_eq!(claims["sub"], local.sub, "signed in as the existing account");
    assert_eq!(claims["preferred_username"], "ada");
    assert_eq!(user_count(&pair.down).await, users, "no account is made");
    assert_eq!(identities(&pair.down, local.id).await.len(), 1);
    assert!(
        pair.down.audit().await.contains(&(
            "federation.linked".into(),
            Some("ada".into()),
            Some("provider:up".into())
        )),
        "{:?}",
        pair.down.audit().await
    );
    // From now on through the link.
    let again = pair.id_token(&pair.sign_in(&browser(), "lovelace").await).await;
    assert_eq!(again["sub"], local.sub);
    assert_eq!(links_of(&pair.down, "up").await, 1);
}

#[tokio::test]
async fn an_unverified_upstream_address_links_nothing() {
    let pair = linking_by_email(false).await;
    let local = user_with_email(&pair.down, "ada", "ada@corp.example", true).await;
    user_with_email(&pair.up, "lovelace", "ada@corp.example", false).await;
    refused_and_nothing_linked(&pair, local.id).await;
}

#[tokio::test]
async fn an_unverified_local_address_is_not_linked_to() {
    let pair = linking_by_email(false).await;
    let local = user_with_email(&pair.down, "ada", "ada@corp.example", false).await;
    user_with_email(&pair.up, "lovelace", "ada@corp.example", true).await;
    refused_and_nothing_linked(&pair, local.id).await;
}

#[tokio::test]
async fn with_jit_an_unverified_upstream_address_gets_an_account_of_its_own() {
    let pair = linking_by_email(true).await;
    let local = user_with_email(&pair.down, "ada", "ada@corp.example", true).await;
    user_with_email(&pair.up, "lovelace", "ada@corp.example", false).await;
    let claims = pair.id_token(&pair.sign_in(&browser(), "lovelace").await).await;
    assert_ne!(claims["sub"], local.sub, "never the account holding the address");
    assert_eq!(claims["preferred_username"], "lovelace");
    assert!(identities(&pair.down, local.id).await.is_empty());
    let made = local_user(&pair.down, "lovelace").await.unwrap();
    assert_ne!(
        made.email.as_deref(),
        Some("ada@corp.example"),
        "the address stays with its account"
    );
}

#[tokio::test]
async fn the_account_page_links_an_upstream_account() {
    let pair = pair(|s| s.jit = false).await;
    let ada = pair.up.add_user("ada").await;
    verify_email(&pair.up, ada.id).await;
    let local = pair.down.add_user("adalocal").await;
    let b = browser();
    pair.down.portal_login(&b, "adalocal", PASSWORD).await;
    let html = account_page(&pair.down, &b, "").await;
    assert!(text_of(&html, "linked-accounts").is_some());
    assert!(text_of(&html, "link-up").unwrap().contains("not linked"));
    assert!(text_of(&html, "unlink-up").is_none());

    assert_eq!(press_link(&pair, &b, "ada").await, "/account?done=linked");
    assert_eq!(
        identities(&pair.down, local.id).await,
        [("up".to_string(), ada.sub.clone())]
    );
    let html = account_page(&pair.down, &b, "?done=linked").await;
    assert_eq!(
        flash(&html).as_deref(),
        Some("The account was linked: you can sign in with it now.")
    );
    assert!(text_of(&html, "link-up").unwrap().contains("ada@example.com"), "{html}");
    assert_eq!(text_of(&html, "unlink-up").as_deref(), Some("Unlink"));
    assert!(text_of(&html, "link-up-button").is_none());
    assert!(pair.down.audit().await.contains(&(
        "federation.linked".into(),
        Some("adalocal".into()),
        Some("provider:up".into())
    )));

    let claims = pair.id_token(&pair.sign_in(&browser(), "ada").await).await;
    assert_eq!(
        claims["sub"], local.sub,
        "the upstream now signs in as the linked account"
    );
}

#[tokio::test]
async fn an_upstream_account_linked_elsewhere_is_not_linked_again() {
    let pair = pair(|s| s.jit = false).await;
    let ada = pair.up.add_user("ada").await;
    let first = pair.down.add_user("first").await;
    link_up(&pair.down, &ada.sub, first.id).await;
    let second = pair.down.add_user("second").await;
    let b = browser();
    pair.down.portal_login(&b, "second", PASSWORD).await;
    assert_eq!(press_link(&pair, &b, "ada").await, "/account?done=link-elsewhere");
    assert!(identities(&pair.down, second.id).await.is_empty());
    assert_eq!(
        identities(&pair.down, first.id).await,
        [("up".to_string(), ada.sub.clone())]
    );
    assert_eq!(links_of(&pair.down, "up").await, 1);
    let html = account_page(&pair.down, &b, "?done=link-elsewhere").await;
    assert!(flash(&html).unwrap().contains("linked to another account here"));
    assert!(text_of(&html, "link-up-button").is_some(), "still not linked");
}

#[tokio::test]
async fn unlinking_ends_sign_ins_through_the_upstream() {
    let pair = pair(|s| s.jit = false).await;
    let ada = pair.up.add_user("ada").await;
    let local = pair.down.add_user("adalocal").await;
    link_up(&pair.down, &ada.sub, local.id).await;
    // Linked: the upstream signs in.
    assert_eq!(
        pair.id_token(&pair.sign_in(&browser(), "ada").await).await["sub"],
        local.sub
    );

    let b = browser();
    pair.down.portal_login(&b, "adalocal", PASSWORD).await;
    let html = account_page(&pair.down, &b, "").await;
    let fields = form_for(&html, "/account/federation/up/unlink");
    let resp = b
        .post(pair.down.url("/account/federation/up/unlink"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), "/account?done=unlinked");
    assert!(identities(&pair.down, local.id).await.is_empty());
    assert!(pair.down.audit().await.contains(&(
        "federation.unlinked".into(),
        Some("adalocal".into()),
        Some("provider:up".into())
    )));
    let html = account_page(&pair.down, &b, "").await;
    assert!(text_of(&html, "link-up-button").is_some());

    let sessions = live_sessions(&pair.down).await;
    refused_as_not_linked(&pair, "ada").await;
    assert_eq!(live_sessions(&pair.down).await, sessions, "no new session");
}

/// Signs in to the account page through the upstream (its login page's button).
async fn portal_through_upstream(pair: &Pair, b: &reqwest::Client, username: &str) -> String {
    let resp = b.get(pair.down.url("/account")).send().await.unwrap();
    assert_eq!(resp.status(), 200, "the login page");
    let fields = form_for(&resp.text().await.unwrap(), "/federation/up/start");
    let resp = b
        .post(pair.down.url("/federation/up/start"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    let back = pair.callback_from(b, &location(&resp), username).await;
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), "/account");
    account_page(&pair.down, b, "").await
}

#[tokio::test]
async fn the_only_way_into_a_just_in_time_account_stays_linked() {
    let pair = pair(|s| s.jit = true).await;
    let ada = pair.up.add_user("ada").await;
    verify_email(&pair.up, ada.id).await;
    let b = browser();
    let html = portal_through_upstream(&pair, &b, "ada").await;
    let local = local_user(&pair.down, "ada").await.expect("made just in time");
    assert!(text_of(&html, "no-password").is_some(), "a JIT account has no password");
    assert!(!html.contains("action=\"/account/password\""), "nothing to change");

    let fields = form_for(&html, "/account/federation/up/unlink");
    let resp = b
        .post(pair.down.url("/account/federation/up/unlink"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), "/account?done=unlink-last");
    assert_eq!(
        identities(&pair.down, local.id).await,
        [("up".to_string(), ada.sub.clone())]
    );
    let html = account_page(&pair.down, &b, "?done=unlink-last").await;
    assert!(flash(&html).unwrap().starts_with("That is the only way to sign in"));
    assert_eq!(text_of(&html, "unlink-up").as_deref(), Some("Unlink"));
    assert!(!pair
        .down
        .audit()
        .await
        .iter()
        .any(|(e, _, _)| e == "federation.unlinked"));

    // Still the way in.
    let claims = pair.id_token(&pair.sign_in(&browser(), "ada").await).await;
    assert_eq!(claims["sub"], local.sub);
}

/// `pair`, with a downstream that sends mail (for the password reset), JIT on.
async fn pair_with_mail() -> (Pair, crate::smtp::SmtpSink) {
    let mut up = spawn_with(|s| s.listen = "127.0.0.2:0".parse().unwrap()).await;
    up.address = up.state.issuer.to_string();
    let (down, sink) = spawn_mail(|_| {}).await;
    let callback = down.url("/federation/up/callback");
    let secret = up
        .add_client_with("tessera-down", false, |c| c.redirect_uris = vec![callback])
        .await
        .unwrap();
    let spec = ProviderSpec {
        id: "up".into(),
        kind: "oidc".into(),
        name: Some("Upstream SSO".into()),
        issuer: Some(up.address.clone()),
        client_id: "tessera-down".into(),
        client_secret: secret,
        jit: true,
        ..ProviderSpec::default()
    };
    register(&down, &spec).await;
    let rp_secret = down.add_client(RP, false).await.unwrap();
    (Pair { up, down, rp_secret }, sink)
}

#[tokio::test]
async fn a_just_in_time_account_sets_a_password_by_the_reset_flow_and_may_then_unlink() {
    const NEW_PASSWORD: &str = "a brand new passphrase";
    let (pair, sink) = pair_with_mail().await;
    let ada = pair.up.add_user("ada").await;
    verify_email(&pair.up, ada.id).await;
    let html = portal_through_upstream(&pair, &browser(), "ada").await;
    assert!(text_of(&html, "no-password").is_some());
    // Without a password, the password form cannot sign in.
    let b = browser();
    let fields = pair.down.open_login(&b, &pair.down.url("/account")).await;
    let resp = pair.down.submit_login(&b, fields, "ada", "!").await;
    assert_ne!(resp.status(), 302, "no password signs in");

    let resp = plain_client()
        .post(pair.down.url("/password/forgot"))
        .form(&[("who", "ada")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let link = sink.nth("ada@example.com", 1).await.link("/password/reset");
    let page = b.get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let token = form_fields(&page.text().await.unwrap())["token"].clone();
    let done = b
        .post(pair.down.url("/password/reset"))
        .form(&[
            ("token", token.as_str()),
            ("password", NEW_PASSWORD),
            ("confirm", NEW_PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    assert!(text_of(&done.text().await.unwrap(), "reset-done").is_some());

    // The password signs in now, and the link may go.
    let b = browser();
    pair.down.portal_login(&b, "ada", NEW_PASSWORD).await;
    let html = account_page(&pair.down, &b, "").await;
    assert!(text_of(&html, "no-password").is_none());
    let fields = form_for(&html, "/account/federation/up/unlink");
    let resp = b
        .post(pair.down.url("/account/federation/up/unlink"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(location(&resp), "/account?done=unlinked");
    assert_eq!(links_of(&pair.down, "up").await, 0);
}

#[tokio::test]
async fn linking_asks_for_the_password_again_after_five_minutes() {
    let pair = pair(|s| s.jit = false).await;
    let ada = pair.up.add_user("ada").await;
    verify_email(&pair.up, ada.id).await;
    let local = pair.down.add_user("adalocal").await;
    let b = browser();
    pair.down.portal_login(&b, "adalocal", PASSWORD).await;
    pair.down.clock.advance(301);
    let html = account_page(&pair.down, &b, "").await;
    let fields = form_for(&html, "/account/federation/up/link");
    let resp = b
        .post(pair.down.url("/account/federation/up/link"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(
        location(&resp),
        "/account/confirm?next=link",
        "a stale sign-in confirms first"
    );
    assert!(identities(&pair.down, local.id).await.is_empty());
    // Confirming the password lets the link go ahead; the owner is told.
    let html = b
        .get(pair.down.url("/account/confirm?next=link"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut confirm = form_fields(&html);
    confirm.insert("password".into(), PASSWORD.into());
    let resp = b
        .post(pair.down.url("/account/confirm"))
        .form(&confirm)
        .send()
        .await
        .unwrap();
    assert_eq!(location(&resp), "/account#linked-accounts", "back to the link");
    assert_eq!(press_link(&pair, &b, "ada").await, "/account?done=linked");
    assert_eq!(identities(&pair.down, local.id).await.len(), 1);
}

#[tokio::test]
async fn an_administrator_removing_a_link_ends_the_sessions_it_opened() {
    let pair = pair(|s| s.link_by_email = true).await;
    user_with_email(&pair.up, "ada", "ada@corp.example", true).await;
    let local = user_with_email(&pair.down, "adalocal", "ada@corp.example", true).await;
    let b = browser();
    let params = pair.sign_in(&b, "ada").await;
    assert!(params.contains_key("code"));
    // A session of the same account opened with its password, not through the link, stays.
    pair.down.portal_login(&browser(), "adalocal", PASSWORD).await;
    let before = live_sessions(&pair.down).await;
    assert!(before >= 1);
    ::tessera::admin::providers::unlink(&pair.down.state.ctx(), &actor(), local.id, "up")
        .await
        .unwrap();
    assert!(identities(&pair.down, local.id).await.is_empty());
    assert_eq!(
        live_sessions(&pair.down).await,
        before - 1,
        "only the federated session ended"
    );
    let resp = b
        .get(pair.down.authorize_url(RP, &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "login_required");
}

#[tokio::test]
async fn the_owner_is_mailed_when_an_account_is_linked_to_theirs() {
    let (down, sink) = spawn_mail(|_| {}).await;
    let pair = pair_on(down, |s| s.link_by_email = true).await;
    user_with_email(&pair.up, "ada", "ada@corp.example", true).await;
    user_with_email(&pair.down, "adalocal", "ada@corp.example", true).await;
    pair.sign_in(&browser(), "ada").await;
    let mail = sink.nth("ada@corp.example", 1).await;
    assert!(
        mail.subject().ends_with("An account was linked to yours"),
        "{}",
        mail.subject()
    );
    assert!(mail.text().contains("Upstream SSO"), "{}", mail.text());
    // Signing in again through the same link is no news.
    pair.sign_in(&browser(), "ada").await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let notices = sink
        .to("ada@corp.example")
        .into_iter()
        .filter(|m| m.subject().ends_with("An account was linked to yours"))
        .count();
    assert_eq!(notices, 1);
}
