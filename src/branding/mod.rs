//! Branding: the organisation's name, logo, accent colour and extra stylesheet, and
//! each application's own logo, as every node shows them. They are stored in the
//! database (`db::branding`), checked before they are (`check_*`, `svg`), and held by
//! each node for `TTL` seconds, so a change made on one node shows on the others
//! within that time. The logos and the stylesheet are served as resources of their
//! own (`http::branding`), never inlined, so the pages' CSP stays as it is.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::db::{self, Db};

pub use crate::config::branding::Defaults;
pub use crate::domain::branding::{check_color, check_logo, check_stylesheet, svg, MAX_LOGO, MAX_STYLESHEET};

/// Seconds a node trusts its copy.
pub const TTL: i64 = 5;

/// What a page shows, as one node last read it.
#[derive(Debug, Clone, Default)]
pub struct Branding {
    /// The stored name, else `--org-name`'s.
    pub org_name: String,
    pub accent_color: Option<String>,
    pub has_stylesheet: bool,
    pub has_logo: bool,
    /// Grows with each change; the resources' URLs carry it (`?v=`), so a browser
    /// fetches a changed logo at once and keeps an unchanged one.
    pub version: i64,
    /// Applications with a logo, and its version.
    pub client_logos: HashMap<String, i64>,
}

impl Branding {
    /// The theme resource's URL, when there is anything to theme.
    pub fn theme_url(&self) -> Option<String> {
        (self.accent_color.is_some() || self.has_stylesheet).then(|| format!("/branding/theme.css?v={}", self.version))
    }

    pub fn logo_url(&self) -> Option<String> {
        self.has_logo.then(|| format!("/branding/logo?v={}", self.version))
    }

    /// The application's logo URL, when it has one.
    pub fn client_logo_url(&self, client_id: &str) -> Option<String> {
        let version = self.client_logos.get(client_id)?;
        let id = url::form_urlencoded::byte_serialize(client_id.as_bytes()).collect::<String>();
        Some(format!("/branding/client-logo?client_id={id}&v={version}"))
    }

    /// The stylesheet of `theme_url`: the accent colour as the stylesheet's variable,
    /// then the deployment's own rules.
    pub fn theme_css(&self, stylesheet: Option<&str>) -> String {
        let mut css = String::new();
        if let Some(color) = &self.accent_color {
            css.push_str(&format!(":root {{ --accent: {color}; }}\n"));
        }
        if let Some(extra) = stylesheet {
            css.push_str(extra);
            css.push('\n');
        }
        css
    }
}

/// One node's copy of the branding, refreshed after `TTL`.
#[derive(Clone)]
pub struct Cache {
    default_name: Arc<str>,
    defaults: Arc<Defaults>,
    held: Arc<RwLock<Option<Held>>>,
}

/// A copy and when it was read.
type Held = (Arc<Branding>, i64);

impl Cache {
    pub fn new(settings: &crate::config::Settings) -> Self {
        Self {
            default_name: settings.org_name.as_str().into(),
            defaults: Arc::new(settings.branding.clone()),
            held: Arc::default(),
        }
    }

    /// What the flags gave.
    pub fn defaults(&self) -> &Defaults {
        &self.defaults
    }

    /// The branding as of at most `TTL` seconds ago. A failed read keeps showing what
    /// was read before (or the defaults): a page is never refused for its logo.
    pub async fn get(&self, db: &Db, now: i64) -> Arc<Branding> {
        if let Some((b, at)) = self.held.read().ok().and_then(|h| h.clone()) {
            if now - at < TTL && now >= at {
                return b;
            }
        }
        match db
            .read(|c| Ok((db::branding::get(c)?, db::branding::client_logo_versions(c)?)))
            .await
        {
            Ok((stored, logos)) => {
                let d = &self.defaults;
                let b = Arc::new(Branding {
                    org_name: stored.org_name.unwrap_or_else(|| self.default_name.to_string()),
                    accent_color: stored.accent_color.or_else(|| d.accent_color.clone()),
                    has_stylesheet: stored.stylesheet.is_some() || d.stylesheet.is_some(),
                    has_logo: stored.logo_type.is_some() || d.logo.is_some(),
                    version: stored.version,
                    client_logos: logos.into_iter().collect(),
                });
                if let Ok(mut h) = self.held.write() {
                    *h = Some((b.clone(), now));
                }
                b
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the branding; showing the last one read");
                self.held
                    .read()
                    .ok()
                    .and_then(|h| h.as_ref().map(|(b, _)| b.clone()))
                    .unwrap_or_else(|| {
                        Arc::new(Branding {
                            org_name: self.default_name.to_string(),
                            accent_color: self.defaults.accent_color.clone(),
                            has_stylesheet: self.defaults.stylesheet.is_some(),
                            has_logo: self.defaults.logo.is_some(),
                            ..Branding::default()
                        })
                    })
            }
        }
    }

    /// Forgets this node's copy (after a change made here).
    pub fn forget(&self) {
        if let Ok(mut h) = self.held.write() {
            *h = None;
        }
    }
}

/// The stored logo, else the flags': its bytes and media type.
pub async fn logo(db: &Db, shown: &Cache) -> Result<Option<(Vec<u8>, String)>, db::DbError> {
    Ok(match db.read(db::branding::logo).await? {
        Some(found) => Some(found),
        None => shown
            .defaults()
            .logo
            .as_ref()
            .map(|(b, k)| (b.to_vec(), (*k).to_string())),
    })
}

/// An application's own logo.
pub async fn client_logo(db: &Db, client_id: &str) -> Result<Option<(Vec<u8>, String)>, db::DbError> {
    let id = client_id.to_string();
    db.read(move |c| db::branding::client_logo(c, &id)).await
}

/// What the admin page stored (without the logo's bytes).
pub async fn stored(db: &Db) -> Result<db::branding::Settings, db::DbError> {
    db.read(db::branding::get).await
}

/// The theme stylesheet's text (`Branding::theme_css`); empty when there is nothing to
/// theme.
pub async fn theme(db: &Db, shown: &Cache, now: i64) -> Result<String, db::DbError> {
    let brand = shown.get(db, now).await;
    let sheet = stored(db)
        .await?
        .stylesheet
        .or_else(|| shown.defaults().stylesheet.as_deref().map(str::to_string));
    Ok(brand.theme_css(sheet.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_theme_puts_the_accent_before_the_deployments_rules() {
        let b = Branding {
            accent_color: Some("#0a7".into()),
            has_stylesheet: true,
            version: 3,
            ..Branding::default()
        };
        assert_eq!(b.theme_url().as_deref(), Some("/branding/theme.css?v=3"));
        assert_eq!(
            b.theme_css(Some("h1 { color: red; }")),
            ":root { --accent: #0a7; }\nh1 { color: red; }\n"
        );
        assert_eq!(Branding::default().theme_url(), None);
        let mut b = Branding::default();
        b.client_logos.insert("a b".into(), 7);
        assert_eq!(
            b.client_logo_url("a b").as_deref(),
            Some("/branding/client-logo?client_id=a+b&v=7")
        );
        assert_eq!(b.client_logo_url("other"), None);
    }
}
