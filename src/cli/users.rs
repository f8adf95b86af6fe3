//! `tessera user …`: people who sign in.

use clap::Subcommand;
use serde_json::json;

use super::{db_err, hash, open, read_password};
use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::random::random_id;
use crate::db::{self, DbError};
use crate::domain::{Email, Username};

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
        /// Add the user to a group (created if new); repeat for several
        #[arg(long = "group", value_name = "GROUP")]
        groups: Vec<String>,
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
    /// Create COUNT users PREFIX1 … PREFIXCOUNT sharing one password (load testing)
    Seed {
        prefix: String,
        count: usize,
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// Clear a user's failed-password count and lift a lockout
    Unlock { username: String },
    /// Remove a user's authenticator app, recovery codes and passkeys (a lost phone)
    ResetMfa { username: String },
    /// Withdraw a user's consent for a client and revoke the client's grants for them
    RevokeConsent { username: String, client_id: String },
}

pub fn user(settings: &Settings, cmd: UserCommand) -> Result<(), String> {
    let now = Clock::system().now();
    match cmd {
        UserCommand::Add {
            username,
            email,
            name,
            admin,
            groups,
            ..
        } => {
            for g in &groups {
                crate::admin::groups::check_name(g).map_err(|_| format!("`{g}` is not a group name"))?;
            }
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
                Ok(id) => {
                    for g in &groups {
                        db::users::add_to_group(&conn, id, g.trim()).map_err(db_err)?;
                    }
                    println!(
                        "user {} created{}",
                        username.as_str(),
                        if admin { " (admin)" } else { "" }
                    )
                }
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
        UserCommand::Seed { prefix, count, .. } => {
            let password = read_password()?;
            // One hash for all: seeding 500 users must not take 500 bcrypt rounds.
            let password_hash = hash(settings, &password)?;
            let conn = open(settings)?;
            let tx = conn.unchecked_transaction().map_err(|e| e.to_string())?;
            let mut created = 0;
            for i in 1..=count {
                let username = Username::parse(&format!("{prefix}{i}")).map_err(|e| e.to_string())?;
                let email = format!("{}@stress.invalid", username.as_str());
                let new = db::users::NewUser {
                    sub: &random_id(),
                    username: username.as_str(),
                    email: Some(&email),
                    name: None,
                    password_hash: &password_hash,
                    is_admin: false,
                    now,
                };
                match db::users::insert(&tx, &new) {
                    Ok(_) => created += 1,
                    Err(DbError::Conflict) => {}
                    Err(e) => return Err(db_err(e)),
                }
            }
            tx.commit().map_err(|e| e.to_string())?;
            println!("{created} users created ({prefix}1 … {prefix}{count})");
        }
        UserCommand::Unlock { username } => {
            let conn = open(settings)?;
            let user = db::users::find_by_username(&conn, &username)
                .map_err(db_err)?
                .ok_or_else(|| format!("no user named {username}"))?;
            db::users::clear_failures(&conn, user.id).map_err(db_err)?;
            println!("user {username} unlocked");
        }
        UserCommand::ResetMfa { username } => {
            let conn = open(settings)?;
            let user = db::users::find_by_username(&conn, &username)
                .map_err(db_err)?
                .ok_or_else(|| format!("no user named {username}"))?;
            let had = db::mfa::disable(&conn, user.id).map_err(db_err)?
                | (db::passkeys::delete_all(&conn, user.id).map_err(db_err)? > 0);
            let event = crate::audit::Event::new("admin.mfa_reset")
                .actor("cli")
                .target(&user.username);
            event.write(&conn, now).map_err(db_err)?;
            if had {
                println!(
                    "the authenticator and passkeys of {username} were removed; they sign in with a password alone"
                );
            } else {
                println!("{username} had no authenticator");
            }
        }
        UserCommand::RevokeConsent { username, client_id } => {
            let conn = open(settings)?;
            let user = db::users::find_by_username(&conn, &username)
                .map_err(db_err)?
                .ok_or_else(|| format!("no user named {username}"))?;
            let tx = conn.unchecked_transaction().map_err(|e| e.to_string())?;
            let had = db::consents::revoke(&tx, user.id, &client_id, now).map_err(db_err)?;
            tx.commit().map_err(|e| e.to_string())?;
            if had {
                println!("consent of {username} for {client_id} withdrawn; its grants are revoked");
            } else {
                println!("{username} had not consented to {client_id}; its grants are revoked");
            }
        }
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
