//! Authorization server metadata (RFC 8414) and what discovery advertises of the second
//! protocol wave: each feature listed exactly when it is on.

use serde_json::Value;

use crate::helpers::*;
use tessera::config::Registration;

async fn document(app: &TestApp, path: &str) -> Value {
    let resp = plain_client().get(app.url(path)).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{path}");
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    resp.json().await.unwrap()
}

#[tokio::test]
async fn rfc8414_metadata_is_the_openid_configuration_with_the_same_issuer() {
    let app = spawn_app().await;
    let oauth = document(&app, "/.well-known/oauth-authorization-server").await;
    let openid = document(&app, "/.well-known/openid-configuration").await;
    // RFC 8414 §3.3: the issuer is exactly the one the metadata was fetched for.
    assert_eq!(oauth["issuer"], app.address);
    assert_eq!(oauth, openid, "one document where the two overlap");
    for endpoint in ["pushed_authorization_request_endpoint", "registration_endpoint"] {
        assert!(
            oauth[endpoint].as_str().unwrap().starts_with(&app.address),
            "{endpoint}"
        );
    }
    assert_eq!(oauth["pushed_authorization_request_endpoint"], app.url("/par"));
    assert_eq!(oauth["registration_endpoint"], app.url("/register"));
    assert_eq!(oauth["request_parameter_supported"], true);
    assert_eq!(oauth["require_pushed_authorization_requests"], false);
    assert_eq!(oauth["client_id_metadata_document_supported"], false);
    assert_eq!(oauth["frontchannel_logout_supported"], true);
    for list in [
        "dpop_signing_alg_values_supported",
        "request_object_signing_alg_values_supported",
    ] {
        let algs: Vec<&str> = oauth[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(algs.contains(&"ES256") && algs.contains(&"RS256"), "{list}: {algs:?}");
        assert!(
            !algs.contains(&"none") && !algs.iter().any(|a| a.starts_with("HS")),
            "{list}"
        );
    }
}

#[tokio::test]
async fn discovery_follows_the_server_wide_switches() {
    let app = spawn_with(|s| {
        s.protocol.require_par = true;
        s.protocol.client_id_documents = true;
        s.protocol.registration = Registration::Off;
    })
    .await;
    let doc = document(&app, "/.well-known/oauth-authorization-server").await;
    assert_eq!(doc["require_pushed_authorization_requests"], true);
    assert_eq!(doc["client_id_metadata_document_supported"], true);
    assert!(
        doc.get("registration_endpoint").is_none(),
        "no endpoint when registration is off"
    );
}

#[tokio::test]
async fn request_uri_by_reference_is_not_advertised_and_par_still_works() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let doc = document(&app, "/.well-known/openid-configuration").await;
    // Discovery §3: a `request_uri` by reference is refused, so it is not supported;
    // PAR's own URNs are what `pushed_authorization_request_endpoint` stands for.
    assert_eq!(doc["request_uri_parameter_supported"], false);
    assert_eq!(doc["pushed_authorization_request_endpoint"], app.url("/par"));
    let by_reference = browser()
        .get(app.authorize_url("app", &[("request_uri", "https://rp.example/request.jwt")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&by_reference)["error"], "request_uri_not_supported");

    let pkce = Pkce::new();
    let form = [
        ("redirect_uri", REDIRECT),
        ("response_type", "code"),
        ("scope", "openid"),
        ("state", "st4te"),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    let resp = app.post_form("/par", Some(("app", &secret)), &form).await;
    assert_eq!(resp.status(), 201);
    let pushed: Value = resp.json().await.unwrap();
    let mut url = url::Url::parse(&app.url("/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", "app")
        .append_pair("request_uri", pushed["request_uri"].as_str().unwrap());
    let code = app.login(&browser(), url.as_str(), "alice").await["code"].clone();
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    assert_eq!(app.token(Some(("app", &secret)), &form).await.status(), 200);
}
