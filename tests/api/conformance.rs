//! One test per module of the OpenID Foundation's Basic OP and Config OP conformance
//! plans (oidcc-basic-certification-test-plan, oidcc-config-certification-test-plan),
//! each asserting what that module checks, driven as the suite drives a provider.

use std::collections::HashMap;

use serde_json::Value;

use crate::helpers::*;

struct Rp {
    app: TestApp,
    secret: String,
    browser: reqwest::Client,
}

async fn rp() -> Rp {
    let app = spawn_app().await;
    let user = app.add_user("alice").await;
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| {
            let claims = serde_json::json!({
                "given_name": "Alice", "family_name": "Liddell", "phone_number": "+44 20 7946 0000",
                "address": {"formatted": "1 High St, Oxford", "country": "GB"},
            });
            tessera::db::users::set_claims(c, user.id, claims.as_object().unwrap(), now)
        })
        .await
        .unwrap();
    let secret = app
        .add_client_with("conformance", false, |c| {
            c.redirect_uris.push("http://localhost:8080/cb?foo=bar".into());
        })
        .await
        .unwrap();
    Rp {
        app,
        secret,
        browser: browser(),
    }
}

impl Rp {
    /// The browser's answer to the authorization URL for `scope` and `extra`.
    async fn open(&self, scope: &str, extra: &[(&str, &str)]) -> reqwest::Response {
        self.browser.get(self.url(scope, extra)).send().await.unwrap()
    }

    fn url(&self, scope: &str, extra: &[(&str, &str)]) -> String {
        self.app.authorize_url("conformance", extra).replace(
            "scope=openid+profile+email",
            &format!("scope={}", scope.replace(' ', "+")),
        )
    }

    /// Authorizes (signing in when the form appears) and returns the redirect's query.
    async fn authorize(&self, url: &str) -> HashMap<String, String> {
        let mut resp = self.browser.get(url).send().await.unwrap();
        if resp.status() == 200 {
            let fields = form_fields(&resp.text().await.unwrap());
            resp = self.app.submit_login(&self.browser, fields, "alice", PASSWORD).await;
        }
        if resp.status() == 200 {
            let mut fields = form_fields(&resp.text().await.unwrap());
            assert!(fields.contains_key("csrf"), "expected the consent page");
            fields.insert("decision".into(), "allow".into());
            resp = self
                .browser
                .post(self.app.url("/consent"))
                .form(&fields)
                .send()
                .await
                .unwrap();
        }
        redirect_params(&resp)
    }

    async fn exchange(&self, code: &str, redirect: &str) -> Value {
        let resp = self
            .app
            .token(
                Some(("conformance", &self.secret)),
                &[
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", redirect),
                ],
            )
            .await;
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }

    async fn flow(&self, scope: &str, extra: &[(&str, &str)]) -> (Value, Value) {
        let params = self.authorize(&self.url(scope, extra)).await;
        let tokens = self.exchange(&params["code"], REDIRECT).await;
        let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
        (tokens, id)
    }

    async fn userinfo(&self, tokens: &Value) -> Value {
        let at = tokens["access_token"].as_str().unwrap();
        let resp = plain_client()
            .get(self.app.url("/userinfo"))
            .bearer_auth(at)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }

    async fn shows_login_form(&self, url: &str) -> bool {
        self.browser.get(url).send().await.unwrap().status() == 200
    }
}

#[tokio::test]
async fn oidcc_server() {
    let rp = rp().await;
    let (tokens, id) = rp.flow("openid", &[]).await;
    assert_eq!(id["iss"], rp.app.address);
    assert_eq!(id["aud"], "conformance");
    assert!(id["exp"].as_i64().unwrap() > id["iat"].as_i64().unwrap());
    assert_eq!(rp.userinfo(&tokens).await["sub"], id["sub"]);
}

#[tokio::test]
async fn oidcc_response_type_missing() {
    let rp = rp().await;
    let resp = rp
        .browser
        .get(rp.url("openid", &[]).replace("response_type=code&", ""))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "invalid_request");
}

#[tokio::test]
async fn oidcc_userinfo_get_post_header_and_post_body() {
    let rp = rp().await;
    let (tokens, id) = rp.flow("openid", &[]).await;
    let at = tokens["access_token"].as_str().unwrap();
    let get = rp.userinfo(&tokens).await;
    let header: Value = plain_client()
        .post(rp.app.url("/userinfo"))
        .bearer_auth(at)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let body: Value = plain_client()
        .post(rp.app.url("/userinfo"))
        .form(&[("access_token", at)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for info in [get, header, body] {
        assert_eq!(info["sub"], id["sub"]);
    }
}

#[tokio::test]
async fn oidcc_ensure_request_without_nonce_succeeds_for_code_flow() {
    let rp = rp().await;
    let url = rp.url("openid", &[]).replace("&nonce=n0nce", "");
    let params = rp.authorize(&url).await;
    let tokens = rp.exchange(&params["code"], REDIRECT).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert!(id.get("nonce").is_none());
}

#[tokio::test]
async fn oidcc_scope_profile_email_address_phone_and_all() {
    let rp = rp().await;
    for (scope, claim) in [
        ("openid profile", "given_name"),
        ("openid email", "email"),
        ("openid address", "address"),
        ("openid phone", "phone_number"),
    ] {
        let (tokens, _) = rp.flow(scope, &[]).await;
        assert!(
            rp.userinfo(&tokens).await.get(claim).is_some(),
            "{scope} releases {claim}"
        );
    }
    let (tokens, _) = rp.flow("openid profile email address phone", &[]).await;
    let info = rp.userinfo(&tokens).await;
    for claim in ["name", "email", "address", "phone_number"] {
        assert!(info.get(claim).is_some(), "scope-all releases {claim}");
    }
}

#[tokio::test]
async fn oidcc_ensure_other_scope_order_succeeds() {
    let rp = rp().await;
    let (tokens, _) = rp.flow("email openid", &[]).await;
    assert!(rp.userinfo(&tokens).await.get("email").is_some());
}

#[tokio::test]
async fn oidcc_display_page_popup_ui_locales_claims_locales_acr_values_and_unknown_parameters() {
    let rp = rp().await;
    for extra in [
        ("display", "page"),
        ("display", "popup"),
        ("ui_locales", "se"),
        ("claims_locales", "se"),
        ("acr_values", "1 2"),
        ("extra_parameter", "ignored"),
    ] {
        let (_, id) = rp.flow("openid", &[extra]).await;
        assert_eq!(id["aud"], "conformance", "{extra:?}");
    }
}

#[tokio::test]
async fn oidcc_prompt_login() {
    let rp = rp().await;
    let (_, first) = rp.flow("openid", &[]).await;
    rp.app.clock.advance(2);
    let url = rp.url("openid", &[("prompt", "login")]);
    assert!(rp.shows_login_form(&url).await, "prompt=login re-authenticates");
    let (_, second) = rp.flow("openid", &[("prompt", "login")]).await;
    assert!(second["auth_time"].as_i64() > first["auth_time"].as_i64());
}

#[tokio::test]
async fn oidcc_prompt_none_not_logged_in_and_logged_in() {
    let rp = rp().await;
    let resp = rp.open("openid", &[("prompt", "none")]).await;
    assert_eq!(redirect_params(&resp)["error"], "login_required");
    rp.flow("openid", &[]).await;
    let resp = rp.open("openid", &[("prompt", "none")]).await;
    assert!(redirect_params(&resp).contains_key("code"));
}

#[tokio::test]
async fn oidcc_max_age_1_and_10000() {
    let rp = rp().await;
    let (_, first) = rp.flow("openid", &[]).await;
    let (_, kept) = rp.flow("openid", &[("max_age", "10000")]).await;
    assert_eq!(kept["auth_time"], first["auth_time"], "no re-authentication needed");
    rp.app.clock.advance(2);
    assert!(rp.shows_login_form(&rp.url("openid", &[("max_age", "1")])).await);
    let (_, again) = rp.flow("openid", &[("max_age", "1")]).await;
    assert!(again["auth_time"].as_i64() > first["auth_time"].as_i64());
}

#[tokio::test]
async fn oidcc_id_token_hint() {
    let rp = rp().await;
    let (tokens, _) = rp.flow("openid", &[]).await;
    let hint = tokens["id_token"].as_str().unwrap();
    let resp = rp.open("openid", &[("prompt", "none"), ("id_token_hint", hint)]).await;
    assert!(redirect_params(&resp).contains_key("code"));
}

#[tokio::test]
async fn oidcc_login_hint() {
    let rp = rp().await;
    let resp = rp.open("openid", &[("login_hint", "alice")]).await;
    assert_eq!(form_fields(&resp.text().await.unwrap())["username"], "alice");
}

#[tokio::test]
async fn oidcc_codereuse_and_codereuse_30seconds() {
    let rp = rp().await;
    let params = rp.authorize(&rp.url("openid", &[])).await;
    let tokens = rp.exchange(&params["code"], REDIRECT).await;
    rp.app.clock.advance(30);
    let again = rp
        .app
        .token(
            Some(("conformance", &rp.secret)),
            &[
                ("grant_type", "authorization_code"),
                ("code", &params["code"]),
                ("redirect_uri", REDIRECT),
            ],
        )
        .await;
    assert_eq!(again.status(), 400);
    let at = tokens["access_token"].as_str().unwrap();
    let info = plain_client()
        .get(rp.app.url("/userinfo"))
        .bearer_auth(at)
        .send()
        .await
        .unwrap();
    assert_eq!(info.status(), 401, "the first access token is revoked");
}

#[tokio::test]
async fn oidcc_ensure_registered_redirect_uri_and_redirect_uri_in_request() {
    let rp = rp().await;
    let unregistered = rp.url("openid", &[]).replace("callback", "elsewhere");
    let missing = rp
        .url("openid", &[])
        .replace("redirect_uri=http%3A%2F%2Flocalhost%3A8080%2Fcallback&", "");
    for url in [unregistered, missing] {
        let resp = rp.browser.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 400);
        assert!(resp.headers().get("location").is_none());
    }
}

#[tokio::test]
async fn oidcc_redirect_uri_query_ok_mismatch_and_added() {
    let rp = rp().await;
    let with_query = "http://localhost:8080/cb?foo=bar";
    let ok = rp.url("openid", &[]).replace(
        "redirect_uri=http%3A%2F%2Flocalhost%3A8080%2Fcallback",
        "redirect_uri=http%3A%2F%2Flocalhost%3A8080%2Fcb%3Ffoo%3Dbar",
    );
    let fields = rp.app.open_login(&rp.browser, &ok).await;
    let resp = rp.app.submit_login(&rp.browser, fields, "alice", PASSWORD).await;
    let loc = location(&resp);
    assert!(
        loc.starts_with("http://localhost:8080/cb?foo=bar&code="),
        "the registered query is kept: {loc}"
    );
    let code = url::Url::parse(&loc)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    rp.exchange(&code, with_query).await;
    for changed in ["cb%3Ffoo%3Dbaz", "callback%3Ffoo%3Dbar"] {
        let url = ok.replace("cb%3Ffoo%3Dbar", changed);
        let resp = rp.browser.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{changed}");
    }
}

#[tokio::test]
async fn oidcc_unsigned_request_object_and_request_uri_by_url_rejected() {
    let rp = rp().await;
    let unsigned = "eyJhbGciOiJub25lIn0.eyJjbGllbnRfaWQiOiJjb25mb3JtYW5jZSJ9.";
    let resp = rp.open("openid", &[("request", unsigned)]).await;
    // RFC 9101 §6.2: request objects are signed; `none` is refused.
    assert_eq!(redirect_params(&resp)["error"], "invalid_request_object");
    let resp = rp.open("openid", &[("request_uri", "https://rp.example/r")]).await;
    assert_eq!(redirect_params(&resp)["error"], "request_uri_not_supported");
    let doc: Value = plain_client()
        .get(rp.app.url("/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Signed objects by value; by reference only PAR's own URNs, which discovery
    // advertises as the PAR endpoint, not as `request_uri` support.
    assert_eq!(doc["request_parameter_supported"], true);
    assert_eq!(doc["request_uri_parameter_supported"], false);
}

#[tokio::test]
async fn oidcc_claims_essential() {
    let rp = rp().await;
    let claims = r#"{"userinfo":{"name":{"essential":true}}}"#;
    let (tokens, _) = rp.flow("openid", &[("claims", claims)]).await;
    assert_eq!(rp.userinfo(&tokens).await["name"], "Test User");
}

#[tokio::test]
async fn oidcc_refresh_token() {
    let rp = rp().await;
    let (tokens, first) = rp.flow("openid offline_access", &[("prompt", "consent")]).await;
    rp.app.clock.advance(1);
    let resp = rp
        .app
        .token(
            Some(("conformance", &rp.secret)),
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let refreshed: Value = resp.json().await.unwrap();
    let (_, id) = jwt_parts(refreshed["id_token"].as_str().unwrap());
    assert_eq!(
        (&id["iss"], &id["sub"], &id["aud"]),
        (&first["iss"], &first["sub"], &first["aud"])
    );
    assert_eq!(
        id["auth_time"], first["auth_time"],
        "Core §12.2: auth_time of the original authentication"
    );
    assert!(id["iat"].as_i64() > first["iat"].as_i64());
}

#[tokio::test]
async fn oidcc_ensure_request_with_valid_pkce_succeeds_and_post_request_succeeds() {
    let rp = rp().await;
    let pkce = Pkce::new();
    let url = rp.url(
        "openid",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let params = rp.authorize(&url).await;
    let resp = rp
        .app
        .token(
            Some(("conformance", &rp.secret)),
            &[
                ("grant_type", "authorization_code"),
                ("code", &params["code"]),
                ("redirect_uri", REDIRECT),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let form: Vec<(String, String)> = url::Url::parse(&rp.url("openid", &[]))
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    let resp = rp
        .browser
        .post(rp.app.url("/authorize"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert!(
        redirect_params(&resp).contains_key("code"),
        "POST authorization request with a session"
    );
}

#[tokio::test]
async fn oidcc_discovery_endpoint_verification() {
    let rp = rp().await;
    let doc: Value = plain_client()
        .get(rp.app.url("/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["issuer"], rp.app.address, "issuer matches the discovery URL");
    for required in [
        "authorization_endpoint",
        "token_endpoint",
        "userinfo_endpoint",
        "jwks_uri",
        "response_types_supported",
        "subject_types_supported",
        "id_token_signing_alg_values_supported",
        "scopes_supported",
        "claims_supported",
        "grant_types_supported",
        "token_endpoint_auth_methods_supported",
    ] {
        assert!(doc.get(required).is_some(), "{required}");
    }
    let algs = doc["id_token_signing_alg_values_supported"].as_array().unwrap();
    assert!(algs.contains(&Value::from("RS256")));
    assert!(!algs.contains(&Value::from("none")));
    assert!(doc["scopes_supported"]
        .as_array()
        .unwrap()
        .contains(&Value::from("openid")));
    let jwks: Value = plain_client()
        .get(doc["jwks_uri"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for key in jwks["keys"].as_array().unwrap() {
        assert!(key["kid"].is_string() && key["use"] == "sig" && key.get("d").is_none());
    }
}
