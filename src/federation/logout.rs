//! An upstream's back-channel logout (OpenID Connect Back-Channel Logout 1.0): its
//! logout token, checked as §2.6 says, ends the local sessions opened through that
//! upstream account, and Tessera's own clients then get their logout tokens.

use serde_json::{json, Map, Value};

use super::{upstream, Kind, Upstreams};
use crate::audit::Event;
use crate::context::Ctx;
use crate::db;
use crate::error::Internal;

const EVENT: &str = "http://schemas.openid.net/event/backchannel-logout";
/// A logout token may arrive late (the upstream retries); older ones are refused.
const MAX_AGE: i64 = 3600;
const SKEW: i64 = 60;

#[derive(Debug)]
pub enum Refused {
    /// No such provider, or one that sends no logout tokens (GitHub).
    Unknown,
    /// The token does not hold up; the text says why (§2.8: 400 with it).
    Invalid(String),
    Server(Internal),
}

impl From<Internal> for Refused {
    fn from(e: Internal) -> Self {
        Refused::Server(e)
    }
}

/// Checks the logout token and ends the sessions it names; returns how many ended.
pub async fn backchannel(
    cx: &Ctx<'_>,
    upstreams: &Upstreams,
    provider_id: &str,
    token: &str,
) -> Result<usize, Refused> {
    let p = super::find(cx, provider_id).await?.ok_or(Refused::Unknown)?;
    if Kind::of(&p) != Kind::Oidc {
        return Err(Refused::Unknown);
    }
    if token.is_empty() || token.len() > 16 * 1024 {
        return Err(Refused::Invalid("logout_token is missing".into()));
    }
    let now = cx.now;
    let claims = upstream::verified_claims(upstreams, &p, token, now)
        .await
        .map_err(Refused::Invalid)?;
    let (sub, sid) = check(&claims, p.issuer.as_deref().unwrap_or_default(), &p.client_id, now)
        .map_err(|e| Refused::Invalid(e.into()))?;
    // Sessions opened after the token was issued are not its to end (a captured token
    // replayed within its hour would otherwise end the next sign-in too).
    let issued = claims.get("iat").and_then(Value::as_i64).unwrap_or(now);
    let pid = p.id.clone();
    let ended = cx
        .db
        .write(move |c| {
            let sessions = db::sessions::federated(c, &pid, sub.as_deref(), sid.as_deref(), now, issued + SKEW)?;
            for (local_sid, uid) in &sessions {
                db::logout::end_session(c, local_sid, *uid, now)?;
            }
            if !sessions.is_empty() {
                Event::new("federation.logout")
                    .actor(format!("provider:{pid}"))
                    .detail(json!({"sessions": sessions.len()}))
                    .write(c, now)?;
            }
            Ok(sessions.len())
        })
        .await
        .map_err(|e| Refused::Server(e.into()))?;
    cx.logout_wakeup.notify_one();
    Ok(ended)
}

/// §2.6 steps 3–8 on verified claims: the subject and upstream session it names.
fn check(
    claims: &Map<String, Value>,
    issuer: &str,
    client_id: &str,
    now: i64,
) -> Result<(Option<String>, Option<String>), &'static str> {
    if claims
        .get("iss")
        .and_then(Value::as_str)
        .map(|i| i.trim_end_matches('/'))
        != Some(issuer)
    {
        return Err("the logout token's iss is not the provider's issuer");
    }
    let aud_ok = match claims.get("aud") {
        Some(Value::String(a)) => a == client_id,
        Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(client_id)),
        _ => false,
    };
    if !aud_ok {
        return Err("the logout token is not for this client");
    }
    match claims.get("iat").and_then(Value::as_i64) {
        Some(iat) if iat <= now + SKEW && iat >= now - MAX_AGE => {}
        _ => return Err("the logout token's iat is missing or out of range"),
    }
    if claims
        .get("exp")
        .and_then(Value::as_i64)
        .is_some_and(|exp| exp < now - SKEW)
    {
        return Err("the logout token has expired");
    }
    if claims.get("jti").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err("the logout token has no jti");
    }
    if !claims
        .get("events")
        .and_then(|e| e.get(EVENT))
        .is_some_and(Value::is_object)
    {
        return Err("the logout token lacks the back-channel logout event");
    }
    // §2.4: a nonce is forbidden, so an ID token cannot pass for a logout token.
    if claims.contains_key("nonce") {
        return Err("a logout token must not carry a nonce");
    }
    let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_string);
    let (sub, sid) = (text("sub"), text("sid"));
    if sub.is_none() && sid.is_none() {
        return Err("the logout token names neither sub nor sid");
    }
    Ok((sub, sid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Map<String, Value> {
        match json!({
            "iss": "https://up.example", "aud": ["tessera"], "iat": 1000, "jti": "j1",
            "events": {EVENT: {}}, "sub": "s1", "sid": "u-sid"
        }) {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_well_formed_logout_token_names_its_subject_and_session() {
        assert_eq!(
            check(&good(), "https://up.example", "tessera", 1000),
            Ok((Some("s1".into()), Some("u-sid".into())))
        );
    }

    #[test]
    fn each_rule_of_section_2_6_refuses_on_its_own() {
        let cases: [(&str, Value); 6] = [
            ("iss", json!("https://other.example")),
            ("aud", json!("someone-else")),
            ("iat", json!(1000 + 2 * MAX_AGE)),
            ("events", json!({"other": {}})),
            ("nonce", json!("n")),
            ("jti", json!("")),
        ];
        for (claim, value) in cases {
            let mut m = good();
            m.insert(claim.into(), value);
            assert!(check(&m, "https://up.example", "tessera", 1000).is_err(), "{claim}");
        }
        let mut m = good();
        m.remove("sub");
        m.remove("sid");
        assert!(check(&m, "https://up.example", "tessera", 1000).is_err());
        let mut m = good();
        m.remove("iat");
        assert!(check(&m, "https://up.example", "tessera", 1000).is_err());
    }
}
