//! Administration commands run against the database file, also while a server uses it:
//! SQLite's locking and the busy timeout serialise them with the server's writer.

mod apply;
mod apps;
mod claims;
mod client_add;
mod clients;
mod completions;
mod keys;
mod mail;
mod presets;
mod providers;
mod registration;
mod replica;
mod resources;
mod transfer;
mod users;

use std::io::Read;
use std::path::Path;

pub use apply::{apply, dump_config};
pub use apps::{app, AppCommand};
pub use clients::{client, ClientCommand};
pub use completions::{completions, man, Shell};
pub use keys::{keys, KeysCommand};
pub use mail::{mail, MailCommand};
pub use providers::{provider, ProviderCommand};
pub use replica::{backup_verify, replica_status, restore};
pub use resources::{resource, ResourceCommand};
pub use transfer::{export, import};
pub use users::{user, UserCommand};

use crate::admin::{Actor, AdminError};
use crate::config::Settings;
use crate::db::DbError;
use crate::domain::NewPassword;
use crate::state::AppState;

pub(crate) fn db_err(e: DbError) -> String {
    e.to_string()
}

/// Who the audit log names for changes made with the command line.
pub(crate) fn actor() -> Actor {
    Actor {
        name: "cli".into(),
        ip: None,
        user_id: None,
    }
}

/// An administration failure as one line; `what` names the record for "not found".
pub(crate) fn admin_err(e: AdminError, what: &str) -> String {
    e.line(Some(what))
}

/// A small runtime for one command (the server's is actix's, in `startup`).
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start: {e}"))
}

/// Runs a command through the administration operations (the same ones the admin
/// pages and API use) on the existing database, then flushes the writer.
pub(crate) fn with_state(
    settings: &Settings,
    run: impl AsyncFnOnce(&AppState) -> Result<(), String>,
) -> Result<(), String> {
    let settings = settings.clone();
    runtime()?.block_on(async move {
        let state = crate::startup::command_state(settings)
            .await
            .map_err(|e| e.to_string())?;
        let result = run(&state).await;
        state.db.shutdown();
        result
    })
}

/// `tessera init`: creates the database (owner-only), applies migrations and
/// generates signing keys, so that the other commands can run before `serve`.
pub fn init(settings: &Settings) -> Result<(), String> {
    let existed = settings.database_url.is_some() || settings.db_path.is_file();
    let settings_label = settings.database_label();
    let settings = settings.clone();
    runtime()?
        .block_on(crate::startup::init_database(settings))
        .map_err(|e| e.to_string())?;
    if existed {
        println!("database {} is up to date", settings_label);
    } else {
        println!("database {} created", settings_label);
    }
    Ok(())
}

/// `tessera setup-link`: a fresh one-time link to create the first administrator, for
/// when the link the server printed at start is lost or belongs to another node.
pub fn setup_link(settings: &Settings) -> Result<(), String> {
    with_state(settings, async |state| {
        match crate::auth::setup::start(&state.ctx()).await.map_err(db_err)? {
            Some(token) => {
                println!("{}/setup?token={}", state.issuer, token.expose());
                println!("valid for an hour, once");
                Ok(())
            }
            None => Err(format!(
                "an administrator exists already: sign in at {}/admin, or add one with `tessera user add --admin`",
                state.issuer
            )),
        }
    })
}

/// `tessera migrate`: applies the migrations (PostgreSQL: under an advisory lock, so
/// that several nodes or deploy jobs may run it at once) and exits.
pub fn migrate(settings: &Settings) -> Result<(), String> {
    runtime()?
        .block_on(crate::startup::migrate_database(settings))
        .map_err(|e| e.to_string())?;
    println!("{}: schema up to date", settings.database_label());
    Ok(())
}

pub(crate) fn read_password() -> Result<NewPassword, String> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("cannot read the password from standard input: {e}"))?;
    let line = input.strip_suffix('\n').unwrap_or(&input);
    let line = line.strip_suffix('\r').unwrap_or(line);
    NewPassword::parse(line).map_err(|e| e.to_string())
}

pub(crate) fn hash(settings: &Settings, password: &NewPassword) -> Result<String, String> {
    bcrypt::hash(password.expose(), settings.bcrypt_cost).map_err(|e| e.to_string())
}

pub fn backup(settings: &Settings, target: &Path) -> Result<(), String> {
    let target = target.to_path_buf();
    with_state(settings, async |state| {
        state.db.backup(&target).await.map_err(db_err)?;
        println!("backup written to {}", target.display());
        Ok(())
    })
}

pub fn check(settings: &Settings) -> Result<(), String> {
    // Read-only: a check never migrates, creates or changes anything.
    let problems = runtime()?
        .block_on(crate::startup::check_database(settings))
        .map_err(|e| e.to_string())?;
    if problems.is_empty() {
        match settings.database_url {
            None => println!("{}: integrity ok, foreign keys ok", settings.db_path.display()),
            Some(_) => println!("{}: schema ok, constraints ok", settings.database_label()),
        }
        return Ok(());
    }
    for p in &problems {
        eprintln!("{p}");
    }
    Err(format!("{} problems found", problems.len()))
}

/// What an operator needs on first start: where the provider is and how to add the
/// first user and client.
pub async fn print_banner(state: &AppState) -> Result<(), DbError> {
    use std::io::Write;
    let setup = crate::auth::setup::start(&state.ctx()).await?;
    // A closed stdout (a supervisor that stopped reading) must not stop the server.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "Tessera is running.");
    let _ = writeln!(out, "  issuer:    {}", state.issuer);
    let _ = writeln!(out, "  discovery: {}/.well-known/openid-configuration", state.issuer);
    let _ = writeln!(out, "  admin:     {}/admin", state.issuer);
    let _ = writeln!(out, "  account:   {}/account", state.issuer);
    let _ = writeln!(out, "  database:  {}", state.settings.database_label());
    if let Some(token) = setup {
        let db = state.settings.database_flag();
        let exe = std::env::args().next().unwrap_or_else(|| "tessera".into());
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "No administrator yet. Open this one-time link (valid for an hour) to create the first administrator:"
        );
        let _ = writeln!(out, "  setup:     {}/setup?token={}", state.issuer, token.expose());
        let _ = writeln!(
            out,
            "or, in another terminal, create one and a client with the command line:"
        );
        let _ = writeln!(
            out,
            "  printf '%s\\n' 'a-long-password' | {exe} {db} user add admin --admin --password-stdin"
        );
        let _ = writeln!(
            out,
            "  {exe} {db} client add my-app --redirect-uri http://localhost:8080/callback"
        );
    }
    Ok(())
}

/// The settings `raw` gives, with the database URL's form judged by the storage engine
/// (config stands below it and cannot ask), before any command uses it: a mistyped URL
/// is one line naming the setting.
pub fn load_settings(raw: &crate::config::RawSettings) -> Result<crate::config::Settings, String> {
    let settings = crate::config::Settings::load(raw).map_err(|e| e.to_string())?;
    if let Some(url) = &settings.database_url {
        crate::db::check_database_url(url.expose()).map_err(|e| {
            crate::config::ConfigError::Invalid {
                name: "database_url",
                reason: e,
            }
            .to_string()
        })?;
    }
    Ok(settings)
}
