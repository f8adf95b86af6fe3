//! What ends a grant: password resets and changes, the end of its session, group
//! rules, its absolute lifetime, and refresh-token replays; and what client
//! credentials may ask for.

use serde_json::Value;
use tessera::admin::Actor;
use tessera::db;

use crate::helpers::*;

fn admin() -> Actor {
    Actor {
        name: "root".into(),
        ip: None,
        user_id: None,
    }
}

async fn refresh(app: &TestApp, client: &str, secret: Option<&str>, token: &str) -> (u16, Value) {
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", client),
    ];
    let resp = app.token(secret.map(|s| (client, s)), &form).await;
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn text<'a>(v: &'a Value, name: &str) -> &'a str {
    v[name].as_str().unwrap_or_else(|| panic!("no {name} in {v}"))
}

/// Signs in through `b` (keeping its session) and exchanges the code; a `scope` in
/// `extra` replaces the default one.
async fn sign_in(app: &TestApp, b: &reqwest::Client, client: &str, secret: &str, extra: &[(&str, &str)]) -> Value {
    let scope = extra
        .iter()
        .find(|(k, _)| *k == "scope")
        .map(|(_, v)| v.replace(' ', "+"));
    let others: Vec<(&str, &str)> = extra.iter().copied().filter(|(k, _)| *k != "scope").collect();
    let mut url = app.authorize_url(client, &others);
    if let Some(s) = scope {
        url = url.replace("scope=openid+profile+email", &format!("scope={s}"));
    }
    let params = app.login(b, &url, "alice").await;
    app.exchange(client, secret, &params["code"]).await
}

async fn still_signed_in(app: &TestApp, b: &reqwest::Client, client: &str) -> bool {
    let resp = b
        .get(app.authorize_url(client, &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    redirect_params(&resp).contains_key("code")
}

#[tokio::test]
async fn an_administrator_password_reset_ends_every_session_and_grant() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let b = browser();
    let online = sign_in(&app, &b, "app", &secret, &[]).await;
    let offline = sign_in(&app, &browser(), "app", &secret, &[("scope", "openid offline_access")]).await;
    tessera::admin::users::set_password(&app.state.ctx(), &admin(), alice.id, "a brand new password")
        .await
        .unwrap();
    for tokens in [&online, &offline] {
        let (status, body) = refresh(&app, "app", Some(&secret), text(tokens, "refresh_token")).await;
        assert_eq!((status, text(&body, "error")), (400, "invalid_grant"));
        let info = app.introspect(("app", &secret), text(tokens, "access_token")).await;
        assert_eq!(info["active"], false, "access tokens die with their grant");
    }
    assert!(!still_signed_in(&app, &b, "app").await, "the session ended");
}

#[tokio::test]
async fn a_password_change_keeps_only_the_current_sessions_grants() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    // Elsewhere: an offline grant that outlives its session.
    let elsewhere = sign_in(&app, &browser(), "app", &secret, &[("scope", "openid offline_access")]).await;
    // Here: the account page's own session, with a grant of its own.
    let here = browser();
    let csrf = app.portal_login(&here, "alice", PASSWORD).await;
    let mine = sign_in_with_session(&app, &here, &secret).await;
    let resp = here
        .post(app.url("/account/password"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("current", PASSWORD),
            ("password", "a brand new password"),
            ("confirm", "a brand new password"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302, "{}", resp.text().await.unwrap());
    let (status, _) = refresh(&app, "app", Some(&secret), text(&elsewhere, "refresh_token")).await;
    assert_eq!(status, 400, "the offline grant of another session is revoked");
    let (status, _) = refresh(&app, "app", Some(&secret), text(&mine, "refresh_token")).await;
    assert_eq!(status, 200, "the current session's grant lives on");
}

/// A code flow from a browser that is already signed in (no login form).
async fn sign_in_with_session(app: &TestApp, b: &reqwest::Client, secret: &str) -> Value {
    let resp = b.get(app.authorize_url("app", &[])).send().await.unwrap();
    let params = redirect_params(&resp);
    app.exchange("app", secret, &params["code"]).await
}

#[tokio::test]
async fn a_refresh_token_dies_with_its_session_unless_offline() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let online = sign_in(&app, &browser(), "app", &secret, &[]).await;
    let offline = sign_in(&app, &browser(), "app", &secret, &[("scope", "openid offline_access")]).await;
    // Past the session's lifetime (12 h), within the refresh token's (30 days).
    app.clock.advance(13 * 3600);
    let (status, body) = refresh(&app, "app", Some(&secret), text(&online, "refresh_token")).await;
    assert_eq!((status, text(&body, "error")), (400, "invalid_grant"));
    let (status, _) = refresh(&app, "app", Some(&secret), text(&offline, "refresh_token")).await;
    assert_eq!(status, 200, "offline_access outlives the session");
}

#[tokio::test]
async fn a_grant_ends_at_its_absolute_lifetime_however_often_it_is_refreshed() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app
        .add_client_with("app", false, |c| c.grant_lifetime = Some(50 * 86_400))
        .await
        .unwrap();
    let tokens = sign_in(&app, &browser(), "app", &secret, &[("scope", "openid offline_access")]).await;
    let mut token = text(&tokens, "refresh_token").to_string();
    for _ in 0..2 {
        app.clock.advance(20 * 86_400);
        let (status, body) = refresh(&app, "app", Some(&secret), &token).await;
        assert_eq!(status, 200, "{body}");
        token = text(&body, "refresh_token").to_string();
    }
    app.clock.advance(11 * 86_400);
    let (status, body) = refresh(&app, "app", Some(&secret), &token).await;
    assert_eq!((status, text(&body, "error")), (400, "invalid_grant"), "51 days > 50");
}

#[tokio::test]
async fn the_server_wide_grant_lifetime_is_ninety_days() {
    assert_eq!(tessera::config::TokenLifetimes::default().grant, 90 * 86_400);
}

#[tokio::test]
async fn retries_within_the_grace_window_leave_one_live_refresh_token() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let tokens = sign_in(&app, &browser(), "app", &secret, &[]).await;
    let first = text(&tokens, "refresh_token").to_string();
    let mut successors = Vec::new();
    for _ in 0..5 {
        let (status, body) = refresh(&app, "app", Some(&secret), &first).await;
        assert_eq!(status, 200, "a retry within the window is answered");
        successors.push(text(&body, "refresh_token").to_string());
    }
    let live: Vec<bool> = {
        let mut out = Vec::new();
        for s in &successors {
            let info = app.introspect(("app", &secret), s).await;
            out.push(info["active"] == true);
        }
        out
    };
    assert_eq!(live, [false, false, false, false, true], "only the newest branch lives");
    // Whoever holds an earlier successor is caught, and the family ends.
    let (status, _) = refresh(&app, "app", Some(&secret), &successors[0]).await;
    assert_eq!(status, 400);
    let (status, _) = refresh(&app, "app", Some(&secret), &successors[4]).await;
    assert_eq!(status, 400, "reuse revoked the family");
}

#[tokio::test]
async fn a_public_clients_replayed_refresh_token_revokes_the_family_at_once() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    app.add_client("spa", true).await;
    let resp = app.public_tokens("spa", "alice").await;
    assert_eq!(resp.status(), 200);
    let tokens: Value = resp.json().await.unwrap();
    let first = text(&tokens, "refresh_token").to_string();
    let (status, body) = refresh(&app, "spa", None, &first).await;
    assert_eq!(status, 200);
    let next = text(&body, "refresh_token").to_string();
    let (status, body) = refresh(&app, "spa", None, &first).await;
    assert_eq!(
        (status, text(&body, "error")),
        (400, "invalid_grant"),
        "no grace for public clients"
    );
    let (status, _) = refresh(&app, "spa", None, &next).await;
    assert_eq!(status, 400, "the replay revoked the family");
}

#[tokio::test]
async fn leaving_an_allowed_group_revokes_the_clients_grants() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let uid = alice.id;
    app.state
        .db
        .write(move |c| db::users::add_to_group(c, uid, "staff"))
        .await
        .unwrap();
    let secret = app
        .add_client_with("wiki", false, |c| c.allowed_groups = vec!["staff".into()])
        .await
        .unwrap();
    let tokens = sign_in(&app, &browser(), "wiki", &secret, &[]).await;
    let gid = app
        .state
        .db
        .read(|c| db::groups::id_of(c, "staff"))
        .await
        .unwrap()
        .unwrap();
    tessera::admin::groups::set_member(&app.state.ctx(), &admin(), gid, "alice", false)
        .await
        .unwrap();
    let (status, _) = refresh(&app, "wiki", Some(&secret), text(&tokens, "refresh_token")).await;
    assert_eq!(status, 400, "no longer in an allowed group");
    let resp = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(text(&tokens, "access_token"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401, "the access token died with the grant");
}

#[tokio::test]
async fn a_refresh_checks_the_allowed_groups_and_a_client_change_revokes() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("wiki", false).await.unwrap();
    let tokens = sign_in(&app, &browser(), "wiki", &secret, &[]).await;
    app.state
        .db
        .write(|c| db::groups::create(c, "finance").map(|_| ()))
        .await
        .unwrap();
    let client = tessera::admin::clients::get(&app.state.ctx(), "wiki").await.unwrap();
    let mut spec = tessera::admin::clients::spec_of(&client);
    spec.allowed_groups = vec!["finance".into()];
    tessera::admin::clients::update(&app.state.ctx(), &app.state.clients, &admin(), "wiki", &spec)
        .await
        .unwrap();
    let (status, _) = refresh(&app, "wiki", Some(&secret), text(&tokens, "refresh_token")).await;
    assert_eq!(status, 400);
    let info = app.introspect(("wiki", &secret), text(&tokens, "access_token")).await;
    assert_eq!(info["active"], false);
}

#[tokio::test]
async fn client_credentials_grants_only_the_scopes_the_client_is_registered_for() {
    let app = spawn_app().await;
    let secret = app
        .add_client_with("job", false, |c| {
            c.grant_types = vec!["client_credentials".into()];
            c.client_scopes = vec!["reports:read".into()];
        })
        .await
        .unwrap();
    let ask = |scope: Option<&'static str>| {
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        form
    };
    let resp = app
        .token(Some(("job", &secret)), &ask(Some("payments:write orders:admin")))
        .await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "invalid_scope");
    let resp = app
        .token(Some(("job", &secret)), &ask(Some("reports:read payments:write")))
        .await;
    assert_eq!(resp.status(), 400, "one unregistered scope refuses the request");
    let resp = app.token(Some(("job", &secret)), &ask(None)).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["scope"], "reports:read", "no scope asked: the registered ones");
    let bare = app
        .add_client_with("bare", false, |c| c.grant_types = vec!["client_credentials".into()])
        .await
        .unwrap();
    let resp = app.token(Some(("bare", &bare)), &ask(Some("reports:read"))).await;
    assert_eq!(resp.status(), 400, "by default a client gets no scope for itself");
}

#[tokio::test]
async fn client_credentials_without_a_scope_leave_the_scope_member_out() {
    let app = spawn_app().await;
    let bare = app
        .add_client_with("bare", false, |c| c.grant_types = vec!["client_credentials".into()])
        .await
        .unwrap();
    let resp = app
        .token(Some(("bare", &bare)), &[("grant_type", "client_credentials")])
        .await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    // RFC 6749 §5.1: `scope` is OPTIONAL; an empty string is no scope at all.
    assert!(body.get("scope").is_none(), "no empty scope member: {body}");
    let (_, claims) = jwt_parts(text(&body, "access_token"));
    assert!(
        claims.get("scope").is_none(),
        "RFC 9068: no empty scope claim: {claims}"
    );
    let info = app.introspect(("bare", &bare), text(&body, "access_token")).await;
    assert_eq!(info["active"], true);
    assert!(info.get("scope").is_none(), "{info}");

    let job = app
        .add_client_with("job", false, |c| {
            c.grant_types = vec!["client_credentials".into()];
            c.client_scopes = vec!["reports:read".into()];
        })
        .await
        .unwrap();
    let resp = app
        .token(Some(("job", &job)), &[("grant_type", "client_credentials")])
        .await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["scope"], "reports:read", "a granted scope is still there");
    assert_eq!(jwt_parts(text(&body, "access_token")).1["scope"], "reports:read");
}
