//! Administration commands run against the database file, also while a server uses it:
//! SQLite's locking and the busy timeout serialise them with the server's writer.

use std::io::Read;
use std::path::Path;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::random::random_id;
use crate::crypto::Secret;
use crate::db::{self, clients::Client, connection, DbError};
use crate::domain::{ClientId, Email, NewPassword, RedirectUri, Username};
use crate::state::AppState;

#[derive(Subcommand)]
pub enum UserCommand {
    /// Create a user; the password is read from standard input
    Add {
        username: String,
        #[arg(long)]
        email: Option<String>,
        #[arg(long)]
        name: Option<String>,
        /// Give the user the administrator role
        #[arg(long)]
        admin: bool,
        /// Read the password from standard input (required: passwords never go in argv)
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// List users
    List {
        #[arg(long)]
        json: bool,
    },
    /// Replace a user's password, read from standard input
    SetPassword {
        username: String,
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// Disable a user: sign-in refused, sessions ended, tokens revoked
    Disable { username: String },
    /// Enable a disabled user
    Enable { username: String },
}

#[derive(Subcommand)]
pub enum ClientCommand {
    /// Register a client; a confidential client's secret is printed once
    Add(ClientAdd),
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
    #[arg(long = "redirect-uri", required = true, value_name = "URI")]
    redirect_uris: Vec<String>,
    /// Where RP-initiated logout may send the user; repeat for several
    #[arg(long = "post-logout-redirect-uri", value_name = "URI")]
    post_logout_redirect_uris: Vec<String>,
    /// A public client (SPA, native app): no secret, PKCE required
    #[arg(long)]
    public: bool,
    /// Display name shown on the login page
    #[arg(long)]
    name: Option<String>,
    /// Print the result as JSON
    #[arg(long)]
    json: bool,
}

fn open(settings: &Settings) -> Result<db::Conn, String> {
    connection::open_cli(&settings.db_path, &settings.sqlite).map_err(|e| e.to_string())
}

fn db_err(e: DbError) -> String {
    e.to_string()
}

fn read_password() -> Result<NewPassword, String> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("cannot read the password from standard input: {e}"))?;
    let line = input.strip_suffix('\n').unwrap_or(&input);
    let line = line.strip_suffix('\r').unwrap_or(line);
    NewPassword::parse(line).map_err(|e| e.to_string())
}

fn hash(settings: &Settings, password: &NewPassword) -> Result<String, String> {
    bcrypt::hash(password.expose(), settings.bcrypt_cost).map_err(|e| e.to_string())
}

pub fn user(settings: &Settings, cmd: UserCommand) -> Result<(), String> {
    let now = Clock::system().now();
    match cmd {
        UserCommand::Add {
            username,
            email,
            name,
            admin,
            ..
        } => {
            let username = Username::parse(&username).map_err(|e| e.to_string())?;
            let email = email.map(|e| Email::parse(&e)).transpose().map_err(|e| e.to_string())?;
            let password = read_password()?;
            let password_hash = hash(settings, &password)?;
            let conn = open(settings)?;
            let new = db::users::NewUser {
                sub: &random_id(),
                username: username.as_str(),
                email: email.as_ref().map(Email::as_str),
                name: name.as_deref(),
                password_hash: &password_hash,
                is_admin: admin,
                now,
            };
            match db::users::insert(&conn, &new) {
                Ok(_) => println!(
                    "user {} created{}",
                    username.as_str(),
                    if admin { " (admin)" } else { "" }
                ),
                Err(DbError::Conflict) => return Err(format!("a user named {} already exists", username.as_str())),
                Err(e) => return Err(db_err(e)),
            }
        }
        UserCommand::List { json } => {
            let users = db::users::list(&open(settings)?).map_err(db_err)?;
            if json {
                let list: Vec<_> = users
                    .iter()
                    .map(|u| {
                        json!({"username": u.username, "sub": u.sub, "email": u.email, "name": u.name,
                                    "admin": u.is_admin, "disabled": u.disabled})
                    })
                    .collect();
                println!("{}", serde_json::Value::from(list));
            } else {
                println!("{:<24} {:<32} {:<6} {:<8}", "USERNAME", "EMAIL", "ADMIN", "STATUS");
                for u in users {
                    let status = if u.disabled { "disabled" } else { "active" };
                    let admin = if u.is_admin { "yes" } else { "no" };
                    println!(
                        "{:<24} {:<32} {:<6} {:<8}",
                        u.username,
                        u.email.unwrap_or_default(),
                        admin,
                        status
                    );
                }
            }
        }
        UserCommand::SetPassword { username, .. } => {
            let password = read_password()?;
            let password_hash = hash(settings, &password)?;
            if !db::users::set_password(&open(settings)?, &username, &password_hash, now).map_err(db_err)? {
                return Err(format!("no user named {username}"));
            }
            println!("password of {username} changed");
        }
        UserCommand::Disable { username } => set_disabled(settings, &username, true, now)?,
        UserCommand::Enable { username } => set_disabled(settings, &username, false, now)?,
    }
    Ok(())
}

fn set_disabled(settings: &Settings, username: &str, disabled: bool, now: i64) -> Result<(), String> {
    let conn = open(settings)?;
    let tx = conn.unchecked_transaction().map_err(|e| e.to_string())?;
    if !db::users::set_disabled(&tx, username, disabled, now).map_err(db_err)? {
        return Err(format!("no user named {username}"));
    }
    tx.commit().map_err(|e| e.to_string())?;
    println!("user {username} {}", if disabled { "disabled" } else { "enabled" });
    Ok(())
}

fn client_json(c: &Client) -> serde_json::Value {
    json!({
        "client_id": c.client_id,
        "name": c.name,
        "type": if c.is_public() { "public" } else { "confidential" },
        "redirect_uris": c.redirect_uris,
        "post_logout_redirect_uris": c.post_logout_redirect_uris,
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
        None => println!("client_id: {client_id} (public client: no secret, PKCE required)"),
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

pub fn client(settings: &Settings, cmd: ClientCommand) -> Result<(), String> {
    let now = Clock::system().now();
    match cmd {
        ClientCommand::Add(add) => {
            let id = ClientId::parse(&add.client_id).map_err(|e| e.to_string())?;
            let secret = (!add.public).then(Secret::generate);
            let client = Client {
                client_id: id.as_str().to_string(),
                name: add.name.unwrap_or_else(|| id.as_str().to_string()),
                secret_hash: secret.as_ref().map(Secret::hash),
                redirect_uris: parse_uris(&add.redirect_uris)?,
                post_logout_redirect_uris: parse_uris(&add.post_logout_redirect_uris)?,
                created_at: now,
            };
            match db::clients::insert(&open(settings)?, &client) {
                Ok(()) => print_secret(id.as_str(), secret.as_ref(), add.json),
                Err(DbError::Conflict) => return Err(format!("a client with id {} already exists", id.as_str())),
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
                println!("{:<24} {:<13} {:<24} REDIRECT URIS", "CLIENT ID", "TYPE", "NAME");
                for c in clients {
                    let kind = if c.is_public() { "public" } else { "confidential" };
                    println!(
                        "{:<24} {:<13} {:<24} {}",
                        c.client_id,
                        kind,
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
            } else {
                println!("client_id:   {}", c.client_id);
                println!("name:        {}", c.name);
                println!("type:        {}", if c.is_public() { "public" } else { "confidential" });
                for u in &c.redirect_uris {
                    println!("redirect:    {u}");
                }
                for u in &c.post_logout_redirect_uris {
                    println!("post-logout: {u}");
                }
            }
        }
        ClientCommand::RotateSecret { client_id, json } => {
            let secret = Secret::generate();
            if !db::clients::set_secret(&open(settings)?, &client_id, &secret.hash(), now).map_err(db_err)? {
                return Err(format!("no confidential client with id {client_id}"));
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

/// What an operator needs on first start: where the provider is and how to add the
/// first user and client.
pub fn print_banner(state: &AppState, db_path: &Path) -> Result<(), DbError> {
    let users = state.db.read_now(db::users::count)?;
    println!("Tessera is running.");
    println!("  issuer:    {}", state.issuer);
    println!("  discovery: {}/.well-known/openid-configuration", state.issuer);
    println!("  database:  {}", db_path.display());
    if users == 0 {
        let db = db_path.display();
        let exe = std::env::args().next().unwrap_or_else(|| "tessera".into());
        println!();
        println!("No users yet. In another terminal, create the first administrator and a client:");
        println!("  printf '%s\\n' 'a-long-password' | {exe} --db {db} user add admin --admin --password-stdin");
        println!("  {exe} --db {db} client add my-app --redirect-uri http://localhost:8080/callback");
    }
    Ok(())
}
