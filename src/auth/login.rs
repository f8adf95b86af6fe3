//! Checking a username and password: one uniform path for every failure, so neither
//! the answer nor its timing tells whether the account exists.

use crate::db::{self, users::User, Db, DbError};

use super::{HashError, Hasher};

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Unknown user, wrong password or disabled account: deliberately one variant.
    #[error("invalid username or password")]
    InvalidCredentials,
    #[error(transparent)]
    Hashing(#[from] HashError),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Longest input worth hashing; anything longer cannot be a password we stored.
const MAX_INPUT: usize = 1024;

pub async fn authenticate(db: &Db, hasher: &Hasher, username: &str, password: &str) -> Result<User, LoginError> {
    let name = username.trim().to_string();
    let user = if name.is_empty() || name.len() > 256 {
        None
    } else {
        db.read(move |c| db::users::find_by_username(c, &name)).await?
    };
    let password = if password.len() > MAX_INPUT { "" } else { password };
    // Always pay for one bcrypt verification, with a dummy hash when there is no user.
    let ok = hasher
        .verify(password, user.as_ref().map(|u| u.password_hash.as_str()))
        .await?;
    match user {
        Some(user) if ok && !user.disabled => Ok(user),
        _ => Err(LoginError::InvalidCredentials),
    }
}
