//! The plan: what the database has, what the file declares, and the steps between them,
//! each with the diff lines it prints. Everything the writes would refuse is checked
//! here against the whole file and the database as it is, before the first write.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};

use super::compare;
use super::file::{Desired, UserDecl};
use super::node::Problem;
use super::step::{changed, missing_group, Action, Current, Final, Step};
use crate::admin;
use crate::context::Ctx;
use crate::db::users::User;

pub fn plan(cx: &Ctx<'_>, now: &Current, want: &Desired, prune: bool) -> Result<Vec<Step>, Problem> {
    let declared_groups: BTreeSet<String> = want
        .groups
        .iter()
        .flatten()
        .map(|g| g.name.clone())
        .chain(want.clients.iter().flatten().flat_map(|c| c.preset_groups.clone()))
        .collect();
    let prune_groups = prune && want.groups.is_some();
    let prune_users = prune && want.users.is_some();
    let kept_group = |name: &String| !prune_groups || declared_groups.contains(name);
    let declared_users: HashMap<String, &UserDecl> = want
        .users
        .iter()
        .flatten()
        .map(|u| (u.username.to_lowercase(), u))
        .collect();
    let kept_user = |u: &User| !prune_users || declared_users.contains_key(&u.username.to_lowercase());
    let fin = Final {
        groups: now
            .groups
            .iter()
            .map(|(g, _)| g.clone())
            .filter(|g| kept_group(g))
            .chain(declared_groups.iter().cloned())
            .collect(),
        users: now
            .users
            .iter()
            .filter(|u| kept_user(u))
            .map(|u| (u.username.to_lowercase(), u.username.clone()))
            .chain(
                want.users
                    .iter()
                    .flatten()
                    .map(|u| (u.username.to_lowercase(), u.username.clone())),
            )
            .collect(),
    };
    let mut steps = Vec::new();
    for g in &declared_groups {
        if !now.groups.iter().any(|(name, _)| name == g) {
            steps.push(Step {
                lines: vec![format!("+ group {g}")],
                action: Action::CreateGroup(g.clone()),
            });
        }
    }
    users(now, want, &mut steps);
    members(now, want, &fin, &kept_user, &mut steps)?;
    let registrations = compare::registrations(cx, now, want, &fin, prune)?;
    steps.extend(registrations.changes);
    last_admin(now, want, &declared_users, prune_users)?;
    steps.extend(registrations.deletions);
    if prune_users {
        for u in now.users.iter().filter(|u| !kept_user(u)) {
            steps.push(Step {
                lines: vec![format!("- user {}", u.username)],
                action: Action::DeleteUser(u.username.clone()),
            });
        }
    }
    if prune_groups {
        for (g, _) in now.groups.iter().filter(|(g, _)| !kept_group(g)) {
            if let Some(user) = registrations.group_users.get(g) {
                return Err(Problem::new(
                    0,
                    "",
                    format!("--prune would remove the group `{g}`, which {user} still names; declare the group or change {user}"),
                ));
            }
            steps.push(Step {
                lines: vec![format!("- group {g}")],
                action: Action::DeleteGroup(g.clone()),
            });
        }
    }
    Ok(steps)
}

/// New accounts, then changed ones (those that keep or add an administrator first, so
/// that none of the changes finds itself removing the last one).
fn users(now: &Current, want: &Desired, steps: &mut Vec<Step>) {
    let mut updates: Vec<(bool, Step)> = Vec::new();
    for u in want.users.iter().flatten() {
        let Some(existing) = now.users.iter().find(|e| e.username.eq_ignore_ascii_case(&u.username)) else {
            let input = admin::users::UserInput {
                username: Some(u.username.clone()),
                email: u.email.clone().filter(|e| !e.is_empty()),
                name: u.name.clone().filter(|n| !n.is_empty()),
                password: None,
                is_admin: u.admin,
                email_verified: u.email_verified,
                groups: None,
                claims: u.claims.clone(),
            };
            steps.push(Step {
                lines: vec![format!("+ user {}", u.username)],
                action: Action::CreateUser {
                    input,
                    disabled: u.disabled == Some(true),
                },
            });
            continue;
        };
        let mut input = admin::users::UserInput::default();
        let mut lines = Vec::new();
        let id = &existing.username;
        let opt = |v: &Option<String>| v.as_deref().map_or(Value::Null, |s| json!(s));
        if let Some(email) = &u.email {
            let after = (!email.is_empty()).then(|| email.clone());
            if after.as_deref().map(str::to_lowercase) != existing.email.as_deref().map(str::to_lowercase) {
                lines.push(changed("user", id, "email", &opt(&existing.email), &opt(&after)));
                input.email = Some(email.clone());
            }
        }
        if let Some(name) = &u.name {
            let after = (!name.is_empty()).then(|| name.clone());
            if after != existing.name {
                lines.push(changed("user", id, "name", &opt(&existing.name), &opt(&after)));
                input.name = Some(name.clone());
            }
        }
        let flag = |field: &str, before: bool, after: Option<bool>, lines: &mut Vec<String>| match after {
            Some(a) if a != before => {
                lines.push(changed("user", id, field, &json!(before), &json!(a)));
                Some(a)
            }
            _ => None,
        };
        input.is_admin = flag("admin", existing.is_admin, u.admin, &mut lines);
        input.email_verified = flag("email_verified", existing.email_verified, u.email_verified, &mut lines);
        let disabled = flag("disabled", existing.disabled, u.disabled, &mut lines);
        if let Some(claims) = &u.claims {
            if *claims != existing.claims {
                lines.push(changed(
                    "user",
                    id,
                    "claims",
                    &Value::Object(existing.claims.clone()),
                    &Value::Object(claims.clone()),
                ));
                input.claims = Some(claims.clone());
            }
        }
        if lines.is_empty() {
            continue;
        }
        let raises = input.is_admin == Some(true) || disabled == Some(false);
        updates.push((
            raises,
            Step {
                lines,
                action: Action::UpdateUser {
                    username: existing.username.clone(),
                    input,
                    disabled,
                },
            },
        ));
    }
    // Stable: raising changes first, each group in file order.
    updates.sort_by_key(|(raises, _)| !raises);
    steps.extend(updates.into_iter().map(|(_, s)| s));
}

/// Group membership: the pairs the file declares (a group's `members`, a user's
/// `groups`) are made; of the pairs the file manages (every pair of a group with
/// `members`, of a user with `groups`), those it does not declare are removed; the
/// others are left alone.
fn members(
    now: &Current,
    want: &Desired,
    fin: &Final,
    kept_user: &dyn Fn(&User) -> bool,
    steps: &mut Vec<Step>,
) -> Result<(), Problem> {
    let mut declared: BTreeSet<(String, String)> = BTreeSet::new();
    let mut managed_groups = BTreeSet::new();
    let mut managed_users = BTreeSet::new();
    for g in want.groups.iter().flatten() {
        let Some(list) = &g.members else { continue };
        managed_groups.insert(g.name.clone());
        for (i, m) in list.iter().enumerate() {
            let Some(name) = fin.users.get(&m.v.trim().to_lowercase()) else {
                return Err(g.place.element(
                    "members",
                    i,
                    format!("there is no user `{}` (declare it in [[users]])", m.v.trim()),
                ));
            };
            declared.insert((g.name.clone(), name.clone()));
        }
    }
    for u in want.users.iter().flatten() {
        let Some(list) = &u.groups else { continue };
        managed_users.insert(u.username.to_lowercase());
        for (i, g) in list.iter().enumerate() {
            let g = g.v.trim();
            if !fin.groups.contains(g) {
                return Err(missing_group(&u.place, "groups", i, g));
            }
            declared.insert((g.to_string(), u.username.clone()));
        }
    }
    let mut current: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let live: BTreeSet<String> = now
        .users
        .iter()
        .filter(|u| kept_user(u))
        .map(|u| u.username.clone())
        .collect();
    for (g, list) in &now.groups {
        current.insert(g.clone(), list.iter().filter(|m| live.contains(*m)).cloned().collect());
    }
    for g in &fin.groups {
        let before = current.get(g).cloned().unwrap_or_default();
        let mut after: BTreeSet<String> = before
            .iter()
            .filter(|m| {
                let managed = managed_groups.contains(g) || managed_users.contains(&m.to_lowercase());
                !managed || declared.contains(&(g.clone(), (*m).clone()))
            })
            .cloned()
            .collect();
        after.extend(declared.iter().filter(|(dg, _)| dg == g).map(|(_, u)| u.clone()));
        if after != before {
            steps.push(Step {
                lines: vec![changed("group", g, "members", &json!(before), &json!(after))],
                action: Action::Members {
                    group: g.clone(),
                    add: after.difference(&before).cloned().collect(),
                    remove: before.difference(&after).cloned().collect(),
                },
            });
        }
    }
    Ok(())
}

/// Refuses a plan that leaves no active administrator where there is one now.
fn last_admin(
    now: &Current,
    want: &Desired,
    declared: &HashMap<String, &UserDecl>,
    prune: bool,
) -> Result<(), Problem> {
    let active = |admin: bool, disabled: bool| admin && !disabled;
    if !now.users.iter().any(|u| active(u.is_admin, u.disabled)) {
        return Ok(());
    }
    let after_existing = now
        .users
        .iter()
        .filter(|u| match declared.get(&u.username.to_lowercase()) {
            Some(d) => active(d.admin.unwrap_or(u.is_admin), d.disabled.unwrap_or(u.disabled)),
            None => !prune && active(u.is_admin, u.disabled),
        });
    let new = want.users.iter().flatten().filter(|d| {
        !now.users.iter().any(|u| u.username.eq_ignore_ascii_case(&d.username))
            && active(d.admin == Some(true), d.disabled == Some(true))
    });
    if after_existing.count() + new.count() > 0 {
        return Ok(());
    }
    let admins: Vec<&User> = now.users.iter().filter(|u| active(u.is_admin, u.disabled)).collect();
    let culprit = admins.iter().find_map(|u| declared.get(&u.username.to_lowercase()));
    Err(match culprit {
        Some(d) => d.place.problem(
            if d.disabled == Some(true) { "disabled" } else { "admin" },
            admin::users::LAST_ADMIN,
        ),
        None => Problem::new(
            0,
            "",
            format!(
                "--prune would remove the last active administrator `{}`; declare it in [[users]]",
                admins.first().map_or("", |u| u.username.as_str())
            ),
        ),
    })
}
