//! Upstream accounts linked to local ones: (provider, upstream subject) → user.

use super::sql::args;
use super::{DbError, Tx};

#[derive(Debug, Clone)]
pub struct Identity {
    pub provider_id: String,
    pub subject: String,
    pub user_id: i64,
    pub email: Option<String>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

const COLUMNS: &str = "provider_id, subject, user_id, email, created_at, last_used_at";

fn from_row(r: &super::sql::Row<'_>) -> Result<Identity, DbError> {
    Ok(Identity {
        provider_id: r.get(0)?,
        subject: r.get(1)?,
        user_id: r.get(2)?,
        email: r.get(3)?,
        created_at: r.get(4)?,
        last_used_at: r.get(5)?,
    })
}

pub fn find(conn: &Tx<'_>, provider_id: &str, subject: &str) -> Result<Option<Identity>, DbError> {
    conn.row(
        &format!("SELECT {COLUMNS} FROM identities WHERE provider_id = ?1 AND subject = ?2"),
        args![provider_id, subject],
        from_row,
    )
}

/// A user's links, by provider.
pub fn of_user(conn: &Tx<'_>, user_id: i64) -> Result<Vec<Identity>, DbError> {
    conn.rows(
        &format!("SELECT {COLUMNS} FROM identities WHERE user_id = ?1 ORDER BY provider_id"),
        args![user_id],
        from_row,
    )
}

/// Links an upstream account; `DbError::Conflict` when the subject is linked already
/// or the user has a link to this provider.
pub fn link(
    conn: &Tx<'_>,
    provider_id: &str,
    subject: &str,
    user_id: i64,
    email: Option<&str>,
    now: i64,
) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO identities (provider_id, subject, user_id, email, created_at, last_used_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        args![provider_id, subject, user_id, email, now],
    )?;
    Ok(())
}

/// Records a sign-in through the link.
pub fn used(conn: &Tx<'_>, provider_id: &str, subject: &str, email: Option<&str>, now: i64) -> Result<(), DbError> {
    conn.exec(
        "UPDATE identities SET last_used_at = ?3, email = ?4 WHERE provider_id = ?1 AND subject = ?2",
        args![provider_id, subject, now, email],
    )?;
    Ok(())
}

pub fn unlink(conn: &Tx<'_>, provider_id: &str, user_id: i64) -> Result<bool, DbError> {
    Ok(conn.exec(
        "DELETE FROM identities WHERE provider_id = ?1 AND user_id = ?2",
        args![provider_id, user_id],
    )? == 1)
}

/// How many accounts are linked to a provider.
pub fn count_for(conn: &Tx<'_>, provider_id: &str) -> Result<i64, DbError> {
    conn.one(
        "SELECT count(*) FROM identities WHERE provider_id = ?1",
        args![provider_id],
        |r| r.get(0),
    )
}
