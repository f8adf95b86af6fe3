//! One registration checked: the snippet's keys, every URL in it against the live
//! discovery document and the registered URIs, and the client as stored.

use serde_json::{json, Value};

use super::expected::{Expected, Want};
use super::parse::parse;
use crate::helpers::{plain_client, TestApp};

/// Checks a registration's snippet and client against the live discovery document.
pub async fn check(app: &TestApp, e: &Expected, registered: &Value) {
    let disco: Value = plain_client()
        .get(app.url("/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let issuer = disco["issuer"].as_str().unwrap();
    let discovery_url = format!("{issuer}/.well-known/openid-configuration");
    let secret = registered["client_secret"]
        .as_str()
        .expect("a confidential client's secret");
    let client_id = registered["client"]["client_id"].as_str().unwrap();
    let snippet = parse(
        registered["format"].as_str().unwrap(),
        registered["snippet"].as_str().unwrap(),
    );
    let redirects: Vec<&str> = registered["redirect_uris"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(redirects, e.redirect_uris, "{}: the redirect URIs registered", e.preset);
    let post_logout: Vec<&str> = registered["post_logout_redirect_uris"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for (key, want) in e.keys {
        let got = snippet
            .get(*key)
            .unwrap_or_else(|| panic!("{}: no `{key}` in {snippet:?}", e.preset));
        let expected = match want {
            Want::Endpoint(name) => disco[name].as_str().unwrap().to_string(),
            Want::Issuer => issuer.to_string(),
            Want::Discovery => discovery_url.clone(),
            Want::Redirect => redirects[0].to_string(),
            Want::App => e.app_url.to_string(),
            Want::ClientId => client_id.to_string(),
            Want::Secret => secret.to_string(),
            Want::Is(v) => v.to_string(),
        };
        assert_eq!(got, &expected, "{}: `{key}`", e.preset);
    }
    // Every URL in the snippet is one of ours from discovery or one registered.
    let endpoints: Vec<&str> = [
        "authorization_endpoint",
        "token_endpoint",
        "userinfo_endpoint",
        "end_session_endpoint",
        "jwks_uri",
    ]
    .iter()
    .map(|k| disco[*k].as_str().unwrap())
    .collect();
    for (key, value) in &snippet {
        if !(value.starts_with("http://") || value.starts_with("https://") || value.starts_with("app.")) {
            continue;
        }
        let (base, query) = value.split_once('?').unwrap_or((value, ""));
        if base.starts_with(issuer) {
            assert!(
                base == issuer || base == discovery_url || endpoints.contains(&base),
                "{}: `{key}` = {value} is none of the discovery document's URLs",
                e.preset
            );
        } else {
            assert!(
                base == e.app_url || redirects.contains(&base) || post_logout.contains(&base),
                "{}: `{key}` = {value} is not registered",
                e.preset
            );
        }
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            if k == "post_logout_redirect_uri" {
                assert!(
                    post_logout.contains(&v.as_ref()),
                    "{}: {v} is a registered post-logout URI",
                    e.preset
                );
            }
        }
    }
    // The client as stored.
    let stored = app.state.db.read({
        let id = client_id.to_string();
        move |c| tessera::db::clients::find(c, &id)
    });
    let stored = stored.await.unwrap().expect("the client is stored");
    assert_eq!(stored.redirect_uris, e.redirect_uris, "{}", e.preset);
    assert_eq!(stored.auth_method, e.auth_method, "{}", e.preset);
    assert_eq!(stored.grant_types, e.grant_types, "{}", e.preset);
    let claims: Vec<&str> = stored.claim_rules.iter().map(|r| r.claim.as_str()).collect();
    assert_eq!(claims, e.claims, "{}: claim rules", e.preset);
    assert!(disco["token_endpoint_auth_methods_supported"]
        .as_array()
        .unwrap()
        .contains(&json!(e.auth_method)));
}
