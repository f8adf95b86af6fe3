//! Languages: pages in the application's `ui_locales` (OpenID Connect Core §3.1.2.1),
//! else the browser's `Accept-Language`, else `--default-locale`; the login page's
//! picker keeps the parked sign-in and outranks both; mail speaks the language of the
//! request that caused it; discovery lists `ui_locales_supported`.

use crate::helpers::*;
use scraper::{Html, Selector};
use tessera::i18n::Locale;

/// The `<html lang>` and the `<h1>` of a page.
fn lang_and_heading(page: &str) -> (String, String) {
    let doc = Html::parse_document(page);
    let html = doc.select(&Selector::parse("html").unwrap()).next().unwrap();
    let h1 = doc.select(&Selector::parse("h1").unwrap()).next().unwrap();
    (
        html.value().attr("lang").unwrap_or_default().to_string(),
        h1.text().collect::<String>().trim().to_string(),
    )
}

async fn login_page(app: &TestApp, b: &reqwest::Client, extra: &[(&str, &str)], accept: Option<&str>) -> String {
    let mut req = b.get(app.authorize_url("rp", extra));
    if let Some(v) = accept {
        req = req.header("accept-language", v);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

fn expect(page: &str, locale: Locale) {
    let (lang, heading) = lang_and_heading(page);
    assert_eq!(lang, locale.tag(), "{page}");
    assert_eq!(heading, locale.messages().signin_title, "{page}");
}

#[tokio::test]
async fn discovery_lists_every_language() {
    let app = spawn_app().await;
    let doc: serde_json::Value = reqwest::get(app.url("/.well-known/openid-configuration"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        doc["ui_locales_supported"],
        serde_json::json!(["en", "de", "fr", "es", "it", "nl", "pt"])
    );
}

#[tokio::test]
async fn ui_locales_beats_accept_language_which_beats_the_default() {
    let app = spawn_with(|s| s.default_locale = Locale::It).await;
    app.add_client("rp", false).await;
    let b = browser();
    expect(&login_page(&app, &b, &[], None).await, Locale::It);
    expect(
        &login_page(&app, &b, &[], Some("de-CH, de;q=0.9, en;q=0.5")).await,
        Locale::De,
    );
    expect(
        &login_page(&app, &b, &[("ui_locales", "fr-CA")], Some("de")).await,
        Locale::Fr,
    );
    // Unsupported tags are passed over, in order.
    expect(
        &login_page(&app, &b, &[("ui_locales", "sv nl")], Some("de")).await,
        Locale::Nl,
    );
    expect(
        &login_page(&app, &b, &[("ui_locales", "sv fi")], Some("sv, pt;q=0.4")).await,
        Locale::Pt,
    );
    expect(
        &login_page(&app, &b, &[("ui_locales", "sv")], Some("fi")).await,
        Locale::It,
    );
}

#[tokio::test]
async fn the_sign_in_keeps_the_applications_language_through_its_steps() {
    let app = spawn_app().await;
    app.add_client_with("rp", false, |c| c.consent_required = true).await;
    app.add_user("ada").await;
    let b = browser();
    let page = login_page(&app, &b, &[("ui_locales", "es")], None).await;
    expect(&page, Locale::Es);
    // The form post carries no ui_locales: the parked request does.
    let resp = app.submit_login(&b, form_fields(&page), "ada", "wrong password").await;
    assert_eq!(resp.status(), 401);
    let page = resp.text().await.unwrap();
    assert_eq!(
        text_of(&page, "login-error").unwrap(),
        Locale::Es.messages().signin_invalid
    );
    let resp = app.submit_login(&b, form_fields(&page), "ada", PASSWORD).await;
    assert_eq!(resp.status(), 200, "the consent page");
    let (lang, heading) = lang_and_heading(&resp.text().await.unwrap());
    assert_eq!(
        (lang.as_str(), heading.as_str()),
        ("es", Locale::Es.messages().consent_heading)
    );
}

#[tokio::test]
async fn the_picker_keeps_the_parked_request_and_outranks_the_application() {
    let app = spawn_app().await;
    app.add_client("rp", false).await;
    app.add_user("ada").await;
    let b = browser();
    let page = login_page(&app, &b, &[("ui_locales", "fr")], Some("de")).await;
    expect(&page, Locale::Fr);
    let mut fields = form_fields(&page);
    let request_id = fields["request_id"].clone();
    fields.insert("lang".into(), "nl".into());
    let picked = b.post(app.url("/login/language")).form(&fields).send().await.unwrap();
    assert_eq!(picked.status(), 200);
    let cookie = picked
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("tessera_lang="))
        .expect("the pick is remembered")
        .to_string();
    assert!(
        cookie.contains("tessera_lang=nl") && cookie.contains("HttpOnly"),
        "{cookie}"
    );
    let page = picked.text().await.unwrap();
    expect(&page, Locale::Nl);
    let doc = Html::parse_document(&page);
    let current = doc
        .select(&Selector::parse(".languages [aria-current]").unwrap())
        .next()
        .and_then(|e| e.value().attr("value").map(str::to_string));
    assert_eq!(current.as_deref(), Some("nl"));
    // The same parked sign-in goes on to the application.
    let fields = form_fields(&page);
    assert_eq!(fields["request_id"], request_id);
    let resp = app.submit_login(&b, fields, "ada", PASSWORD).await;
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    assert!(redirect_params(&resp).contains_key("code"));
    // The next sign-in in this browser speaks the pick, whatever the application asks.
    expect(
        &login_page(&app, &b, &[("ui_locales", "fr"), ("prompt", "login")], Some("de")).await,
        Locale::Nl,
    );
}

#[tokio::test]
async fn the_picker_refuses_an_unknown_language_and_a_forged_request() {
    let app = spawn_app().await;
    app.add_client("rp", false).await;
    let b = browser();
    let page = login_page(&app, &b, &[], None).await;
    let mut fields = form_fields(&page);
    fields.insert("lang".into(), "tlh".into());
    let resp = b.post(app.url("/login/language")).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    fields.insert("lang".into(), "de".into());
    fields.insert("csrf".into(), "forged".into());
    let resp = b.post(app.url("/login/language")).form(&fields).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    assert!(!resp.headers().contains_key("set-cookie"), "nothing is remembered");
}

#[tokio::test]
async fn a_mail_speaks_the_language_of_the_request_that_caused_it() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let resp = plain_client()
        .post(app.url("/password/forgot"))
        .header("accept-language", "de")
        .form(&[("who", "ada")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (lang, _) = lang_and_heading(&resp.text().await.unwrap());
    assert_eq!(lang, "de");
    let mail = sink.nth("ada@example.com", 1).await;
    assert!(!mail.subject().contains("Reset your password"), "{}", mail.subject());
    assert!(
        mail.part("text/html").contains("<html lang=\"de\">"),
        "{}",
        mail.part("text/html")
    );
    assert!(!mail.text().contains("Hello ada"), "{}", mail.text());
}
