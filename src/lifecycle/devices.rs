//! Browsers a person signs in from, each named by one long-lived random cookie (only
//! its digest is stored): a completed sign-in records the browser and mails a notice
//! when it is new for the account; "Remember this device" trusts it to skip the second
//! factor for 30 days; a changed or reset password ends every trust.

use crate::audit::Event;
use crate::context::Ctx;
use crate::crypto::TokenHash;
use crate::db::{self, DbError, Tx};
use crate::error::Internal;
use crate::mail::outbox::{self, Mail, Queued};

/// How long "Remember this device" skips the second factor.
pub const TRUST_TTL: i64 = 30 * 24 * 3600;
/// The device cookie's lifetime: the most browsers keep a cookie (400 days, the cap of
/// RFC 6265bis), renewed at each sign-in, so that a browser stays known.
pub const COOKIE_MAX_AGE: i64 = 400 * 24 * 3600;

/// Ends the trust of every browser of the account, inside the caller's transaction
/// (a password change or reset: whoever knew the old password may have been trusted).
pub fn untrust_all(conn: &Tx<'_>, user_id: i64) -> Result<usize, DbError> {
    db::devices::untrust_all(conn, user_id)
}

/// The digest of a device cookie as Tessera sets it (a `Secret`: 43 base64url
/// characters); anything else names no device.
pub fn cookie_digest(value: Option<&str>) -> Option<TokenHash> {
    let v = value?;
    let shaped = v.len() == 43 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    shaped.then(|| TokenHash::of(v))
}

/// Browsers a `User-Agent` is recognised as, by a part of it (the first that matches).
const BROWSERS: [(&str, &str); 6] = [
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("Firefox/", "Firefox"),
    ("Chrome/", "Chrome"),
    ("Chromium/", "Chromium"),
    ("Safari/", "Safari"),
];

/// Systems a `User-Agent` is recognised as, by a part of it (the first that matches).
const SYSTEMS: [(&str, &str); 7] = [
    ("Android", "Android"),
    ("iPhone", "iOS"),
    ("iPad", "iPadOS"),
    ("CrOS", "ChromeOS"),
    ("Mac OS X", "macOS"),
    ("Windows", "Windows"),
    ("Linux", "Linux"),
];

/// What a `User-Agent` says of itself: the browser and the system, if recognised.
enum Named {
    Unknown,
    Both(&'static str, &'static str),
    Browser(&'static str),
    System(&'static str),
    Raw(String),
}

/// The name of the first entry of `list` whose part `ua` contains.
fn first(list: &[(&str, &'static str)], ua: &str) -> Option<&'static str> {
    list.iter()
        .find(|(needle, _)| ua.contains(needle))
        .map(|(_, name)| *name)
}

fn named(user_agent: Option<&str>) -> Named {
    let Some(ua) = user_agent.filter(|u| !u.trim().is_empty()) else {
        return Named::Unknown;
    };
    match (first(&BROWSERS, ua), first(&SYSTEMS, ua)) {
        (Some(b), Some(o)) => Named::Both(b, o),
        (Some(b), None) => Named::Browser(b),
        (None, Some(o)) => Named::System(o),
        (None, None) => Named::Raw(ua.chars().take(40).collect()),
    }
}

/// A short name for a browser from its `User-Agent`: "Firefox on Linux". This is what
/// is stored (in English); `shown` words it in the reader's language.
pub fn label(user_agent: Option<&str>) -> String {
    match named(user_agent) {
        Named::Unknown => "Unknown browser".into(),
        Named::Both(b, o) => format!("{b} on {o}"),
        Named::Browser(b) => b.to_string(),
        Named::System(o) => format!("A browser on {o}"),
        Named::Raw(ua) => ua,
    }
}

/// The short name of a browser in the current language.
fn local_label(user_agent: Option<&str>) -> String {
    let t = crate::i18n::t();
    match named(user_agent) {
        Named::Unknown => t.acct_device_unknown.into(),
        Named::Both(b, o) => t.fill2(t.acct_device_on, "os", o, "browser", b),
        Named::Browser(b) => b.to_string(),
        Named::System(o) => t.fill(t.acct_device_on_os, "os", o),
        Named::Raw(ua) => ua,
    }
}

/// A stored `label` in the current language: its English forms are recognised and
/// worded again; anything else (an unrecognised `User-Agent`) is shown as it is.
pub fn shown(label: &str) -> String {
    let t = crate::i18n::t();
    let known = |list: &[(&str, &str)], name: &str| list.iter().any(|(_, n)| *n == name);
    if label == "Unknown browser" {
        return t.acct_device_unknown.into();
    }
    if let Some(o) = label.strip_prefix("A browser on ").filter(|o| known(&SYSTEMS, o)) {
        return t.fill(t.acct_device_on_os, "os", o);
    }
    match label.split_once(" on ") {
        Some((b, o)) if known(&BROWSERS, b) && known(&SYSTEMS, o) => t.fill2(t.acct_device_on, "os", o, "browser", b),
        _ => label.to_string(),
    }
}

/// A completed sign-in, as the device record and the notice need it.
pub struct SignedIn<'a> {
    pub user_id: i64,
    /// The browser's device cookie (set by the caller if it was new).
    pub cookie: &'a str,
    pub user_agent: Option<&'a str>,
    pub ip: &'a str,
    /// When, as the notice prints it.
    pub at: &'a str,
    /// "Remember this device" was ticked and the second factor passed.
    pub trust: bool,
}

/// Records the browser of a completed sign-in, trusts it if asked, and mails "New
/// sign-in to your account" when the browser is new for an account that has signed in
/// before and has not turned the notice off.
pub async fn signed_in(cx: &Ctx<'_>, s: &SignedIn<'_>) -> Result<(), Internal> {
    let Some(digest) = cookie_digest(Some(s.cookie)) else {
        return Ok(());
    };
    let (uid, now, mail) = (s.user_id, cx.now, Mail::new(cx.settings));
    let name = label(s.user_agent);
    let (device, at) = (local_label(s.user_agent), s.at.to_string());
    let (trust, ip) = (s.trust, s.ip.to_string());
    let queued = cx
        .db
        .write(move |c| {
            // An account's very first browser is new by definition: not announced.
            let first = db::devices::count(c, uid)? == 0;
            let new = db::devices::seen(c, uid, &digest, &name, now)?;
            let Some(user) = db::users::find_by_id(c, uid)? else {
                return Ok(false);
            };
            if trust {
                db::devices::trust(c, uid, &digest, &name, now + TRUST_TTL, now)?;
                Event::new("device.trusted")
                    .actor(&user.username)
                    .ip(Some(ip.as_str()))
                    .detail(serde_json::json!({"device": name}))
                    .write(c, now)?;
            }
            if !new || first || !db::users::lifecycle(c, uid)?.notify_new_device {
                return Ok(false);
            }
            let t = mail.t;
            let what = t.fill2(t.mail_new_sign_in, "at", &at, "ip", &ip);
            let what = t.fill2(&what, "username", &user.username, "device", &device);
            let q = outbox::notify(c, &mail, &user, t.mail_new_sign_in_subject, &what, now)?;
            Ok(q == Queued::Yes)
        })
        .await?;
    if queued {
        super::wake(cx);
    }
    Ok(())
}

/// Whether this browser's cookie is trusted to skip the account's second factor now.
pub async fn is_trusted(cx: &Ctx<'_>, user_id: i64, cookie: Option<&str>) -> Result<bool, Internal> {
    let Some(digest) = cookie_digest(cookie) else {
        return Ok(false);
    };
    let now = cx.now;
    Ok(cx
        .db
        .read(move |c| db::devices::is_trusted(c, user_id, &digest, now))
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_agents_are_summarised() {
        let firefox = "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
        assert_eq!(label(Some(firefox)), "Firefox on Linux");
        let edge = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36 Edg/126.0";
        assert_eq!(label(Some(edge)), "Edge on Windows");
        let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";
        assert_eq!(label(Some(iphone)), "Safari on iOS");
        assert_eq!(label(None), "Unknown browser");
        assert_eq!(label(Some("curl/8.0")), "curl/8.0");
    }

    #[test]
    fn stored_labels_are_shown_as_they_were_made_in_english() {
        for label in [
            "Firefox on Linux",
            "A browser on iOS",
            "Unknown browser",
            "Safari",
            "curl/8.0",
        ] {
            assert_eq!(shown(label), label);
        }
        assert_eq!(local_label(Some("Mozilla/5.0 (iPad) Safari/604.1")), "Safari on iPadOS");
    }

    #[test]
    fn only_cookies_shaped_like_ours_name_a_device() {
        let ours = crate::domain::Secret::generate();
        assert!(cookie_digest(Some(ours.expose())).is_some());
        assert!(cookie_digest(Some("tessera:not-a-cookie-value-of-ours-at-all-00000")).is_none());
        assert!(cookie_digest(Some("short")).is_none());
        assert!(cookie_digest(None).is_none());
    }
}
