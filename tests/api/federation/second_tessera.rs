//! Another Tessera as the upstream: the whole chain from the RP to the upstream's
//! login form and back, JIT on and off, the login page's button, `idp=`, the upstream
//! down or refusing, forged and replayed callbacks (RFC 6749 §10.12), RFC 9207 `iss`,
//! key rotation at the upstream, group mapping, and the local second factor.

use ::tessera::auth::totp;
use ::tessera::crypto::keys::Alg;
use ::tessera::crypto::random::random_id;
use serde_json::json;

use super::*;

/// `url` with the query parameter `key` set to `value`, or removed when `None`.
fn with_param(url: &str, key: &str, value: Option<&str>) -> String {
    let mut url = url::Url::parse(url).unwrap();
    let kept: Vec<(String, String)> = url.query_pairs().into_owned().filter(|(k, _)| k != key).collect();
    {
        let mut q = url.query_pairs_mut();
        q.clear();
        for (k, v) in &kept {
            q.append_pair(k, v);
        }
        if let Some(v) = value {
            q.append_pair(key, v);
        }
    }
    url.to_string()
}

fn param(url: &str, key: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("no {key} in {url}"))
}

/// The login page a refused upstream sign-in shows: its status, `#login-error` text
/// and the fields of the "Return to … without signing in" form.
async fn login_again(resp: reqwest::Response) -> (u16, String, HashMap<String, String>) {
    let status = resp.status().as_u16();
    let html = resp.text().await.unwrap();
    let error = text_of(&html, "login-error").unwrap_or_else(|| panic!("no #login-error on:\n{html}"));
    assert!(
        text_of(&html, "cancel-link").is_some_and(|t| t.starts_with("Return to rp app")),
        "the way back to the application: {html}"
    );
    assert!(html.contains("action=\"/login\""), "the login form again");
    (status, error, form_for(&html, "/login/cancel"))
}

/// Presses "Return to … without signing in": the RP's redirect parameters.
async fn cancel(pair: &Pair, b: &reqwest::Client, fields: &HashMap<String, String>) -> HashMap<String, String> {
    let resp = b
        .post(pair.down.url("/login/cancel"))
        .form(fields)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_redirection(), "cancel answered {}", resp.status());
    redirect_params(&resp)
}

/// An error page's heading.
async fn heading(resp: reqwest::Response) -> String {
    let html = resp.text().await.unwrap();
    let doc = scraper::Html::parse_document(&html);
    let h1 = scraper::Selector::parse("h1").unwrap();
    doc.select(&h1)
        .next()
        .map(|e| e.text().collect::<String>().trim().to_string())
        .unwrap_or_default()
}

async fn sessions_of(app: &TestApp, user_id: i64) -> usize {
    let now = app.clock.now();
    app.state
        .db
        .read(move |c| db::sessions::list_for_user(c, user_id, now))
        .await
        .unwrap()
        .len()
}

/// An upstream account `ada` with a verified address.
async fn upstream_ada(pair: &Pair) -> db::users::User {
    let ada = pair.up.add_user("ada").await;
    verify_email(&pair.up, ada.id).await;
    ada
}

#[tokio::test]
async fn an_rp_gets_an_id_token_for_a_just_in_time_account_made_from_the_upstream() {
    let pair = pair(|s| {
        s.jit = true;
        s.group_claim = Some("groups".into());
        s.map_group = vec!["eng=engineering".into()];
    })
    .await;
    let ada = pair.up.add_user("ada").await;
    verify_email(&pair.up, ada.id).await;
    join(&pair.up, ada.id, "eng").await;
    let b = browser();
    let params = pair.sign_in(&b, "ada").await;
    let claims = pair.id_token(&params).await;
    assert_eq!(claims["preferred_username"], "ada");
    assert_eq!(claims["email"], "ada@example.com");
    assert_eq!(claims["email_verified"], true);
    assert_eq!(claims["amr"], serde_json::json!(["pwd", "fed"]));
    assert_ne!(claims["sub"], ada.sub, "the local account has its own subject");
    let local = pair.down.user("ada").await.unwrap();
    let mut local = local;
    pair.down
        .state
        .db
        .read(move |c| {
            db::users::load_groups(c, &mut local)?;
            Ok(local)
        })
        .await
        .map(|u| {
            assert_eq!(u.groups, vec!["engineering".to_string()]);
        })
        .unwrap();
}

#[tokio::test]
async fn the_login_pages_button_goes_to_the_upstream_and_back_to_a_code() {
    let pair = pair(|s| s.jit = true).await;
    upstream_ada(&pair).await;
    let b = browser();
    let resp = b.get(pair.authorize_url(false)).send().await.unwrap();
    assert_eq!(resp.status(), 200, "without idp= the login page is shown");
    let html = resp.text().await.unwrap();
    {
        let doc = scraper::Html::parse_document(&html);
        let sel = scraper::Selector::parse("form[method=\"post\"][action=\"/federation/up/start\"] button#upstream-up")
            .unwrap();
        let button = doc
            .select(&sel)
            .next()
            .expect("the button posts to /federation/up/start");
        assert_eq!(button.text().collect::<String>().trim(), "Sign in with Upstream SSO");
    }
    let fields = form_for(&html, "/federation/up/start");
    assert!(
        fields.contains_key("request_id") && fields.contains_key("csrf"),
        "{fields:?}"
    );

    // The button's form is bound to the page it came from.
    let mut forged = fields.clone();
    forged.insert("csrf".into(), "guess".into());
    let resp = b
        .post(pair.down.url("/federation/up/start"))
        .form(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.headers().get("location").is_none());

    let resp = b
        .post(pair.down.url("/federation/up/start"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    let to_upstream = location(&resp);
    assert!(to_upstream.starts_with(&pair.up.url("/authorize?")), "{to_upstream}");
    assert_eq!(param(&to_upstream, "client_id"), "tessera-down");
    assert_eq!(
        param(&to_upstream, "redirect_uri"),
        pair.down.url("/federation/up/callback")
    );
    assert_eq!(param(&to_upstream, "code_challenge_method"), "S256");
    let back = pair.callback_from(&b, &to_upstream, "ada").await;
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    let params = redirect_params(&resp);
    assert_eq!(params["state"], "st4te");
    let claims = pair.id_token(&params).await;
    assert_eq!(claims["preferred_username"], "ada");
    assert_eq!(claims["nonce"], "n0nce", "the RP's nonce, not the upstream's");
    assert_eq!(claims["amr"], json!(["pwd", "fed"]));
}

#[tokio::test]
async fn without_jit_an_unlinked_upstream_account_is_sent_to_an_administrator() {
    let pair = pair(|s| s.jit = false).await;
    upstream_ada(&pair).await;
    let users = user_count(&pair.down).await;
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    let resp = b.get(back).send().await.unwrap();
    let (status, error, _) = login_again(resp).await;
    assert_eq!(status, 403);
    assert!(error.contains("is not linked to an account here"), "{error}");
    assert!(error.contains("ask an administrator"), "{error}");
    assert_eq!(user_count(&pair.down).await, users, "no account is made");
    assert!(local_user(&pair.down, "ada").await.is_none());
    assert_eq!(links_of(&pair.down, "up").await, 0, "nothing is linked");
    assert_eq!(live_sessions(&pair.down).await, 0, "nobody is signed in");
}

#[tokio::test]
async fn an_unknown_idp_shows_the_normal_login_page() {
    let pair = pair(|s| s.jit = true).await;
    let b = browser();
    let url = pair.down.authorize_url(RP, &[("idp", "nope")]);
    let resp = b.get(url).send().await.unwrap();
    assert_eq!(resp.status(), 200, "the hint is advisory");
    let html = resp.text().await.unwrap();
    assert!(text_of(&html, "login-error").is_none(), "{html}");
    assert!(html.contains("name=\"username\""), "the password form");
    assert_eq!(
        text_of(&html, "upstream-up").as_deref(),
        Some("Sign in with Upstream SSO")
    );
    // The page works as any login page: the password signs in.
    pair.down.add_user("local").await;
    let fields = form_fields(&html);
    let resp = pair.down.submit_login(&b, fields, "local", PASSWORD).await;
    assert_eq!(resp.status(), 303);
    assert!(redirect_params(&resp).contains_key("code"));
}

#[tokio::test]
async fn an_unreachable_upstream_shows_the_login_page_and_the_rp_hears_temporarily_unavailable() {
    // A loopback port nothing listens on any more.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    let pair = pair(|s| s.issuer = Some(closed)).await;
    let users = user_count(&pair.down).await;
    let b = browser();
    let resp = b.get(pair.authorize_url(true)).send().await.unwrap();
    let (status, error, fields) = login_again(resp).await;
    assert_eq!(status, 503);
    assert!(error.starts_with("Upstream SSO cannot be reached"), "{error}");
    assert_eq!(fields["reason"], "unavailable");

    // The page's own button says the same, and the way back still works after it.
    let start = [
        ("request_id", fields["request_id"].as_str()),
        ("csrf", fields["csrf"].as_str()),
    ];
    let resp = b
        .post(pair.down.url("/federation/up/start"))
        .form(&start)
        .send()
        .await
        .unwrap();
    let (status, _, fields) = login_again(resp).await;
    assert_eq!(status, 503);

    let params = cancel(&pair, &b, &fields).await;
    assert_eq!(params["error"], "temporarily_unavailable");
    assert_eq!(params["state"], "st4te");
    assert_eq!(params["iss"], pair.down.address, "RFC 9207 on the error too");
    assert!(!params.contains_key("code"));
    // Used up: a second press is the expired page, not a second answer.
    let resp = b
        .post(pair.down.url("/login/cancel"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(live_sessions(&pair.down).await, 0);
    assert_eq!(user_count(&pair.down).await, users);
}

#[tokio::test]
async fn an_upstream_access_denied_shows_the_login_page_and_the_rp_hears_access_denied() {
    let pair = pair(|s| s.jit = true).await;
    upstream_ada(&pair).await;
    let users = user_count(&pair.down).await;
    let b = browser();
    let resp = b.get(pair.authorize_url(true)).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    let state = param(&location(&resp), "state");
    let mut url = url::Url::parse(&pair.down.url("/federation/up/callback")).unwrap();
    url.query_pairs_mut()
        .append_pair("error", "access_denied")
        .append_pair("state", &state)
        .append_pair("iss", &pair.up.address);
    let resp = b.get(url.as_str()).send().await.unwrap();
    let (status, error, fields) = login_again(resp).await;
    assert_eq!(status, 403);
    assert!(
        error.contains("did not succeed") && error.contains("access_denied"),
        "{error}"
    );
    assert_eq!(fields["reason"], "denied");
    // The upstream's state is used up.
    let resp = b.get(url.as_str()).send().await.unwrap();
    assert_eq!(resp.status(), 400);

    let params = cancel(&pair, &b, &fields).await;
    assert_eq!(params["error"], "access_denied");
    assert_eq!(params["state"], "st4te");
    assert_eq!(params["iss"], pair.down.address);
    assert_eq!(live_sessions(&pair.down).await, 0);
    assert_eq!(user_count(&pair.down).await, users);
}

#[tokio::test]
async fn a_forged_state_is_the_expired_page() {
    let pair = pair(|s| s.jit = true).await;
    upstream_ada(&pair).await;
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    // The upstream's real code, under a state Tessera never sent.
    let forged = with_param(&back, "state", Some(&random_id()));
    let resp = b.get(forged).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(heading(resp).await, "Sign-in expired");
    let resp = b.get(with_param(&back, "state", None)).send().await.unwrap();
    assert_eq!(resp.status(), 400, "no state at all");
    assert_eq!(live_sessions(&pair.down).await, 0);
    assert!(local_user(&pair.down, "ada").await.is_none(), "no account is made");
}

#[tokio::test]
async fn a_replayed_callback_is_the_expired_page_and_opens_one_session() {
    let pair = pair(|s| s.jit = true).await;
    upstream_ada(&pair).await;
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    let resp = b.get(&back).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    assert!(redirect_params(&resp).contains_key("code"));
    let resp = b.get(&back).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(heading(resp).await, "Sign-in expired");
    assert_eq!(live_sessions(&pair.down).await, 1, "one sign-in, one session");
}

#[tokio::test]
async fn a_callback_opened_in_another_browser_is_refused() {
    let pair = pair(|s| s.jit = true).await;
    upstream_ada(&pair).await;
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    // A browser with a sign-in of its own under way, and one with no cookie at all.
    let other = browser();
    let resp = other.get(pair.authorize_url(true)).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    for stranger in [other, browser()] {
        let resp = stranger.get(&back).send().await.unwrap();
        assert_eq!(resp.status(), 403);
        assert_eq!(heading(resp).await, "Sign-in refused");
    }
    assert_eq!(live_sessions(&pair.down).await, 0);
    assert!(local_user(&pair.down, "ada").await.is_none());

    // The browser that began still finishes, once.
    let resp = b.get(&back).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    assert!(redirect_params(&resp).contains_key("code"));
    let resp = b.get(&back).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(live_sessions(&pair.down).await, 1);
}

#[tokio::test]
async fn a_callback_naming_another_issuer_is_refused() {
    let pair = pair(|s| s.jit = true).await;
    upstream_ada(&pair).await;
    let users = user_count(&pair.down).await;
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    assert_eq!(param(&back, "iss"), pair.up.address, "the upstream sends RFC 9207 iss");
    let mixed = with_param(&back, "iss", Some("http://127.0.0.3:4444"));
    let resp = b.get(mixed).send().await.unwrap();
    let (status, error, _) = login_again(resp).await;
    assert_eq!(status, 403);
    assert!(error.contains("another issuer"), "{error}");
    assert_eq!(live_sessions(&pair.down).await, 0);
    assert_eq!(user_count(&pair.down).await, users);
    // The real answer cannot be used after the mixed-up one.
    let resp = b.get(&back).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(live_sessions(&pair.down).await, 0);
}

#[tokio::test]
async fn a_callback_without_the_iss_its_upstream_promises_is_refused() {
    let pair = pair(|s| s.jit = true).await;
    upstream_ada(&pair).await;
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    // RFC 9207 §2.4: the upstream's metadata says it sends `iss`, so an answer
    // without one may come from another issuer.
    let resp = b.get(with_param(&back, "iss", None)).send().await.unwrap();
    let (status, error, _) = login_again(resp).await;
    assert_eq!(status, 403);
    assert!(error.contains("lacks its issuer"), "{error}");
    assert_eq!(live_sessions(&pair.down).await, 0);
}

#[tokio::test]
async fn after_the_upstream_rotates_its_key_the_next_sign_in_refetches_its_keys() {
    let pair = pair(|s| s.jit = true).await;
    upstream_ada(&pair).await;
    let first = pair.sign_in(&browser(), "ada").await;
    let sub = pair.id_token(&first).await["sub"].clone();
    let before = pair.up.jwks_kids().await;

    // A new RS256 key at the upstream, signing once its publication delay has passed.
    let (up, now, delay) = (
        &pair.up,
        pair.up.clock.now(),
        pair.up.state.settings.key_publish_delay(),
    );
    let new_kid = up
        .state
        .db
        .write(move |c| Ok(::tessera::oidc::keys::rotate(c, Alg::Rs256, now, delay, None).map(|(k, _)| k.kid)))
        .await
        .unwrap()
        .unwrap();
    ::tessera::oidc::keys::reload(&up.state.ctx()).await.unwrap();
    up.clock.advance(delay);
    // The two clocks stay together (ID tokens are checked for `iat`); the key set
    // Tessera cached at the first sign-in is newer than its refresh period still.
    pair.down.clock.advance(delay);
    let after = up.jwks_kids().await;
    assert!(
        !before.contains(&json!(new_kid)) && after.contains(&json!(new_kid)),
        "{before:?} → {after:?}"
    );
    assert_eq!(after.len(), before.len() + 1, "the old key stays published");
    let probe = up.add_client("probe", false).await.unwrap();
    let probe_tokens = up.tokens("probe", &probe, "ada").await;
    assert_eq!(
        jwt_parts(probe_tokens["id_token"].as_str().unwrap()).0["kid"],
        json!(new_kid),
        "the upstream signs its ID tokens with the new key now"
    );

    let second = pair.sign_in(&browser(), "ada").await;
    let claims = pair.id_token(&second).await;
    assert_eq!(claims["sub"], sub, "the same local account");
    assert_eq!(claims["amr"], json!(["pwd", "fed"]));
}

#[tokio::test]
async fn mapped_groups_are_added_and_removed_as_the_upstream_says() {
    let pair = pair(|s| {
        s.jit = true;
        s.group_claim = Some("groups".into());
        s.map_group = vec!["eng=engineering".into(), "ops=operations".into()];
    })
    .await;
    let ada = upstream_ada(&pair).await;
    join(&pair.up, ada.id, "eng").await;
    join(&pair.up, ada.id, "marketing").await;
    let with_groups = authorize_with(&pair.down, "up", "openid profile email groups");

    let params = pair.sign_in_at(&browser(), &with_groups, "ada").await;
    let claims = pair.id_token(&params).await;
    assert_eq!(claims["groups"], json!(["engineering"]), "only mapped groups arrive");
    let local = local_user(&pair.down, "ada").await.unwrap();
    assert_eq!(local.groups, vec!["engineering".to_string()]);

    // A group the mapping does not name stays; the upstream moves ada from eng to ops.
    join(&pair.down, local.id, "local-only").await;
    let up_id = ada.id;
    pair.up
        .state
        .db
        .write(move |c| {
            let eng = db::groups::id_of(c, "eng")?.unwrap();
            db::groups::set_member(c, eng, up_id, false)?;
            Ok(())
        })
        .await
        .unwrap();
    join(&pair.up, ada.id, "ops").await;

    let params = pair.sign_in_at(&browser(), &with_groups, "ada").await;
    let claims = pair.id_token(&params).await;
    let mut groups: Vec<String> = serde_json::from_value(claims["groups"].clone()).unwrap();
    groups.sort();
    assert_eq!(groups, ["local-only", "operations"]);
    let mut local = local_user(&pair.down, "ada").await.unwrap().groups;
    local.sort();
    assert_eq!(local, ["local-only", "operations"]);
}

#[tokio::test]
async fn a_local_authenticator_app_is_still_asked_after_the_upstream() {
    let pair = pair(|s| s.jit = false).await;
    let ada = upstream_ada(&pair).await;
    let local = pair.down.add_user("adalocal").await;
    link_up(&pair.down, &ada.sub, local.id).await;
    let portal = browser();
    let csrf = pair.down.portal_login(&portal, "adalocal", PASSWORD).await;
    let key = pair.down.enrol_totp(&portal, &csrf).await;
    let sessions = sessions_of(&pair.down, local.id).await;

    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 200, "the second-factor page");
    let html = resp.text().await.unwrap();
    let mut fields = form_for(&html, "/login/mfa");
    assert_eq!(
        sessions_of(&pair.down, local.id).await,
        sessions,
        "no session before the code"
    );

    let mut wrong = fields.clone();
    wrong.insert("code".into(), "000000".into());
    let resp = b.post(pair.down.url("/login/mfa")).form(&wrong).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(sessions_of(&pair.down, local.id).await, sessions);

    // The enrolment spent the current step's code.
    let code = totp::code_at(&key, pair.down.clock.now() + totp::STEP).unwrap();
    fields.insert("code".into(), code);
    let resp = b.post(pair.down.url("/login/mfa")).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    let claims = pair.id_token(&redirect_params(&resp)).await;
    assert_eq!(claims["sub"], local.sub);
    assert_eq!(claims["amr"], json!(["pwd", "fed", "otp", "mfa"]));
    assert_eq!(sessions_of(&pair.down, local.id).await, sessions + 1);
}

#[tokio::test]
async fn require_local_mfa_refuses_an_account_without_a_second_factor() {
    let pair = pair(|s| {
        s.jit = true;
        s.require_local_mfa = true;
    })
    .await;
    upstream_ada(&pair).await;
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    let resp = b.get(back).send().await.unwrap();
    let (status, error, fields) = login_again(resp).await;
    assert_eq!(status, 403);
    assert!(error.contains("needs a second step"), "{error}");
    assert_eq!(fields["reason"], "denied");
    assert_eq!(live_sessions(&pair.down).await, 0, "no session");
}

#[tokio::test]
async fn a_disabled_local_account_cannot_sign_in_through_the_upstream() {
    let pair = pair(|s| s.jit = true).await;
    let ada = upstream_ada(&pair).await;
    let local = pair.down.add_user("adalocal").await;
    link_up(&pair.down, &ada.sub, local.id).await;
    let now = pair.down.clock.now();
    pair.down
        .state
        .db
        .write(move |c| db::users::set_disabled(c, "adalocal", true, now))
        .await
        .unwrap();
    let users = user_count(&pair.down).await;
    let b = browser();
    let back = pair.callback_after(&b, &pair.authorize_url(true), "ada").await;
    let resp = b.get(back).send().await.unwrap();
    let (status, error, _) = login_again(resp).await;
    assert_eq!(status, 403);
    assert!(error.contains("disabled"), "{error}");
    assert_eq!(live_sessions(&pair.down).await, 0);
    assert_eq!(
        user_count(&pair.down).await,
        users,
        "JIT makes no second account for it"
    );
}
