//! `tessera client …`: relying parties.

use clap::Subcommand;

use super::client_add::{print_secret, spec, ClientAdd};
use super::{actor, admin_err, with_state};
use crate::admin::{self, clients::view};
use crate::config::Settings;

#[derive(Subcommand)]
pub enum ClientCommand {
    /// Register a client; a confidential client's secret is printed once
    Add(Box<ClientAdd>),
    /// List clients
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one client
    Show {
        client_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Replace a confidential client's secret and print the new one
    RotateSecret {
        client_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a client and every grant and token issued to it
    Delete { client_id: String },
    /// A client's claim mapping: list, set or delete a rule
    #[command(subcommand)]
    Claim(super::claims::ClaimCommand),
    /// List the app presets `client add --preset` takes (docs/APPS.md)
    Presets {
        #[arg(long)]
        json: bool,
    },
    /// Create an initial access token for dynamic client registration (RFC 7591) and
    /// print it alone on a line
    RegistrationToken {
        /// How long the token is valid (30m, 1h, 7d)
        #[arg(long, default_value = "1h", value_name = "INTERVAL")]
        ttl: String,
        /// Registrations it allows [default: any number until it expires]
        #[arg(long, value_name = "N")]
        uses: Option<i64>,
        /// Print {"token":…,"expires_at":…}
        #[arg(long)]
        json: bool,
    },
}

pub fn client(settings: &Settings, cmd: ClientCommand) -> Result<(), String> {
    match cmd {
        ClientCommand::Claim(cmd) => super::claims::claim(settings, cmd),
        ClientCommand::Add(add) if add.preset.is_some() => super::presets::add(settings, &add),
        ClientCommand::RegistrationToken { ttl, uses, json } => {
            super::registration::registration_token(settings, &ttl, uses, json)
        }
        ClientCommand::Presets { json } => {
            super::presets::list(json);
            Ok(())
        }
        ClientCommand::Add(add) => add_client(settings, &add),
        ClientCommand::List { json } => list(settings, json),
        ClientCommand::Show { client_id, json } => show(settings, &client_id, json),
        ClientCommand::RotateSecret { client_id, json } => with_state(settings, async |state| {
            let secret = admin::clients::rotate_secret(&state.ctx(), &state.clients, &actor(), &client_id)
                .await
                .map_err(|e| match e {
                    admin::AdminError::NotFound(_) | admin::AdminError::Conflict(_) => {
                        format!("no client with a secret has id {client_id}")
                    }
                    other => admin_err(other, "client"),
                })?;
            print_secret(&client_id, Some(&secret), json);
            Ok(())
        }),
        ClientCommand::Delete { client_id } => with_state(settings, async |state| {
            admin::clients::delete(&state.ctx(), &state.clients, &actor(), &client_id)
                .await
                .map_err(|e| admin_err(e, &format!("client with id {client_id}")))?;
            println!("client {client_id} deleted");
            Ok(())
        }),
    }
}

/// `client add` without a preset: the groups it names are made when missing.
fn add_client(settings: &Settings, add: &ClientAdd) -> Result<(), String> {
    let spec = spec(add)?;
    for g in &spec.allowed_groups {
        crate::admin::groups::check_name(g).map_err(|_| format!("`{g}` is not a group name"))?;
    }
    with_state(settings, async |state| {
        super::users::ensure_groups(state, &spec.allowed_groups).await?;
        let (client, secret) = admin::clients::create(&state.ctx(), &actor(), &spec)
            .await
            .map_err(|e| match e {
                admin::AdminError::Invalid(p) if p.contains_key("client_id") => {
                    format!("a client with id {} already exists", spec.client_id)
                }
                other => admin_err(other, "client"),
            })?;
        print_secret(&client.client_id, secret.as_ref(), add.json);
        Ok(())
    })
}

fn list(settings: &Settings, json: bool) -> Result<(), String> {
    with_state(settings, async |state| {
        let clients = admin::clients::all(&state.ctx())
            .await
            .map_err(|e| admin_err(e, "client"))?;
        if json {
            println!(
                "{}",
                serde_json::Value::from(clients.iter().map(view).collect::<Vec<_>>())
            );
        } else {
            println!("{:<24} {:<20} {:<24} REDIRECT URIS", "CLIENT ID", "AUTH METHOD", "NAME");
            for c in clients {
                println!(
                    "{:<24} {:<20} {:<24} {}",
                    c.client_id,
                    c.auth_method,
                    c.name,
                    c.redirect_uris.join(" ")
                );
            }
        }
        Ok(())
    })
}

fn show(settings: &Settings, client_id: &str, json: bool) -> Result<(), String> {
    with_state(settings, async |state| {
        let c = admin::clients::get(&state.ctx(), client_id)
            .await
            .map_err(|e| match e {
                admin::AdminError::NotFound(_) => format!("no client with id {client_id}"),
                other => admin_err(other, "client"),
            })?;
        if json {
            println!("{}", view(&c));
        } else if let serde_json::Value::Object(fields) = view(&c) {
            for (k, v) in fields {
                println!("{k:<28} {v}");
            }
        }
        Ok(())
    })
}
