//! Usernames as people see them: the confusable skeletons (UTS #39 §4) that keep one
//! account from taking a name that looks like another's, and the lookup of a name typed
//! at sign-in, which may be in another Unicode form than the stored one.

use super::{find_by_username, User};
use crate::db::sql::args;
use crate::db::{DbError, Tx};

/// The account a person signing in names: the text as typed (an account made before
/// names were normalised keeps its name), else its NFKC form, so that `ａｌｉｃｅ`
/// typed in fullwidth reaches `alice`.
pub fn find_for_sign_in(conn: &Tx<'_>, typed: &str) -> Result<Option<User>, DbError> {
    if let Some(user) = find_by_username(conn, typed)? {
        return Ok(Some(user));
    }
    let normal = crate::domain::nfkc(typed);
    if normal == typed {
        return Ok(None);
    }
    find_by_username(conn, &normal)
}

/// Whether an account's name looks like `username` (the same confusable skeleton),
/// whether or not it is the same name.
pub fn lookalike_taken(conn: &Tx<'_>, username: &str) -> Result<bool, DbError> {
    let skeleton = crate::domain::username_skeleton(username);
    let found = conn.row("SELECT 1 FROM users WHERE skeleton = ?1", args![skeleton], |_| Ok(()))?;
    Ok(found.is_some())
}

/// Whether `username` is not an account's name but looks like one (the same name is
/// left to the insert's conflict, which says "taken").
pub fn looks_like_another(conn: &Tx<'_>, username: &str) -> Result<bool, DbError> {
    Ok(find_by_username(conn, username)?.is_none() && lookalike_taken(conn, username)?)
}

/// Fills in the skeleton of accounts made before it was stored (at start and after an
/// import), one row at a time. A row whose skeleton another row already holds keeps
/// NULL: look-alike names that exist already both keep working, and neither conflicts.
/// The conditions make the update a no-op rather than an error when another node fills
/// the same rows at once (an error would abort the whole transaction on PostgreSQL).
pub fn fill_skeletons(conn: &Tx<'_>) -> Result<usize, DbError> {
    let rows: Vec<(i64, String)> = conn.rows(
        "SELECT id, username FROM users WHERE skeleton IS NULL ORDER BY id",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut filled = 0;
    for (id, username) in rows {
        let skeleton = crate::domain::username_skeleton(&username);
        filled += conn.exec(
            "UPDATE users SET skeleton = ?2 WHERE id = ?1 AND skeleton IS NULL
               AND NOT EXISTS (SELECT 1 FROM users o WHERE o.skeleton = ?2)",
            args![id, skeleton],
        )?;
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::fresh::{postgres_db, sqlite_db};
    use crate::db::Db;

    /// Accounts made before skeletons were stored, two of them alike: the first gets
    /// its skeleton, the second keeps NULL and both stay; a new look-alike is refused.
    async fn fills_and_tolerates_existing_look_alikes(db: &Db) {
        db.write(|c| {
            for (id, name) in [(1, "admin"), (2, "\u{430}dmin"), (3, "bob")] {
                c.exec(
                    "INSERT INTO users (id, sub, username, password_hash, created_at, updated_at) \
                     VALUES (?1, ?2, ?2, 'x', 1, 1)",
                    args![id, name],
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
        assert_eq!(db.write(fill_skeletons).await.unwrap(), 2);
        assert_eq!(
            db.write(fill_skeletons).await.unwrap(),
            0,
            "a second start has nothing to do"
        );
        let skeletons: Vec<Option<String>> = db
            .read(|c| c.rows("SELECT skeleton FROM users ORDER BY id", args![], |r| r.get(0)))
            .await
            .unwrap();
        // UTS #39 maps `m` to `rn`: the skeleton is not meant to be read.
        assert_eq!(skeletons, [Some("adrnin".into()), None, Some("bob".into())]);
        assert!(db.read(|c| lookalike_taken(c, "adm\u{131}n")).await.unwrap());
        assert!(!db.read(|c| lookalike_taken(c, "carol")).await.unwrap());
    }

    #[tokio::test]
    async fn skeletons_of_existing_accounts_are_filled_on_both_engines() {
        let (_dir, db) = sqlite_db();
        fills_and_tolerates_existing_look_alikes(&db).await;
        if let Some(db) = postgres_db().await {
            fills_and_tolerates_existing_look_alikes(&db).await;
        }
    }
}
