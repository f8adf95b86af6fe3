//! Deleting one's own account from the account page: at once (`--account-deletion
//! self`: sessions, grants and refresh tokens end, clients hear of it by back-channel
//! logout, the audit keeps a pseudonym), or by an administrator's approval of a
//! request (`approval`), who may also reject it; and the refusals.

use serde_json::Value;
use tessera::config::{AccountDeletion, Settings};

use crate::helpers::*;
use crate::invite::{admin_token, api};
use crate::logout::{next_logout_token, receiver};

struct Setup {
    app: TestApp,
    secret: String,
    bodies: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// An app (adjusted) with a client that registered a back-channel logout endpoint,
/// and the user ada.
async fn setup(adjust: impl FnOnce(&mut Settings)) -> Setup {
    let (uri, bodies) = receiver(200).await;
    let app = spawn_with(adjust).await;
    app.add_user("ada").await;
    let secret = app
        .add_client_with("app", false, |c| c.backchannel_logout_uri = Some(uri))
        .await
        .unwrap();
    Setup { app, secret, bodies }
}

/// Signs ada in to the client with a browser: the browser and the token response.
async fn signed_in_to_the_client(s: &Setup) -> (reqwest::Client, Value) {
    let b = browser();
    let params = s.app.login(&b, &s.app.authorize_url("app", &[]), "ada").await;
    (b, s.app.exchange("app", &s.secret, &params["code"]).await)
}

async fn still_signed_in(app: &TestApp, b: &reqwest::Client) -> bool {
    let resp = b
        .get(app.authorize_url("app", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    redirect_params(&resp).contains_key("code")
}

async fn account_page(app: &TestApp, b: &reqwest::Client) -> String {
    b.get(app.url("/account")).send().await.unwrap().text().await.unwrap()
}

async fn delete(app: &TestApp, b: &reqwest::Client, form: &[(&str, &str)]) -> reqwest::Response {
    b.post(app.url("/account/delete")).form(form).send().await.unwrap()
}

async fn exists(app: &TestApp, username: &str) -> bool {
    app.user(username).await.is_some()
}

async fn refresh(s: &Setup, tokens: &Value) -> reqwest::Response {
    let r = tokens["refresh_token"].as_str().expect("a refresh token");
    s.app.refresh(("app", &s.secret), r, &[]).await
}

#[tokio::test]
async fn deleting_ones_account_ends_every_session_and_grant_and_tells_the_clients() {
    let mut s = setup(|_| {}).await;
    let (client_browser, tokens) = signed_in_to_the_client(&s).await;
    let (_, id_token) = jwt_parts(tokens["id_token"].as_str().unwrap());
    let b = browser();
    let csrf = s.app.portal_login(&b, "ada", PASSWORD).await;
    assert!(account_page(&s.app, &b).await.contains("Delete my account"));

    let resp = delete(&s.app, &b, &[("csrf", csrf.as_str()), ("password", PASSWORD)]).await;
    assert_eq!(resp.status(), 200);
    let cleared = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|c| c.starts_with("tessera_session=;") && c.contains("Max-Age=0"));
    assert!(cleared, "the session cookie is cleared");
    assert!(resp.text().await.unwrap().contains("Your account is deleted"));

    // The client is told (back-channel logout) about the session it knew.
    let logout = next_logout_token(&mut s.bodies, 10).await;
    let (_, claims) = jwt_parts(&logout);
    assert_eq!(claims["sub"], id_token["sub"]);
    assert_eq!(claims["aud"], "app");

    assert!(!exists(&s.app, "ada").await);
    assert!(
        !still_signed_in(&s.app, &client_browser).await,
        "the client's SSO session ended"
    );
    let refreshed = refresh(&s, &tokens).await;
    assert_eq!(refreshed.status(), 400, "refresh tokens stop working");
    assert_eq!(refreshed.json::<Value>().await.unwrap()["error"], "invalid_grant");
    let at = tokens["access_token"].as_str().unwrap();
    assert_eq!(s.app.introspect(("app", &s.secret), at).await["active"], false);
    assert!(
        !account_page(&s.app, &b).await.contains("Signed in as"),
        "the account page asks for a sign-in again"
    );

    // The deletion is audited under a pseudonym; the earlier entries stay as they were.
    let pseudonym = s.app.state.log_key.pseudonym("ada");
    let audit = s.app.audit().await;
    let (_, actor, target) = audit.iter().rev().find(|e| e.0 == "account.deleted").unwrap();
    assert_eq!(actor.as_deref(), Some(pseudonym.as_str()));
    assert_eq!(target.as_deref(), Some(pseudonym.as_str()));
    assert!(!pseudonym.contains("ada"));
    assert!(
        audit
            .iter()
            .any(|(e, a, _)| e != "account.deleted" && a.as_deref() == Some("ada")),
        "earlier entries are kept: {audit:?}"
    );
}

#[tokio::test]
async fn a_wrong_password_or_a_missing_csrf_token_deletes_nothing() {
    let s = setup(|_| {}).await;
    let (client_browser, tokens) = signed_in_to_the_client(&s).await;
    let b = browser();
    let csrf = s.app.portal_login(&b, "ada", PASSWORD).await;
    let wrong = delete(&s.app, &b, &[("csrf", csrf.as_str()), ("password", "not my password")]).await;
    assert_eq!(wrong.status(), 400);
    assert!(text_of(&wrong.text().await.unwrap(), "delete-error")
        .unwrap()
        .contains("not your current password"));
    for form in [
        vec![("password", PASSWORD)],
        vec![("csrf", "guess"), ("password", PASSWORD)],
    ] {
        assert_eq!(delete(&s.app, &b, &form).await.status(), 403);
    }
    // From another browser that is not signed in: nothing to delete.
    let stranger = delete(&s.app, &browser(), &[("csrf", csrf.as_str()), ("password", PASSWORD)]).await;
    assert_eq!(stranger.status(), 401);

    assert!(exists(&s.app, "ada").await);
    assert!(account_page(&s.app, &b).await.contains("Signed in as"));
    assert!(still_signed_in(&s.app, &client_browser).await);
    assert_eq!(refresh(&s, &tokens).await.status(), 200);
    assert!(!s.app.audit().await.iter().any(|e| e.0 == "account.deleted"));
}

#[tokio::test]
async fn the_last_administrator_cannot_delete_themselves() {
    for mode in [AccountDeletion::SelfService, AccountDeletion::Approval] {
        let app = spawn_with(|st| st.account_deletion = mode).await;
        let boss = app.add_user("boss").await;
        app.make_admin(boss.id).await;
        let b = browser();
        let csrf = app.portal_login(&b, "boss", PASSWORD).await;
        let resp = delete(&app, &b, &[("csrf", csrf.as_str()), ("password", PASSWORD)]).await;
        assert_eq!(resp.status(), 409, "{mode:?}");
        assert!(text_of(&resp.text().await.unwrap(), "delete-error")
            .unwrap()
            .contains("last active administrator"));
        assert!(exists(&app, "boss").await);
        assert!(account_page(&app, &b).await.contains("Signed in as"), "still signed in");
    }
}

async fn user_json(app: &TestApp, token: &str, id: i64) -> Value {
    let (status, body) = api(app, token, reqwest::Method::GET, &format!("/users/{id}"), None).await;
    assert_eq!(status, 200);
    body
}

#[tokio::test]
async fn with_approval_a_request_waits_until_an_administrator_approves_it() {
    let mut s = setup(|st| st.account_deletion = AccountDeletion::Approval).await;
    let token = admin_token(&s.app).await;
    let (client_browser, tokens) = signed_in_to_the_client(&s).await;
    let b = browser();
    let csrf = s.app.portal_login(&b, "ada", PASSWORD).await;
    let ada = s.app.user("ada").await.unwrap();
    assert!(account_page(&s.app, &b).await.contains("Ask to delete my account"));
    assert_eq!(
        user_json(&s.app, &token, ada.id).await["deletion_requested_at"],
        Value::Null
    );

    let wrong = delete(&s.app, &b, &[("csrf", csrf.as_str()), ("password", "nope nope")]).await;
    assert_eq!(wrong.status(), 400, "a request needs the password too");
    let asked = delete(&s.app, &b, &[("csrf", csrf.as_str()), ("password", PASSWORD)]).await;
    assert_eq!(asked.status(), 302);
    assert_eq!(location(&asked), "/account?done=deletion-requested");
    let page = account_page(&s.app, &b).await;
    assert!(page.contains("Signed in as"), "nothing ends before the approval");
    assert!(text_of(&page, "deletion-requested").is_some());
    assert!(still_signed_in(&s.app, &client_browser).await);
    let requested = user_json(&s.app, &token, ada.id).await["deletion_requested_at"].clone();
    assert!(requested.is_i64(), "{requested}");
    assert!(s
        .app
        .audit()
        .await
        .iter()
        .any(|(e, a, _)| e == "account.deletion_requested" && a.as_deref() == Some("ada")));

    let approve = format!("/users/{}/deletion/approve", ada.id);
    let (status, _) = api(&s.app, &token, reqwest::Method::POST, &approve, None).await;
    assert_eq!(status, 204);
    assert!(!exists(&s.app, "ada").await);
    let (_, claims) = jwt_parts(&next_logout_token(&mut s.bodies, 10).await);
    assert_eq!(claims["aud"], "app");
    assert!(!still_signed_in(&s.app, &client_browser).await);
    assert_eq!(refresh(&s, &tokens).await.status(), 400);
    assert!(!account_page(&s.app, &b).await.contains("Signed in as"));
    let pseudonym = s.app.state.log_key.pseudonym("ada");
    assert!(s.app.audit().await.iter().any(|(e, a, t)| e == "account.deleted"
        && a.as_deref() == Some("client:ops")
        && t.as_deref() == Some(pseudonym.as_str())));
    let (status, _) = api(&s.app, &token, reqwest::Method::POST, &approve, None).await;
    assert_eq!(status, 404, "the account is gone");
}

#[tokio::test]
async fn with_approval_a_rejected_or_withdrawn_request_keeps_the_account() {
    let s = setup(|st| st.account_deletion = AccountDeletion::Approval).await;
    let token = admin_token(&s.app).await;
    let b = browser();
    let csrf = s.app.portal_login(&b, "ada", PASSWORD).await;
    let ada = s.app.user("ada").await.unwrap();
    let (approve, reject) = (
        format!("/users/{}/deletion/approve", ada.id),
        format!("/users/{}/deletion", ada.id),
    );
    // Nothing to approve or reject before a request.
    assert_eq!(api(&s.app, &token, reqwest::Method::POST, &approve, None).await.0, 404);
    assert_eq!(api(&s.app, &token, reqwest::Method::DELETE, &reject, None).await.0, 404);
    assert_eq!(
        api(&s.app, &token, reqwest::Method::DELETE, "/users/999/deletion", None)
            .await
            .0,
        404
    );

    delete(&s.app, &b, &[("csrf", csrf.as_str()), ("password", PASSWORD)]).await;
    assert_eq!(api(&s.app, &token, reqwest::Method::DELETE, &reject, None).await.0, 204);
    assert!(exists(&s.app, "ada").await);
    assert_eq!(
        user_json(&s.app, &token, ada.id).await["deletion_requested_at"],
        Value::Null
    );
    assert!(text_of(&account_page(&s.app, &b).await, "deletion-requested").is_none());
    assert!(s
        .app
        .audit()
        .await
        .iter()
        .any(|(e, a, t)| e == "admin.deletion_rejected"
            && a.as_deref() == Some("client:ops")
            && t.as_deref() == Some("ada")));
    assert_eq!(api(&s.app, &token, reqwest::Method::POST, &approve, None).await.0, 404);

    // Asked again, then withdrawn by ada herself.
    delete(&s.app, &b, &[("csrf", csrf.as_str()), ("password", PASSWORD)]).await;
    assert!(user_json(&s.app, &token, ada.id).await["deletion_requested_at"].is_i64());
    let withdrawn = delete(&s.app, &b, &[("csrf", csrf.as_str()), ("action", "withdraw")]).await;
    assert_eq!(withdrawn.status(), 302);
    assert_eq!(
        user_json(&s.app, &token, ada.id).await["deletion_requested_at"],
        Value::Null
    );
    assert!(exists(&s.app, "ada").await);
    assert!(s.app.audit().await.iter().any(|e| e.0 == "account.deletion_withdrawn"));
    assert_eq!(api(&s.app, &token, reqwest::Method::POST, &approve, None).await.0, 404);
}

#[tokio::test]
async fn administrators_see_requests_on_the_user_pages_and_approve_them_there() {
    let s = setup(|st| st.account_deletion = AccountDeletion::Approval).await;
    let boss = s.app.add_user("boss").await;
    s.app.make_admin(boss.id).await;
    let b = browser();
    let csrf = s.app.portal_login(&b, "ada", PASSWORD).await;
    delete(&s.app, &b, &[("csrf", csrf.as_str()), ("password", PASSWORD)]).await;
    let ada = s.app.user("ada").await.unwrap();

    let admin = browser();
    let admin_csrf = s.app.portal_login(&admin, "boss", PASSWORD).await;
    let list = admin
        .get(s.app.url("/admin/users"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text_of(&list, "users").unwrap().contains("deletion requested"));
    let page = admin
        .get(s.app.url(&format!("/admin/users/{}", ada.id)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text_of(&page, "deletion-request").unwrap().contains("asked on"));
    let action = s.app.url(&format!("/admin/users/{}/deletion-approve", ada.id));
    assert_eq!(
        admin
            .post(&action)
            .form(&[("csrf", "guess")])
            .send()
            .await
            .unwrap()
            .status(),
        403
    );
    assert!(exists(&s.app, "ada").await);
    let done = admin
        .post(&action)
        .form(&[("csrf", admin_csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 302);
    assert_eq!(location(&done), "/admin/users?done=deleted");
    assert!(!exists(&s.app, "ada").await);
    assert!(!account_page(&s.app, &b).await.contains("Signed in as"));
}
