//! Changing the branding: the organisation's name, logo, accent colour and extra
//! stylesheet, which take precedence over the flags' (`branding::Defaults`), and an
//! application's logo; each checked, stored in one transaction with its audit entry,
//! and this node's copy forgotten so it shows at once (the others within
//! `branding::TTL`).

use super::{invalid, Actor, AdminError, Problems};
use crate::branding::{check_color, check_logo, check_stylesheet, Cache};
use crate::context::Ctx;
use crate::db;

/// A change from the admin page: each field `None` stays as it is, `Some("")` clears.
#[derive(Debug, Default)]
pub struct Edit<'a> {
    pub org_name: Option<&'a str>,
    pub accent_color: Option<&'a str>,
    pub stylesheet: Option<&'a str>,
    /// A new logo's bytes; `remove_logo` clears it.
    pub logo: Option<&'a [u8]>,
    pub remove_logo: bool,
}

/// Checks `edit` and stores it; the new version.
pub async fn update(cx: &Ctx<'_>, shown: &Cache, actor: &Actor, edit: &Edit<'_>) -> Result<i64, AdminError> {
    let mut problems = Problems::new();
    let org_name = edit.org_name.map(str::trim).map(|v| {
        if v.chars().count() > 100 || v.chars().any(char::is_control) {
            problems.insert(
                "org_name".into(),
                "must be at most 100 characters with no control characters".into(),
            );
        }
        (!v.is_empty()).then(|| v.to_string())
    });
    let accent_color = edit.accent_color.map(str::trim).map(|v| {
        if v.is_empty() {
            return None;
        }
        check_color(v)
            .map_err(|e| problems.insert("accent_color".into(), e))
            .ok()
    });
    let stylesheet = edit.stylesheet.map(|v| {
        if let Err(e) = check_stylesheet(v) {
            problems.insert("stylesheet".into(), e);
        }
        (!v.trim().is_empty()).then(|| v.to_string())
    });
    let logo = match edit.logo.filter(|b| !b.is_empty()) {
        Some(bytes) => match check_logo(bytes) {
            Ok(stored) => Some(Some(stored)),
            Err(e) => {
                problems.insert("logo".into(), e);
                None
            }
        },
        None => edit.remove_logo.then_some(None),
    };
    if !problems.is_empty() {
        return Err(AdminError::Invalid(problems));
    }
    let (now, actor) = (cx.now, actor.clone());
    let version = cx
        .db
        .write(move |c| {
            let before = db::branding::get(c)?;
            let change = db::branding::Change {
                org_name: org_name.as_ref().map(|v| v.as_deref()),
                accent_color: accent_color.as_ref().map(|v| v.as_deref()),
                stylesheet: stylesheet.as_ref().map(|v| v.as_deref()),
                logo: logo.as_ref().map(|v| v.as_ref().map(|(b, k)| (b.as_slice(), *k))),
            };
            let version = db::branding::update(c, &change, now)?;
            let after = db::branding::get(c)?;
            actor
                .event("admin.branding_changed")
                .detail(serde_json::json!({
                    "before": describe(&before),
                    "after": describe(&after),
                }))
                .write(c, now)?;
            Ok(version)
        })
        .await?;
    shown.forget();
    Ok(version)
}

/// What the audit log keeps of a branding: the settings, the logo by its type only.
fn describe(b: &db::branding::Settings) -> serde_json::Value {
    serde_json::json!({
        "org_name": b.org_name,
        "accent_color": b.accent_color,
        "stylesheet_bytes": b.stylesheet.as_ref().map(String::len),
        "logo": b.logo_type,
    })
}

/// Sets (`Some`) or removes (`None`) an application's logo.
pub async fn set_client_logo(
    cx: &Ctx<'_>,
    shown: &Cache,
    actor: &Actor,
    client_id: &str,
    logo: Option<&[u8]>,
) -> Result<(), AdminError> {
    let logo = match logo {
        Some(bytes) => Some(check_logo(bytes).map_err(|e| invalid("logo", e))?),
        None => None,
    };
    let (now, actor, id) = (cx.now, actor.clone(), client_id.to_string());
    let found = cx
        .db
        .write(move |c| {
            let found = db::branding::set_client_logo(c, &id, logo.as_ref().map(|(b, k)| (b.as_slice(), *k)), now)?;
            if found {
                let what = if logo.is_some() { "set" } else { "removed" };
                actor
                    .event("admin.client_logo_changed")
                    .target(&id)
                    .detail(serde_json::json!({ "logo": what }))
                    .write(c, now)?;
            }
            Ok(found)
        })
        .await?;
    if !found {
        return Err(AdminError::NotFound("client"));
    }
    shown.forget();
    Ok(())
}
