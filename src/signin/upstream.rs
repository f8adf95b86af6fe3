//! The round trip to an upstream: `begin` parks the sign-in under the `state` it sends
//! (with the `nonce` and PKCE verifier) and names the upstream URL; `callback` takes
//! the record back once, for the browser that began, and asks the upstream who signed
//! in. What the sign-in then does is the same as for a local sign-in.

use crate::crypto::random::sha256_b64;
use crate::crypto::TokenHash;
use crate::db::providers::Provider;
use crate::domain::Secret;
use crate::error::Internal;
use crate::federation::{github, upstream, Kind, Profile, UpstreamError};
use crate::signin::{Parked, Pending, ResumeError};

/// Why the upstream could not be asked.
#[derive(Debug)]
pub enum Begin {
    /// Its discovery document or keys cannot be read.
    Unavailable(String),
    /// The parked sign-in is gone (used, expired).
    Expired,
    Server(Internal),
}

impl From<ResumeError> for Begin {
    fn from(e: ResumeError) -> Self {
        match e {
            ResumeError::Server(e) => Begin::Server(e),
            _ => Begin::Expired,
        }
    }
}

/// Parks `then` (in place of the record `consume` names, if any) for the upstream's
/// answer and returns the URL to send the browser to.
pub async fn begin(
    cx: &crate::oidc::Ctx<'_>,
    upstreams: &crate::federation::Upstreams,
    p: &Provider,
    consume: Option<&str>,
    then: Pending,
    link_user: Option<i64>,
    browser: &TokenHash,
) -> Result<String, Begin> {
    let (name, nonce, verifier) = (Secret::generate(), Secret::generate(), Secret::generate());
    let challenge = sha256_b64(verifier.expose().as_bytes());
    let redirect = crate::federation::callback_url(cx, &p.id);
    // The URL first: an upstream that cannot be reached leaves the parked sign-in as
    // it was, so the login page can offer the other ways in.
    let passed = passed_on(&then);
    let extra: Vec<(&str, &str)> = passed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let url = match Kind::of(p) {
        Kind::Oidc => {
            let ask = upstream::Ask {
                redirect_uri: &redirect,
                state: name.expose(),
                nonce: nonce.expose(),
                challenge: &challenge,
                extra: &extra,
            };
            upstream::authorization_url(upstreams, p, &ask, cx.now)
                .await
                .map_err(|e| Begin::Unavailable(e.to_string()))?
        }
        Kind::GitHub => github::authorization_url(p, &redirect, name.expose(), &challenge),
    };
    let pending = Pending::Federation {
        provider: p.id.clone(),
        nonce: nonce.expose().to_string(),
        verifier: verifier.expose().to_string(),
        link_user,
        then: Box::new(then),
    };
    crate::signin::park_named(cx, consume, &pending, browser, name).await?;
    Ok(url)
}

/// What of the client's request the upstream is asked too (Core §3.1.2.1): a fresh
/// sign-in for `prompt=login` (else the upstream's own session would answer, and the
/// person would not have signed in again), and the `login_hint`.
fn passed_on(then: &Pending) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Pending::Login(r) = then {
        if r.prompt.login {
            out.push(("prompt", "login".to_string()));
        }
        if let Some(m) = r.max_age {
            out.push(("max_age", m.to_string()));
        }
        if let Some(hint) = r.login_hint.as_deref() {
            out.push(("login_hint", hint.to_string()));
        }
    }
    out
}

/// The client's `max_age`, which the upstream's `auth_time` must meet.
fn max_age_of(then: &Pending) -> Option<i64> {
    match then {
        Pending::Login(r) => r.max_age,
        _ => None,
    }
}

/// What the upstream's redirect carries (RFC 6749 §4.1.2, RFC 9207 §2).
#[derive(Debug, Default)]
pub struct Answer {
    pub state: String,
    pub code: Option<String>,
    pub error: Option<String>,
    pub iss: Option<String>,
}

/// The sign-in the callback resumes, re-parked under new names (the upstream's
/// `state` is used up), and what the upstream said.
pub struct Returned {
    pub provider: Provider,
    pub then: Pending,
    pub link_user: Option<i64>,
    pub parked: Parked,
    pub profile: Result<Profile, UpstreamError>,
}

/// Takes back the sign-in parked under the answer's `state` (once, and only in the
/// browser that began it), then redeems the code.
pub async fn callback(
    cx: &crate::oidc::Ctx<'_>,
    upstreams: &crate::federation::Upstreams,
    provider_id: &str,
    answer: &Answer,
    browser: Option<&TokenHash>,
) -> Result<Returned, ResumeError> {
    let Pending::Federation {
        provider,
        nonce,
        verifier,
        link_user,
        then,
    } = crate::signin::resume_named(cx, &answer.state, browser).await?
    else {
        return Err(ResumeError::Expired);
    };
    let (Some(browser), true) = (browser, provider == provider_id) else {
        return Err(ResumeError::Forged);
    };
    let p = crate::federation::find(cx, &provider)
        .await?
        .ok_or(ResumeError::Expired)?;
    let parked = crate::signin::park_next(cx, &answer.state, &then, browser).await?;
    let profile = redeem(cx, upstreams, &p, answer, &verifier, (&nonce, max_age_of(&then))).await;
    Ok(Returned {
        provider: p,
        then: *then,
        link_user,
        parked,
        profile,
    })
}

async fn redeem(
    cx: &crate::oidc::Ctx<'_>,
    upstreams: &crate::federation::Upstreams,
    p: &Provider,
    answer: &Answer,
    verifier: &str,
    (nonce, max_age): (&str, Option<i64>),
) -> Result<Profile, UpstreamError> {
    let now = cx.now;
    if let Some(error) = &answer.error {
        let error: String = error.chars().filter(|c| c.is_ascii_graphic()).take(64).collect();
        return Err(match error.as_str() {
            "temporarily_unavailable" | "server_error" => {
                UpstreamError::Unavailable(format!("{} is not available right now ({error})", p.name))
            }
            _ => UpstreamError::Refused(format!("{} did not sign you in ({error})", p.name)),
        });
    }
    if Kind::of(p) == Kind::Oidc {
        // RFC 9207 §2.4: an `iss` must be the upstream's; when its metadata promises
        // one, a response without it may come from another issuer (a mix-up attack).
        let issuer = p.issuer.as_deref().unwrap_or_default();
        match &answer.iss {
            Some(iss) if iss.trim_end_matches('/') != issuer => {
                return Err(UpstreamError::Refused(format!(
                    "the answer names another issuer than {}",
                    p.name
                )))
            }
            Some(_) => {}
            None if upstream::requires_iss(upstreams, p, now).await? => {
                return Err(UpstreamError::Refused(format!("{}'s answer lacks its issuer", p.name)))
            }
            None => {}
        }
    }
    let code = answer
        .code
        .as_deref()
        .filter(|c| !c.is_empty() && c.len() <= 4096)
        .ok_or_else(|| UpstreamError::Refused(format!("{} sent no authorization code", p.name)))?;
    let secret = crate::federation::secret(cx, p)
        .map_err(|_| UpstreamError::Unavailable("the provider's secret cannot be read".into()))?;
    let redirect = crate::federation::callback_url(cx, &p.id);
    match Kind::of(p) {
        Kind::Oidc => {
            let r = upstream::Redeem {
                secret: &secret,
                code,
                verifier,
                redirect_uri: &redirect,
                nonce,
                max_age,
                now,
            };
            upstream::finish(upstreams, p, &r).await
        }
        Kind::GitHub => github::finish(upstreams, p, &secret, code, verifier, &redirect).await,
    }
}

/// Why an upstream's answer did not sign in; the login form says so, for the
/// parked sign-in (re-parked under new names).
#[derive(Debug)]
pub enum Why {
    /// The upstream could not be reached (502).
    Unreachable,
    /// The upstream refused, in its words (403).
    Refused(String),
    /// The local account is disabled (403).
    Disabled,
    /// The provider asks for a local second factor the account does not have (403).
    NeedsFactor,
    /// No local account is, or may be, linked to the upstream one (403).
    Unlinked,
}

/// Where an upstream's answer leads.
pub enum Back {
    /// The sign-in goes on: the second factor, or signed in.
    Next(crate::signin::Next),
    /// Not signed in: the login form again for `then`, parked under `parked`.
    Again {
        provider: Box<Provider>,
        parked: Parked,
        then: Box<Pending>,
        why: Why,
    },
    /// Linking an upstream account to the signed-in account `user_id` (the account
    /// page): the parked record is the caller's to use up.
    Link {
        provider: Box<Provider>,
        profile: Box<Profile>,
        user_id: i64,
        parked: Parked,
    },
    /// Linking failed at the upstream (audited; the parked record is used up).
    LinkFailed,
}

/// The upstream sends the browser back: the parked sign-in taken back once, the code
/// redeemed, the local account found (or made, `federation::identity`), then the
/// second factor or the end of the sign-in, as for any first factor.
pub async fn returned(
    cx: &crate::oidc::Ctx<'_>,
    upstreams: &crate::federation::Upstreams,
    provider_id: &str,
    answer: &Answer,
    browser: &crate::signin::Browser,
) -> Result<Back, crate::signin::second::Refused> {
    let Returned {
        provider,
        then,
        link_user,
        parked,
        profile,
    } = callback(cx, upstreams, provider_id, answer, browser.binding.as_ref()).await?;
    let profile = match profile {
        Ok(p) => p,
        Err(e) => {
            crate::audit::Event::new("federation.failed")
                .actor(format!("provider:{}", provider.id))
                .ip(Some(browser.ip.clone()))
                .detail(serde_json::json!({"reason": e.to_string()}))
                .log(cx.db, cx.now)
                .await;
            if link_user.is_some() {
                let _ = crate::signin::consume(cx, parked.request_id.expose()).await;
                return Ok(Back::LinkFailed);
            }
            return Ok(again(
                &provider,
                &parked,
                &then,
                match e {
                    UpstreamError::Unavailable(_) => Why::Unreachable,
                    UpstreamError::Refused(why) => Why::Refused(why),
                },
            ));
        }
    };
    if let Some(user_id) = link_user {
        return Ok(Back::Link {
            provider: Box::new(provider),
            profile: Box::new(profile),
            user_id,
            parked,
        });
    }
    use crate::federation::identity::{self, Resolved};
    let user = match identity::resolve(cx, &provider, &profile, None).await? {
        Resolved::User(u) => u,
        Resolved::Disabled => return Ok(again(&provider, &parked, &then, Why::Disabled)),
        Resolved::NeedsFactor => return Ok(again(&provider, &parked, &then, Why::NeedsFactor)),
        _ => return Ok(again(&provider, &parked, &then, Why::Unlinked)),
    };
    if provider.require_local_mfa
        && crate::auth::mfa::kind(cx, user.id)
            .await
            .map_err(crate::error::Internal::from)?
            .is_none()
    {
        return Ok(again(&provider, &parked, &then, Why::NeedsFactor));
    }
    let federated = crate::signin::Federated {
        provider: provider.id.clone(),
        subject: profile.subject.clone(),
        sid: profile.sid.clone(),
        amr: crate::federation::session_amr(&profile.amr),
    };
    let request_id = parked.request_id.expose();
    let first = crate::signin::First::Upstream;
    let step = crate::signin::first::after_factor(cx, request_id, then, &user, first, Some(federated), browser);
    Ok(Back::Next(step.await?))
}

/// The login form again for the re-parked sign-in, saying why.
fn again(provider: &Provider, parked: &Parked, then: &Pending, why: Why) -> Back {
    Back::Again {
        provider: Box::new(provider.clone()),
        parked: Parked {
            request_id: parked.request_id.clone(),
            csrf: parked.csrf.clone(),
        },
        then: Box::new(then.clone()),
        why,
    }
}
