//! `tessera client registration-token`: initial access tokens for dynamic client
//! registration (RFC 7591 §3).

use serde_json::json;

use super::{actor, admin_err, with_state};
use crate::admin::{self, registration::TokenInput};
use crate::config::Settings;

/// Makes a token and prints it alone on a line, or with `--json` as
/// `{"token":…,"expires_at":…}` (`expires_at` in Unix seconds, as every time in the
/// commands' JSON output).
pub fn registration_token(settings: &Settings, ttl: &str, uses: Option<i64>, json: bool) -> Result<(), String> {
    let input = TokenInput {
        ttl: Some(ttl.to_string()),
        uses,
    };
    with_state(settings, async |state| {
        let created = admin::registration::create(&state.ctx(), &actor(), input)
            .await
            .map_err(|e| admin_err(e, "registration token"))?;
        if json {
            println!(
                "{}",
                json!({"token": created.token, "expires_at": created.expires_at, "id": created.id, "uses": created.uses})
            );
        } else {
            println!("{}", created.token);
        }
        Ok(())
    })
}
