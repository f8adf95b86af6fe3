//! Groups of users: named sets that clients may require and the `groups` claim lists.

use serde::Serialize;

use super::sql::args;
use super::{DbError, Tx};

#[derive(Debug, Clone, Serialize)]
pub struct Group {
    pub id: i64,
    pub name: String,
    pub members: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Member {
    pub id: i64,
    pub username: String,
}

pub fn list(conn: &Tx<'_>) -> Result<Vec<Group>, DbError> {
    conn.rows(
        "SELECT g.id, g.name, count(ug.user_id) FROM groups g LEFT JOIN user_groups ug ON ug.group_id = g.id
         GROUP BY g.id ORDER BY g.name",
        args![],
        |r| {
            Ok(Group {
                id: r.get(0)?,
                name: r.get(1)?,
                members: r.get(2)?,
            })
        },
    )
}

pub fn find(conn: &Tx<'_>, id: i64) -> Result<Option<Group>, DbError> {
    conn.row(
        "SELECT g.id, g.name, (SELECT count(*) FROM user_groups WHERE group_id = g.id) FROM groups g WHERE g.id = ?1",
        args![id],
        |r| {
            Ok(Group {
                id: r.get(0)?,
                name: r.get(1)?,
                members: r.get(2)?,
            })
        },
    )
}

pub fn id_of(conn: &Tx<'_>, name: &str) -> Result<Option<i64>, DbError> {
    conn.row("SELECT id FROM groups WHERE name = ?1", args![name], |r| r.get(0))
}

/// Creates a group; `DbError::Conflict` when the name is taken.
pub fn create(conn: &Tx<'_>, name: &str) -> Result<i64, DbError> {
    conn.one("INSERT INTO groups (name) VALUES (?1) RETURNING id", args![name], |r| {
        r.get(0)
    })
}

/// Renames a group; the clients that admit it name it by id, so they follow.
pub fn rename(conn: &Tx<'_>, id: i64, name: &str) -> Result<bool, DbError> {
    let n = conn.exec("UPDATE groups SET name = ?2 WHERE id = ?1", args![id, name])?;
    Ok(n == 1)
}

/// The clients that admit only groups including `name`.
pub fn clients_requiring(conn: &Tx<'_>, name: &str) -> Result<Vec<String>, DbError> {
    conn.rows(
        "SELECT a.client_id FROM client_allowed_groups a JOIN groups g ON g.id = a.group_id
         WHERE g.name = ?1 ORDER BY a.client_id",
        args![name],
        |r| r.get(0),
    )
}

pub fn delete(conn: &Tx<'_>, id: i64) -> Result<bool, DbError> {
    Ok(conn.exec("DELETE FROM groups WHERE id = ?1", args![id])? == 1)
}

pub fn members(conn: &Tx<'_>, id: i64) -> Result<Vec<Member>, DbError> {
    conn.rows(
        "SELECT u.id, u.username FROM users u JOIN user_groups ug ON ug.user_id = u.id
         WHERE ug.group_id = ?1 ORDER BY lower(u.username)",
        args![id],
        |r| {
            Ok(Member {
                id: r.get(0)?,
                username: r.get(1)?,
            })
        },
    )
}

/// Adds or removes a member; `false` when nothing changed.
pub fn set_member(conn: &Tx<'_>, group_id: i64, user_id: i64, member: bool) -> Result<bool, DbError> {
    let n = if member {
        conn.exec(
            "INSERT INTO user_groups (user_id, group_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            args![user_id, group_id],
        )?
    } else {
        conn.exec(
            "DELETE FROM user_groups WHERE user_id = ?1 AND group_id = ?2",
            args![user_id, group_id],
        )?
    };
    Ok(n == 1)
}

/// Makes a user's groups exactly `group_ids`.
pub fn set_user_groups(conn: &Tx<'_>, user_id: i64, group_ids: &[i64]) -> Result<(), DbError> {
    conn.exec("DELETE FROM user_groups WHERE user_id = ?1", args![user_id])?;
    for g in group_ids {
        conn.exec(
            "INSERT INTO user_groups (user_id, group_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            args![user_id, g],
        )?;
    }
    Ok(())
}
