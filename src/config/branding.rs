//! The branding the flags give, read and checked with the other settings.

use std::sync::Arc;

use crate::domain::branding::{check_color, check_logo, check_stylesheet};

/// The branding the flags give (`--logo`, `--accent-color`, `--stylesheet`; the name is
/// `--org-name`'s), read and checked when the settings are: each shows unless the
/// admin page stored its own.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    pub accent_color: Option<String>,
    /// The logo's bytes and media type.
    pub logo: Option<(Arc<[u8]>, &'static str)>,
    pub stylesheet: Option<Arc<str>>,
}

impl Defaults {
    /// Reads and checks the flags' files; the error names the flag.
    pub fn load(
        accent_color: Option<&str>,
        logo: Option<&str>,
        stylesheet: Option<&str>,
    ) -> Result<Self, (&'static str, String)> {
        let accent_color = accent_color
            .map(|v| check_color(v).map_err(|e| ("accent_color", e)))
            .transpose()?;
        let logo = match logo {
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|e| ("logo", format!("cannot read {path}: {e}")))?;
                let (bytes, kind) = check_logo(&bytes).map_err(|e| ("logo", format!("{path}: {e}")))?;
                Some((Arc::from(bytes), kind))
            }
            None => None,
        };
        let stylesheet = match stylesheet {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| ("stylesheet", format!("cannot read {path}: {e}")))?;
                check_stylesheet(&text).map_err(|e| ("stylesheet", format!("{path}: {e}")))?;
                Some(Arc::from(text))
            }
            None => None,
        };
        Ok(Self {
            accent_color,
            logo,
            stylesheet,
        })
    }
}
