//! `tessera apply FILE [--dry-run] [--prune]` and `tessera dump-config`.

use std::path::Path;

use super::with_state;
use crate::config::Settings;

pub fn apply(settings: &Settings, file: &Path, dry_run: bool, prune: bool) -> Result<(), String> {
    let file = file.to_path_buf();
    with_state(settings, async |state| {
        let out = crate::apply::apply_file(
            &state.ctx(),
            &state.upstreams,
            &file,
            crate::apply::Mode { dry_run, prune },
        )
        .await?;
        print!("{out}");
        Ok(())
    })
}

pub fn dump_config(settings: &Settings) -> Result<(), String> {
    with_state(settings, async |state| {
        print!("{}", crate::apply::dump(&state.ctx()).await?);
        Ok(())
    })
}
