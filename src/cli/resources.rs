//! `tessera resource …`: resource servers access tokens may be restricted to (RFC 8707).

use clap::Subcommand;
use serde_json::Value;

use super::{actor, admin_err, with_state};
use crate::admin;
use crate::config::Settings;

#[derive(Subcommand)]
pub enum ResourceCommand {
    /// Register a resource server by its URI
    Add {
        uri: String,
        /// Scopes the resource accepts (space- or comma-separated) [default: any]
        #[arg(long, value_name = "SCOPES")]
        scope: Vec<String>,
    },
    /// List registered resources
    List {
        #[arg(long)]
        json: bool,
    },
    /// Delete a registered resource
    Delete { uri: String },
}

fn scopes_text(scopes: &[String]) -> String {
    if scopes.is_empty() {
        "(any)".into()
    } else {
        scopes.join(" ")
    }
}

pub fn resource(settings: &Settings, cmd: ResourceCommand) -> Result<(), String> {
    match cmd {
        ResourceCommand::Add { uri, scope } => with_state(settings, async |state| {
            let r = admin::resources::create(&state.ctx(), &actor(), &uri, &scope)
                .await
                .map_err(|e| admin_err(e, "resource"))?;
            println!("resource {} added; scopes: {}", r.uri, scopes_text(&r.scopes));
            Ok(())
        }),
        ResourceCommand::List { json } => with_state(settings, async |state| {
            let all = admin::resources::list(&state.ctx())
                .await
                .map_err(|e| admin_err(e, "resource"))?;
            if json {
                println!(
                    "{}",
                    Value::from(all.iter().map(admin::resources::view).collect::<Vec<_>>())
                );
                return Ok(());
            }
            println!("{:<50} SCOPES", "URI");
            for r in all {
                println!("{:<50} {}", r.uri, scopes_text(&r.scopes));
            }
            Ok(())
        }),
        ResourceCommand::Delete { uri } => with_state(settings, async |state| {
            admin::resources::delete(&state.ctx(), &actor(), &uri)
                .await
                .map_err(|e| admin_err(e, &format!("resource {uri}")))?;
            println!("resource {uri} deleted");
            Ok(())
        }),
    }
}
