//! Declarative configuration: `tessera apply FILE` makes clients, groups, apps,
//! providers and users match a TOML file (docs/APPLY.md), and `tessera dump-config`
//! writes the current ones as such a file.
//!
//! The file is read whole and checked against the database before anything is
//! written (`file` with the use cases' validators, `plan` and `compare` across kinds);
//! then `run` makes each change through the same admin use cases as the admin API,
//! audited with the actor `apply`.

mod compare;
mod dump;
mod file;
mod keys;
mod node;
mod plan;
mod run;
mod secret;
mod step;

use std::path::Path;

use crate::context::Ctx;

pub use run::actor;

/// How an apply runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mode {
    /// Print the changes, make none.
    pub dry_run: bool,
    /// Remove what the file does not declare, of the kinds it has a table for.
    pub prune: bool,
}

/// What an apply with nothing to do prints, alone.
pub const NO_CHANGES: &str = "no changes";

/// Applies `path` to the database behind `cx`; the text is what the command prints
/// (one line per change, the notes of a change indented under it), the error the one
/// line that says why nothing (or, for a failure while writing, nothing more) was
/// applied.
pub async fn apply_file(
    cx: &crate::oidc::Ctx<'_>,
    upstreams: &crate::federation::Upstreams,
    path: &Path,
    mode: Mode,
) -> Result<String, String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let placed = |p: node::Problem| match (p.line, p.path.is_empty()) {
        (0, true) => format!("{name}: {}", p.message),
        (0, false) => format!("{name}: {}: {}", p.path, p.message),
        (line, true) => format!("{name}:{line}: {}", p.message),
        (line, false) => format!("{name}:{line}: {}: {}", p.path, p.message),
    };
    let root = node::parse(&text).map_err(placed)?;
    let want = file::decode(&root).map_err(placed)?;
    let now = step::Current::read(cx)
        .await
        .map_err(|e| format!("{name}: {}", run::text(e)))?;
    let steps = plan::plan(cx, &now, &want, mode.prune).map_err(placed)?;
    if steps.is_empty() {
        return Ok(format!("{NO_CHANGES}\n"));
    }
    let lines = if mode.dry_run {
        let mut lines: Vec<String> = steps.into_iter().flat_map(|s| s.lines).collect();
        lines.push("dry run: nothing applied".into());
        lines
    } else {
        run::run(cx, upstreams, steps)
            .await
            .map_err(|e| format!("{name}: {e}"))?
    };
    Ok(lines.iter().map(|l| format!("{l}\n")).collect())
}

/// The current configuration as an apply file.
pub async fn dump(cx: &Ctx<'_>) -> Result<String, String> {
    dump::dump(cx).await
}
