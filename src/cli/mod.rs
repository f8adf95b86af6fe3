//! Administration commands run against the database file, also while a server uses it:
//! SQLite's locking and the busy timeout serialise them with the server's writer.

mod clients;
mod keys;
mod users;

use std::io::Read;
use std::path::Path;

pub use clients::{client, ClientCommand};
pub use keys::{keys, KeysCommand};
pub use users::{user, UserCommand};

use crate::config::Settings;
use crate::db::{self, connection, DbError};
use crate::domain::NewPassword;
use crate::state::AppState;

pub(crate) fn open(settings: &Settings) -> Result<db::Conn, String> {
    connection::open_cli(&settings.db_path, &settings.sqlite).map_err(|e| e.to_string())
}

pub(crate) fn db_err(e: DbError) -> String {
    e.to_string()
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
