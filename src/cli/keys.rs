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
    /// Create a new signing key; the previous one stops signing but stays published
    /// until the tokens it signed have expired. A running server picks it up within 10 s.
    Rotate {
        /// Algorithm of the key to rotate
        #[arg(long, default_value = "RS256", value_parser = ["RS256", "ES256", "EdDSA"])]
        alg: String,
    },
}

pub fn keys(settings: &Settings, cmd: KeysCommand) -> Result<(), String> {
    with_state(settings, async |state| match cmd {
        KeysCommand::List { json } => {
            let keys = admin::overview::keys(state).await.map_err(|e| admin_err(e, "key"))?;
            if json {
                println!("{}", serde_json::Value::from(keys));
            } else {
                println!("{:<24} {:<6} {:<12} STATUS", "KID", "ALG", "CREATED");
                for k in keys {
                    let status = match k["retired_at"].as_i64() {
                        None => "active".to_string(),
                        Some(t) => format!("retired at {t}"),
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
            let key = admin::overview::rotate_key(state, &actor(), &alg)
                .await
                .map_err(|e| admin_err(e, "key"))?;
            println!("new {alg} signing key {}", key["kid"].as_str().unwrap_or_default());
            Ok(())
        }
    })
}
