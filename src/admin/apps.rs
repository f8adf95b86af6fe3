//! Applications protected through forward-auth: registration, listing and removal, as
//! the CLI, the admin pages and the admin API do them.

use serde_json::{json, Value};

use super::{invalid, Actor, AdminError, Problems};
use crate::context::Ctx;
use crate::db::{self, apps::App};

/// What an administrator asks for; `build` checks it. The admin API's request body
/// has these names.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AppSpec {
    pub id: String,
    pub url: String,
    pub allowed_groups: Vec<String>,
    pub require_mfa: bool,
    pub header_prefix: Option<String>,
}

pub const DEFAULT_PREFIX: &str = "Remote-";

/// Whether `id` can name an app: as a provider id, lower case letters, digits, `-`, `_`.
pub fn valid_id(id: &str) -> bool {
    super::providers::valid_id(id)
}

/// An app's URL: http or https, a host, no credentials, query or fragment, and no path
/// beyond `/` (an app is matched by host). Returns the origin and the host as matched.
pub fn parse_url(text: &str) -> Result<(String, String), String> {
    let text = text.trim();
    let target = crate::forward_auth::Target::parse(text, "GET").map_err(str::to_string)?;
    let url = url::Url::parse(text).map_err(|_| format!("`{text}` is not a URL"))?;
    if url.path() != "/" || url.query().is_some() {
        return Err("give the app's origin (https://app.example.org): apps are matched by host".into());
    }
    Ok((url.origin().ascii_serialization(), target.host))
}

/// A header name prefix such as `Remote-` or `X-Auth-`: letters, digits and `-`,
/// ending in `-`, and none of the prefixes HTTP gives a meaning to.
pub fn valid_prefix(p: &str) -> bool {
    let lower = p.to_ascii_lowercase();
    let reserved = [
        "content-",
        "transfer-",
        "proxy-",
        "sec-",
        "access-control-",
        "x-forwarded-",
    ];
    (2..=32).contains(&p.len())
        && p.ends_with('-')
        && p.starts_with(|c: char| c.is_ascii_alphabetic())
        && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !reserved.iter().any(|r| lower.starts_with(r))
}

/// Checks a specification and makes the record to store.
pub fn build(spec: &AppSpec, now: i64) -> Result<App, Problems> {
    let mut problems = Problems::new();
    let id = spec.id.trim();
    if !valid_id(id) {
        problems.insert(
            "id".into(),
            "1 to 32 characters: lowercase letters, digits, `-` and `_`, starting with a letter or digit".into(),
        );
    }
    let (url, host) = match parse_url(&spec.url) {
        Ok(v) => v,
        Err(e) => {
            problems.insert("url".into(), e);
            (String::new(), String::new())
        }
    };
    let prefix = spec
        .header_prefix
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_PREFIX);
    if !valid_prefix(prefix) {
        problems.insert(
            "header_prefix".into(),
            "2 to 32 letters, digits and `-`, ending in `-` (such as Remote- or X-Auth-)".into(),
        );
    }
    let mut groups: Vec<String> = spec
        .allowed_groups
        .iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    groups.sort();
    groups.dedup();
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(App {
        id: id.to_string(),
        url,
        host,
        require_mfa: spec.require_mfa,
        header_prefix: prefix.to_string(),
        allowed_groups: groups,
        created_at: now,
        updated_at: now,
    })
}

/// The JSON form (API, `app list --json`, audit).
pub fn view(app: &App) -> Value {
    json!({
        "id": app.id,
        "url": app.url,
        "host": app.host,
        "allowed_groups": app.allowed_groups,
        "require_mfa": app.require_mfa,
        "header_prefix": app.header_prefix,
        "created_at": app.created_at,
    })
}

pub async fn list(cx: &Ctx<'_>) -> Result<Vec<App>, AdminError> {
    Ok(cx.db.read(db::apps::list).await?)
}

pub async fn get(cx: &Ctx<'_>, id: &str) -> Result<App, AdminError> {
    let id = id.to_string();
    cx.db
        .read(move |c| db::apps::find(c, &id))
        .await?
        .ok_or(AdminError::NotFound("app"))
}

pub async fn create(cx: &Ctx<'_>, actor: &Actor, spec: &AppSpec) -> Result<App, AdminError> {
    let app = build(spec, cx.now).map_err(AdminError::Invalid)?;
    let hostname = app.host.rsplit_once(':').map_or(app.host.as_str(), |(h, _)| h);
    // A sign-in could never reach an app outside the cookie domain; and Tessera's own
    // host is not an app (its pages would become a forward-auth return address).
    if let Some(domain) = &cx.settings.forward_auth_cookie_domain {
        if hostname != domain && !hostname.ends_with(&format!(".{domain}")) {
            return Err(invalid(
                "url",
                format!("the app's host is outside the forward-auth cookie domain `{domain}`"),
            ));
        }
    }
    let own = url::Url::parse(cx.issuer)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
    if own.as_deref() == Some(hostname) {
        return Err(invalid("url", "this is Tessera's own host, not an app's"));
    }
    let (now, actor, stored, after) = (cx.now, actor.clone(), app.clone(), view(&app));
    cx.db
        .write(move |c| {
            for g in &stored.allowed_groups {
                if db::groups::id_of(c, g)?.is_none() {
                    return Ok(Err(invalid("allowed_groups", format!("there is no group `{g}`"))));
                }
            }
            if db::apps::find(c, &stored.id)?.is_some() {
                return Ok(Err(invalid("id", "an app with this id exists")));
            }
            if let Some(other) = db::apps::find_by_host(c, &stored.host)? {
                return Ok(Err(invalid("url", format!("the app `{}` has this host", other.id))));
            }
            match db::apps::insert(c, &stored) {
                Ok(()) => {}
                Err(db::DbError::Conflict) => return Ok(Err(invalid("id", "an app with this id or host exists"))),
                Err(e) => return Err(e),
            }
            actor
                .event("admin.app_created")
                .target(format!("app:{}", stored.id))
                .detail(json!({ "after": after }))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await??;
    Ok(app)
}

pub async fn delete(cx: &Ctx<'_>, actor: &Actor, id: &str) -> Result<(), AdminError> {
    let existing = get(cx, id).await?;
    let (now, actor, before) = (cx.now, actor.clone(), view(&existing));
    cx.db
        .write(move |c| {
            db::apps::delete(c, &existing.id)?;
            actor
                .event("admin.app_deleted")
                .target(format!("app:{}", existing.id))
                .detail(json!({ "before": before }))
                .write(c, now)
        })
        .await?;
    Ok(())
}

/// The list as the admin API pages it (search by id or host, sorted by id).
pub async fn listed(cx: &Ctx<'_>, q: &super::ListQuery) -> Result<super::Listed<Value>, AdminError> {
    q.sort_among(&["id"], "id")?;
    let needle = q.q.as_deref().map(str::to_lowercase);
    let all: Vec<App> = list(cx)
        .await?
        .into_iter()
        .filter(|a| needle.as_deref().is_none_or(|n| a.id.contains(n) || a.host.contains(n)))
        .collect();
    Ok(super::Listed::page(all, q, view))
}
