//! The dashboard's figures (counts now, and seven days of sign-ins, failures and
//! token grants from the audit log), signing keys and the audit log.

use serde::Serialize;
use serde_json::{json, Value};

use super::{invalid, Actor, AdminError, ListQuery, Listed};
use crate::context::Ctx;
use crate::crypto::keys::Alg;
use crate::db::{self, audit::Entry};
use crate::replica::shipper::Shipper;

#[derive(Debug, Serialize)]
pub struct Stats {
    pub users: i64,
    pub active_sessions: i64,
    pub clients: i64,
    pub logins_24h: i64,
    pub failed_logins_24h: i64,
    pub locked_accounts: i64,
}

pub async fn stats(cx: &Ctx<'_>) -> Result<Stats, AdminError> {
    let now = cx.now;
    Ok(cx.db.read(move |c| stats_in(c, now)).await?)
}

fn stats_in(c: &db::Tx<'_>, now: i64) -> Result<Stats, db::DbError> {
    let day = now - 24 * 3600;
    Ok(Stats {
        users: db::users::count(c)?,
        active_sessions: db::sessions::count_active(c, now)?,
        clients: db::clients::count(c)?,
        logins_24h: db::audit::count_since(c, "login.ok", day)?,
        failed_logins_24h: db::audit::count_since(c, "login.failed", day)?
            + db::audit::count_since(c, "mfa.failed", day)?,
        locked_accounts: db::users::count_locked(c, now)?,
    })
}

/// How far back the dashboard's charts look: seven days of hourly buckets.
pub const HOURS: i64 = 7 * 24;
/// Clients named in the grants chart; the rest are summed as one "other" bar.
pub const TOP_CLIENTS: usize = 5;
/// Security events listed on the dashboard.
pub const RECENT_EVENTS: i64 = 10;

/// Everything the dashboard draws, read in one snapshot.
#[derive(Debug, Serialize)]
pub struct Dashboard {
    pub stats: Stats,
    /// The start of the first hourly bucket (a whole hour, Unix seconds).
    pub from: i64,
    /// Sign-ins and failures per hour, oldest first, `HOURS` of each; the last is
    /// the current hour.
    pub sign_ins: Vec<i64>,
    pub failures: Vec<i64>,
    /// Tokens issued per client over the same days, most first: the client's name
    /// (its id when it has been deleted) and the count, with the clients past
    /// `TOP_CLIENTS` summed as `other`.
    pub grants: Vec<(String, i64)>,
    /// Clients summed into `grants`' last row, when there are more than `TOP_CLIENTS`.
    pub other_clients: usize,
    /// Mail waiting and given up on, when mail is configured.
    pub mail: Option<MailQueue>,
    /// Seconds the replica is behind, when replication is on.
    pub replication_lag: Option<f64>,
    pub security: Vec<Entry>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct MailQueue {
    pub pending: i64,
    pub failed: i64,
}

/// `replication` is this node's replication thread, if any, with the time in
/// milliseconds its lag is measured at.
pub async fn dashboard(cx: &Ctx<'_>, replication: Option<(&Shipper, i64)>) -> Result<Dashboard, AdminError> {
    let now = cx.now;
    let from = (now / 3600 - (HOURS - 1)) * 3600;
    let mail_on = cx.settings.smtp.is_some();
    let (stats, hours, grants, mail, security) = cx
        .db
        .read(move |c| {
            let mut grants = Vec::new();
            for (actor, n) in db::dashboard::grants_per_client(c, from)? {
                let id = actor.strip_prefix("client:").unwrap_or(&actor).to_string();
                // Only the named bars need a name; the rest are summed.
                let name = if grants.len() < TOP_CLIENTS {
                    db::clients::find(c, &id)?.map(|cl| cl.name).filter(|n| !n.is_empty())
                } else {
                    None
                };
                grants.push((name.unwrap_or(id), n));
            }
            let mail = if mail_on { Some(db::outbox::counts(c)?) } else { None };
            Ok((
                stats_in(c, now)?,
                db::dashboard::per_hour(c, from)?,
                grants,
                mail,
                db::dashboard::recent_security(c, from, RECENT_EVENTS)?,
            ))
        })
        .await?;
    let (mut sign_ins, mut failures) = (vec![0; HOURS as usize], vec![0; HOURS as usize]);
    for (hour, ok, failed) in hours {
        // Events stamped after `now` (a clock moved back) fall outside the chart.
        if let Ok(i) = usize::try_from(hour - from / 3600) {
            if i < sign_ins.len() {
                sign_ins[i] += ok;
                failures[i] += failed;
            }
        }
    }
    let other_clients = grants.len().saturating_sub(TOP_CLIENTS);
    let mut grants = grants;
    if other_clients > 0 {
        let rest: i64 = grants.drain(TOP_CLIENTS..).map(|g| g.1).sum();
        grants.push(("other".into(), rest));
    }
    let replication_lag = replication.map(|(shipper, now_ms)| shipper.stats.lag_seconds(now_ms));
    Ok(Dashboard {
        stats,
        from,
        sign_ins,
        failures,
        grants,
        other_clients,
        mail: mail.map(|(pending, _sent, failed)| MailQueue { pending, failed }),
        replication_lag,
        security,
    })
}

/// Signing keys, oldest first, each with its `status`: `signing`, `published` (a
/// rotation's successor, signing from `signs_from`), `retiring` (signs until its
/// `retired_at`) or `retired` (verifies the tokens it signed until they expire).
pub async fn keys(cx: &Ctx<'_>) -> Result<Vec<Value>, AdminError> {
    let now = cx.now;
    let keys = cx.db.read(db::keys::list).await?;
    Ok(keys
        .iter()
        .map(|k| {
            let successor_of = keys
                .iter()
                .filter(|o| o.alg == k.alg && o.kid != k.kid)
                .filter_map(|o| o.retired_at.filter(|t| *t > now))
                .max();
            let (status, signs_from) = match (k.retired_at, successor_of) {
                (Some(t), _) if t <= now => ("retired", None),
                (Some(_), _) => ("retiring", None),
                (None, Some(from)) => ("published", Some(from)),
                (None, None) => ("signing", None),
            };
            json!({
                "kid": k.kid,
                "alg": k.alg.as_str(),
                "created_at": k.created_at,
                "retired_at": k.retired_at,
                "status": status,
                "signs_from": signs_from,
            })
        })
        .collect())
}

/// Adds a new signing key for `alg`, published at once and signing after every node
/// has had time to publish it (`signs_from`); the old one signs until then and keeps
/// verifying until its tokens expire.
pub async fn rotate_key(cx: &crate::oidc::Ctx<'_>, actor: &Actor, alg: &str) -> Result<Value, AdminError> {
    let alg = Alg::parse(alg)
        .filter(|a| ["RS256", "ES256", "EdDSA"].contains(&a.as_str()))
        .ok_or_else(|| invalid("alg", "one of RS256, ES256, EdDSA"))?;
    let (now, master, actor) = (cx.now, cx.settings.master_key.clone(), actor.clone());
    let delay = cx.settings.key_publish_delay();
    let kid = cx
        .db
        .write(move |c| {
            // Everything but a storage failure is found before anything changes; a
            // storage failure rolls the rotation back.
            let key = match crate::oidc::keys::rotate(c, alg, now, delay, master.as_ref()) {
                Ok((key, _)) => key,
                Err(crate::oidc::keys::KeysError::Db(e)) => return Err(e),
                Err(other) => return Ok(Err(other)),
            };
            actor
                .event("admin.key_rotated")
                .target(&key.kid)
                .detail(json!({"alg": alg.as_str()}))
                .write(c, now)?;
            Ok(Ok(key.kid))
        })
        .await?
        .map_err(|e| match e {
            // Sealed keys and no (or another) master key: the operator must supply it.
            crate::oidc::keys::KeysError::Sealed(why) => AdminError::Conflict(why),
            other => {
                tracing::error!(error = %other, "key rotation failed");
                AdminError::Server(crate::error::Internal::Failed)
            }
        })?;
    if let Err(e) = crate::oidc::keys::reload(cx).await {
        tracing::error!(error = %e, "reloading keys after rotation failed; the reloader will retry");
    }
    Ok(json!({"kid": kid, "alg": alg.as_str(), "signs_from": now + delay}))
}

/// Audit entries, newest first: filters `event` (a name, or a prefix ending in `.`),
/// `who` (actor or target), `since` and `until` (Unix seconds).
pub async fn audit(cx: &Ctx<'_>, q: &ListQuery) -> Result<Listed<Entry>, AdminError> {
    q.sort_among(&["at"], "at")?;
    let time = |k: &str| -> Result<Option<i64>, AdminError> {
        q.filters
            .get(k)
            .map(|v| v.parse().map_err(|_| invalid(k, "Unix seconds")))
            .transpose()
    };
    let filter = db::audit::Filter {
        event: q.filters.get("event").cloned(),
        who: q.filters.get("who").cloned(),
        since: time("since")?,
        until: time("until")?,
    };
    let (limit, offset) = (q.limit, q.offset);
    let (items, total) = cx.db.read(move |c| db::audit::list(c, &filter, limit, offset)).await?;
    Ok(Listed {
        items,
        total,
        limit,
        offset,
    })
}
