//! Groups of users: named sets that clients may require and the `groups` claim lists.

use rusqlite::params;
use serde::Serialize;

use super::{optional, DbError, Tx};

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
    let mut stmt = conn.sql().prepare_cached(
        "SELECT g.id, g.name, count(ug.user_id) FROM groups g LEFT JOIN user_groups ug ON ug.group_id = g.id
         GROUP BY g.id ORDER BY g.name",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Group {
            id: r.get(0)?,
            name: r.get(1)?,
            members: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn find(conn: &Tx<'_>, id: i64) -> Result<Option<Group>, DbError> {
    optional(
        conn.sql().prepare_cached(
            "SELECT g.id, g.name, (SELECT count(*) FROM user_groups WHERE group_id = g.id) FROM groups g WHERE g.id = ?1",
        )?
        .query_row([id], |r| {
            Ok(Group {
                id: r.get(0)?,
                name: r.get(1)?,
                members: r.get(2)?,
            })
        }),
    )
}

pub fn id_of(conn: &Tx<'_>, name: &str) -> Result<Option<i64>, DbError> {
    optional(
        conn.sql()
            .prepare_cached("SELECT id FROM groups WHERE name = ?1")?
            .query_row([name], |r| r.get(0)),
    )
}

/// Creates a group; `DbError::Conflict` when the name is taken.
pub fn create(conn: &Tx<'_>, name: &str) -> Result<i64, DbError> {
    Ok(conn
        .sql()
        .query_row("INSERT INTO groups (name) VALUES (?1) RETURNING id", [name], |r| {
            r.get(0)
        })?)
}

/// Renames a group; the clients that admit it name it by id, so they follow.
pub fn rename(conn: &Tx<'_>, id: i64, name: &str) -> Result<bool, DbError> {
    let n = conn
        .sql()
        .execute("UPDATE groups SET name = ?2 WHERE id = ?1", params![id, name])?;
    Ok(n == 1)
}

/// The clients that admit only groups including `name`.
pub fn clients_requiring(conn: &Tx<'_>, name: &str) -> Result<Vec<String>, DbError> {
    let mut stmt = conn.sql().prepare_cached(
        "SELECT a.client_id FROM client_allowed_groups a JOIN groups g ON g.id = a.group_id
         WHERE g.name = ?1 ORDER BY a.client_id",
    )?;
    let rows = stmt.query_map([name], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn delete(conn: &Tx<'_>, id: i64) -> Result<bool, DbError> {
    Ok(conn.sql().execute("DELETE FROM groups WHERE id = ?1", [id])? == 1)
}

pub fn members(conn: &Tx<'_>, id: i64) -> Result<Vec<Member>, DbError> {
    let mut stmt = conn.sql().prepare_cached(
        "SELECT u.id, u.username FROM users u JOIN user_groups ug ON ug.user_id = u.id
         WHERE ug.group_id = ?1 ORDER BY lower(u.username)",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok(Member {
            id: r.get(0)?,
            username: r.get(1)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Adds or removes a member; `false` when nothing changed.
pub fn set_member(conn: &Tx<'_>, group_id: i64, user_id: i64, member: bool) -> Result<bool, DbError> {
    let n = if member {
        conn.sql().execute(
            "INSERT INTO user_groups (user_id, group_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![user_id, group_id],
        )?
    } else {
        conn.sql().execute(
            "DELETE FROM user_groups WHERE user_id = ?1 AND group_id = ?2",
            params![user_id, group_id],
        )?
    };
    Ok(n == 1)
}

/// Makes a user's groups exactly `group_ids`.
pub fn set_user_groups(conn: &Tx<'_>, user_id: i64, group_ids: &[i64]) -> Result<(), DbError> {
    conn.sql()
        .execute("DELETE FROM user_groups WHERE user_id = ?1", [user_id])?;
    let mut insert = conn
        .sql()
        .prepare_cached("INSERT INTO user_groups (user_id, group_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING")?;
    for g in group_ids {
        insert.execute(params![user_id, g])?;
    }
    Ok(())
}
