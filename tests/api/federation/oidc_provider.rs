//! node's `oidc-provider` as the upstream (tests/api/upstream/op.rs): the whole chain
//! from the RP through the upstream's login form and back, RFC 9207's `iss` in the
//! authorization response, a signing-key rotation at the upstream, the upstream down,
//! link-by-email refused for an unverified address, and the upstream's Back-Channel
//! Logout ending the local session. Each test is skipped (SKIPPED on stderr) when
//! node or the pinned package is missing outside CI, as the fixture does.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use url::Url;

use super::*;
use crate::upstream::op::UpstreamOp;

/// What the RP asks for; `groups` makes the ID token carry the local groups.
const SCOPE: &str = "openid profile email groups";

/// A downstream Tessera with provider `op` = a running oidc-provider.
struct Chain {
    op: UpstreamOp,
    down: TestApp,
    rp_secret: String,
}

/// The downstream first (the upstream's client needs its callback URL), then the
/// upstream, then provider `op` as the brief's chain registers it, adjusted.
async fn chain(adjust: impl FnOnce(&mut ProviderSpec)) -> Option<Chain> {
    let down = spawn_app().await;
    let callback = format!("{}/federation/op/callback", down.address);
    let bcl = format!("{}/federation/op/backchannel-logout", down.address);
    let op = UpstreamOp::start(&callback, Some(&bcl)).await?;
    let mut spec = ProviderSpec {
        id: "op".into(),
        kind: "oidc".into(),
        name: Some("Upstream OP".into()),
        issuer: Some(op.issuer.clone()),
        client_id: op.client_id.clone(),
        client_secret: op.client_secret.clone(),
        scope: Some("openid email profile groups".into()),
        jit: true,
        group_claim: Some("groups".into()),
        map_group: vec!["engineering=eng".into()],
        ..ProviderSpec::default()
    };
    adjust(&mut spec);
    register(&down, &spec).await;
    let rp_secret = down.add_client(RP, false).await.unwrap();
    Some(Chain { op, down, rp_secret })
}

impl Chain {
    fn callback(&self) -> String {
        format!("{}/federation/op/callback", self.down.address)
    }

    /// `idp=op` at the downstream: the upstream authorization URL it redirects to.
    async fn to_upstream(&self, b: &reqwest::Client) -> String {
        let resp = b.get(authorize_with(&self.down, "op", SCOPE)).send().await.unwrap();
        assert_eq!(
            resp.status(),
            303,
            "idp=op should go to the upstream: {}",
            resp.text().await.unwrap()
        );
        let to = location(&resp);
        assert!(
            to.starts_with(&self.op.issuer),
            "expected a redirect to the upstream: {to}"
        );
        to
    }

    /// Signs `login` in at the upstream; the unfollowed redirect back to the callback.
    async fn answer(&self, b: &reqwest::Client, login: &str) -> Url {
        let to = self.to_upstream(b).await;
        let back = self.op.sign_in(b, &to, login).await;
        assert!(back.status().is_redirection(), "{}", back.status());
        let back = Url::parse(&location(&back)).unwrap();
        assert!(back.as_str().starts_with(&self.callback()), "{back}");
        back
    }

    /// The whole chain for `login`: the RP's redirect parameters.
    async fn sign_in(&self, b: &reqwest::Client, login: &str) -> HashMap<String, String> {
        let back = self.answer(b, login).await;
        let resp = b.get(back).send().await.unwrap();
        assert_eq!(resp.status(), 303, "callback failed: {}", resp.text().await.unwrap());
        redirect_params(&resp)
    }

    async fn id_token(&self, params: &HashMap<String, String>) -> serde_json::Value {
        let code = params.get("code").unwrap_or_else(|| panic!("no code: {params:?}"));
        let tokens = self.down.exchange(RP, &self.rp_secret, code).await;
        jwt_parts(tokens["id_token"].as_str().unwrap()).1
    }

    /// Live downstream sessions opened through `op` for the upstream subject.
    async fn federated_sessions(&self, subject: &str) -> usize {
        let (subject, now) = (subject.to_string(), self.down.clock.now());
        self.down
            .state
            .db
            .read(move |c| db::sessions::federated(c, "op", Some(&subject), None, now, now))
            .await
            .unwrap()
            .len()
    }
}

/// `url` with its query parameter `name` replaced by `value`, or removed (`None`).
fn with_param(url: &Url, name: &str, value: Option<&str>) -> Url {
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().filter(|(k, _)| k != name).collect();
    let mut out = url.clone();
    {
        let mut q = out.query_pairs_mut();
        q.clear();
        for (k, v) in &pairs {
            q.append_pair(k, v);
        }
        if let Some(v) = value {
            q.append_pair(name, v);
        }
    }
    out
}

fn query(url: &str) -> HashMap<String, String> {
    Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

#[tokio::test]
async fn an_rp_gets_the_upstream_accounts_claims_and_mapped_groups_through_oidc_provider() {
    let Some(ch) = chain(|_| {}).await else { return };
    let b = browser();

    // The authorization request Tessera makes as a relying party (OIDC Core §3.1.2.1,
    // RFC 7636): code flow, its callback, the provider's scope, state, nonce, S256.
    let to = ch.to_upstream(&b).await;
    let q = query(&to);
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], ch.op.client_id);
    assert_eq!(q["redirect_uri"], ch.callback());
    assert_eq!(q["scope"], "openid email profile groups");
    assert_eq!(q["code_challenge_method"], "S256");
    assert!(q["code_challenge"].len() >= 43, "{q:?}");
    assert!(q["state"].len() >= 16 && q["nonce"].len() >= 16, "{q:?}");
    assert_ne!(q["state"], "st4te", "the RP's state is not sent upstream");

    let back = ch.op.sign_in(&b, &to, "alice").await;
    let back = Url::parse(&location(&back)).unwrap();
    let answer: HashMap<String, String> = back.query_pairs().into_owned().collect();
    assert_eq!(answer["state"], q["state"]);
    assert_eq!(answer["iss"], ch.op.issuer, "the fixture sends RFC 9207's iss");
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 303, "callback failed: {}", resp.text().await.unwrap());
    let params = redirect_params(&resp);
    assert_eq!(params["state"], "st4te");

    let claims = ch.id_token(&params).await;
    assert_eq!(claims["preferred_username"], "alice");
    assert_eq!(claims["email"], "alice@example.org");
    assert_eq!(claims["email_verified"], true);
    assert_eq!(claims["name"], "Alice Upstream");
    assert_eq!(claims["nonce"], "n0nce");
    // Only the mapped group: `staff` is the upstream's but maps to nothing here.
    assert_eq!(claims["groups"], serde_json::json!(["eng"]));
    let amr: Vec<&str> = claims["amr"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(amr.last(), Some(&"fed"), "amr {amr:?}");

    let alice = local_user(&ch.down, "alice").await.expect("a just-in-time account");
    assert_eq!(claims["sub"], alice.sub);
    assert_ne!(alice.sub, "alice-sub", "the local account has its own subject");
    assert_eq!(alice.groups, vec!["eng".to_string()]);
    assert_eq!(alice.password_hash, "!", "a JIT account has no password");
    let link = ch
        .down
        .state
        .db
        .read(|c| db::identities::find(c, "op", "alice-sub"))
        .await
        .unwrap()
        .expect("the identity is linked");
    assert_eq!(link.user_id, alice.id);
    assert_eq!(
        ch.federated_sessions("alice-sub").await,
        1,
        "the session records the upstream"
    );
}

#[tokio::test]
async fn an_answer_naming_another_issuer_is_refused_without_a_session() {
    let Some(ch) = chain(|_| {}).await else { return };
    let b = browser();
    let back = ch.answer(&b, "alice").await;
    assert!(back.query_pairs().any(|(k, _)| k == "iss"), "{back}");

    // RFC 9207 §2.4: a mix-up attacker's answer names its own issuer.
    let forged = with_param(&back, "iss", Some("http://127.0.0.1:9/evil"));
    let resp = b.get(forged).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let page = resp.text().await.unwrap();
    let error = text_of(&page, "login-error").expect("the login page with the reason");
    assert!(error.contains("another issuer"), "{error}");
    assert_eq!(form_for(&page, "/login/cancel")["reason"], "denied");

    assert_eq!(live_sessions(&ch.down).await, 0);
    assert_eq!(user_count(&ch.down).await, 0, "no account was made");
    assert_eq!(links_of(&ch.down, "op").await, 0);
    // The state is used up: the genuine answer cannot follow the forged one.
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("Sign-in expired"));
    assert_eq!(user_count(&ch.down).await, 0);
}

#[tokio::test]
async fn an_answer_without_the_promised_iss_is_refused() {
    let Some(ch) = chain(|_| {}).await else { return };
    let b = browser();
    let back = ch.answer(&b, "alice").await;
    // The upstream's metadata says it sends `iss` (RFC 9207 §3), so its absence is a
    // sign of another issuer's answer.
    let stripped = with_param(&back, "iss", None);
    let resp = b.get(stripped).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let error = text_of(&resp.text().await.unwrap(), "login-error").unwrap();
    assert!(error.contains("lacks its issuer"), "{error}");
    assert_eq!(live_sessions(&ch.down).await, 0);
    assert_eq!(user_count(&ch.down).await, 0);
}

#[tokio::test]
async fn a_new_signing_key_at_the_upstream_is_fetched_on_the_next_sign_in() {
    let Some(ch) = chain(|_| {}).await else { return };
    let first = ch.sign_in(&browser(), "alice").await;
    let sub = ch.id_token(&first).await["sub"].clone();
    let old = ch.op.signing_kid().await;

    let new = ch.op.rotate_key().await;
    assert_ne!(new, old);
    assert_eq!(ch.op.signing_kid().await, new, "the upstream signs with the new key");
    // Tessera refetches a key set at most every 10 s per issuer (a token naming an
    // unknown kid cannot make it hammer the upstream); a real rotation comes later than
    // that after the last fetch, which the clock stands in for.
    ch.down.clock.advance(11);

    let again = ch.sign_in(&browser(), "alice").await;
    let claims = ch.id_token(&again).await;
    assert_eq!(claims["sub"], sub, "the same account again");
    assert_eq!(claims["preferred_username"], "alice");
    assert_eq!(user_count(&ch.down).await, 1);
}

#[tokio::test]
async fn an_upstream_that_cannot_be_reached_gives_a_page_and_the_rp_temporarily_unavailable() {
    let Some(ch) = chain(|_| {}).await else { return };
    let Chain { op, down, rp_secret } = ch;
    // Nothing is cached yet: the upstream's discovery is fetched at the first sign-in.
    drop(op);
    let local = down.add_user("local").await;

    let b = browser();
    let resp = b.get(authorize_with(&down, "op", SCOPE)).send().await.unwrap();
    assert_eq!(resp.status(), 503);
    let page = resp.text().await.unwrap();
    let error = text_of(&page, "login-error").unwrap();
    assert!(error.starts_with("Upstream OP cannot be reached"), "{error}");
    assert!(
        text_of(&page, "cancel-link").unwrap().starts_with("Return to"),
        "{page}"
    );
    let cancel = form_for(&page, "/login/cancel");
    assert_eq!(cancel["reason"], "unavailable");

    // The same page still signs in another way (here a local password).
    let other = browser();
    let page = other.get(authorize_with(&down, "op", SCOPE)).send().await.unwrap();
    assert_eq!(page.status(), 503);
    let fields = form_for(&page.text().await.unwrap(), "/login");
    let resp = down.submit_login(&other, fields, "local", PASSWORD).await;
    assert_eq!(resp.status(), 303);
    let code = redirect_params(&resp)["code"].clone();
    let claims = jwt_parts(down.exchange(RP, &rp_secret, &code).await["id_token"].as_str().unwrap()).1;
    assert_eq!(claims["sub"], local.sub);

    // "Return to the application": RFC 6749 §4.1.2.1 temporarily_unavailable.
    let resp = b.post(down.url("/login/cancel")).form(&cancel).send().await.unwrap();
    // 302 as every authorization response; never 307, which would repost the form
    // to the RP (RFC 9700 §4.12).
    assert_eq!(resp.status(), 302);
    let params = redirect_params(&resp);
    assert_eq!(params["error"], "temporarily_unavailable");
    assert_eq!(params["state"], "st4te");
    assert!(!params.contains_key("code"));
    // Once only.
    let resp = b.post(down.url("/login/cancel")).form(&cancel).send().await.unwrap();
    assert_eq!(resp.status(), 400);
}

#[tokio::test]
async fn a_cached_discovery_document_starts_sign_ins_while_the_upstream_is_down() {
    let Some(ch) = chain(|_| {}).await else { return };
    ch.sign_in(&browser(), "alice").await;
    let authorization_endpoint = Url::parse(&ch.to_upstream(&browser()).await).unwrap();
    let Chain { op, down, .. } = ch;
    let issuer = op.issuer.clone();
    drop(op);
    // Nothing answers at the upstream any more …
    let down_err = plain_client()
        .get(format!("{issuer}/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap_err();
    assert!(down_err.is_connect(), "{down_err}");

    // … yet the redirect to it is made from the cached document.
    let resp = browser().get(authorize_with(&down, "op", SCOPE)).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    let to = Url::parse(&location(&resp)).unwrap();
    assert_eq!(to.origin(), authorization_endpoint.origin());
    assert_eq!(to.path(), authorization_endpoint.path());
    assert_eq!(query(to.as_str())["client_id"], "tessera");
}

#[tokio::test]
async fn an_unverified_upstream_address_never_links_to_a_local_account() {
    let Some(ch) = chain(|s| {
        s.jit = false;
        s.link_by_email = true;
    })
    .await
    else {
        return;
    };
    let now = ch.down.clock.now();
    let mut locals = Vec::new();
    for (name, email) in [("bob", "bob@example.org"), ("alice", "alice@example.org")] {
        let u = ch.down.add_user(name).await;
        let email = email.to_string();
        ch.down
            .state
            .db
            .write(move |c| db::users::set_email(c, u.id, &email, now))
            .await
            .unwrap();
        locals.push(u);
    }

    // bob@example.org is verified here, but the upstream does not vouch for it.
    let b = browser();
    let back = ch.answer(&b, "bob").await;
    let resp = b.get(back).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let error = text_of(&resp.text().await.unwrap(), "login-error").unwrap();
    assert!(error.contains("is not linked to an account here"), "{error}");
    assert_eq!(links_of(&ch.down, "op").await, 0, "no link");
    assert_eq!(live_sessions(&ch.down).await, 0);
    assert_eq!(user_count(&ch.down).await, 2, "no account was made");

    // The same setup links alice, whose address both sides have confirmed: it is the
    // verification that refused bob.
    let params = ch.sign_in(&browser(), "alice").await;
    assert_eq!(ch.id_token(&params).await["sub"], locals[1].sub);
    assert_eq!(links_of(&ch.down, "op").await, 1);
    let bob_link = ch
        .down
        .state
        .db
        .read(|c| db::identities::find(c, "op", "bob-sub"))
        .await
        .unwrap();
    assert!(bob_link.is_none());
}

#[tokio::test]
async fn the_upstreams_back_channel_logout_ends_the_local_session() {
    let Some(ch) = chain(|_| {}).await else { return };
    let (b, other) = (browser(), browser());
    ch.sign_in(&b, "alice").await;
    ch.sign_in(&other, "carol").await;
    let account = |b: &reqwest::Client| {
        let b = b.clone();
        let url = ch.down.url("/account");
        async move { b.get(url).send().await.unwrap().text().await.unwrap() }
    };
    assert!(
        text_of(&account(&b).await, "linked-accounts").is_some(),
        "alice is signed in"
    );
    assert_eq!(ch.federated_sessions("alice-sub").await, 1);

    // RP-Initiated Logout at the upstream; it POSTs a logout token to the downstream.
    ch.op.sign_out(&b).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while ch.federated_sessions("alice-sub").await > 0 {
        assert!(Instant::now() < deadline, "alice's downstream session did not end");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let page = account(&b).await;
    assert!(
        text_of(&page, "linked-accounts").is_none(),
        "alice is signed out:\n{page}"
    );
    assert!(page.contains(r#"action="/login""#), "the login form instead");
    let alice = local_user(&ch.down, "alice").await.unwrap();
    let now = ch.down.clock.now();
    let left = ch
        .down
        .state
        .db
        .read(move |c| db::sessions::list_for_user(c, alice.id, now))
        .await
        .unwrap();
    assert!(left.is_empty(), "{} sessions left", left.len());

    // Only the session the token named: carol's upstream session goes on.
    assert_eq!(ch.federated_sessions("carol-sub").await, 1);
    assert!(text_of(&account(&other).await, "linked-accounts").is_some());
}
