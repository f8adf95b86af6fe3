//! Forward-auth: a reverse proxy asks, for each request to a protected app, whether the
//! browser behind it may pass (docs/FORWARD_AUTH.md). The answer rests on the
//! `tessera_fa` cookie, a token bound to an SSO session, which `/authz/sign-in` sets on
//! the apps' shared cookie domain after a sign-in at Tessera.

pub mod target;

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::json;

use crate::audit::Event;
use crate::context::Ctx;
use crate::crypto::TokenHash;
use crate::db::{self, apps::App, forward_auth::Holder, sessions::Session};
use crate::domain::Secret;
use crate::error::Internal;
pub use target::Target;

/// The cookie a protected app's browser carries.
pub const COOKIE: &str = "tessera_fa";

/// What the proxy is told.
#[derive(Debug)]
pub enum Decision {
    /// No live forward-auth token: the browser must sign in at this URL first.
    SignIn(String),
    /// Let it through, telling the app who it is with these headers.
    Allow(Vec<(String, String)>),
    /// Signed in, but this app is not for this person, or the host is not registered.
    Forbidden(&'static str),
}

/// The (token, app) pairs this node has already audited, so a grant of access is
/// written once per token and app, not once per request. Bounded: when full it
/// starts over, and the database's `forward_auth_access` row keeps it to one event.
#[derive(Default)]
/// Keyed on the app's creation time too, so an app deleted and made again under the
/// same id is audited afresh.
pub struct Seen(Mutex<HashSet<SeenKey>>);

type SeenKey = (TokenHash, String, i64);

const SEEN_CAPACITY: usize = 10_000;

impl Seen {
    fn contains(&self, key: &SeenKey) -> bool {
        self.0.lock().map(|s| s.contains(key)).unwrap_or(false)
    }

    fn insert(&self, key: SeenKey) {
        if let Ok(mut s) = self.0.lock() {
            if s.len() >= SEEN_CAPACITY {
                s.clear();
            }
            s.insert(key);
        }
    }
}

/// The sign-in URL that brings the browser back to `original` afterwards.
pub fn sign_in_url(cx: &Ctx<'_>, original: &str) -> String {
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("rd", original)
        .finish();
    cx.url(&format!("/authz/sign-in?{query}"))
}

/// The app registered for the target's host.
pub async fn app_for(cx: &Ctx<'_>, target: &Target) -> Result<Option<App>, Internal> {
    let host = target.host.clone();
    Ok(cx.db.read(move |c| db::apps::find_by_host(c, &host)).await?)
}

/// Whether `holder` may use `app`: a member of one of its groups (when it names any),
/// and signed in with a second factor when it asks for one.
pub fn allowed(app: &App, holder: &Holder) -> Result<(), &'static str> {
    if !app.allowed_groups.is_empty() && !holder.groups.iter().any(|g| app.allowed_groups.contains(g)) {
        return Err("your account is not in a group allowed to use this application");
    }
    if app.require_mfa && !holder.amr.split(' ').any(|m| m == "mfa") {
        return Err("this application needs a sign-in with a second factor");
    }
    Ok(())
}

/// The headers that tell the app who passed (`Remote-User`, … with the app's prefix).
/// All four are always sent, empty when the account has no such attribute: a proxy
/// that copies a header the answer lacks may pass a placeholder on instead (Caddy
/// 2.6). A value that cannot be a header value is sent empty rather than mangled.
pub fn identity_headers(app: &App, holder: &Holder) -> Vec<(String, String)> {
    let p = &app.header_prefix;
    let clean = |v: &str| {
        if v.chars().any(char::is_control) {
            String::new()
        } else {
            v.to_string()
        }
    };
    vec![
        (format!("{p}User"), clean(&holder.username)),
        (format!("{p}Email"), clean(holder.email.as_deref().unwrap_or(""))),
        (format!("{p}Name"), clean(holder.name.as_deref().unwrap_or(""))),
        (format!("{p}Groups"), clean(&holder.groups.join(","))),
    ]
}

/// The app a question is about: the one the proxy's site names (`?app=ID`, which ties
/// a proxy site to one app whatever host the client claims), which the target's host
/// must then be; else the one registered for the target's host.
async fn app_asked(cx: &Ctx<'_>, target: &Target, pinned: Option<&str>) -> Result<Result<App, &'static str>, Internal> {
    let Some(id) = pinned else {
        return Ok(app_for(cx, target)
            .await?
            .ok_or("this host is not an application registered at Tessera"));
    };
    let id = id.to_string();
    let Some(app) = cx.db.read(move |c| db::apps::find(c, &id)).await? else {
        return Ok(Err("the proxy names an application that is not registered at Tessera"));
    };
    if app.host != target.host {
        return Ok(Err("this proxy site is for another application's host"));
    }
    Ok(Ok(app))
}

/// The proxy's question: may the browser with forward-auth cookie `token` open
/// `target` (of app `pinned`, when the proxy's site names one)?
pub async fn decide(
    cx: &Ctx<'_>,
    seen: &Seen,
    target: &Target,
    pinned: Option<&str>,
    token: Option<&str>,
    ip: &str,
) -> Result<Decision, Internal> {
    let app = match app_asked(cx, target, pinned).await? {
        Ok(app) => app,
        Err(why) => return Ok(Decision::Forbidden(why)),
    };
    let now = cx.now;
    let hash = token.filter(|t| !t.is_empty() && t.len() <= 128).map(TokenHash::of);
    let holder = match &hash {
        Some(h) => {
            let h = *h;
            cx.db.read(move |c| db::forward_auth::holder(c, &h, now)).await?
        }
        None => None,
    };
    let (Some(hash), Some(holder)) = (hash, holder) else {
        return Ok(Decision::SignIn(sign_in_url(cx, target.as_str())));
    };
    if let Err(why) = allowed(&app, &holder) {
        return Ok(Decision::Forbidden(why));
    }
    audit_first_access(cx, seen, &hash, &app, &holder, target, ip).await?;
    Ok(Decision::Allow(identity_headers(&app, &holder)))
}

/// Records a question whose browser sent two `tessera_fa` cookies (one set by another
/// host under the shared domain, RFC 6265 §8.6): answered as if it sent none, and
/// audited once, here, so an operator sees the attempt.
pub async fn several_cookies(cx: &Ctx<'_>, target: &Target, ip: &str) {
    Event::new("forward_auth.cookie_conflict")
        .target(format!("host:{}", target.host))
        .ip(Some(ip.to_string()))
        .detail(json!({"host": target.host, "method": target.method, "cookie": COOKIE}))
        .log(cx.db, cx.now)
        .await;
}

/// Writes `forward_auth.granted` the first time a token opens an app (once across the
/// nodes: the access row decides who writes it).
async fn audit_first_access(
    cx: &Ctx<'_>,
    seen: &Seen,
    hash: &TokenHash,
    app: &App,
    holder: &Holder,
    target: &Target,
    ip: &str,
) -> Result<(), Internal> {
    let key = (*hash, app.id.clone(), app.created_at);
    if seen.contains(&key) {
        return Ok(());
    }
    let (h, app_id, now) = (*hash, app.id.clone(), cx.now);
    let event = Event::new("forward_auth.granted")
        .actor(holder.username.clone())
        .target(format!("app:{}", app.id))
        .ip(Some(ip.to_string()))
        .detail(json!({"sid": holder.sid, "host": target.host, "method": target.method}));
    cx.db
        .write(move |c| {
            if db::forward_auth::first_access(c, &h, &app_id, now)? {
                event.write(c, now)?;
            }
            Ok(())
        })
        .await?;
    seen.insert(key);
    Ok(())
}

/// Why `/authz/sign-in` will not send the browser to `rd`.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a URL these rules accept (`target::Target::parse`).
    Malformed(&'static str),
    /// No registered app has that host.
    Unregistered,
    /// The app is registered with the other scheme: an http `rd` for an https app
    /// would fetch a cookie without `Secure` and send the browser over plain http.
    OtherScheme,
    /// The app's host is outside the cookie domain: the cookie would never reach it.
    OutsideCookieDomain,
}

/// Checks `rd` before a sign-in goes back to it: a well-formed http(s) URL of a
/// registered app whose host the forward-auth cookie reaches.
pub async fn return_target(cx: &Ctx<'_>, rd: &str) -> Result<Result<(Target, App), Refusal>, Internal> {
    let target = match Target::parse(rd, "GET") {
        Ok(t) => t,
        Err(why) => return Ok(Err(Refusal::Malformed(why))),
    };
    let Some(app) = app_for(cx, &target).await? else {
        return Ok(Err(Refusal::Unregistered));
    };
    if target.is_https() != app_is_https(&app) {
        return Ok(Err(Refusal::OtherScheme));
    }
    if !cookie_reaches(cx, &target.hostname) {
        return Ok(Err(Refusal::OutsideCookieDomain));
    }
    Ok(Ok((target, app)))
}

/// Whether the app is registered on https: its forward-auth cookie is then `Secure`.
pub fn app_is_https(app: &App) -> bool {
    app.url.starts_with("https://")
}

/// Whether a cookie set by Tessera's host reaches `hostname` (RFC 6265 §5.1.3): within
/// the configured cookie domain, or Tessera's own host when none is set.
pub fn cookie_reaches(cx: &Ctx<'_>, hostname: &str) -> bool {
    match &cx.settings.forward_auth_cookie_domain {
        Some(domain) => hostname == domain || hostname.ends_with(&format!(".{domain}")),
        None => url::Url::parse(cx.issuer)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .is_some_and(|own| own == hostname),
    }
}

/// A forward-auth token for `session`: the one the browser presents when it is live
/// and of this same session (so coming back to sign-in adds no rows), else a new one;
/// the raw value for the cookie, and its lifetime in seconds (the session's remaining
/// one).
pub async fn issue(cx: &Ctx<'_>, session: &Session, presented: Option<&str>) -> Result<(Secret, i64), Internal> {
    let now = cx.now;
    if let Some(value) = presented.filter(|t| !t.is_empty() && t.len() <= 128) {
        let hash = TokenHash::of(value);
        let holder = cx.db.read(move |c| db::forward_auth::holder(c, &hash, now)).await?;
        if holder.is_some_and(|h| h.sid == session.sid) {
            return Ok((
                Secret::from_string(value.to_string()),
                (session.expires_at - now).max(0),
            ));
        }
    }
    let token = Secret::generate();
    let hash = token.hash();
    let (sid, expires_at) = (session.sid.clone(), session.expires_at);
    cx.db
        .write(move |c| db::forward_auth::insert(c, &hash, &sid, now, expires_at))
        .await?;
    Ok((token, (expires_at - now).max(0)))
}
