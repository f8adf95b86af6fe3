//! Administering people: list, create, edit, password, disable, unlock, delete,
//! sessions and second factor.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{invalid, Actor, AdminError, ListQuery, Listed, Problems};
use crate::context::Ctx;
use crate::crypto::random::random_id;
use crate::db::{self, users::User};
use crate::domain::{Email, NewPassword, Username};

mod access;
pub use access::{end_sessions, reset_mfa, revoke_consent, sessions, set_password};

/// A user as the admin pages and API show it: never the password hash.
#[derive(Debug, Clone, Serialize)]
pub struct UserView {
    pub id: i64,
    pub sub: String,
    pub username: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: Option<String>,
    pub is_admin: bool,
    pub disabled: bool,
    pub locked_until: Option<i64>,
    pub failed_logins: i64,
    pub totp: bool,
    pub passkeys: i64,
    pub groups: Vec<String>,
    pub claims: Map<String, Value>,
    pub created_at: i64,
    pub updated_at: i64,
    /// When the user asked for their account to be deleted (`--account-deletion
    /// approval`), while the request waits for an administrator.
    pub deletion_requested_at: Option<i64>,
}

fn view(conn: &db::Tx<'_>, mut u: User) -> Result<UserView, db::DbError> {
    db::users::load_groups(conn, &mut u)?;
    let lock = db::users::lock_state(conn, u.id)?;
    Ok(UserView {
        id: u.id,
        totp: db::mfa::enabled(conn, u.id)?,
        passkeys: db::passkeys::count_for_user(conn, u.id)?,
        sub: u.sub,
        username: u.username,
        email: u.email,
        email_verified: u.email_verified,
        name: u.name,
        is_admin: u.is_admin,
        disabled: u.disabled,
        locked_until: lock.locked_until,
        failed_logins: lock.failed_logins,
        groups: u.groups,
        claims: u.claims,
        created_at: u.created_at,
        updated_at: u.updated_at,
        deletion_requested_at: db::users::lifecycle(conn, u.id)?.deletion_requested_at,
    })
}

fn load(conn: &db::Tx<'_>, id: i64) -> Result<Option<UserView>, db::DbError> {
    db::users::find_by_id(conn, id)?.map(|u| view(conn, u)).transpose()
}

/// What an administrator sets on a user; absent fields are left as they are.
/// `Debug` never shows the password.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserInput {
    pub username: Option<String>,
    pub email: Option<String>,
    pub name: Option<String>,
    pub password: Option<String>,
    pub is_admin: Option<bool>,
    pub email_verified: Option<bool>,
    pub groups: Option<Vec<String>>,
    pub claims: Option<Map<String, Value>>,
}

impl std::fmt::Debug for UserInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserInput")
            .field("username", &self.username)
            .field("email", &self.email)
            .field("name", &self.name)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("is_admin", &self.is_admin)
            .field("email_verified", &self.email_verified)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

/// Claims an administrator may not set through `claims`: they come from the record.
/// (`tessera apply` checks a file against the same list before it writes anything.)
pub const RESERVED_CLAIMS: &[&str] = &[
    "sub",
    "iss",
    "aud",
    "exp",
    "iat",
    "nonce",
    "name",
    "email",
    "email_verified",
    "groups",
    "auth_time",
    "acr",
    "amr",
];

/// Checks the fields present, recording what is wrong with each in `problems`.
fn check(input: &UserInput, problems: &mut Problems) {
    if let Some(e) = input.email.as_deref().filter(|e| !e.trim().is_empty()) {
        if let Err(err) = Email::parse(e.trim()) {
            problems.insert("email".into(), err.0);
        }
    }
    if input.name.as_deref().is_some_and(|n| n.chars().count() > 200) {
        problems.insert("name".into(), "at most 200 characters".into());
    }
    if let Some(p) = &input.password {
        if let Err(e) = NewPassword::parse(p) {
            problems.insert("password".into(), e.0);
        }
    }
    if let Some(claims) = &input.claims {
        if let Some(k) = claims.keys().find(|k| RESERVED_CLAIMS.contains(&k.as_str())) {
            problems.insert(
                "claims".into(),
                format!("`{k}` is set from the user record, not as a claim"),
            );
        } else if Value::Object(claims.clone()).to_string().len() > 8192 {
            problems.insert("claims".into(), "at most 8 KiB of claims".into());
        }
    }
}

fn blank_to_none(v: &Option<String>) -> Option<Option<String>> {
    v.as_ref().map(|s| {
        let t = s.trim();
        (!t.is_empty()).then(|| t.to_string())
    })
}

/// Group names → ids, refusing names that are not groups.
fn group_ids(conn: &db::Tx<'_>, names: &[String]) -> Result<Result<Vec<i64>, String>, db::DbError> {
    let mut ids = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        match db::groups::id_of(conn, n)? {
            Some(id) => ids.push(id),
            None => return Ok(Err(format!("there is no group named `{n}`"))),
        }
    }
    Ok(Ok(ids))
}

/// Sets the groups and claims given, then reads the user back as it now is.
fn finish_edit(
    c: &db::Tx<'_>,
    id: i64,
    groups: Option<&[i64]>,
    claims: Option<&Map<String, Value>>,
    now: i64,
) -> Result<UserView, db::DbError> {
    if let Some(g) = groups {
        db::groups::set_user_groups(c, id, g)?;
        // Clients the user may no longer use lose their grants at once.
        db::grants::revoke_outside_allowed_groups(c, Some(id), None, now)?;
    }
    if let Some(claims) = claims {
        db::users::set_claims(c, id, claims, now)?;
    }
    load(c, id)?.ok_or_else(|| db::DbError::Corrupt("user vanished".into()))
}

pub async fn list(cx: &Ctx<'_>, q: &ListQuery) -> Result<Listed<UserView>, AdminError> {
    let sort = q.sort_among(db::users::SORTS, "username")?;
    let (search, desc, limit, offset) = (q.q.clone(), q.descending, q.limit, q.offset);
    let (items, total) = cx
        .db
        .read(move |c| {
            let (users, total) = db::users::search(c, search.as_deref(), &sort, desc, limit, offset)?;
            let views = users.into_iter().map(|u| view(c, u)).collect::<Result<Vec<_>, _>>()?;
            Ok((views, total))
        })
        .await?;
    Ok(Listed {
        items,
        total,
        limit,
        offset,
    })
}

pub async fn get(cx: &Ctx<'_>, id: i64) -> Result<UserView, AdminError> {
    cx.db
        .read(move |c| load(c, id))
        .await?
        .ok_or(AdminError::NotFound("user"))
}

pub async fn create(cx: &Ctx<'_>, actor: &Actor, input: UserInput) -> Result<UserView, AdminError> {
    let mut problems = Problems::new();
    // A username with an `@` must be the new account's own address, marked verified.
    let verified = input.email.as_deref().filter(|_| input.email_verified == Some(true));
    let username = match Username::parse_new(input.username.as_deref().unwrap_or("").trim(), verified) {
        Ok(u) => Some(u),
        Err(e) => {
            problems.insert("username".into(), e.0);
            None
        }
    };
    if input.password.is_none() {
        problems.insert("password".into(), "a new user needs a password".into());
    }
    check(&input, &mut problems);
    let (Some(username), Some(password), true) = (username, input.password.clone(), problems.is_empty()) else {
        return Err(AdminError::Invalid(problems));
    };
    let hash = cx.hasher.hash(&password).await?;
    let now = cx.now;
    let actor = actor.clone();
    let result = cx
        .db
        .write(move |c| {
            let groups = match group_ids(c, input.groups.as_deref().unwrap_or_default())? {
                Ok(g) => g,
                Err(msg) => return Ok(Err(invalid("groups", msg))),
            };
            let email = blank_to_none(&input.email).flatten();
            let name = blank_to_none(&input.name).flatten();
            if db::users::looks_like_another(c, username.as_str())? {
                return Ok(Err(invalid(
                    "username",
                    "this username is too similar to an existing username",
                )));
            }
            let id = match db::users::insert(
                c,
                &db::users::NewUser {
                    sub: &random_id(),
                    username: username.as_str(),
                    email: email.as_deref(),
                    name: name.as_deref(),
                    password_hash: &hash,
                    is_admin: input.is_admin.unwrap_or(false),
                    now,
                },
            ) {
                Ok(id) => id,
                Err(db::DbError::Conflict) => return Ok(Err(invalid("username", "this username is taken"))),
                Err(e) => return Err(e),
            };
            if input.email_verified == Some(true) && email.is_some() {
                db::users::set_email_verified(c, id, true)?;
            }
            let created = finish_edit(c, id, Some(&groups), input.claims.as_ref(), now)?;
            actor
                .event("admin.user_created")
                .target(&created.username)
                .detail(json!({"after": created}))
                .write(c, now)?;
            Ok(Ok(created))
        })
        .await?;
    result
}

/// Refuses a change that would leave no administrator able to sign in.
fn keeps_an_admin(conn: &db::Tx<'_>, target: &UserView) -> Result<bool, db::DbError> {
    Ok(!(target.is_admin && !target.disabled && db::users::count_active_admins(conn)? <= 1))
}

pub const LAST_ADMIN: &str = "this is the last active administrator; make another one first";

/// Whether account `id` may go and still leave an administrator who can sign in: the
/// rule of the admin deletion, asked by the account page's self-deletion too.
pub fn leaves_an_admin(conn: &db::Tx<'_>, id: i64) -> Result<bool, db::DbError> {
    match load(conn, id)? {
        Some(u) => keeps_an_admin(conn, &u),
        None => Ok(true),
    }
}

pub async fn update(cx: &Ctx<'_>, actor: &Actor, id: i64, input: UserInput) -> Result<UserView, AdminError> {
    let mut problems = Problems::new();
    if input.username.is_some() {
        problems.insert("username".into(), "a username cannot be changed".into());
    }
    if input.password.is_some() {
        problems.insert("password".into(), "set passwords with the password action".into());
    }
    check(&input, &mut problems);
    if !problems.is_empty() {
        return Err(AdminError::Invalid(problems));
    }
    let now = cx.now;
    let actor = actor.clone();
    cx.db
        .write(move |c| {
            let Some(before) = load(c, id)? else {
                return Ok(Err(AdminError::NotFound("user")));
            };
            if input.is_admin == Some(false) && !keeps_an_admin(c, &before)? {
                return Ok(Err(AdminError::Conflict(LAST_ADMIN.into())));
            }
            let groups = match input.groups.as_deref().map(|g| group_ids(c, g)).transpose()? {
                Some(Err(msg)) => return Ok(Err(invalid("groups", msg))),
                Some(Ok(g)) => Some(g),
                None => None,
            };
            let email = blank_to_none(&input.email).unwrap_or(before.email.clone());
            let name = blank_to_none(&input.name).unwrap_or(before.name.clone());
            db::users::update_profile(c, id, name.as_deref(), email.as_deref(), now)?;
            if let Some(v) = input.email_verified {
                db::users::set_email_verified(c, id, v)?;
            }
            if let Some(admin) = input.is_admin {
                db::users::set_admin(c, id, admin, now)?;
            }
            let after = finish_edit(c, id, groups.as_deref(), input.claims.as_ref(), now)?;
            actor
                .event("admin.user_updated")
                .target(&after.username)
                .detail(json!({"before": before, "after": after}))
                .write(c, now)?;
            Ok(Ok(after))
        })
        .await?
}

/// Disables (ending sessions and revoking grants) or enables an account.
pub async fn set_disabled(
    cx: &crate::oidc::Ctx<'_>,
    actor: &Actor,
    id: i64,
    disabled: bool,
) -> Result<UserView, AdminError> {
    let live = if disabled { sessions(cx, id).await? } else { Vec::new() };
    let now = cx.now;
    let actor = actor.clone();
    let after = cx
        .db
        .write(move |c| {
            let Some(before) = load(c, id)? else {
                return Ok(Err(AdminError::NotFound("user")));
            };
            if disabled && !keeps_an_admin(c, &before)? {
                return Ok(Err(AdminError::Conflict(LAST_ADMIN.into())));
            }
            db::users::set_disabled(c, &before.username, disabled, now)?;
            let name = if disabled {
                "admin.user_disabled"
            } else {
                "admin.user_enabled"
            };
            actor.event(name).target(&before.username).write(c, now)?;
            Ok(load(c, id)?.ok_or(AdminError::NotFound("user")))
        })
        .await??;
    // The sessions ended with the account; their clients hear of it (back-channel).
    crate::oidc::logout::end_listed(cx, &live).await?;
    Ok(after)
}

/// An action on one user that needs no input: applied, audited, and the user read
/// back, in one transaction.
async fn act_on(
    cx: &Ctx<'_>,
    actor: &Actor,
    id: i64,
    event: &'static str,
    act: impl FnOnce(&db::Tx<'_>, i64) -> Result<(), db::DbError> + Send + 'static,
) -> Result<UserView, AdminError> {
    let now = cx.now;
    let actor = actor.clone();
    cx.db
        .write(move |c| {
            let Some(user) = load(c, id)? else {
                return Ok(Err(AdminError::NotFound("user")));
            };
            act(c, id)?;
            actor.event(event).target(&user.username).write(c, now)?;
            Ok(load(c, id)?.ok_or(AdminError::NotFound("user")))
        })
        .await?
}

pub async fn unlock(cx: &Ctx<'_>, actor: &Actor, id: i64) -> Result<UserView, AdminError> {
    act_on(cx, actor, id, "admin.user_unlocked", db::users::clear_failures).await
}

pub async fn delete(cx: &crate::oidc::Ctx<'_>, actor: &Actor, id: i64) -> Result<(), AdminError> {
    if actor.user_id == Some(id) {
        return Err(AdminError::Conflict("you cannot delete your own account".into()));
    }
    let target = get(cx, id).await?;
    if !cx.db.read(move |c| keeps_an_admin(c, &target)).await? {
        return Err(AdminError::Conflict(LAST_ADMIN.into()));
    }
    // Logged out (back-channel) while the grants that name the clients still exist.
    let live = sessions(cx, id).await?;
    crate::oidc::logout::end_listed(cx, &live).await?;
    let now = cx.now;
    let actor = actor.clone();
    cx.db
        .write(move |c| {
            let Some(before) = load(c, id)? else {
                return Ok(Err(AdminError::NotFound("user")));
            };
            if !keeps_an_admin(c, &before)? {
                return Ok(Err(AdminError::Conflict(LAST_ADMIN.into())));
            }
            db::users::delete(c, id)?;
            actor
                .event("admin.user_deleted")
                .target(&before.username)
                .detail(json!({"before": before}))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await?
}

/// Every account as stored (the command line's list).
pub async fn all(cx: &Ctx<'_>) -> Result<Vec<User>, AdminError> {
    Ok(cx.db.read(db::users::list).await?)
}

/// The id of the account with this name (matched without regard to case).
pub async fn id_by_username(cx: &Ctx<'_>, username: &str) -> Result<Option<i64>, AdminError> {
    let name = username.to_string();
    Ok(cx
        .db
        .read(move |c| db::users::find_by_username(c, &name))
        .await?
        .map(|u| u.id))
}

/// Load-test accounts `NAME@domain` sharing one password hash, in one transaction
/// with one audit entry; names that exist are skipped. Returns how many were made.
pub async fn seed(
    cx: &Ctx<'_>,
    actor: &Actor,
    prefix: &str,
    names: Vec<String>,
    domain: &str,
    password_hash: String,
) -> Result<usize, AdminError> {
    let (now, actor, domain, prefix) = (cx.now, actor.clone(), domain.to_string(), prefix.to_string());
    Ok(cx
        .db
        .write(move |c| {
            let created = db::users::insert_many(c, &names, &domain, &password_hash, now)?;
            actor
                .event("admin.users_seeded")
                .detail(json!({"prefix": prefix, "created": created}))
                .write(c, now)?;
            Ok(created)
        })
        .await?)
}
