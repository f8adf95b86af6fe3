//! Upstream identity providers: registration, listing and removal, and the links of
//! users to them, as the CLI, the admin pages and the admin API do them. The client secret is sealed with the master
//! key when one is set, and never shown again.

use serde_json::{json, Value};

use super::{invalid, Actor, AdminError, ListQuery, Listed, Problems};
use crate::context::Ctx;
use crate::crypto::sealed;
use crate::db::{self, providers::Provider};
use crate::federation::Kind;
use crate::federation::Upstreams;

/// What an administrator asks for; `build` checks it. The admin API's request body
/// has these names.
#[derive(Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderSpec {
    pub id: String,
    /// `oidc` (default) or `github`.
    pub kind: String,
    pub name: Option<String>,
    pub issuer: Option<String>,
    pub client_id: String,
    pub client_secret: String,
    pub scope: Option<String>,
    pub jit: bool,
    pub link_by_email: bool,
    pub group_claim: Option<String>,
    /// `UPSTREAM=LOCAL` pairs.
    pub map_group: Vec<String>,
    pub require_local_mfa: bool,
}

/// `Debug` leaves the client secret out.
impl std::fmt::Debug for ProviderSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSpec")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Whether `id` can name a provider in URLs (`/federation/ID/callback`).
pub fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && id.len() <= 32
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// An issuer or GitHub Enterprise base: https, or http to a loopback address (tests and
/// labs); no query, fragment or credentials; stored without a trailing slash.
pub fn parse_issuer(text: &str) -> Result<String, String> {
    let url = url::Url::parse(text.trim()).map_err(|_| format!("`{text}` is not a URL"))?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => return Err("must have a host".into()),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => return Err("must be https (http is accepted only for loopback addresses)".into()),
        _ => return Err("must be an https URL".into()),
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err("must have no query, fragment or credentials".into());
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

/// Checks a specification and makes the record to store (secret still in clear).
pub fn build(spec: &ProviderSpec, now: i64) -> Result<Provider, Problems> {
    let mut problems = Problems::new();
    // The first problem found in a field is the one shown.
    let mut problem = |field: &str, msg: String| {
        problems.entry(field.to_string()).or_insert(msg);
    };
    let id = spec.id.trim();
    if !valid_id(id) {
        problem(
            "id",
            "1 to 32 characters: lowercase letters, digits, `-` and `_`, starting with a letter or digit".into(),
        );
    }
    let kind = match Kind::parse(if spec.kind.is_empty() { "oidc" } else { &spec.kind }) {
        Some(k) => k,
        None => {
            problem("kind", "must be `oidc` or `github`".into());
            Kind::Oidc
        }
    };
    let issuer = issuer(spec, kind, &mut problem);
    let client_id = spec.client_id.trim();
    if client_id.is_empty() || client_id.len() > 512 {
        problem(
            "client_id",
            "the client id the upstream issued (1 to 512 characters)".into(),
        );
    }
    let secret = spec.client_secret.trim();
    if secret.is_empty() || secret.len() > 4096 {
        problem("client_secret", "the client secret the upstream issued".into());
    }
    let name = spec
        .name
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(id);
    if name.chars().count() > 64 {
        problem("name", "at most 64 characters".into());
    }
    let scope = scope(spec, kind, &mut problem);
    let (group_claim, group_map) = groups(spec, &mut problem);
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Provider {
        id: id.to_string(),
        kind: kind.as_str().to_string(),
        name: name.to_string(),
        issuer,
        client_id: client_id.to_string(),
        client_secret: secret.to_string(),
        scope,
        jit: spec.jit,
        link_by_email: spec.link_by_email,
        require_local_mfa: spec.require_local_mfa,
        group_claim: group_claim.map(str::to_string),
        group_map,
        created_at: now,
        updated_at: now,
    })
}

/// The issuer URL, which an OpenID Connect provider must have (GitHub's is optional:
/// an Enterprise base).
fn issuer(spec: &ProviderSpec, kind: Kind, problem: &mut impl FnMut(&str, String)) -> Option<String> {
    match spec.issuer.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => match parse_issuer(text) {
            Ok(u) => Some(u),
            Err(e) => {
                problem("issuer", e);
                None
            }
        },
        None if kind == Kind::Oidc => {
            problem("issuer", "an OpenID Connect provider needs its issuer URL".into());
            None
        }
        None => None,
    }
}

/// The scopes asked of the upstream, spaces collapsed; the kind's default when none.
fn scope(spec: &ProviderSpec, kind: Kind, problem: &mut impl FnMut(&str, String)) -> String {
    let scope = spec
        .scope
        .as_deref()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| kind.default_scope().to_string());
    if kind == Kind::Oidc && !scope.split(' ').any(|s| s == "openid") {
        problem("scope", "must include `openid`".into());
    }
    if scope.len() > 512 || scope.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
        problem("scope", "space-separated scope names".into());
    }
    scope
}

/// The claim the upstream's groups are read from, and the upstream-to-local group
/// pairs, sorted and without repeats.
fn groups<'a>(
    spec: &'a ProviderSpec,
    problem: &mut impl FnMut(&str, String),
) -> (Option<&'a str>, Vec<(String, String)>) {
    let group_claim = spec.group_claim.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if let Some(claim) = group_claim {
        if claim.len() > 128 || claim.split('.').any(|part| part.is_empty()) {
            problem(
                "group_claim",
                "a claim name, or a dotted path such as realm_access.roles".into(),
            );
        }
    }
    let mut group_map = Vec::new();
    for pair in &spec.map_group {
        match pair.split_once('=') {
            Some((up, local)) if !up.trim().is_empty() && !local.trim().is_empty() && up.len() <= 256 => {
                group_map.push((up.trim().to_string(), local.trim().to_string()));
            }
            _ => problem("map_group", format!("`{pair}` is not UPSTREAM=LOCAL")),
        }
    }
    if !group_map.is_empty() && group_claim.is_none() {
        problem(
            "group_claim",
            "group mappings need the claim they read (--group-claim)".into(),
        );
    }
    group_map.sort();
    group_map.dedup();
    (group_claim, group_map)
}

/// The JSON form (API, `provider list --json`, audit), without the secret; with the
/// redirect URI to register at the upstream.
pub fn view(cx: &Ctx<'_>, p: &Provider) -> Value {
    json!({
        "id": p.id,
        "kind": p.kind,
        "name": p.name,
        "issuer": p.issuer,
        "client_id": p.client_id,
        "scope": p.scope,
        "jit": p.jit,
        "link_by_email": p.link_by_email,
        "require_local_mfa": p.require_local_mfa,
        "group_claim": p.group_claim,
        "map_group": p.group_map.iter().map(|(u, l)| format!("{u}={l}")).collect::<Vec<_>>(),
        "redirect_uri": crate::federation::callback_url(cx, &p.id),
        "backchannel_logout_uri": crate::federation::backchannel_url(cx, &p.id),
        "created_at": p.created_at,
    })
}

pub async fn list(cx: &Ctx<'_>) -> Result<Vec<Provider>, AdminError> {
    Ok(cx.db.read(db::providers::list).await?)
}

pub async fn get(cx: &Ctx<'_>, id: &str) -> Result<Provider, AdminError> {
    let id = id.to_string();
    cx.db
        .read(move |c| db::providers::find(c, &id))
        .await?
        .ok_or(AdminError::NotFound("provider"))
}

/// How many accounts are linked to the provider.
pub async fn linked_accounts(cx: &Ctx<'_>, id: &str) -> Result<i64, AdminError> {
    let id = id.to_string();
    Ok(cx.db.read(move |c| db::identities::count_for(c, &id)).await?)
}

/// Registers a provider. Each mapped local group must exist.
pub async fn create(
    cx: &Ctx<'_>,
    upstreams: &Upstreams,
    actor: &Actor,
    spec: &ProviderSpec,
) -> Result<Provider, AdminError> {
    let mut provider = build(spec, cx.now).map_err(AdminError::Invalid)?;
    provider.client_secret =
        sealed::seal_text(cx.settings.master_key.as_ref(), &provider.client_secret).map_err(|e| {
            tracing::error!(error = %e, "cannot seal a provider secret");
            AdminError::Server(crate::error::Internal::Failed)
        })?;
    let (now, actor, stored, after) = (cx.now, actor.clone(), provider.clone(), view(cx, &provider));
    cx.db
        .write(move |c| {
            for (_, local) in &stored.group_map {
                if db::groups::id_of(c, local)?.is_none() {
                    return Ok(Err(invalid("map_group", format!("there is no group `{local}`"))));
                }
            }
            match db::providers::insert(c, &stored) {
                Ok(()) => {}
                Err(db::DbError::Conflict) => return Ok(Err(invalid("id", "a provider with this id exists"))),
                Err(e) => return Err(e),
            }
            actor
                .event("admin.provider_created")
                .target(format!("provider:{}", stored.id))
                .detail(json!({ "after": after }))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await??;
    upstreams.forget();
    Ok(provider)
}

/// Replaces a provider's client secret (upstream secrets expire: Entra ID's within two
/// years), keeping its links; sealed like the first.
pub async fn replace_secret(cx: &Ctx<'_>, actor: &Actor, id: &str, secret: &str) -> Result<(), AdminError> {
    let existing = get(cx, id).await?;
    let secret = secret.trim();
    if secret.is_empty() || secret.len() > 4096 {
        return Err(invalid("client_secret", "the client secret the upstream issued"));
    }
    let stored = sealed::seal_text(cx.settings.master_key.as_ref(), secret).map_err(|e| {
        tracing::error!(error = %e, "cannot seal a provider secret");
        AdminError::Server(crate::error::Internal::Failed)
    })?;
    let (now, actor) = (cx.now, actor.clone());
    cx.db
        .write(move |c| {
            db::providers::replace_secret(c, &existing.id, &stored)?;
            actor
                .event("admin.provider_secret_replaced")
                .target(format!("provider:{}", existing.id))
                .write(c, now)
        })
        .await?;
    Ok(())
}

/// Removes a provider and the links of accounts to it (the accounts stay).
pub async fn delete(cx: &Ctx<'_>, upstreams: &Upstreams, actor: &Actor, id: &str) -> Result<(), AdminError> {
    let existing = get(cx, id).await?;
    let (now, actor, before) = (cx.now, actor.clone(), view(cx, &existing));
    cx.db
        .write(move |c| {
            db::providers::delete(c, &existing.id)?;
            actor
                .event("admin.provider_deleted")
                .target(format!("provider:{}", existing.id))
                .detail(json!({ "before": before }))
                .write(c, now)
        })
        .await?;
    upstreams.forget();
    Ok(())
}

/// `view` with the number of accounts linked to the provider: the API's and the
/// command line's answer for one provider.
pub async fn detail(cx: &Ctx<'_>, p: &Provider) -> Result<Value, AdminError> {
    let mut v = view(cx, p);
    v["linked_accounts"] = json!(linked_accounts(cx, &p.id).await?);
    Ok(v)
}

/// Every provider with its linked-account count, read in one transaction, by id.
pub async fn list_linked(cx: &Ctx<'_>) -> Result<Vec<(Provider, i64)>, AdminError> {
    Ok(cx
        .db
        .read(|c| {
            db::providers::list(c)?
                .into_iter()
                .map(|p| {
                    let n = db::identities::count_for(c, &p.id)?;
                    Ok((p, n))
                })
                .collect()
        })
        .await?)
}

/// The API's list: `detail` objects, searched (`q` in id or name), sorted by id and
/// paged as the other lists are. Providers are few, so this pages in memory.
pub async fn listed(cx: &Ctx<'_>, q: &ListQuery) -> Result<Listed<Value>, AdminError> {
    q.sort_among(&["id"], "id")?;
    let needle = q.q.as_deref().map(str::to_lowercase);
    let all: Vec<(Provider, i64)> = list_linked(cx)
        .await?
        .into_iter()
        .filter(|(p, _)| {
            needle
                .as_deref()
                .is_none_or(|n| p.id.contains(n) || p.name.to_lowercase().contains(n))
        })
        .collect();
    Ok(Listed::page(all, q, |(p, n)| {
        let mut v = view(cx, p);
        v["linked_accounts"] = json!(n);
        v
    }))
}

/// A user's link to an upstream provider, with the provider's name (the sign-in
/// button's label).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Link {
    pub provider: String,
    pub provider_name: String,
    /// The upstream's subject for the account (`sub`, or GitHub's numeric user id).
    pub subject: String,
    pub email: Option<String>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// A user's links, by provider id. `NotFound("user")` when there is no such user.
pub async fn links(cx: &Ctx<'_>, user_id: i64) -> Result<Vec<Link>, AdminError> {
    cx.db
        .read(move |c| {
            if db::users::find_by_id(c, user_id)?.is_none() {
                return Ok(Err(AdminError::NotFound("user")));
            }
            let names: std::collections::HashMap<String, String> =
                db::providers::list(c)?.into_iter().map(|p| (p.id, p.name)).collect();
            let links = db::identities::of_user(c, user_id)?
                .into_iter()
                .map(|i| Link {
                    provider_name: names
                        .get(&i.provider_id)
                        .cloned()
                        .unwrap_or_else(|| i.provider_id.clone()),
                    provider: i.provider_id,
                    subject: i.subject,
                    email: i.email,
                    created_at: i.created_at,
                    last_used_at: i.last_used_at,
                })
                .collect();
            Ok(Ok(links))
        })
        .await?
}

/// `links` as the API answers them: `{"provider", "provider_name", "subject", "email",
/// "created_at", "last_used_at"}` each.
pub async fn links_of(cx: &Ctx<'_>, user_id: i64) -> Result<Vec<Value>, AdminError> {
    Ok(links(cx, user_id).await?.iter().map(|l| json!(l)).collect())
}

/// Removes a user's link to a provider, as an administrator does it (a rogue or stale
/// link, without deleting the whole provider). Unlike the account page's unlink, this
/// may remove the account's last way to sign in (no password, passkey or other link
/// left): the administrator decides, and can set a password afterwards.
/// `NotFound("user")` when there is no such user, `NotFound("link")` when the user has
/// no link to this provider. Audited as `admin.identity_unlinked` (target `user:ID`,
/// detail `{provider, subject}`) in the same transaction.
pub async fn unlink(cx: &Ctx<'_>, actor: &Actor, user_id: i64, provider_id: &str) -> Result<(), AdminError> {
    let (now, actor, pid) = (cx.now, actor.clone(), provider_id.to_string());
    cx.db
        .write(move |c| {
            if db::users::find_by_id(c, user_id)?.is_none() {
                return Ok(Err(AdminError::NotFound("user")));
            }
            let Some(link) = db::identities::of_user(c, user_id)?
                .into_iter()
                .find(|i| i.provider_id == pid)
            else {
                return Ok(Err(AdminError::NotFound("link")));
            };
            if !db::identities::unlink(c, &pid, user_id)? {
                return Ok(Err(AdminError::NotFound("link")));
            }
            // A link an administrator removes may be a rogue one: the sessions it
            // opened end too (with back-channel logout to the clients).
            let opened = db::sessions::federated(c, &pid, Some(&link.subject), None, now, i64::MAX)?;
            for (sid, uid) in &opened {
                db::logout::end_session(c, sid, *uid, now)?;
            }
            actor
                .event("admin.identity_unlinked")
                .target(format!("user:{user_id}"))
                .detail(
                    json!({ "provider": link.provider_id, "subject": link.subject, "sessions_ended": opened.len() }),
                )
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await??;
    cx.logout_wakeup.notify_one();
    Ok(())
}
