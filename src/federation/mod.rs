//! Sign-in through upstream identity providers: Tessera as a relying party of other
//! OpenID Connect providers and of GitHub (OAuth 2.0 with its user API). An upstream
//! account is linked to a local one (`identity`), which then signs in as any local
//! sign-in does: second factor, session, code to the client.

pub mod github;
pub mod identity;
pub mod logout;
pub mod upstream;

pub use upstream::Upstreams;

use crate::context::Ctx;
use crate::crypto::sealed::{self, MasterKey};
use crate::db::{self, providers::Provider, Db};
use crate::error::Internal;

/// How Tessera speaks to an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// OpenID Connect: discovery, code + PKCE, a validated ID token, userinfo.
    Oidc,
    /// GitHub (or GitHub Enterprise Server): OAuth 2.0 and its REST API for the user
    /// and their verified addresses; GitHub issues no ID token.
    GitHub,
}

impl Kind {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "oidc" => Some(Kind::Oidc),
            "github" => Some(Kind::GitHub),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Oidc => "oidc",
            Kind::GitHub => "github",
        }
    }

    pub fn default_scope(self) -> &'static str {
        match self {
            Kind::Oidc => "openid email profile",
            Kind::GitHub => "read:user user:email",
        }
    }

    pub fn of(p: &Provider) -> Self {
        Kind::parse(&p.kind).unwrap_or(Kind::Oidc)
    }
}

/// What an upstream says about the person, whichever kind it is.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    pub subject: String,
    pub preferred_username: Option<String>,
    pub name: Option<String>,
    pub email: Option<String>,
    pub email_verified: bool,
    /// The values of the provider's group claim; `None` when the upstream did not
    /// send the claim (memberships are then left as they are).
    pub groups: Option<Vec<String>>,
    /// The upstream's `amr` values (RFC 8176).
    pub amr: Vec<String>,
    /// The upstream session (`sid`), for its back-channel logout.
    pub sid: Option<String>,
}

/// Why an upstream sign-in did not produce a profile.
#[derive(Debug)]
pub enum UpstreamError {
    /// The upstream could not be reached or answered with something unusable
    /// (RFC 6749 §4.1.2.1 `temporarily_unavailable` for the client).
    Unavailable(String),
    /// The upstream refused (its `error`), or what it sent does not hold up (a bad
    /// ID token, a mismatched `iss`): `access_denied` for the client.
    Refused(String),
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Unavailable(m) | UpstreamError::Refused(m) => f.write_str(m),
        }
    }
}

/// The redirect URI to register at the upstream.
pub fn callback_url(cx: &Ctx<'_>, id: &str) -> String {
    cx.url(&format!("/federation/{id}/callback"))
}

/// Where the upstream sends its back-channel logout tokens.
pub fn backchannel_url(cx: &Ctx<'_>, id: &str) -> String {
    cx.url(&format!("/federation/{id}/backchannel-logout"))
}

/// A button on the login page.
#[derive(Debug, Clone)]
pub struct Button {
    pub id: String,
    pub name: String,
}

/// The providers to offer on the login page, by id.
pub async fn buttons(cx: &Ctx<'_>) -> Result<Vec<Button>, Internal> {
    let all = cx.db.read(db::providers::names).await?;
    Ok(all.into_iter().map(|(id, name)| Button { id, name }).collect())
}

/// A provider on the account page: linked (with the address it last reported and
/// since when) or not.
#[derive(Debug, Clone)]
pub struct AccountLink {
    pub id: String,
    pub name: String,
    pub linked: Option<db::identities::Identity>,
}

/// Every provider with the account's link to it, if any.
pub async fn account_links(cx: &Ctx<'_>, user_id: i64) -> Result<Vec<AccountLink>, Internal> {
    let (all, mine) = cx
        .db
        .read(move |c| Ok((db::providers::list(c)?, db::identities::of_user(c, user_id)?)))
        .await?;
    Ok(all
        .into_iter()
        .map(|p| AccountLink {
            linked: mine.iter().find(|i| i.provider_id == p.id).cloned(),
            id: p.id,
            name: p.name,
        })
        .collect())
}

/// A provider by id, if registered.
pub async fn find(cx: &Ctx<'_>, id: &str) -> Result<Option<Provider>, Internal> {
    if id.is_empty() || id.len() > 32 {
        return Ok(None);
    }
    let id = id.to_string();
    Ok(cx.db.read(move |c| db::providers::find(c, &id)).await?)
}

/// The provider's client secret in clear.
pub fn secret(cx: &Ctx<'_>, p: &Provider) -> Result<String, Internal> {
    sealed::open_text(cx.settings.master_key.as_ref(), &p.client_secret).map_err(|e| {
        tracing::error!(provider = %p.id, error = %e, "cannot open the provider's client secret");
        Internal::Failed
    })
}

/// With a master key, provider secrets stored in clear (before the key was set) are
/// sealed in place, as signing keys are; without one, sealed secrets refuse the start.
pub async fn seal_secrets(db: &Db, master: Option<&MasterKey>) -> Result<(), String> {
    let Some(key) = master else {
        if db.read(db::providers::any_sealed).await.map_err(|e| e.to_string())? {
            return Err("upstream provider secrets are encrypted; set TESSERA_MASTER_KEY or --master-key-file".into());
        }
        return Ok(());
    };
    let all = db.read(db::providers::list).await.map_err(|e| e.to_string())?;
    let sealed_now = all
        .into_iter()
        .filter(|p| !sealed::is_sealed(&p.client_secret))
        .map(|p| sealed::seal(key, p.client_secret.as_bytes()).map(|s| (p.id, s)))
        .collect::<Result<Vec<_>, _>>()?;
    if sealed_now.is_empty() {
        return Ok(());
    }
    db.write(move |c| {
        for (id, stored) in &sealed_now {
            db::providers::replace_secret(c, id, stored)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| e.to_string())?;
    tracing::info!("upstream provider secrets are now encrypted at rest");
    Ok(())
}

/// The `amr` of a session opened through an upstream: its values that are RFC 8176
/// tokens, then `fed` (RFC 8176 §2: federated authentication).
pub fn session_amr(upstream: &[String]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for v in upstream.iter().take(8) {
        let ok = !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if ok && v != "fed" && !out.contains(&v.as_str()) {
            out.push(v);
        }
    }
    out.push("fed");
    out.join(" ")
}

/// A federated session's `amr` once a local one-time code was passed too: its
/// methods, then `otp` and `mfa` (each once).
pub fn with_local_code(amr: &str) -> String {
    let mut out: Vec<&str> = amr.split(' ').filter(|v| !v.is_empty()).collect();
    for v in ["otp", "mfa"] {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_code_adds_otp_and_mfa_once() {
        assert_eq!(with_local_code("fed"), "fed otp mfa");
        assert_eq!(with_local_code("pwd otp mfa fed"), "pwd otp mfa fed");
    }

    #[test]
    fn session_amr_keeps_the_upstreams_tokens_and_adds_fed() {
        assert_eq!(session_amr(&[]), "fed");
        let up = ["pwd", "mfa", "otp", "pwd", "bad value", "fed"].map(String::from);
        assert_eq!(session_amr(&up), "pwd mfa otp fed");
    }
}
