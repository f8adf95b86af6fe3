//! Front-Channel Logout 1.0: hidden iframes on the signed-out page for the clients of
//! the ended session, and a CSP that frames exactly their origins, on that page only.

use scraper::{Html, Selector};

use crate::helpers::*;

const AFTER: &str = "http://localhost:8080/signed-out";
/// A URI with a query of its own, so `iss` and `sid` must follow with `&`.
const FRONT: &str = "https://rp.example/logout?from=tessera&x=<y>";

/// Two clients with front-channel URIs (one wanting iss+sid) and one without; alice
/// signs in to each with one browser, so one session holds all three grants.
async fn setup() -> (TestApp, reqwest::Client, String, String) {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app
        .add_client_with("app", false, |c| {
            c.post_logout_redirect_uris = vec![AFTER.into()];
            c.frontchannel_logout_uri = Some(FRONT.into());
            c.frontchannel_logout_session_required = true;
        })
        .await
        .unwrap();
    let other = app
        .add_client_with("other", false, |c| {
            c.frontchannel_logout_uri = Some("http://127.0.0.1:9999/fc".into());
        })
        .await
        .unwrap();
    let plain = app.add_client("plain", false).await.unwrap();
    // Registered but never used in this session: no frame either.
    app.add_client_with("unused", false, |c| {
        c.frontchannel_logout_uri = Some("https://unused.example/fc".into());
    })
    .await;
    let b = browser();
    let params = app.login(&b, &app.authorize_url("app", &[]), "alice").await;
    let tokens = app.exchange("app", &secret, &params["code"]).await;
    for (id, s) in [("other", &other), ("plain", &plain)] {
        let resp = b.get(app.authorize_url(id, &[])).send().await.unwrap();
        let code = redirect_params(&resp)["code"].clone();
        app.exchange(id, s, &code).await;
    }
    let hint = tokens["id_token"].as_str().unwrap().to_string();
    let (_, claims) = jwt_parts(&hint);
    let sid = claims["sid"].as_str().unwrap().to_string();
    (app, b, hint, sid)
}

fn frames(html: &str) -> Vec<String> {
    let doc = Html::parse_document(html);
    let sel = Selector::parse("iframe").unwrap();
    doc.select(&sel)
        .map(|f| f.value().attr("src").unwrap().to_string())
        .collect()
}

fn csp(resp: &reqwest::Response) -> String {
    resp.headers()["content-security-policy"].to_str().unwrap().to_string()
}

#[tokio::test]
async fn the_signed_out_page_frames_each_client_of_the_session_with_iss_and_sid() {
    let (app, b, hint, sid) = setup().await;
    // The default policy, as any other page has it, before the logout.
    let login_page = b
        .get(app.authorize_url("plain", &[("prompt", "login")]))
        .send()
        .await
        .unwrap();
    let default_csp = csp(&login_page);
    assert!(!default_csp.contains("frame-src"));

    let resp = b
        .get(format!("{}?id_token_hint={hint}", app.url("/logout")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let policy = csp(&resp);
    let html = resp.text().await.unwrap();
    let mut srcs = frames(&html);
    srcs.sort();
    let iss = url::form_urlencoded::byte_serialize(app.state.issuer.as_bytes()).collect::<String>();
    assert_eq!(
        srcs,
        vec![
            "http://127.0.0.1:9999/fc".to_string(),
            format!("https://rp.example/logout?from=tessera&x=%3Cy%3E&iss={iss}&sid={sid}"),
        ],
        "one frame per client of the session with a front-channel URI, iss and sid only where asked"
    );
    // Escaped for HTML: the `&` of the query is a character reference in the
    // attribute, `<` never raw.
    assert!(html.contains("from=tessera&#38;x=%3Cy%3E&#38;iss="), "{html}");
    assert!(!html.contains("<y>"));
    assert_eq!(
        policy,
        format!("{default_csp}; frame-src https://rp.example http://127.0.0.1:9999"),
        "frame-src lists exactly the frames' origins"
    );

    // Later pages have the default policy again.
    let after = b.get(app.authorize_url("plain", &[])).send().await.unwrap();
    assert_eq!(after.status(), 200, "signed out: the login page");
    assert_eq!(csp(&after), default_csp);
}

#[tokio::test]
async fn with_a_post_logout_redirect_the_frames_load_first_then_the_client_is_shown() {
    let (app, b, hint, _) = setup().await;
    let after = url::form_urlencoded::byte_serialize(AFTER.as_bytes()).collect::<String>();
    let resp = b
        .get(format!(
            "{}?id_token_hint={hint}&post_logout_redirect_uri={after}&state=bye",
            app.url("/logout")
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "a page that loads the frames, not a bare redirect");
    let refresh = resp.headers()["refresh"].to_str().unwrap().to_string();
    assert_eq!(refresh, format!("2; url={AFTER}?state=bye"));
    let html = resp.text().await.unwrap();
    assert_eq!(frames(&html).len(), 2);
    assert!(html.contains(&format!("href=\"{AFTER}?state=bye\"")), "{html}");
}

#[tokio::test]
async fn a_session_without_front_channel_clients_gets_no_frames_and_the_default_csp() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app
        .add_client_with("app", false, |c| c.post_logout_redirect_uris = vec![AFTER.into()])
        .await
        .unwrap();
    let b = browser();
    let params = app.login(&b, &app.authorize_url("app", &[]), "alice").await;
    let tokens = app.exchange("app", &secret, &params["code"]).await;
    let hint = tokens["id_token"].as_str().unwrap();
    let login_csp = csp(&b
        .get(app.authorize_url("app", &[("prompt", "login")]))
        .send()
        .await
        .unwrap());
    let resp = b
        .get(format!("{}?id_token_hint={hint}", app.url("/logout")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(csp(&resp), login_csp, "the default policy, unchanged");
    assert!(frames(&resp.text().await.unwrap()).is_empty());
    // And RP-initiated logout with a destination still redirects at once.
    let params = app.login(&b, &app.authorize_url("app", &[]), "alice").await;
    let tokens = app.exchange("app", &secret, &params["code"]).await;
    let hint = tokens["id_token"].as_str().unwrap();
    let after = url::form_urlencoded::byte_serialize(AFTER.as_bytes()).collect::<String>();
    let resp = b
        .get(format!(
            "{}?id_token_hint={hint}&post_logout_redirect_uri={after}",
            app.url("/logout")
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
}
