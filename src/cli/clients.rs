//! `tessera client …`: relying parties.

use clap::{Args, Subcommand};
use serde_json::json;

use super::{db_err, open};
use crate::admin::clients::{build, view, ClientSpec, AUTH_METHODS, GRANT_TYPES};
use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::Secret;
use crate::db::{self, DbError};

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
}

#[derive(Args)]
pub struct ClientAdd {
    client_id: String,
    /// A redirect URI, matched exactly; repeat for several
    #[arg(long = "redirect-uri", value_name = "URI")]
    redirect_uris: Vec<String>,
    /// Where RP-initiated logout may send the user; repeat for several
    #[arg(long = "post-logout-redirect-uri", value_name = "URI")]
    post_logout_redirect_uris: Vec<String>,
    /// A public client (SPA, native app): no secret, PKCE required
    #[arg(long)]
    public: bool,
    /// Display name shown on the login and consent pages
    #[arg(long)]
    name: Option<String>,
    /// How the client authenticates at the token endpoint
    #[arg(long, value_name = "METHOD", value_parser = clap::builder::PossibleValuesParser::new(AUTH_METHODS))]
    auth_method: Option<String>,
    /// The client's public keys (JWKS JSON, or @FILE) for private_key_jwt
    #[arg(long, value_name = "JSON|@FILE")]
    jwks: Option<String>,
    /// Signing algorithm for this client's ID and access tokens
    #[arg(long, default_value = "RS256", value_parser = ["RS256", "ES256", "EdDSA"])]
    id_token_alg: String,
    /// Ask the user to consent before the first sign-in (third-party clients)
    #[arg(long)]
    consent: bool,
    /// A grant type the client may use; repeat for several [default: authorization_code, refresh_token]
    #[arg(long = "grant-type", value_name = "TYPE", value_parser = clap::builder::PossibleValuesParser::new(GRANT_TYPES))]
    grant_types: Vec<String>,
    /// Refresh tokens with every sign-in (always) or only for offline_access
    #[arg(long, default_value = "always", value_parser = ["always", "offline-access"])]
    refresh: String,
    /// Back-Channel Logout 1.0 endpoint of the client
    #[arg(long, value_name = "URI")]
    backchannel_logout_uri: Option<String>,
    /// Include `sid` in logout tokens (backchannel_logout_session_required)
    #[arg(long)]
    backchannel_logout_session_required: bool,
    /// Only members of this group may sign in; repeat for several [default: everyone]
    #[arg(long = "allowed-group", value_name = "GROUP")]
    allowed_groups: Vec<String>,
    /// Access-token lifetime in seconds for this client [default: the server's]
    #[arg(long, value_name = "SECONDS")]
    access_token_ttl: Option<i64>,
    /// Refresh-token lifetime in seconds for this client [default: the server's]
    #[arg(long, value_name = "SECONDS")]
    refresh_token_ttl: Option<i64>,
    /// May obtain the tessera:admin scope with client credentials (the admin API)
    #[arg(long)]
    admin: bool,
    /// Print the result as JSON
    #[arg(long)]
    json: bool,
}

fn print_secret(client_id: &str, secret: Option<&Secret>, json: bool) {
    if json {
        println!(
            "{}",
            json!({"client_id": client_id, "client_secret": secret.map(Secret::expose)})
        );
        return;
    }
    match secret {
        Some(s) => {
            println!("client_id:     {client_id}");
            println!("client_secret: {}", s.expose());
            println!("Store the secret now: it is not shown again.");
        }
        None => println!("client_id: {client_id} (no secret)"),
    }
}

fn read_jwks(arg: &str) -> Result<serde_json::Value, String> {
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?,
        None => arg.to_string(),
    };
    serde_json::from_str(&text).map_err(|e| format!("--jwks is not JSON: {e}"))
}

/// The command's options as the specification every registration path shares.
fn spec(add: &ClientAdd) -> Result<ClientSpec, String> {
    Ok(ClientSpec {
        client_id: add.client_id.clone(),
        name: add.name.clone(),
        public: add.public,
        redirect_uris: add.redirect_uris.clone(),
        post_logout_redirect_uris: add.post_logout_redirect_uris.clone(),
        token_endpoint_auth_method: add.auth_method.clone(),
        jwks: add.jwks.as_deref().map(read_jwks).transpose()?,
        id_token_signed_response_alg: Some(add.id_token_alg.clone()),
        consent_required: add.consent,
        grant_types: add.grant_types.clone(),
        refresh_tokens: Some(add.refresh.clone()),
        backchannel_logout_uri: add.backchannel_logout_uri.clone(),
        backchannel_logout_session_required: add.backchannel_logout_session_required,
        allowed_groups: add.allowed_groups.clone(),
        access_token_ttl: add.access_token_ttl,
        refresh_token_ttl: add.refresh_token_ttl,
        admin: add.admin,
    })
}

/// Problems as one line: `field: what is wrong; …`.
fn problems_text(p: &crate::admin::Problems) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

pub fn client(settings: &Settings, cmd: ClientCommand) -> Result<(), String> {
    let now = Clock::system().now();
    match cmd {
        ClientCommand::Add(add) => {
            let (client, secret) = build(&spec(&add)?, now).map_err(|p| problems_text(&p))?;
            let conn = open(settings)?;
            for g in &client.allowed_groups {
                crate::admin::groups::check_name(g).map_err(|_| format!("`{g}` is not a group name"))?;
                if db::groups::id_of(&conn, g).map_err(db_err)?.is_none() {
                    db::groups::create(&conn, g).map_err(db_err)?;
                    eprintln!("group {g} created (empty); add members with the admin pages or `user add --group`");
                }
            }
            match db::clients::insert(&conn, &client) {
                Ok(()) => print_secret(&client.client_id, secret.as_ref(), add.json),
                Err(DbError::Conflict) => return Err(format!("a client with id {} already exists", client.client_id)),
                Err(e) => return Err(db_err(e)),
            }
        }
        ClientCommand::List { json } => {
            let clients = db::clients::list(&open(settings)?).map_err(db_err)?;
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
        }
        ClientCommand::Show { client_id, json } => {
            let c = db::clients::find(&open(settings)?, &client_id)
                .map_err(db_err)?
                .ok_or_else(|| format!("no client with id {client_id}"))?;
            if json {
                println!("{}", view(&c));
            } else if let serde_json::Value::Object(fields) = view(&c) {
                for (k, v) in fields {
                    println!("{k:<28} {v}");
                }
            }
        }
        ClientCommand::RotateSecret { client_id, json } => {
            let conn = open(settings)?;
            let existing = db::clients::find(&conn, &client_id).map_err(db_err)?;
            let secret = Secret::generate();
            let hmac = existing
                .filter(|c| c.auth_method == "client_secret_jwt")
                .map(|_| secret.expose().to_string());
            if !db::clients::set_secret(&conn, &client_id, &secret.hash(), hmac.as_deref(), now).map_err(db_err)? {
                return Err(format!("no client with a secret has id {client_id}"));
            }
            print_secret(&client_id, Some(&secret), json);
        }
        ClientCommand::Delete { client_id } => {
            if !db::clients::delete(&open(settings)?, &client_id).map_err(db_err)? {
                return Err(format!("no client with id {client_id}"));
            }
            println!("client {client_id} deleted");
        }
    }
    Ok(())
}
