//! One registration checked: the snippet's keys, every URL in it against the live
//! discovery document and the registered URIs, and the client as stored.

use serde_json::{json, Value};

use super::expected::{Expected, Want};
use super::parse::{parse, Flat};
use crate::helpers::TestApp;

/// What a registration answered, read once for the checks.
struct Registered<'a> {
    disco: Value,
    issuer: String,
    discovery_url: String,
    secret: &'a str,
    client_id: &'a str,
    snippet: Flat,
    redirects: Vec<&'a str>,
    post_logout: Vec<&'a str>,
}

/// The strings of a JSON array.
fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect()
}

/// Checks a registration's snippet and client against the live discovery document.
pub async fn check(app: &TestApp, e: &Expected, registered: &Value) {
    let disco = app.discovery().await;
    let issuer = disco["issuer"].as_str().unwrap().to_string();
    let discovery_url = format!("{issuer}/.well-known/openid-configuration");
    let secret = registered["client_secret"]
        .as_str()
        .expect("a confidential client's secret");
    let client_id = registered["client"]["client_id"].as_str().unwrap();
    let snippet = parse(
        registered["format"].as_str().unwrap(),
        registered["snippet"].as_str().unwrap(),
    );
    let redirects = strings(&registered["redirect_uris"]);
    assert_eq!(redirects, e.redirect_uris, "{}: the redirect URIs registered", e.preset);
    let post_logout = strings(&registered["post_logout_redirect_uris"]);
    let r = Registered {
        disco,
        issuer,
        discovery_url,
        secret,
        client_id,
        snippet,
        redirects,
        post_logout,
    };
    check_keys(e, &r);
    check_urls(e, &r);
    check_stored(app, e, &r).await;
}

/// Each key the preset names has the value it should.
fn check_keys(e: &Expected, r: &Registered<'_>) {
    for (key, want) in e.keys {
        let got = r
            .snippet
            .get(*key)
            .unwrap_or_else(|| panic!("{}: no `{key}` in {:?}", e.preset, r.snippet));
        let expected = match want {
            Want::Endpoint(name) => r.disco[name].as_str().unwrap().to_string(),
            Want::Issuer => r.issuer.clone(),
            Want::Discovery => r.discovery_url.clone(),
            Want::Redirect => r.redirects[0].to_string(),
            Want::App => e.app_url.to_string(),
            Want::ClientId => r.client_id.to_string(),
            Want::Secret => r.secret.to_string(),
            Want::Is(v) => v.to_string(),
        };
        assert_eq!(got, &expected, "{}: `{key}`", e.preset);
    }
}

/// Every URL in the snippet is one of ours from discovery or one registered.
fn check_urls(e: &Expected, r: &Registered<'_>) {
    let issuer = r.issuer.as_str();
    let endpoints: Vec<&str> = [
        "authorization_endpoint",
        "token_endpoint",
        "userinfo_endpoint",
        "end_session_endpoint",
        "jwks_uri",
    ]
    .iter()
    .map(|k| r.disco[*k].as_str().unwrap())
    .collect();
    for (key, value) in &r.snippet {
        if !(value.starts_with("http://") || value.starts_with("https://") || value.starts_with("app.")) {
            continue;
        }
        let (base, query) = value.split_once('?').unwrap_or((value, ""));
        if base.starts_with(issuer) {
            assert!(
                base == issuer || base == r.discovery_url || endpoints.contains(&base),
                "{}: `{key}` = {value} is none of the discovery document's URLs",
                e.preset
            );
        } else {
            assert!(
                base == e.app_url || r.redirects.contains(&base) || r.post_logout.contains(&base),
                "{}: `{key}` = {value} is not registered",
                e.preset
            );
        }
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            if k == "post_logout_redirect_uri" {
                assert!(
                    r.post_logout.contains(&v.as_ref()),
                    "{}: {v} is a registered post-logout URI",
                    e.preset
                );
            }
        }
    }
}

/// The client as stored.
async fn check_stored(app: &TestApp, e: &Expected, r: &Registered<'_>) {
    let stored = app.client(r.client_id).await.expect("the client is stored");
    assert_eq!(stored.redirect_uris, e.redirect_uris, "{}", e.preset);
    assert_eq!(stored.auth_method, e.auth_method, "{}", e.preset);
    assert_eq!(stored.grant_types, e.grant_types, "{}", e.preset);
    let claims: Vec<&str> = stored.claim_rules.iter().map(|r| r.claim.as_str()).collect();
    assert_eq!(claims, e.claims, "{}: claim rules", e.preset);
    assert!(r.disco["token_endpoint_auth_methods_supported"]
        .as_array()
        .unwrap()
        .contains(&json!(e.auth_method)));
}
