//! `tessera keys …`: signing keys.

use clap::Subcommand;
use serde_json::json;

use super::{db_err, with_state};
use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::keys::Alg;
use crate::db;

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
            let keys = state.db.read(db::keys::list).await.map_err(db_err)?;
            if json {
                let list: Vec<_> = keys
                    .iter()
                    .map(|k| json!({"kid": k.kid, "alg": k.alg.as_str(), "created_at": k.created_at, "retired_at": k.retired_at}))
                    .collect();
                println!("{}", serde_json::Value::from(list));
            } else {
                println!("{:<24} {:<6} {:<12} STATUS", "KID", "ALG", "CREATED");
                for k in keys {
                    let status = match k.retired_at {
                        None => "active".to_string(),
                        Some(t) => format!("retired at {t}"),
                    };
                    println!("{:<24} {:<6} {:<12} {status}", k.kid, k.alg.as_str(), k.created_at);
                }
            }
            Ok(())
        }
        KeysCommand::Rotate { alg } => {
            let alg = Alg::parse(&alg).ok_or_else(|| format!("unknown algorithm {alg}"))?;
            let now = Clock::system().now();
            let master = state.settings.master_key.clone();
            let key = state
                .db
                .write(move |c| {
                    // Everything but a storage failure is found before anything changes;
                    // a storage failure rolls the rotation back.
                    let key = match crate::oidc::keys::rotate(c, alg, now, master.as_ref()) {
                        Ok(key) => key,
                        Err(crate::oidc::keys::KeysError::Db(e)) => return Err(e),
                        Err(other) => return Ok(Err(other)),
                    };
                    super::actor()
                        .event("admin.key_rotated")
                        .target(&key.kid)
                        .detail(json!({"alg": alg.as_str()}))
                        .write(c, now)?;
                    Ok(Ok(key))
                })
                .await
                .map_err(db_err)?
                .map_err(|e| e.to_string())?;
            println!("new {} signing key {}", alg.as_str(), key.kid);
            Ok(())
        }
    })
}
