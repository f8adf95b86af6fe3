//! Tessera's own pages: a signed-in portal browser, administrators, the audit log.

use tessera::db;

use super::{browser, input_value, location, text_of, TestApp, PASSWORD};

impl TestApp {
    /// Signs in to Tessera's own pages through `/account`; returns the session's CSRF token.
    pub async fn portal_login(&self, browser: &reqwest::Client, username: &str, password: &str) -> String {
        let fields = self.open_login(browser, &self.url("/account")).await;
        let resp = self.submit_login(browser, fields, username, password).await;
        assert_eq!(resp.status(), 302, "portal login failed");
        assert_eq!(location(&resp), "/account");
        self.csrf(browser).await
    }

    /// An administrator `root`, signed in to Tessera's pages: the browser and its CSRF
    /// token.
    pub async fn admin_browser(&self) -> (reqwest::Client, String) {
        let root = self.add_user("root").await;
        self.make_admin(root.id).await;
        let b = browser();
        let csrf = self.portal_login(&b, "root", PASSWORD).await;
        (b, csrf)
    }

    /// The CSRF token on the account page of a signed-in browser.
    pub async fn csrf(&self, browser: &reqwest::Client) -> String {
        let html = browser
            .get(self.url("/account"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        input_value(&html, "csrf").expect("a signed-in account page")
    }

    /// Makes a user an administrator.
    pub async fn make_admin(&self, user_id: i64) {
        self.state
            .db
            .write(move |c| db::users::set_admin(c, user_id, true, 0))
            .await
            .unwrap();
    }

    /// Audit events recorded so far, oldest first, as (event, actor, target).
    pub async fn audit(&self) -> Vec<(String, Option<String>, Option<String>)> {
        let (entries, _) = self
            .state
            .db
            .read(|c| db::audit::list(c, &db::audit::Filter::default(), 10_000, 0))
            .await
            .unwrap();
        entries
            .into_iter()
            .rev()
            .map(|e| (e.event, e.actor, e.target))
            .collect()
    }
}
impl TestApp {
    /// Turns on an authenticator app from the account page of a signed-in browser;
    /// returns its secret (the enrolment spent the current step's code).
    pub async fn enrol_totp(&self, b: &reqwest::Client, csrf: &str) -> String {
        let html = b
            .get(self.url("/account/totp"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let key = text_of(&html, "totp-secret").expect("the key is shown");
        let code = tessera::auth::totp::code_at(&key, self.clock.now()).unwrap();
        let enrolled = b
            .post(self.url("/account/totp"))
            .form(&[("csrf", csrf), ("code", code.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(enrolled.status(), 200, "the authenticator app is on");
        key
    }
}

/// A browser signed in to Tessera's pages and its session's CSRF token: a form post
/// carries the token, a page is read as text.
pub struct Portal<'a> {
    pub app: &'a TestApp,
    pub b: reqwest::Client,
    pub csrf: String,
}

impl Portal<'_> {
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.b.get(self.app.url(path)).send().await.unwrap()
    }

    /// The text of the page at `path`.
    pub async fn page(&self, path: &str) -> String {
        self.get(path).await.text().await.unwrap()
    }

    /// Posts a form to `path` with the session's CSRF token before `fields`.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        let mut form = vec![("csrf", self.csrf.as_str())];
        form.extend_from_slice(fields);
        self.b.post(self.app.url(path)).form(&form).send().await.unwrap()
    }
}

impl TestApp {
    /// A call to the admin API at `/admin/api{path}` with `token`: the status and the
    /// JSON body (null when there is none).
    pub async fn admin_api(
        &self,
        token: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let mut req = super::plain_client()
            .request(method, self.url(&format!("/admin/api{path}")))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// `admin_browser` as a `Portal`.
    pub async fn admin_portal(&self) -> Portal<'_> {
        let (b, csrf) = self.admin_browser().await;
        Portal { app: self, b, csrf }
    }

    /// A fresh browser signed in to the portal as `username` with `password`.
    pub async fn portal(&self, username: &str, password: &str) -> Portal<'_> {
        let b = browser();
        let csrf = self.portal_login(&b, username, password).await;
        Portal { app: self, b, csrf }
    }
}
