//! `tessera user …`: people who sign in.

use clap::Subcommand;
use serde_json::json;

use super::{actor, admin_err, hash, read_password, with_state};
use crate::admin::{self, users::UserInput};
use crate::config::Settings;
use crate::db;
use crate::domain::Username;
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
        /// Mark the email address as verified (email_verified in tokens)
        #[arg(long)]
        email_verified: bool,
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
    /// Remove a user's link to an upstream provider (even their last way to sign in)
    Unlink { username: String, provider: String },
    /// Invite EMAIL: prints the invitation link and, with --smtp-url set, queues it by
    /// mail (the running server sends it); needs --signup invite or open
    Invite {
        email: String,
        /// Add the new account to this group on acceptance; repeat for several
        #[arg(long = "group", value_name = "GROUP")]
        groups: Vec<String>,
        /// Give the new account the administrator role
        #[arg(long)]
        admin: bool,
        /// Issuer URL the link starts with, as people reach the provider [default: http://127.0.0.1:9000]
        #[arg(long, env = "TESSERA_ISSUER", value_name = "URL")]
        issuer: Option<String>,
    },
}

pub fn user(settings: &Settings, cmd: UserCommand) -> Result<(), String> {
    match cmd {
        UserCommand::Add {
            username,
            email,
            name,
            admin,
            email_verified,
            groups,
            ..
        } => {
            let input = UserInput {
                username: Some(username),
                email,
                name,
                password: None,
                is_admin: Some(admin),
                email_verified: Some(email_verified),
                groups: Some(groups),
                claims: None,
            };
            add(settings, input)
        }
        UserCommand::List { json } => list(settings, json),
        UserCommand::SetPassword { username, .. } => set_password(settings, &username),
        UserCommand::Disable { username } => set_disabled(settings, &username, true),
        UserCommand::Enable { username } => set_disabled(settings, &username, false),
        UserCommand::Seed { prefix, count, .. } => seed(settings, &prefix, count),
        UserCommand::Unlock { username } => unlock(settings, &username),
        UserCommand::ResetMfa { username } => reset_mfa(settings, &username),
        UserCommand::Invite {
            email,
            groups,
            admin,
            issuer,
        } => invite(settings, email, groups, admin, issuer),
        UserCommand::Unlink { username, provider } => unlink(settings, &username, &provider),
        UserCommand::RevokeConsent { username, client_id } => revoke_consent(settings, &username, &client_id),
    }
}

/// `tessera user add`: the group names are checked before the password is asked for;
/// groups that do not exist yet are created.
fn add(settings: &Settings, mut input: UserInput) -> Result<(), String> {
    let groups = input.groups.clone().unwrap_or_default();
    for g in &groups {
        admin::groups::check_name(g).map_err(|_| format!("`{g}` is not a group name"))?;
    }
    let password = read_password()?;
    input.password = Some(password.expose().to_string());
    with_state(settings, async |state| {
        ensure_groups(state, &groups).await?;
        let created = admin::users::create(&state.ctx(), &actor(), input)
            .await
            .map_err(|e| match e {
                admin::AdminError::Invalid(p) if p.get("username").is_some_and(|m| m.contains("taken")) => {
                    "a user with this username already exists".to_string()
                }
                other => admin_err(other, "user"),
            })?;
        println!(
            "user {} created{}",
            created.username,
            if created.is_admin { " (admin)" } else { "" }
        );
        Ok(())
    })
}

fn set_password(settings: &Settings, username: &str) -> Result<(), String> {
    let password = read_password()?;
    with_state(settings, async |state| {
        let id = user_id(state, username).await?;
        admin::users::set_password(&state.ctx(), &actor(), id, password.expose())
            .await
            .map_err(|e| admin_err(e, "such user"))?;
        println!("password of {username} changed; its sessions and tokens are ended");
        Ok(())
    })
}

fn unlock(settings: &Settings, username: &str) -> Result<(), String> {
    with_state(settings, async |state| {
        let id = user_id(state, username).await?;
        admin::users::unlock(&state.ctx(), &actor(), id)
            .await
            .map_err(|e| admin_err(e, "such user"))?;
        println!("user {username} unlocked");
        Ok(())
    })
}

fn reset_mfa(settings: &Settings, username: &str) -> Result<(), String> {
    with_state(settings, async |state| {
        let id = user_id(state, username).await?;
        let before = admin::users::get(&state.ctx(), id)
            .await
            .map_err(|e| admin_err(e, "such user"))?;
        admin::users::reset_mfa(&state.ctx(), &actor(), id)
            .await
            .map_err(|e| admin_err(e, "such user"))?;
        if before.totp || before.passkeys > 0 {
            println!("the authenticator and passkeys of {username} were removed; they sign in with a password alone");
        } else {
            println!("{username} had no authenticator");
        }
        Ok(())
    })
}

fn unlink(settings: &Settings, username: &str, provider: &str) -> Result<(), String> {
    with_state(settings, async |state| {
        let id = user_id(state, username).await?;
        admin::providers::unlink(&state.ctx(), &actor(), id, provider)
            .await
            .map_err(|e| match e {
                admin::AdminError::NotFound("link") => format!("{username} has no link to {provider}"),
                other => admin_err(other, "such user"),
            })?;
        println!("the link of {username} to {provider} was removed");
        Ok(())
    })
}

fn revoke_consent(settings: &Settings, username: &str, client_id: &str) -> Result<(), String> {
    with_state(settings, async |state| {
        let id = user_id(state, username).await?;
        let had = admin::users::revoke_consent(&state.ctx(), &actor(), id, client_id)
            .await
            .map_err(|e| admin_err(e, "such user"))?;
        if had {
            println!("consent of {username} for {client_id} withdrawn; its grants are revoked");
        } else {
            println!("{username} had not consented to {client_id}; its grants are revoked");
        }
        Ok(())
    })
}

/// `tessera user invite`: the invitation is made through the admin operation (actor
/// `cli`); its mail goes into the outbox in the shared database, where the running
/// server's mailer finds it (this process sends nothing).
fn invite(
    settings: &Settings,
    email: String,
    groups: Vec<String>,
    admin: bool,
    issuer: Option<String>,
) -> Result<(), String> {
    let mut settings = settings.clone();
    if let Some(i) = issuer {
        settings.issuer = Some(crate::config::parse_issuer(&i).map_err(|e| e.to_string())?);
    }
    with_state(&settings, async |state| {
        let input = admin::invitations::InvitationInput { email, groups, admin };
        let created = admin::invitations::create(&state.ctx(), &actor(), input)
            .await
            .map_err(|e| admin_err(e, "invitation"))?;
        println!("invitation for {}: {}", created.email, created.link);
        match created.queued {
            crate::lifecycle::Queued::Yes => {
                println!("the invitation mail is queued; the running server sends it")
            }
            crate::lifecycle::Queued::Off => println!("not mailed: mail is off (no --smtp-url); hand the link over"),
            crate::lifecycle::Queued::Limited => {
                println!("not mailed: this address had its mails for this hour; hand the link over")
            }
        }
        println!("valid for 7 days, once");
        Ok(())
    })
}

/// The id of the user with this name, or the one-line error naming it.
async fn user_id(state: &AppState, username: &str) -> Result<i64, String> {
    admin::users::id_by_username(&state.ctx(), username)
        .await
        .map_err(|e| admin_err(e, "user"))?
        .ok_or_else(|| format!("no user named {username}"))
}

/// Groups named on the command line are created when new (audited like any other).
pub(super) async fn ensure_groups(state: &AppState, names: &[String]) -> Result<(), String> {
    for name in names {
        let created = admin::groups::ensure(&state.ctx(), &actor(), std::slice::from_ref(name))
            .await
            .map_err(|e| admin_err(e, "group"))?;
        for g in created {
            eprintln!("group {g} created");
        }
    }
    Ok(())
}

fn list(settings: &Settings, json: bool) -> Result<(), String> {
    with_state(settings, async |state| {
        let users = admin::users::all(&state.ctx())
            .await
            .map_err(|e| admin_err(e, "user"))?;
        print_users(&users, json);
        Ok(())
    })
}

fn print_users(users: &[db::users::User], json: bool) {
    if json {
        let list: Vec<_> = users
            .iter()
            .map(|u| {
                json!({"username": u.username, "sub": u.sub, "email": u.email, "name": u.name,
                            "admin": u.is_admin, "disabled": u.disabled})
            })
            .collect();
        println!("{}", serde_json::Value::from(list));
        return;
    }
    println!("{:<24} {:<32} {:<6} {:<8}", "USERNAME", "EMAIL", "ADMIN", "STATUS");
    for u in users {
        let status = if u.disabled { "disabled" } else { "active" };
        let admin = if u.is_admin { "yes" } else { "no" };
        println!(
            "{:<24} {:<32} {:<6} {:<8}",
            u.username,
            u.email.as_deref().unwrap_or_default(),
            admin,
            status
        );
    }
}

/// Load-test users in one transaction, with one audit entry for the batch.
fn seed(settings: &Settings, prefix: &str, count: usize) -> Result<(), String> {
    let password = read_password()?;
    // One hash for all: seeding 500 users must not take 500 bcrypt rounds.
    let password_hash = hash(settings, &password)?;
    let names = (1..=count)
        .map(|i| Username::parse(&format!("{prefix}{i}")).map(|u| u.as_str().to_string()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    with_state(settings, async |state| {
        let created = admin::users::seed(&state.ctx(), &actor(), prefix, names, "stress.invalid", password_hash)
            .await
            .map_err(|e| admin_err(e, "user"))?;
        println!("{created} users created ({prefix}1 … {prefix}{count})");
        Ok(())
    })
}

fn set_disabled(settings: &Settings, username: &str, disabled: bool) -> Result<(), String> {
    with_state(settings, async |state| {
        let id = user_id(state, username).await?;
        admin::users::set_disabled(&state.ctx(), &actor(), id, disabled)
            .await
            .map_err(|e| admin_err(e, "such user"))?;
        println!("user {username} {}", if disabled { "disabled" } else { "enabled" });
        Ok(())
    })
}
