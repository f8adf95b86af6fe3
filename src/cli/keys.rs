//! `tessera keys …`: signing keys.

use clap::Subcommand;

use super::{actor, admin_err, with_state};
use crate::admin;
use crate::config::Settings;

#[derive(Subcommand)]
pub enum KeysCommand {
    /// List signing keys, newest last
    List {
        #[arg(long)]
        json: bool,
    },
    /// Create a new signing key: published at once (every running node lists it within
    /// 10 s), it starts to sign 30 s later; the previous one signs until then and stays
    /// published until the tokens it signed have expired.
    Rotate {
        /// Algorithm of the key to rotate
        #[arg(long, default_value = "RS256", value_parser = ["RS256", "ES256", "EdDSA"])]
        alg: String,
    },
}

pub fn keys(settings: &Settings, cmd: KeysCommand) -> Result<(), String> {
    with_state(settings, async |state| match cmd {
        KeysCommand::List { json } => {
            let keys = admin::overview::keys(&state.ctx())
                .await
                .map_err(|e| admin_err(e, "key"))?;
            if json {
                println!("{}", serde_json::Value::from(keys));
            } else {
                println!("{:<24} {:<6} {:<12} STATUS", "KID", "ALG", "CREATED");
                for k in keys {
                    let status = match (k["status"].as_str(), k["retired_at"].as_i64(), k["signs_from"].as_i64()) {
                        (Some("published"), _, Some(t)) => format!("published, signs from {t}"),
                        (Some("retiring"), Some(t), _) => format!("signing until {t}"),
                        (Some("retired"), Some(t), _) => format!("retired at {t}"),
                        _ => "signing".to_string(),
                    };
                    let text = |name: &str| k[name].as_str().unwrap_or_default().to_string();
                    println!(
                        "{:<24} {:<6} {:<12} {status}",
                        text("kid"),
                        text("alg"),
                        k["created_at"]
                    );
                }
            }
            Ok(())
        }
        KeysCommand::Rotate { alg } => {
            let key = admin::overview::rotate_key(&state.ctx(), &actor(), &alg)
                .await
                .map_err(|e| admin_err(e, "key"))?;
            let signs_from = key["signs_from"].as_i64().unwrap_or_default();
            println!(
                "new {alg} signing key {}: published now, signs from {signs_from} (in {} s)",
                key["kid"].as_str().unwrap_or_default(),
                settings.key_publish_delay()
            );
            Ok(())
        }
    })
}
