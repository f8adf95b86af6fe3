//! Administering groups: create, rename, delete, members.

use serde::Serialize;
use serde_json::json;

use super::{invalid, Actor, AdminError};
use crate::context::Ctx;
use crate::db::{self, groups::Group, groups::Member};

#[derive(Debug, Serialize)]
pub struct GroupView {
    #[serde(flatten)]
    pub group: Group,
    pub member_list: Vec<Member>,
}

/// A group name: 1–64 letters, digits, spaces, `.`, `_` or `-` (it appears in tokens).
pub fn check_name(name: &str) -> Result<String, AdminError> {
    let name = name.trim();
    let ok = !name.is_empty()
        && name.chars().count() <= 64
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '.' | '_' | '-'));
    if ok {
        Ok(name.to_string())
    } else {
        Err(invalid(
            "name",
            "1–64 letters, digits, spaces, dots, underscores or dashes",
        ))
    }
}

pub async fn list(cx: &Ctx<'_>) -> Result<Vec<Group>, AdminError> {
    Ok(cx.db.read(db::groups::list).await?)
}

pub async fn get(cx: &Ctx<'_>, id: i64) -> Result<GroupView, AdminError> {
    cx.db
        .read(move |c| {
            let Some(group) = db::groups::find(c, id)? else {
                return Ok(None);
            };
            Ok(Some(GroupView {
                group,
                member_list: db::groups::members(c, id)?,
            }))
        })
        .await?
        .ok_or(AdminError::NotFound("group"))
}

pub async fn create(cx: &Ctx<'_>, actor: &Actor, name: &str) -> Result<GroupView, AdminError> {
    let name = check_name(name)?;
    let (now, actor) = (cx.now, actor.clone());
    let id = cx
        .db
        .write(move |c| match db::groups::create(c, &name) {
            Ok(id) => {
                actor.event("admin.group_created").target(&name).write(c, now)?;
                Ok(Ok(id))
            }
            Err(db::DbError::Conflict) => Ok(Err(invalid("name", "a group with this name exists"))),
            Err(e) => Err(e),
        })
        .await??;
    get(cx, id).await
}

pub async fn rename(cx: &Ctx<'_>, actor: &Actor, id: i64, name: &str) -> Result<GroupView, AdminError> {
    let name = check_name(name)?;
    let (now, actor) = (cx.now, actor.clone());
    cx.db
        .write(move |c| {
            let Some(before) = db::groups::find(c, id)? else {
                return Ok(Err(AdminError::NotFound("group")));
            };
            match db::groups::rename(c, id, &name) {
                Ok(_) => {}
                Err(db::DbError::Conflict) => return Ok(Err(invalid("name", "a group with this name exists"))),
                Err(e) => return Err(e),
            }
            actor
                .event("admin.group_renamed")
                .target(&name)
                .detail(json!({"before": before.name, "after": name}))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await??;
    get(cx, id).await
}

pub async fn delete(cx: &Ctx<'_>, actor: &Actor, id: i64) -> Result<(), AdminError> {
    let (now, actor) = (cx.now, actor.clone());
    cx.db
        .write(move |c| {
            let Some(before) = db::groups::find(c, id)? else {
                return Ok(Err(AdminError::NotFound("group")));
            };
            // Dropping the name from a client's list would open it to everyone.
            let requiring = db::groups::clients_requiring(c, &before.name)?;
            if !requiring.is_empty() {
                return Ok(Err(AdminError::Conflict(format!(
                    "clients {} admit only this group; change them first",
                    requiring.join(", ")
                ))));
            }
            // The same for an app behind forward-auth.
            let apps = db::apps::requiring_group(c, &before.name)?;
            if !apps.is_empty() {
                return Ok(Err(AdminError::Conflict(format!(
                    "apps {} admit only this group; change them first",
                    apps.join(", ")
                ))));
            }
            let members = db::groups::members(c, id)?;
            db::groups::delete(c, id)?;
            actor
                .event("admin.group_deleted")
                .target(&before.name)
                .detail(json!({"before": {"name": before.name, "members": members}}))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await?
}

/// Adds or removes a member named by username.
pub async fn set_member(
    cx: &Ctx<'_>,
    actor: &Actor,
    id: i64,
    username: &str,
    member: bool,
) -> Result<GroupView, AdminError> {
    let (now, actor, username) = (cx.now, actor.clone(), username.trim().to_string());
    cx.db
        .write(move |c| {
            let Some(group) = db::groups::find(c, id)? else {
                return Ok(Err(AdminError::NotFound("group")));
            };
            let Some(user) = db::users::find_by_username(c, &username)? else {
                return Ok(Err(invalid("username", "there is no user with this name")));
            };
            if db::groups::set_member(c, id, user.id, member)? {
                if !member {
                    // Clients this group admitted the user to lose their grants at once.
                    db::grants::revoke_outside_allowed_groups(c, Some(user.id), None, now)?;
                }
                let name = if member {
                    "admin.group_member_added"
                } else {
                    "admin.group_member_removed"
                };
                actor
                    .event(name)
                    .target(&user.username)
                    .detail(json!({"group": group.name}))
                    .write(c, now)?;
            }
            Ok(Ok(()))
        })
        .await??;
    get(cx, id).await
}

/// Makes sure groups with these names exist, creating (and auditing) the new ones;
/// returns the names created.
pub async fn ensure(cx: &Ctx<'_>, actor: &Actor, names: &[String]) -> Result<Vec<String>, AdminError> {
    let mut created = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let n = name.to_string();
        if cx.db.read(move |c| db::groups::id_of(c, &n)).await?.is_none() {
            create(cx, actor, name).await?;
            created.push(name.to_string());
        }
    }
    Ok(created)
}
