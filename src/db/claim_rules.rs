//! Claim mapping: the claims a client's tokens and userinfo carry by rule, beside the
//! standard claims its scopes release (docs/PROTOCOL.md "Claim mapping").

use super::sql::args;
use super::{DbError, Tx};

/// Where a mapped claim's value comes from.
pub const SOURCES: &[&str] = &[
    "groups",
    "preferred_username",
    "email",
    "email_verified",
    "name",
    "sub",
    "group_values",
];

/// One rule: claim `claim` (the output name) carries `source`'s value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClaimRule {
    pub claim: String,
    /// One of `SOURCES`, or the name of a claim stored on the user (`given_name`, …).
    pub source: String,
    /// Released only when this scope is granted (a standard or a custom one); `None`
    /// releases it whatever the scope.
    pub scope: Option<String>,
    pub id_token: bool,
    pub access_token: bool,
    pub userinfo: bool,
    /// `group_values`: (group name, value), the first the user is a member of wins.
    pub values: Vec<(String, String)>,
    /// `group_values`: the value when no group matches; `None` leaves the claim out.
    pub default: Option<String>,
}

/// The client's rules in table order, each with its group values in order and the
/// groups by name.
pub fn of_client(tx: &Tx<'_>, client_id: &str) -> Result<Vec<ClaimRule>, DbError> {
    let mut rules: Vec<ClaimRule> = tx.rows(
        "SELECT claim, source, scope, in_id_token, in_access_token, in_userinfo, default_value
         FROM client_claims WHERE client_id = ?1 ORDER BY position",
        args![client_id],
        |r| {
            Ok(ClaimRule {
                claim: r.get(0)?,
                source: r.get(1)?,
                scope: r.get(2)?,
                id_token: r.get(3)?,
                access_token: r.get(4)?,
                userinfo: r.get(5)?,
                values: Vec::new(),
                default: r.get(6)?,
            })
        },
    )?;
    let values: Vec<(String, String, String)> = tx.rows(
        "SELECT v.claim, g.name, v.value FROM client_claim_values v JOIN groups g ON g.id = v.group_id
         WHERE v.client_id = ?1 ORDER BY v.claim, v.position",
        args![client_id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    for (claim, group, value) in values {
        if let Some(rule) = rules.iter_mut().find(|r| r.claim == claim) {
            rule.values.push((group, value));
        }
    }
    Ok(rules)
}

/// Stores one rule at `position`; a group name that names no group is
/// `DbError::NotFound` (the caller's transaction then rolls back, nothing half-stored).
fn insert(tx: &Tx<'_>, client_id: &str, rule: &ClaimRule, position: i64) -> Result<(), DbError> {
    tx.exec(
        "INSERT INTO client_claims (client_id, claim, source, scope, in_id_token, in_access_token, in_userinfo,
             default_value, position)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        args![
            client_id,
            rule.claim,
            rule.source,
            rule.scope,
            rule.id_token,
            rule.access_token,
            rule.userinfo,
            rule.default,
            position
        ],
    )?;
    for (i, (group, value)) in rule.values.iter().enumerate() {
        let n = tx.exec(
            "INSERT INTO client_claim_values (client_id, claim, position, group_id, value)
             SELECT ?1, ?2, ?3, id, ?5 FROM groups WHERE name = ?4",
            args![client_id, rule.claim, i as i64, group, value],
        )?;
        if n != 1 {
            return Err(DbError::NotFound);
        }
    }
    Ok(())
}

/// Deletes one rule and its values; `false` when the client has no such rule.
pub fn delete_one(tx: &Tx<'_>, client_id: &str, claim: &str) -> Result<bool, DbError> {
    tx.exec(
        "DELETE FROM client_claim_values WHERE client_id = ?1 AND claim = ?2",
        args![client_id, claim],
    )?;
    let n = tx.exec(
        "DELETE FROM client_claims WHERE client_id = ?1 AND claim = ?2",
        args![client_id, claim],
    )?;
    Ok(n == 1)
}

/// Makes the client's rules exactly `rules`, in that order.
pub fn replace(tx: &Tx<'_>, client_id: &str, rules: &[ClaimRule]) -> Result<(), DbError> {
    tx.exec("DELETE FROM client_claim_values WHERE client_id = ?1", args![client_id])?;
    tx.exec("DELETE FROM client_claims WHERE client_id = ?1", args![client_id])?;
    for (i, rule) in rules.iter().enumerate() {
        insert(tx, client_id, rule, i as i64)?;
    }
    Ok(())
}

/// Adds a rule, or replaces the rule of the same claim in its place in the table.
pub fn put_one(tx: &Tx<'_>, client_id: &str, rule: &ClaimRule) -> Result<(), DbError> {
    let existing: Option<i64> = tx.row(
        "SELECT position FROM client_claims WHERE client_id = ?1 AND claim = ?2",
        args![client_id, rule.claim],
        |r| r.get(0),
    )?;
    let position = match existing {
        Some(p) => {
            delete_one(tx, client_id, &rule.claim)?;
            p
        }
        None => tx.one(
            "SELECT coalesce(max(position) + 1, 0) FROM client_claims WHERE client_id = ?1",
            args![client_id],
            |r| r.get(0),
        )?,
    };
    insert(tx, client_id, rule, position)
}
