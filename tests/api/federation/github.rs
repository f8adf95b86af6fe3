//! The `github` provider kind against the stand-in of GitHub's OAuth flow and REST API
//! (tests/api/upstream/github.rs), laid out as a GitHub Enterprise Server: the
//! authorization request, the numeric id as the subject across a renamed login, the
//! primary address and its verification, the user refusing, a wrong client secret and
//! a replayed callback.

use std::collections::HashMap;

use url::Url;

use super::*;
use crate::upstream::github::{GitHubStandIn, GitHubUser};

const ID: u64 = 583231;
const SCOPE: &str = "openid profile email";

struct Hub {
    gh: GitHubStandIn,
    down: TestApp,
    rp_secret: String,
}

/// A downstream Tessera with provider `gh` at the stand-in, serving `users`; `adjust`
/// changes the specification (which starts with the stand-in's own credentials).
async fn hub(users: Vec<GitHubUser>, adjust: impl FnOnce(&mut ProviderSpec)) -> Hub {
    let gh = GitHubStandIn::start(users).await;
    let down = spawn_app().await;
    let mut spec = ProviderSpec {
        id: "gh".into(),
        kind: "github".into(),
        name: Some("GitHub".into()),
        issuer: Some(gh.base.clone()),
        client_id: gh.client_id.clone(),
        client_secret: gh.client_secret.clone(),
        jit: true,
        ..ProviderSpec::default()
    };
    adjust(&mut spec);
    register(&down, &spec).await;
    let rp_secret = down.add_client(RP, false).await.unwrap();
    Hub { gh, down, rp_secret }
}

fn octocat(verified: bool) -> GitHubUser {
    GitHubUser::new(ID, "octocat", "octocat@example.org", verified)
}

impl Hub {
    fn callback(&self) -> String {
        format!("{}/federation/gh/callback", self.down.address)
    }

    /// `idp=gh`, then the stand-in: the unfollowed redirect back to the callback.
    async fn answer(&self, b: &reqwest::Client) -> Url {
        let resp = b.get(authorize_with(&self.down, "gh", SCOPE)).send().await.unwrap();
        assert_eq!(resp.status(), 303, "idp=gh: {}", resp.text().await.unwrap());
        let resp = b.get(location(&resp)).send().await.unwrap();
        assert!(
            resp.status().is_redirection(),
            "the stand-in answered {}",
            resp.status()
        );
        let back = Url::parse(&location(&resp)).unwrap();
        assert!(back.as_str().starts_with(&self.callback()), "{back}");
        back
    }

    /// The whole chain: the RP's redirect parameters.
    async fn sign_in(&self, b: &reqwest::Client) -> HashMap<String, String> {
        let back = self.answer(b).await;
        let resp = b.get(back).send().await.unwrap();
        assert_eq!(resp.status(), 303, "callback failed: {}", resp.text().await.unwrap());
        redirect_params(&resp)
    }

    async fn id_token(&self, params: &HashMap<String, String>) -> serde_json::Value {
        let code = params.get("code").unwrap_or_else(|| panic!("no code: {params:?}"));
        let tokens = self.down.exchange(RP, &self.rp_secret, code).await;
        jwt_parts(tokens["id_token"].as_str().unwrap()).1
    }

    /// A local account holding `email`, confirmed.
    async fn holder(&self, username: &str, email: &str) -> db::users::User {
        let u = self.down.add_user(username).await;
        let (email, now) = (email.to_string(), self.down.clock.now());
        self.down
            .state
            .db
            .write(move |c| db::users::set_email(c, u.id, &email, now))
            .await
            .unwrap();
        u
    }
}

#[tokio::test]
async fn github_signs_in_by_its_numeric_id_even_after_the_login_is_renamed() {
    let h = hub(vec![octocat(true)], |_| {}).await;
    let b = browser();
    let resp = b.get(authorize_with(&h.down, "gh", SCOPE)).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    let to = location(&resp);
    assert!(to.starts_with(&format!("{}/login/oauth/authorize?", h.gh.base)), "{to}");
    let q: HashMap<String, String> = Url::parse(&to).unwrap().query_pairs().into_owned().collect();
    assert_eq!(q["client_id"], h.gh.client_id);
    assert_eq!(q["redirect_uri"], h.callback());
    assert_eq!(q["scope"], "read:user user:email");
    assert_eq!(q["code_challenge_method"], "S256");
    assert!(q["code_challenge"].len() >= 43, "{q:?}");
    assert!(q["state"].len() >= 16, "{q:?}");

    let resp = b.get(&to).send().await.unwrap();
    assert!(matches!(resp.status().as_u16(), 302 | 303), "{}", resp.status());
    let back = Url::parse(&location(&resp)).unwrap();
    assert!(back.as_str().starts_with(&h.callback()), "{back}");
    let answer: HashMap<String, String> = back.query_pairs().into_owned().collect();
    assert_eq!(answer["state"], q["state"]);
    assert!(answer.contains_key("code"));
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 303, "callback failed: {}", resp.text().await.unwrap());
    let params = redirect_params(&resp);
    assert_eq!(params["state"], "st4te");
    // The stand-in checked the PKCE verifier against the challenge before it answered.
    assert_eq!(h.gh.hits("/login/oauth/access_token"), 1);
    assert_eq!(h.gh.hits("/api/v3/user"), 1);
    assert_eq!(h.gh.hits("/api/v3/user/emails"), 1);

    let claims = h.id_token(&params).await;
    assert_eq!(claims["preferred_username"], "octocat");
    assert_eq!(claims["email"], "octocat@example.org");
    assert_eq!(claims["email_verified"], true);
    assert_eq!(claims["amr"], serde_json::json!(["fed"]), "GitHub names no method");
    let link = h
        .down
        .state
        .db
        .read(|c| db::identities::find(c, "gh", "583231"))
        .await
        .unwrap()
        .expect("linked by the numeric id");
    let local = local_user(&h.down, "octocat").await.unwrap();
    assert_eq!(link.user_id, local.id);
    assert_eq!(claims["sub"], local.sub);

    // The person renames the GitHub account; the id stays.
    h.gh.update_user(GitHubUser::new(ID, "octocat-renamed", "octocat@example.org", true));
    let again = h.id_token(&h.sign_in(&browser()).await).await;
    assert_eq!(again["sub"], claims["sub"], "the same local account");
    assert_eq!(again["preferred_username"], "octocat", "the local username stays");
    assert_eq!(user_count(&h.down).await, 1);
    assert!(local_user(&h.down, "octocat-renamed").await.is_none());
    assert_eq!(links_of(&h.down, "gh").await, 1);
}

#[tokio::test]
async fn an_unverified_github_address_does_not_link_to_the_local_account_holding_it() {
    let h = hub(vec![octocat(false)], |s| {
        s.jit = false;
        s.link_by_email = true;
    })
    .await;
    let holder = h.holder("octo", "octocat@example.org").await;
    let b = browser();
    let back = h.answer(&b).await;
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let error = text_of(&resp.text().await.unwrap(), "login-error").unwrap();
    assert!(error.contains("GitHub account is not linked"), "{error}");
    assert_eq!(links_of(&h.down, "gh").await, 0);
    assert_eq!(live_sessions(&h.down).await, 0);
    assert_eq!(user_count(&h.down).await, 1);

    // Once GitHub has verified it, the same address links to the holder.
    h.gh.update_user(octocat(true));
    let claims = h.id_token(&h.sign_in(&browser()).await).await;
    assert_eq!(claims["sub"], holder.sub);
    assert_eq!(links_of(&h.down, "gh").await, 1);
}

#[tokio::test]
async fn a_just_in_time_account_leaves_out_an_address_github_has_not_verified() {
    // Mail to the account (a reset, a sign-in link) must not reach whoever owns an
    // address that was merely typed at GitHub.
    let h = hub(vec![octocat(false)], |_| {}).await;
    let claims = h.id_token(&h.sign_in(&browser()).await).await;
    assert_eq!(claims["preferred_username"], "octocat");
    assert!(claims.get("email").is_none(), "{claims}");
    let local = local_user(&h.down, "octocat").await.unwrap();
    assert_eq!(local.email, None);
    let links = h
        .down
        .state
        .db
        .read(move |c| db::identities::of_user(c, local.id))
        .await
        .unwrap();
    assert_eq!(
        links[0].email.as_deref(),
        Some("octocat@example.org"),
        "the link remembers it"
    );
}

#[tokio::test]
async fn a_just_in_time_account_leaves_out_an_unverified_address_another_account_holds() {
    let h = hub(vec![octocat(false)], |s| s.link_by_email = true).await;
    let holder = h.holder("octo", "octocat@example.org").await;
    let claims = h.id_token(&h.sign_in(&browser()).await).await;
    assert_ne!(claims["sub"], holder.sub, "a new account, not the holder's");
    assert_eq!(claims["preferred_username"], "octocat");
    assert!(
        claims.get("email").is_none(),
        "the address stays with its holder: {claims}"
    );
    let local = local_user(&h.down, "octocat").await.unwrap();
    assert_eq!(local.email, None);
    assert_eq!(user_count(&h.down).await, 2);
    let held = h
        .down
        .state
        .db
        .read(move |c| db::identities::of_user(c, holder.id))
        .await
        .unwrap();
    assert!(held.is_empty(), "the holder got no link");
}

#[tokio::test]
async fn the_user_refusing_at_github_shows_the_page_and_cancelling_tells_the_rp_access_denied() {
    let h = hub(vec![octocat(true)], |_| {}).await;
    h.gh.deny_next();
    let b = browser();
    let back = h.answer(&b).await;
    assert!(
        back.query_pairs().any(|(k, v)| k == "error" && v == "access_denied"),
        "{back}"
    );
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let page = resp.text().await.unwrap();
    let error = text_of(&page, "login-error").unwrap();
    assert!(error.contains("access_denied"), "{error}");
    assert!(text_of(&page, "cancel-link").is_some());
    assert_eq!(h.gh.hits("/login/oauth/access_token"), 0, "nothing to redeem");
    assert_eq!(live_sessions(&h.down).await, 0);
    assert_eq!(user_count(&h.down).await, 0);

    let cancel = form_for(&page, "/login/cancel");
    assert_eq!(cancel["reason"], "denied");
    let resp = b.post(h.down.url("/login/cancel")).form(&cancel).send().await.unwrap();
    // 302 as every authorization response; never 307, which would repost the form
    // to the RP (RFC 9700 §4.12).
    assert_eq!(resp.status(), 302);
    let params = redirect_params(&resp);
    assert_eq!(params["error"], "access_denied");
    assert_eq!(params["state"], "st4te");
    assert!(!params.contains_key("code"));
}

#[tokio::test]
async fn a_wrong_client_secret_is_refused_by_github_and_signs_no_one_in() {
    let h = hub(vec![octocat(true)], |s| s.client_secret = "not-the-secret".into()).await;
    let b = browser();
    let back = h.answer(&b).await;
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let error = text_of(&resp.text().await.unwrap(), "login-error").unwrap();
    assert!(error.contains("incorrect_client_credentials"), "{error}");
    assert_eq!(h.gh.hits("/login/oauth/access_token"), 1);
    assert_eq!(h.gh.hits("/api/v3/user"), 0, "no token, no API call");
    assert_eq!(live_sessions(&h.down).await, 0);
    assert_eq!(user_count(&h.down).await, 0);
    assert_eq!(links_of(&h.down, "gh").await, 0);
}

#[tokio::test]
async fn a_replayed_callback_gets_the_expired_page_and_redeems_nothing() {
    let h = hub(vec![octocat(true)], |_| {}).await;
    let b = browser();
    let back = h.answer(&b).await;
    let resp = b.get(back.clone()).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    let params = redirect_params(&resp);
    assert_eq!(live_sessions(&h.down).await, 1);

    for replayer in [&b, &browser()] {
        let resp = replayer.get(back.clone()).send().await.unwrap();
        assert_eq!(resp.status(), 400);
        assert!(resp.text().await.unwrap().contains("Sign-in expired"));
    }
    assert_eq!(h.gh.hits("/login/oauth/access_token"), 1, "the code was redeemed once");
    assert_eq!(live_sessions(&h.down).await, 1, "no second session");
    // The first answer's code still serves the RP.
    assert_eq!(h.id_token(&params).await["preferred_username"], "octocat");
}
