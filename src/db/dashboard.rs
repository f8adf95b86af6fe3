//! The admin dashboard's queries over the audit log: sign-ins and failures per hour,
//! token grants per client and the latest security events. Each is bounded by time,
//! so that it reads through the `audit_log(event, at)` or `audit_log(at)` index
//! however long the log has grown, and buckets in SQL both engines accept (integer
//! division of `at`, a BIGINT on PostgreSQL).

use super::audit::{self, Entry};
use super::sql::args;
use super::{DbError, Tx};

/// A successful interactive sign-in.
pub const SIGN_IN: &str = "login.ok";
/// Sign-in attempts that did not succeed: a wrong password or code, or an account
/// locked against further tries.
pub const FAILURES: &[&str] = &["login.failed", "mfa.failed", "login.locked"];

/// Events an administrator wants to see first, besides every `admin.` change.
pub const SECURITY: &[&str] = &[
    "login.failed",
    "login.locked",
    "mfa.failed",
    "mfa.disabled",
    "token.reuse_detected",
    "federation.failed",
    "password.reset",
    "login.password_grant_refused",
];

/// An `IN (…)` list of constant event names (never user input), written into the
/// statement so that each engine can use the `(event, at)` index for every name.
fn names(events: &[&str]) -> String {
    events
        .iter()
        .map(|e| format!("'{}'", e.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sign-ins and failures per hour since `since` (Unix seconds): `(hour, sign-ins,
/// failures)` for each hour with any, where `hour` is the bucket's start / 3600.
pub fn per_hour(conn: &Tx<'_>, since: i64) -> Result<Vec<(i64, i64, i64)>, DbError> {
    let mut all = Vec::with_capacity(1 + FAILURES.len());
    all.push(SIGN_IN);
    all.extend_from_slice(FAILURES);
    let rows: Vec<(String, i64, i64)> = conn.rows(
        &format!(
            "SELECT event, at / 3600, count(*) FROM audit_log
             WHERE event IN ({}) AND at >= ?1 GROUP BY event, at / 3600",
            names(&all)
        ),
        args![since],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let mut hours: Vec<(i64, i64, i64)> = Vec::new();
    for (event, hour, n) in rows {
        let i = match hours.iter().position(|h| h.0 == hour) {
            Some(i) => i,
            None => {
                hours.push((hour, 0, 0));
                hours.len() - 1
            }
        };
        if event == SIGN_IN {
            hours[i].1 += n;
        } else {
            hours[i].2 += n;
        }
    }
    hours.sort_unstable();
    Ok(hours)
}

/// Tokens issued per actor (`client:<id>`) since `since`, most first.
pub fn grants_per_client(conn: &Tx<'_>, since: i64) -> Result<Vec<(String, i64)>, DbError> {
    conn.rows(
        "SELECT actor, count(*) FROM audit_log
         WHERE event = 'token.issued' AND at >= ?1 AND actor IS NOT NULL
         GROUP BY actor ORDER BY count(*) DESC, actor",
        args![since],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// The latest `limit` security events since `since`, newest first: the `SECURITY`
/// names and every administrative change (`admin.`). The time bound keeps the scan
/// on the `audit_log(at)` index; a range of names (`>= 'admin.'`) would depend on
/// PostgreSQL's collation, which may ignore punctuation.
pub fn recent_security(conn: &Tx<'_>, since: i64, limit: i64) -> Result<Vec<Entry>, DbError> {
    conn.rows(
        &format!(
            "SELECT id, at, event, actor, target, ip, detail FROM audit_log
             WHERE at >= ?1 AND (event IN ({}) OR event LIKE 'admin.%')
             ORDER BY at DESC, id DESC LIMIT ?2",
            names(SECURITY)
        ),
        args![since, limit],
        audit::from_row,
    )
}
