//! WebFinger issuer discovery (RFC 7033, OpenID Connect Discovery 1.0 §2).

use serde_json::{json, Value};

use crate::helpers::*;

const REL: &str = "http://openid.net/specs/connect/1.0/issuer";

async fn finger(app: &TestApp, query: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let resp = plain_client()
        .get(format!("{}?{query}", app.url("/.well-known/webfinger")))
        .send()
        .await
        .unwrap();
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    (status, headers, resp.json().await.unwrap())
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn an_account_address_names_this_issuer_as_a_jrd_for_any_origin() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let (status, headers, body) = finger(
        &app,
        &format!("resource={}&rel={}", enc("acct:alice@example.com"), enc(REL)),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/jrd+json");
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert_eq!(
        body,
        json!({"subject": "acct:alice@example.com", "links": [{"rel": REL, "href": *app.state.issuer}]})
    );
}

#[tokio::test]
async fn an_unknown_address_gets_the_same_answer_as_a_known_one() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let q = |r: &str| format!("resource={}&rel={}", enc(r), enc(REL));
    let (s1, h1, known) = finger(&app, &q("acct:alice@example.com")).await;
    let (s2, h2, unknown) = finger(&app, &q("acct:nobody@example.com")).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(h1["content-type"], h2["content-type"]);
    assert_eq!(known["links"], unknown["links"], "nothing tells the two apart");
    assert_eq!(unknown["subject"], "acct:nobody@example.com");
}

#[tokio::test]
async fn the_issuer_url_itself_is_described_and_other_urls_are_not_found() {
    let app = spawn_app().await;
    let issuer = app.state.issuer.to_string();
    let (status, _, body) = finger(&app, &format!("resource={}", enc(&issuer))).await;
    assert_eq!(status, 200);
    assert_eq!(body["links"][0]["href"], issuer.as_str());
    let (status, headers, _) = finger(&app, &format!("resource={}", enc("https://elsewhere.example/"))).await;
    assert_eq!(status, 404);
    assert_eq!(headers["access-control-allow-origin"], "*");
}

#[tokio::test]
async fn a_missing_repeated_or_malformed_resource_is_a_bad_request() {
    let app = spawn_app().await;
    for query in [
        String::new(),
        format!("rel={}", enc(REL)),
        "resource=".into(),
        format!("resource={}", enc("acct:alice")),
        format!("resource={}", enc("acct:@example.com")),
        format!("resource={}", enc("not a uri")),
        format!(
            "resource={}&resource={}",
            enc("acct:a@b.example"),
            enc("acct:c@d.example")
        ),
    ] {
        let (status, headers, body) = finger(&app, &query).await;
        assert_eq!(status, 400, "{query}");
        assert_eq!(body["error"], "invalid_request", "{query}");
        assert_eq!(headers["access-control-allow-origin"], "*");
    }
}

#[tokio::test]
async fn rel_filters_the_links_and_an_unknown_rel_leaves_none() {
    let app = spawn_app().await;
    let r = enc("acct:alice@example.com");
    let (_, _, all) = finger(&app, &format!("resource={r}")).await;
    assert_eq!(all["links"].as_array().unwrap().len(), 1, "no rel: every link");
    let (status, _, none) = finger(
        &app,
        &format!("resource={r}&rel={}", enc("http://webfinger.net/rel/avatar")),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(none["links"], json!([]));
    let (_, _, both) = finger(
        &app,
        &format!(
            "resource={r}&rel={}&rel={}",
            enc("http://webfinger.net/rel/avatar"),
            enc(REL)
        ),
    )
    .await;
    assert_eq!(both["links"][0]["rel"], REL);
}
