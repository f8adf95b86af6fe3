//! People who sign in: lookups by name, id and subject; creation and account changes.

use super::sql::{args, Row};
use super::{DbError, Tx};

mod usernames;

pub use usernames::{fill_skeletons, find_for_sign_in, lookalike_taken, looks_like_another};

/// An account. `Debug` leaves the password hash and claims out.
#[derive(Clone)]
pub struct User {
    pub id: i64,
    pub sub: String,
    pub username: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: Option<String>,
    pub password_hash: String,
    pub is_admin: bool,
    pub disabled: bool,
    pub created_at: i64,
    pub updated_at: i64,
    /// Further standard claims (given_name, phone_number, address …).
    pub claims: serde_json::Map<String, serde_json::Value>,
    /// Names of the user's groups; filled by `load_groups` where needed.
    pub groups: Vec<String>,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("id", &self.id)
            .field("sub", &self.sub)
            .field("username", &self.username)
            .field("is_admin", &self.is_admin)
            .field("disabled", &self.disabled)
            .field("password_hash", &"<redacted>")
            .finish_non_exhaustive()
    }
}

pub struct NewUser<'a> {
    pub sub: &'a str,
    pub username: &'a str,
    pub email: Option<&'a str>,
    pub name: Option<&'a str>,
    pub password_hash: &'a str,
    pub is_admin: bool,
    pub now: i64,
}

const COLUMNS: &str =
    "id, sub, username, email, email_verified, name, password_hash, is_admin, disabled, created_at, updated_at, claims";

fn from_row(r: &Row<'_>) -> Result<User, DbError> {
    Ok(User {
        id: r.get(0)?,
        sub: r.get(1)?,
        username: r.get(2)?,
        email: r.get(3)?,
        email_verified: r.get(4)?,
        name: r.get(5)?,
        password_hash: r.get(6)?,
        is_admin: r.get(7)?,
        disabled: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
        claims: serde_json::from_str(&r.get::<String>(11)?).unwrap_or_default(),
        groups: Vec::new(),
    })
}

/// Fills `user.groups` with the names of the groups the user belongs to.
pub fn load_groups(conn: &Tx<'_>, user: &mut User) -> Result<(), DbError> {
    user.groups = conn.rows(
        "SELECT g.name FROM groups g JOIN user_groups ug ON ug.group_id = g.id WHERE ug.user_id = ?1 ORDER BY g.name",
        args![user.id],
        |r| r.get(0),
    )?;
    Ok(())
}

/// Replaces the extra standard claims of a user.
pub fn set_claims(
    conn: &Tx<'_>,
    user_id: i64,
    claims: &serde_json::Map<String, serde_json::Value>,
    now: i64,
) -> Result<(), DbError> {
    conn.exec(
        "UPDATE users SET claims = ?2, updated_at = ?3 WHERE id = ?1",
        args![user_id, serde_json::Value::Object(claims.clone()).to_string(), now],
    )?;
    Ok(())
}

/// Adds a user to a group, creating the group if needed.
pub fn add_to_group(conn: &Tx<'_>, user_id: i64, group: &str) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO groups (name) VALUES (?1) ON CONFLICT DO NOTHING",
        args![group],
    )?;
    conn.exec(
        "INSERT INTO user_groups (user_id, group_id) SELECT ?1, id FROM groups WHERE name = ?2 ON CONFLICT DO NOTHING",
        args![user_id, group],
    )?;
    Ok(())
}

/// Inserts a user; `DbError::Conflict` when the name (case-insensitive) is taken, or
/// when an existing name looks like it (the same confusable skeleton, UTS #39 §4, kept
/// unique by an index, so that two sign-ups racing with `admin` and `аdmin` cannot both
/// win on either engine). `lookalike_taken` tells the two apart.
pub fn insert(conn: &Tx<'_>, u: &NewUser<'_>) -> Result<i64, DbError> {
    let skeleton = crate::domain::username_skeleton(u.username);
    conn.one(
        "INSERT INTO users (sub, username, email, name, password_hash, is_admin, created_at, updated_at, skeleton)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8) RETURNING id",
        args![
            u.sub,
            u.username,
            u.email,
            u.name,
            u.password_hash,
            u.is_admin,
            u.now,
            skeleton
        ],
        |r| r.get(0),
    )
}

/// Creates users with these names sharing one password hash, each with the address
/// `NAME@domain`; names that exist, or look like one that does, are skipped. Returns how many were created.
pub fn insert_many(
    conn: &Tx<'_>,
    names: &[String],
    domain: &str,
    password_hash: &str,
    now: i64,
) -> Result<usize, DbError> {
    let mut created = 0;
    for name in names {
        // Checked first: a failed insert would abort the whole transaction on PostgreSQL.
        if find_by_username(conn, name)?.is_some() || lookalike_taken(conn, name)? {
            continue;
        }
        let email = format!("{name}@{domain}");
        let new = NewUser {
            sub: &crate::crypto::random::random_id(),
            username: name,
            email: Some(&email),
            name: None,
            password_hash,
            is_admin: false,
            now,
        };
        match insert(conn, &new) {
            Ok(_) => created += 1,
            Err(DbError::Conflict) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(created)
}

pub fn find_by_username(conn: &Tx<'_>, username: &str) -> Result<Option<User>, DbError> {
    // Usernames match case-insensitively (an index on lower(username) keeps them unique).
    let sql = format!("SELECT {COLUMNS} FROM users WHERE lower(username) = lower(?1)");
    conn.row(&sql, args![username], from_row)
}

pub fn find_by_id(conn: &Tx<'_>, id: i64) -> Result<Option<User>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE id = ?1");
    conn.row(&sql, args![id], from_row)
}

pub fn list(conn: &Tx<'_>) -> Result<Vec<User>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM users ORDER BY lower(username)");
    conn.rows(&sql, args![], from_row)
}

pub fn count(conn: &Tx<'_>) -> Result<i64, DbError> {
    conn.one("SELECT count(*) FROM users", args![], |r| r.get(0))
}

/// Disables or enables an account. Disabling also ends its sessions and revokes its
/// grants, so no token issued before keeps working.
pub fn set_disabled(conn: &Tx<'_>, username: &str, disabled: bool, now: i64) -> Result<bool, DbError> {
    let Some(user) = find_by_username(conn, username)? else {
        return Ok(false);
    };
    conn.exec(
        "UPDATE users SET disabled = ?2, updated_at = ?3 WHERE id = ?1",
        args![user.id, disabled, now],
    )?;
    if disabled {
        conn.exec(
            "UPDATE sessions SET ended_at = ?2 WHERE user_id = ?1 AND ended_at IS NULL",
            args![user.id, now],
        )?;
        conn.exec(
            "UPDATE grants SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL",
            args![user.id, now],
        )?;
    }
    Ok(true)
}

pub fn find_by_sub(conn: &Tx<'_>, sub: &str) -> Result<Option<User>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE sub = ?1");
    conn.row(&sql, args![sub], from_row)
}

/// Failed passwords in a row and the lock they caused.
#[derive(Debug, Clone, Copy, Default)]
pub struct LockState {
    pub failed_logins: i64,
    pub locked_until: Option<i64>,
}

pub fn lock_state(conn: &Tx<'_>, user_id: i64) -> Result<LockState, DbError> {
    let row = conn.row(
        "SELECT failed_logins, locked_until FROM users WHERE id = ?1",
        args![user_id],
        |r| {
            Ok(LockState {
                failed_logins: r.get(0)?,
                locked_until: r.get(1)?,
            })
        },
    )?;
    Ok(row.unwrap_or_default())
}

/// Counts a failed password and sets the lock the policy derives from the count.
pub fn record_failure(
    conn: &Tx<'_>,
    user_id: i64,
    lock_for: impl Fn(i64) -> Option<i64>,
    now: i64,
) -> Result<LockState, DbError> {
    // One increment in the database, not read-then-write: parallel failures on several
    // nodes each count (the UPDATE holds the row until commit, so they queue).
    let Some(failed) = conn.row(
        "UPDATE users SET failed_logins = failed_logins + 1 WHERE id = ?1 RETURNING failed_logins",
        args![user_id],
        |r| r.get::<i64>(0),
    )?
    else {
        return lock_state(conn, user_id);
    };
    if let Some(secs) = lock_for(failed) {
        conn.exec(
            "UPDATE users SET locked_until = ?2 WHERE id = ?1",
            args![user_id, now + secs],
        )?;
    }
    lock_state(conn, user_id)
}

/// Clears the failure count and any lock (a successful sign-in, or an administrator).
pub fn clear_failures(conn: &Tx<'_>, user_id: i64) -> Result<(), DbError> {
    conn.exec(
        "UPDATE users SET failed_logins = 0, locked_until = NULL WHERE id = ?1",
        args![user_id],
    )?;
    Ok(())
}

/// Changes the profile fields people edit (name and email); a new email is unverified.
pub fn update_profile(
    conn: &Tx<'_>,
    user_id: i64,
    name: Option<&str>,
    email: Option<&str>,
    now: i64,
) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE users SET name = ?2, email_verified = CASE WHEN email IS NOT DISTINCT FROM ?3 THEN email_verified ELSE 0 END,
            email = ?3, updated_at = ?4 WHERE id = ?1",
        args![user_id, name, email, now],
    )?;
    Ok(n == 1)
}

/// Swaps in a rehash of the same password, unless the hash changed meanwhile (a
/// password change wins). The user's record is otherwise untouched.
pub fn replace_hash(conn: &Tx<'_>, user_id: i64, old: &str, new: &str) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE users SET password_hash = ?3 WHERE id = ?1 AND password_hash = ?2",
        args![user_id, old, new],
    )?;
    Ok(n == 1)
}

/// A stored password hash picked at random (none without users): two indexed
/// lookups, not a scan.
pub fn sample_hash(conn: &Tx<'_>) -> Result<Option<String>, DbError> {
    let max: Option<i64> = conn.one("SELECT max(id) FROM users", args![], |r| r.get(0))?;
    let Some(max) = max else {
        return Ok(None);
    };
    let pick = rand::Rng::gen_range(&mut rand::thread_rng(), 1..=max.max(1));
    conn.row(
        "SELECT password_hash FROM users WHERE id >= ?1 ORDER BY id LIMIT 1",
        args![pick],
        |r| r.get(0),
    )
}

pub fn set_password_by_id(conn: &Tx<'_>, user_id: i64, hash: &str, now: i64) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE users SET password_hash = ?2, updated_at = ?3 WHERE id = ?1",
        args![user_id, hash, now],
    )?;
    Ok(n == 1)
}

/// Accounts locked right now (the dashboard).
pub fn count_locked(conn: &Tx<'_>, now: i64) -> Result<i64, DbError> {
    conn.one("SELECT count(*) FROM users WHERE locked_until > ?1", args![now], |r| {
        r.get(0)
    })
}

/// Columns the user list may be sorted by.
pub const SORTS: &[&str] = &["username", "email", "name", "created_at", "updated_at"];

/// One page of users whose username, email or name contains `q`, sorted by one of
/// `SORTS`; and how many match in all.
pub fn search(
    conn: &Tx<'_>,
    q: Option<&str>,
    sort: &str,
    descending: bool,
    limit: i64,
    offset: i64,
) -> Result<(Vec<User>, i64), DbError> {
    let sort = SORTS.iter().find(|s| **s == sort).copied().unwrap_or("username");
    let order = if descending { "DESC" } else { "ASC" };
    // Text sorts without regard to case; times sort as numbers.
    let key = if sort.ends_with("_at") {
        sort.to_string()
    } else {
        format!("lower({sort})")
    };
    let pattern = q.map(|q| format!("%{}%", q.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")));
    let condition =
        "(?1 IS NULL OR lower(username) LIKE lower(?1) ESCAPE '\\' OR lower(email) LIKE lower(?1) ESCAPE '\\'
          OR lower(name) LIKE lower(?1) ESCAPE '\\')";
    let total = conn.one(
        &format!("SELECT count(*) FROM users WHERE {condition}"),
        args![pattern],
        |r| r.get(0),
    )?;
    let sql =
        format!("SELECT {COLUMNS} FROM users WHERE {condition} ORDER BY {key} {order}, id {order} LIMIT ?2 OFFSET ?3");
    let mut users: Vec<User> = conn.rows(&sql, args![pattern, limit, offset], from_row)?;
    for u in &mut users {
        load_groups(conn, u)?;
    }
    Ok((users, total))
}

/// Sets or clears the administrator flag.
pub fn set_admin(conn: &Tx<'_>, user_id: i64, admin: bool, now: i64) -> Result<(), DbError> {
    conn.exec(
        "UPDATE users SET is_admin = ?2, updated_at = ?3 WHERE id = ?1",
        args![user_id, admin, now],
    )?;
    Ok(())
}

/// Deletes a user; sessions, grants, codes and consents go with it (foreign keys).
pub fn delete(conn: &Tx<'_>, user_id: i64) -> Result<bool, DbError> {
    Ok(conn.exec("DELETE FROM users WHERE id = ?1", args![user_id])? == 1)
}

/// Administrators who can still sign in (the last one may not be removed). Inside a
/// write on PostgreSQL their rows are locked for the rest of the transaction: two
/// changes that each count before they write (two administrators demoting each other
/// at once) then run one after the other, and the second counts what the first left,
/// since READ COMMITTED checks a locked row's condition again once the lock is granted.
/// SQLite's one writer orders them already.
pub fn count_active_admins(conn: &Tx<'_>) -> Result<i64, DbError> {
    let lock = if conn.writes_one_at_a_time() { "" } else { " FOR UPDATE" };
    let sql = format!("SELECT id FROM users WHERE is_admin = 1 AND disabled = 0 ORDER BY id{lock}");
    Ok(conn.rows(&sql, args![], |r| r.get::<i64>(0))?.len() as i64)
}

/// Gives the account a confirmed address (a pending change of address taking effect).
pub fn set_email(conn: &Tx<'_>, user_id: i64, email: &str, now: i64) -> Result<(), DbError> {
    conn.exec(
        "UPDATE users SET email = ?2, email_verified = ?3, updated_at = ?4 WHERE id = ?1",
        args![user_id, email, true, now],
    )?;
    Ok(())
}

pub fn set_email_verified(conn: &Tx<'_>, user_id: i64, verified: bool) -> Result<(), DbError> {
    conn.exec(
        "UPDATE users SET email_verified = ?2 WHERE id = ?1",
        args![user_id, verified],
    )?;
    Ok(())
}

/// The account's lifecycle choices and states (email second factor, new-device mail,
/// verification still owed by an open sign-up, a pending deletion request).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lifecycle {
    pub email_mfa: bool,
    pub notify_new_device: bool,
    pub must_verify: bool,
    pub deletion_requested_at: Option<i64>,
}

pub fn lifecycle(conn: &Tx<'_>, user_id: i64) -> Result<Lifecycle, DbError> {
    Ok(conn
        .row(
            "SELECT email_mfa, notify_new_device, must_verify, deletion_requested_at FROM users WHERE id = ?1",
            args![user_id],
            |r| {
                Ok(Lifecycle {
                    email_mfa: r.get(0)?,
                    notify_new_device: r.get(1)?,
                    must_verify: r.get(2)?,
                    deletion_requested_at: r.get(3)?,
                })
            },
        )?
        .unwrap_or_default())
}

pub fn set_email_mfa(conn: &Tx<'_>, user_id: i64, on: bool) -> Result<(), DbError> {
    conn.exec("UPDATE users SET email_mfa = ?2 WHERE id = ?1", args![user_id, on])?;
    Ok(())
}

pub fn set_notify_new_device(conn: &Tx<'_>, user_id: i64, on: bool) -> Result<(), DbError> {
    conn.exec(
        "UPDATE users SET notify_new_device = ?2 WHERE id = ?1",
        args![user_id, on],
    )?;
    Ok(())
}

pub fn set_must_verify(conn: &Tx<'_>, user_id: i64, on: bool) -> Result<(), DbError> {
    conn.exec("UPDATE users SET must_verify = ?2 WHERE id = ?1", args![user_id, on])?;
    Ok(())
}

pub fn set_deletion_requested(conn: &Tx<'_>, user_id: i64, at: Option<i64>) -> Result<(), DbError> {
    conn.exec(
        "UPDATE users SET deletion_requested_at = ?2 WHERE id = ?1",
        args![user_id, at],
    )?;
    Ok(())
}

/// Whether any account has this address (case-insensitively).
pub fn email_taken(conn: &Tx<'_>, email: &str) -> Result<bool, DbError> {
    Ok(conn
        .row(
            "SELECT 1 FROM users WHERE lower(email) = lower(?1) LIMIT 1",
            args![email],
            |r| r.get::<i64>(0),
        )?
        .is_some())
}

/// The account whose address this is (case-insensitively), if exactly one has it:
/// an address two accounts share names neither (a reset or sign-in link by address
/// then goes nowhere; the username still works).
pub fn find_by_email(conn: &Tx<'_>, email: &str) -> Result<Option<User>, DbError> {
    let ids = conn.rows(
        "SELECT id FROM users WHERE lower(email) = lower(?1) LIMIT 2",
        args![email],
        |r| r.get::<i64>(0),
    )?;
    match ids.as_slice() {
        [id] => find_by_id(conn, *id),
        _ => Ok(None),
    }
}

/// Takes the account's row lock until the transaction ends (a no-op update), so that
/// checks on what else the account holds and the change they allow happen as one on
/// PostgreSQL too (SQLite's single writer serialises them anyway).
pub fn lock(conn: &Tx<'_>, user_id: i64) -> Result<(), DbError> {
    conn.exec("UPDATE users SET updated_at = updated_at WHERE id = ?1", args![user_id])?;
    Ok(())
}
