//! Upstream identity providers for the federation tests, usable without Tessera:
//! [`op::UpstreamOp`], node's oidc-provider as a real OpenID Provider, and
//! [`github::GitHubStandIn`], a stand-in of GitHub's OAuth flow and user API. The tests
//! below check the fixtures themselves, driving each the way a relying party would.

pub mod github;
pub mod op;

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use actix_web::{web, App, HttpResponse, HttpServer};
    use base64::Engine;
    use reqwest::header::LOCATION;
    use serde_json::Value;
    use url::Url;

    use super::github::{GitHubStandIn, GitHubUser};
    use super::op::UpstreamOp;
    use crate::helpers::{browser, plain_client, Pkce};

    const CALLBACK: &str = "http://127.0.0.1:9/federation/up/callback";

    fn query(location: &Url) -> std::collections::HashMap<String, String> {
        location.query_pairs().into_owned().collect()
    }

    /// Where `res` redirects to, resolved against the URL it answered.
    fn location(res: &reqwest::Response) -> Url {
        res.url().join(res.headers()[LOCATION].to_str().unwrap()).unwrap()
    }

    fn b64json(part: &str) -> Value {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).unwrap();
        serde_json::from_slice(&raw).unwrap()
    }

    /// The JWT's claims and `kid`, its RS256 signature checked against the key of that
    /// kid in `jwks`.
    fn verified(jwt: &str, jwks: &Value) -> (Value, String) {
        let header = b64json(jwt.split('.').next().unwrap());
        assert_eq!(header["alg"], "RS256");
        let kid = header["kid"].as_str().unwrap().to_string();
        let key = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["kid"] == kid.as_str())
            .unwrap_or_else(|| panic!("kid {kid} is not in the JWKS {jwks}"));
        let jwk = josekit::jwk::Jwk::from_bytes(serde_json::to_vec(key).unwrap()).unwrap();
        let verifier = josekit::jws::RS256.verifier_from_jwk(&jwk).unwrap();
        let (payload, _) = josekit::jws::deserialize_compact(jwt, &verifier).unwrap();
        (serde_json::from_slice(&payload).unwrap(), kid)
    }

    /// A relying party's authorization URL at the upstream; returns it with its PKCE.
    fn authorization(discovery: &Value, op: &UpstreamOp, state: &str, nonce: &str) -> (String, Pkce) {
        let pkce = Pkce::new();
        let mut url = Url::parse(discovery["authorization_endpoint"].as_str().unwrap()).unwrap();
        url.query_pairs_mut()
            .append_pair("client_id", &op.client_id)
            .append_pair("redirect_uri", &op.redirect_uri)
            .append_pair("response_type", "code")
            .append_pair("scope", "openid email profile groups")
            .append_pair("state", state)
            .append_pair("nonce", nonce)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256");
        (url.to_string(), pkce)
    }

    async fn exchange(discovery: &Value, op: &UpstreamOp, code: &str, pkce: &Pkce) -> Value {
        let res = plain_client()
            .post(discovery["token_endpoint"].as_str().unwrap())
            .basic_auth(&op.client_id, Some(&op.client_secret))
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &op.redirect_uri),
                ("code_verifier", &pkce.verifier),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.json().await.unwrap()
    }

    /// A back-channel logout receiver: the `logout_token`s POSTed to it.
    async fn receiver() -> (String, Arc<Mutex<Vec<String>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = web::Data::new(got.clone());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let uri = format!(
            "http://{}/federation/up/backchannel-logout",
            listener.local_addr().unwrap()
        );
        let server = HttpServer::new(move || {
            App::new().app_data(sink.clone()).route(
                "/federation/up/backchannel-logout",
                web::post().to(
                    |sink: web::Data<Arc<Mutex<Vec<String>>>>,
                     form: web::Form<std::collections::HashMap<String, String>>| async move {
                        sink.lock().unwrap().push(form["logout_token"].clone());
                        HttpResponse::Ok().finish()
                    },
                ),
            )
        })
        .listen(listener)
        .unwrap()
        .workers(1)
        .disable_signals()
        .run();
        tokio::spawn(server);
        (uri, got)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn oidc_provider_signs_in_rotates_and_logs_out() {
        let (backchannel, logouts) = receiver().await;
        let Some(op) = UpstreamOp::start(CALLBACK, Some(&backchannel)).await else {
            return;
        };
        let http = plain_client();
        let discovery: Value = http
            .get(format!("{}/.well-known/openid-configuration", op.issuer))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(discovery["issuer"], op.issuer.as_str());
        assert_eq!(
            discovery["code_challenge_methods_supported"],
            serde_json::json!(["S256"])
        );
        assert_eq!(discovery["backchannel_logout_supported"], true);
        let jwks_uri = discovery["jwks_uri"].as_str().unwrap().to_string();
        let jwks = |http: reqwest::Client| {
            let uri = jwks_uri.clone();
            async move { http.get(uri).send().await.unwrap().json::<Value>().await.unwrap() }
        };
        let before = jwks(http.clone()).await;
        assert_eq!(before["keys"].as_array().unwrap().len(), 1, "{before}");

        let alice = browser();
        let sid = alice_signs_in(&op, &discovery, &alice, &before).await;
        bob_is_unverified_and_mallory_is_refused(&op, &discovery, &before).await;

        // Rotation: a new kid signs, the JWKS serves both; alice's session signs her in
        // again without the form.
        let old = op.signing_kid().await;
        let new = op.rotate_key().await;
        assert_ne!(old, new);
        let after = jwks(http.clone()).await;
        let kids: Vec<&str> = after["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, [new.as_str(), old.as_str()]);
        let (url, pkce) = authorization(&discovery, &op, "st-4", "n-4");
        let params = query(&location(&op.sign_in(&alice, &url, "ignored").await));
        let tokens = exchange(&discovery, &op, &params["code"], &pkce).await;
        let (claims, kid) = verified(tokens["id_token"].as_str().unwrap(), &after);
        assert_eq!(
            (kid.as_str(), claims["sub"].as_str()),
            (new.as_str(), Some("alice-sub"))
        );

        // Ending alice's upstream session POSTs a logout token, signed with the new key.
        assert!(logouts.lock().unwrap().is_empty());
        let done = op.sign_out(&alice).await;
        assert!(done.headers()[LOCATION]
            .to_str()
            .unwrap()
            .contains("/session/end/success"));
        let got = logouts.lock().unwrap().clone();
        assert_eq!(got.len(), 1, "one logout token");
        let (logout, kid) = verified(&got[0], &after);
        assert_eq!(kid, new);
        assert_eq!(logout["iss"], op.issuer.as_str());
        assert_eq!(logout["aud"], op.client_id.as_str());
        assert_eq!(logout["sub"], "alice-sub");
        assert_eq!(logout["sid"], sid.as_str());
        assert!(logout["events"]["http://schemas.openid.net/event/backchannel-logout"].is_object());
        assert!(logout.get("nonce").is_none());
    }

    /// alice: the login form, automatic consent, back to the callback with a code; her
    /// ID token and userinfo. The ID token's `sid`.
    async fn alice_signs_in(op: &UpstreamOp, discovery: &Value, alice: &reqwest::Client, before: &Value) -> String {
        let http = plain_client();
        let (url, pkce) = authorization(discovery, op, "st-1", "n-1");
        let back = op.sign_in(alice, &url, "alice").await;
        assert!(back.status().is_redirection());
        let callback = location(&back);
        assert!(callback.as_str().starts_with(CALLBACK), "{callback}");
        let params = query(&callback);
        assert_eq!(params["state"], "st-1");
        assert_eq!(params["iss"], op.issuer.as_str(), "RFC 9207 iss");
        let tokens = exchange(discovery, op, &params["code"], &pkce).await;
        let (claims, kid) = verified(tokens["id_token"].as_str().unwrap(), before);
        assert_eq!(kid, op.signing_kid().await);
        assert_eq!(claims["iss"], op.issuer.as_str());
        assert_eq!(claims["aud"], op.client_id.as_str());
        assert_eq!(claims["sub"], "alice-sub");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(claims["email"], "alice@example.org");
        assert_eq!(claims["email_verified"], true);
        assert_eq!(claims["name"], "Alice Upstream");
        assert_eq!(claims["preferred_username"], "alice");
        assert_eq!(claims["groups"], serde_json::json!(["engineering", "staff"]));
        let sid = claims["sid"].as_str().expect("sid in the ID token").to_string();
        let userinfo: Value = http
            .get(discovery["userinfo_endpoint"].as_str().unwrap())
            .bearer_auth(tokens["access_token"].as_str().unwrap())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(userinfo["sub"], "alice-sub");
        assert_eq!(userinfo["groups"], serde_json::json!(["engineering", "staff"]));
        sid
    }

    /// bob's address is not verified; an unknown login is refused with the form.
    async fn bob_is_unverified_and_mallory_is_refused(op: &UpstreamOp, discovery: &Value, before: &Value) {
        let bob = browser();
        let (url, pkce) = authorization(discovery, op, "st-2", "n-2");
        let params = query(&location(&op.sign_in(&bob, &url, "bob").await));
        let tokens = exchange(discovery, op, &params["code"], &pkce).await;
        let (claims, _) = verified(tokens["id_token"].as_str().unwrap(), before);
        assert_eq!(
            (claims["sub"].as_str(), claims["email_verified"].as_bool()),
            (Some("bob-sub"), Some(false))
        );
        assert_eq!(claims["groups"], serde_json::json!([]));
        let mallory = browser();
        let (url, _) = authorization(discovery, op, "st-3", "n-3");
        let interaction = location(&mallory.get(&url).send().await.unwrap());
        let form = mallory.get(interaction.clone()).send().await.unwrap();
        assert_eq!(form.status(), 200);
        assert!(form.text().await.unwrap().contains(r#"name="login""#));
        let refused = mallory
            .post(format!("{interaction}/login"))
            .form(&[("login", "mallory")])
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401);
    }

    fn github_users() -> Vec<GitHubUser> {
        vec![
            GitHubUser {
                id: 583231,
                login: "octocat".into(),
                name: Some("The Octocat".into()),
                emails: vec![
                    ("octocat@old.example".into(), false, true),
                    ("octocat@example.org".into(), true, true),
                ],
            },
            GitHubUser::new(9001, "unverified", "unverified@example.org", false),
        ]
    }

    async fn github_token(gh: &GitHubStandIn, code: &str, verifier: &str, secret: &str) -> Value {
        let res = plain_client()
            .post(format!("{}/login/oauth/access_token", gh.base))
            .header("Accept", "application/json")
            .form(&[
                ("client_id", gh.client_id.as_str()),
                ("client_secret", secret),
                ("code", code),
                ("redirect_uri", CALLBACK),
                ("code_verifier", verifier),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "GitHub answers token errors with 200 too");
        res.json().await.unwrap()
    }

    async fn github_code(gh: &GitHubStandIn, pkce: &Pkce, extra: &[(&str, &str)]) -> Url {
        let mut url = Url::parse(&format!("{}/login/oauth/authorize", gh.base)).unwrap();
        url.query_pairs_mut()
            .append_pair("client_id", &gh.client_id)
            .append_pair("redirect_uri", CALLBACK)
            .append_pair("scope", "read:user user:email")
            .append_pair("state", "gh-state")
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .extend_pairs(extra);
        let res = plain_client().get(url).send().await.unwrap();
        assert_eq!(res.status(), 302);
        location(&res)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn github_stand_in_round_trip_and_refusals() {
        let gh = GitHubStandIn::start(github_users()).await;
        let pkce = Pkce::new();
        let back = github_code(&gh, &pkce, &[]).await;
        assert!(back.as_str().starts_with(CALLBACK));
        let params = query(&back);
        assert_eq!(params["state"], "gh-state");
        let code = params["code"].clone();

        // GitHub's error shapes: a wrong secret (the code stays usable), a reused
        // code, a verifier that does not match the challenge.
        let wrong = github_token(&gh, &code, &pkce.verifier, "not-the-secret").await;
        assert_eq!(wrong["error"], "incorrect_client_credentials");
        let token = github_token(&gh, &code, &pkce.verifier, &gh.client_secret).await;
        assert_eq!(token["token_type"], "bearer");
        assert_eq!(token["scope"], "read:user,user:email");
        let access = token["access_token"].as_str().unwrap().to_string();
        assert!(access.starts_with("gho_"));
        let reused = github_token(&gh, &code, &pkce.verifier, &gh.client_secret).await;
        assert_eq!(reused["error"], "bad_verification_code");
        assert_eq!(reused["error_description"], "The code passed is incorrect or expired.");
        let params = query(&github_code(&gh, &pkce, &[]).await);
        let mismatch = github_token(
            &gh,
            &params["code"],
            "another-verifier-of-enough-length",
            &gh.client_secret,
        )
        .await;
        assert_eq!(mismatch["error"], "bad_verification_code");

        the_api_answers_as_github(&gh, &access).await;
        the_account_is_chosen_by_sign_in_as_then_login_hint(&gh, &pkce).await;

        // A refusal by the user comes back as access_denied with the state.
        gh.deny_next();
        let params = query(&github_code(&gh, &pkce, &[]).await);
        assert_eq!(
            (params["error"].as_str(), params["state"].as_str()),
            ("access_denied", "gh-state")
        );
        assert!(!params.contains_key("code"));

        assert_eq!(gh.hits("/login/oauth/authorize"), 5);
        assert_eq!(gh.hits("/login/oauth/access_token"), 6);
        assert_eq!(gh.hits("/api/v3/user/emails"), 1);
    }

    /// A GET of the stand-in's API at `path`, as Tessera sends it.
    async fn github_api(gh: &GitHubStandIn, path: &str, token: Option<&str>) -> reqwest::Response {
        let mut req = plain_client()
            .get(format!("{}/api/v3{path}", gh.base))
            .header("Accept", "application/vnd.github+json")
            .header("User-Agent", "Tessera");
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.unwrap()
    }

    /// The API, as Tessera calls it: the user, their addresses, refusals without a
    /// good token.
    async fn the_api_answers_as_github(gh: &GitHubStandIn, access: &str) {
        let user: Value = github_api(gh, "/user", Some(access)).await.json().await.unwrap();
        assert_eq!(user["id"], 583231);
        assert_eq!(user["login"], "octocat");
        assert_eq!(user["name"], "The Octocat");
        assert_eq!(user["email"], "octocat@example.org");
        assert_eq!(user["type"], "User");
        assert_eq!(user["html_url"], format!("{}/octocat", gh.base));
        let emails: Value = github_api(gh, "/user/emails", Some(access)).await.json().await.unwrap();
        assert_eq!(
            emails,
            serde_json::json!([
                {"email": "octocat@old.example", "primary": false, "verified": true, "visibility": null},
                {"email": "octocat@example.org", "primary": true, "verified": true, "visibility": "public"},
            ])
        );
        let anonymous = github_api(gh, "/user", None).await;
        assert_eq!(anonymous.status(), 401);
        let body: Value = anonymous.json().await.unwrap();
        assert_eq!(body["message"], "Bad credentials");
        assert_eq!(github_api(gh, "/user", Some("gho_forged")).await.status(), 401);
    }

    /// Choosing the account: sign_in_as, then the login hint over it.
    async fn the_account_is_chosen_by_sign_in_as_then_login_hint(gh: &GitHubStandIn, pkce: &Pkce) {
        gh.sign_in_as("unverified");
        let params = query(&github_code(gh, pkce, &[]).await);
        let token = github_token(gh, &params["code"], &pkce.verifier, &gh.client_secret).await;
        let user: Value = github_api(gh, "/user", token["access_token"].as_str())
            .await
            .json()
            .await
            .unwrap();
        assert_eq!((user["id"].as_u64(), user["email"].is_null()), (Some(9001), true));
        gh.update_user(GitHubUser::new(9001, "unverified", "unverified@example.org", true));
        let user: Value = github_api(gh, "/user", token["access_token"].as_str())
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(user["email"], "unverified@example.org");
        let params = query(&github_code(gh, pkce, &[("login", "octocat")]).await);
        let token = github_token(gh, &params["code"], &pkce.verifier, &gh.client_secret).await;
        let user: Value = github_api(gh, "/user", token["access_token"].as_str())
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(user["id"], 583231);
    }
}
