//! `tessera client …`: relying parties.

use clap::{Args, Subcommand};
use serde_json::json;

use super::{db_err, open};
use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::Secret;
use crate::db::clients::{Client, RefreshPolicy};
use crate::db::{self, DbError};
use crate::domain::{ClientId, RedirectUri};

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

pub const AUTH_METHODS: &[&str] = &[
    "client_secret_basic",
    "client_secret_post",
    "client_secret_jwt",
    "private_key_jwt",
    "none",
];
pub const GRANT_TYPES: &[&str] = &[
    "authorization_code",
    "refresh_token",
    "client_credentials",
    "urn:ietf:params:oauth:grant-type:device_code",
];

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
    /// Print the result as JSON
    #[arg(long)]
    json: bool,
}

fn client_json(c: &Client) -> serde_json::Value {
    json!({
        "client_id": c.client_id,
        "name": c.name,
        "type": if c.is_public() { "public" } else { "confidential" },
        "token_endpoint_auth_method": c.auth_method,
        "id_token_signed_response_alg": c.id_token_alg,
        "grant_types": c.grant_types,
        "consent_required": c.consent_required,
        "refresh_tokens": if c.refresh == RefreshPolicy::Always { "always" } else { "offline-access" },
        "redirect_uris": c.redirect_uris,
        "post_logout_redirect_uris": c.post_logout_redirect_uris,
        "backchannel_logout_uri": c.backchannel_logout_uri,
        "created_at": c.created_at,
    })
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

fn parse_uris(uris: &[String]) -> Result<Vec<String>, String> {
    uris.iter()
        .map(|u| {
            RedirectUri::parse(u)
                .map(|r| r.as_str().to_string())
                .map_err(|e| e.to_string())
        })
        .collect()
}

fn read_jwks(arg: &str) -> Result<String, String> {
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?,
        None => arg.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("--jwks is not JSON: {e}"))?;
    if !value["keys"].is_array() {
        return Err("--jwks must be a JWK Set: {\"keys\": [...]}".into());
    }
    Ok(value.to_string())
}

/// Turns the command's options into a client, refusing combinations that cannot work.
fn build(add: &ClientAdd, now: i64) -> Result<(Client, Option<Secret>), String> {
    let id = ClientId::parse(&add.client_id).map_err(|e| e.to_string())?;
    let method = match (&add.auth_method, add.public) {
        (Some(m), true) if m != "none" => return Err("a public client authenticates with `none`".into()),
        (Some(m), _) => m.clone(),
        (None, true) => "none".into(),
        (None, false) if add.jwks.is_some() => "private_key_jwt".into(),
        (None, false) => "client_secret_basic".into(),
    };
    let grant_types = if add.grant_types.is_empty() {
        vec!["authorization_code".to_string(), "refresh_token".to_string()]
    } else {
        add.grant_types.clone()
    };
    let redirect_uris = parse_uris(&add.redirect_uris)?;
    if redirect_uris.is_empty() && grant_types.iter().any(|g| g == "authorization_code") {
        return Err("the authorization_code grant needs at least one --redirect-uri".into());
    }
    if method == "none" && grant_types.iter().any(|g| g == "client_credentials") {
        return Err("a public client cannot use client_credentials".into());
    }
    if method == "private_key_jwt" && add.jwks.is_none() {
        return Err("private_key_jwt needs the client's keys: --jwks".into());
    }
    let secret = matches!(
        method.as_str(),
        "client_secret_basic" | "client_secret_post" | "client_secret_jwt"
    )
    .then(Secret::generate);
    let mut client = Client::new(
        id.as_str(),
        add.name.as_deref().unwrap_or(id.as_str()),
        secret.as_ref().map(Secret::hash),
        redirect_uris,
    );
    client.created_at = now;
    client.post_logout_redirect_uris = parse_uris(&add.post_logout_redirect_uris)?;
    client.secret_for_hmac = (method == "client_secret_jwt")
        .then(|| secret.as_ref().map(|s| s.expose().to_string()))
        .flatten();
    client.auth_method = method;
    client.jwks = add.jwks.as_deref().map(read_jwks).transpose()?;
    client.id_token_alg = add.id_token_alg.clone();
    client.consent_required = add.consent;
    client.grant_types = grant_types;
    client.refresh = if add.refresh == "always" {
        RefreshPolicy::Always
    } else {
        RefreshPolicy::OfflineAccess
    };
    client.backchannel_logout_uri = match &add.backchannel_logout_uri {
        Some(u) => Some(parse_uris(std::slice::from_ref(u))?.remove(0)),
        None => None,
    };
    client.backchannel_logout_session_required = add.backchannel_logout_session_required;
    Ok((client, secret))
}

pub fn client(settings: &Settings, cmd: ClientCommand) -> Result<(), String> {
    let now = Clock::system().now();
    match cmd {
        ClientCommand::Add(add) => {
            let (client, secret) = build(&add, now)?;
            match db::clients::insert(&open(settings)?, &client) {
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
                    serde_json::Value::from(clients.iter().map(client_json).collect::<Vec<_>>())
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
                println!("{}", client_json(&c));
            } else if let serde_json::Value::Object(fields) = client_json(&c) {
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
