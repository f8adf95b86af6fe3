//! Sign-in through upstream providers, against real ones on loopback: a second
//! Tessera (on 127.0.0.2, so the browser keeps its cookies apart), node's
//! `oidc-provider`, and a stand-in of GitHub's OAuth and REST endpoints.

mod github;
mod linking;
mod logout;
mod nodes;
mod oidc_provider;
mod second_tessera;

use std::collections::HashMap;

use ::tessera::admin::providers::ProviderSpec;
use ::tessera::admin::Actor;
use ::tessera::db;

use crate::helpers::*;

/// The downstream relying party's id at Tessera.
pub const RP: &str = "rp";

/// An upstream Tessera and the Tessera that signs in through it (provider `up`).
pub struct Pair {
    pub up: TestApp,
    pub down: TestApp,
    /// The downstream RP's secret at `down`.
    pub rp_secret: String,
}

pub fn actor() -> Actor {
    Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    }
}

/// An upstream Tessera on 127.0.0.2 with a client for `down`; `down` registers it as
/// provider `up` after `adjust` changed the specification.
pub async fn pair(adjust: impl FnOnce(&mut ProviderSpec)) -> Pair {
    pair_on(spawn_app().await, adjust).await
}

/// `pair` with `down` as the downstream Tessera (one that sends mail, say).
pub async fn pair_on(down: TestApp, adjust: impl FnOnce(&mut ProviderSpec)) -> Pair {
    let mut up = spawn_with(|s| s.listen = "127.0.0.2:0".parse().unwrap()).await;
    up.address = up.state.issuer.to_string();
    let callback = format!("{}/federation/up/callback", down.address);
    let bcl = format!("{}/federation/up/backchannel-logout", down.address);
    let secret = up
        .add_client_with("tessera-down", false, |c| {
            c.redirect_uris = vec![callback];
            c.backchannel_logout_uri = Some(bcl);
            c.backchannel_logout_session_required = true;
        })
        .await
        .unwrap();
    let mut spec = ProviderSpec {
        id: "up".into(),
        kind: "oidc".into(),
        name: Some("Upstream SSO".into()),
        issuer: Some(up.address.clone()),
        client_id: "tessera-down".into(),
        client_secret: secret,
        scope: Some("openid email profile groups".into()),
        ..ProviderSpec::default()
    };
    adjust(&mut spec);
    register(&down, &spec).await;
    let rp_secret = down.add_client(RP, false).await.unwrap();
    Pair { up, down, rp_secret }
}

pub async fn register(app: &TestApp, spec: &ProviderSpec) {
    for (_, local) in spec.map_group.iter().filter_map(|m| m.split_once('=')) {
        let name = local.to_string();
        app.state
            .db
            .write(move |c| {
                if db::groups::id_of(c, &name)?.is_none() {
                    db::groups::create(c, &name)?;
                }
                Ok(())
            })
            .await
            .unwrap();
    }
    ::tessera::admin::providers::create(&app.state.ctx(), &app.state.upstreams, &actor(), spec)
        .await
        .unwrap();
}

/// Puts a user of `app` in a group (made if needed).
pub async fn join(app: &TestApp, user_id: i64, group: &str) {
    let group = group.to_string();
    app.state
        .db
        .write(move |c| db::users::add_to_group(c, user_id, &group))
        .await
        .unwrap();
}

pub async fn verify_email(app: &TestApp, user_id: i64) {
    app.state
        .db
        .write(move |c| db::users::set_email_verified(c, user_id, true))
        .await
        .unwrap();
}

impl Pair {
    /// The RP's authorization URL at `down`, with `idp=up` when `direct`.
    pub fn authorize_url(&self, direct: bool) -> String {
        let extra: &[(&str, &str)] = if direct { &[("idp", "up")] } else { &[] };
        self.down.authorize_url(RP, extra)
    }

    /// Signs in at the upstream from its redirect and returns the response of
    /// `down`'s callback.
    pub async fn through_upstream(&self, b: &reqwest::Client, to_upstream: &str, username: &str) -> reqwest::Response {
        assert!(
            to_upstream.starts_with(&self.up.address),
            "expected a redirect to the upstream: {to_upstream}"
        );
        let fields = self.up.open_login(b, to_upstream).await;
        let resp = self.up.submit_login(b, fields, username, PASSWORD).await;
        assert_eq!(
            resp.status(),
            303,
            "upstream login failed: {}",
            resp.text().await.unwrap()
        );
        let back = location(&resp);
        assert!(
            back.starts_with(&format!("{}/federation/up/callback", self.down.address)),
            "{back}"
        );
        b.get(back).send().await.unwrap()
    }

    /// `idp=up`, the upstream's login, back: the RP's redirect parameters.
    pub async fn sign_in(&self, b: &reqwest::Client, username: &str) -> HashMap<String, String> {
        let resp = b.get(self.authorize_url(true)).send().await.unwrap();
        assert_eq!(resp.status(), 303, "idp=up should go to the upstream");

        let resp = self.through_upstream(b, &location(&resp), username).await;
        assert_eq!(resp.status(), 303, "callback failed: {}", resp.text().await.unwrap());
        redirect_params(&resp)
    }

    /// The ID token's claims the RP gets after `sign_in`.
    pub async fn id_token(&self, params: &HashMap<String, String>) -> serde_json::Value {
        let code = params.get("code").unwrap_or_else(|| panic!("no code: {params:?}"));
        let tokens = self.down.exchange(RP, &self.rp_secret, code).await;
        jwt_parts(tokens["id_token"].as_str().unwrap()).1
    }
}

/// The RP's authorization URL at `app` with `idp` and its own `scope`.
pub fn authorize_with(app: &TestApp, idp: &str, scope: &str) -> String {
    let mut url = url::Url::parse(&app.url("/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", RP)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", scope)
        .append_pair("state", "st4te")
        .append_pair("nonce", "n0nce")
        .append_pair("idp", idp);
    url.to_string()
}

/// The inputs of the form on `html` that posts to `action`.
pub fn form_for(html: &str, action: &str) -> HashMap<String, String> {
    let doc = scraper::Html::parse_document(html);
    let sel = scraper::Selector::parse(&format!("form[action=\"{action}\"] input")).unwrap();
    let fields: HashMap<String, String> = doc
        .select(&sel)
        .filter_map(|i| {
            let v = i.value();
            Some((
                v.attr("name")?.to_string(),
                v.attr("value").unwrap_or_default().to_string(),
            ))
        })
        .collect();
    assert!(!fields.is_empty(), "no form posting to {action} on:\n{html}");
    fields
}

/// The live sessions of every account at `app`.
pub async fn live_sessions(app: &TestApp) -> i64 {
    let now = app.clock.now();
    app.state
        .db
        .read(move |c| db::sessions::count_active(c, now))
        .await
        .unwrap()
}

/// How many accounts `app` has.
pub async fn user_count(app: &TestApp) -> i64 {
    app.state.db.read(db::users::count).await.unwrap()
}

/// How many upstream accounts are linked through provider `id`.
pub async fn links_of(app: &TestApp, id: &str) -> i64 {
    let id = id.to_string();
    app.state
        .db
        .read(move |c| db::identities::count_for(c, &id))
        .await
        .unwrap()
}

/// A local account by username, with its groups.
pub async fn local_user(app: &TestApp, username: &str) -> Option<db::users::User> {
    let name = username.to_string();
    app.state
        .db
        .read(move |c| {
            let Some(mut u) = db::users::find_by_username(c, &name)? else {
                return Ok(None);
            };
            db::users::load_groups(c, &mut u)?;
            Ok(Some(u))
        })
        .await
        .unwrap()
}

impl Pair {
    /// Opens `url` at `down` (an authorization with `idp=up`, or a Link button's
    /// answer), signs in at the upstream as `username` and returns the callback URL
    /// the upstream sends the browser back to, unopened.
    pub async fn callback_after(&self, b: &reqwest::Client, url: &str, username: &str) -> String {
        let resp = b.get(url).send().await.unwrap();
        assert_eq!(resp.status(), 303, "expected a redirect to the upstream from {url}");
        self.callback_from(b, &location(&resp), username).await
    }

    /// `callback_after` from the upstream's authorization URL itself.
    pub async fn callback_from(&self, b: &reqwest::Client, to_upstream: &str, username: &str) -> String {
        assert!(
            to_upstream.starts_with(&self.up.address),
            "expected the upstream: {to_upstream}"
        );
        let fields = self.up.open_login(b, to_upstream).await;
        let resp = self.up.submit_login(b, fields, username, PASSWORD).await;
        assert_eq!(
            resp.status(),
            303,
            "upstream login failed: {}",
            resp.text().await.unwrap()
        );
        let back = location(&resp);
        assert!(back.starts_with(&self.down.url("/federation/up/callback")), "{back}");
        back
    }

    /// A sign-in through the upstream for the authorization `url`: the RP's redirect
    /// parameters.
    pub async fn sign_in_at(&self, b: &reqwest::Client, url: &str, username: &str) -> HashMap<String, String> {
        let back = self.callback_after(b, url, username).await;
        let resp = b.get(back).send().await.unwrap();
        assert_eq!(resp.status(), 303, "callback failed: {}", resp.text().await.unwrap());
        redirect_params(&resp)
    }
}

/// Links the upstream account `subject` to the local account `user_id` of `app`
/// (provider `up`), as an administrator or an earlier sign-in would have.
pub async fn link_up(app: &TestApp, subject: &str, user_id: i64) {
    let (subject, now) = (subject.to_string(), app.clock.now());
    app.state
        .db
        .write(move |c| db::identities::link(c, "up", &subject, user_id, None, now))
        .await
        .unwrap();
}
