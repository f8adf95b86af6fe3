//! The dashboard's figures, signing keys and the audit log.

use serde::Serialize;
use serde_json::{json, Value};

use super::{invalid, Actor, AdminError, ListQuery, Listed};
use crate::crypto::keys::Alg;
use crate::db::{self, audit::Entry};
use crate::state::AppState;

#[derive(Debug, Serialize)]
pub struct Stats {
    pub users: i64,
    pub active_sessions: i64,
    pub clients: i64,
    pub logins_24h: i64,
    pub failed_logins_24h: i64,
    pub locked_accounts: i64,
}

pub async fn stats(state: &AppState) -> Result<Stats, AdminError> {
    let now = state.clock.now();
    let day = now - 24 * 3600;
    Ok(state
        .db
        .read(move |c| {
            Ok(Stats {
                users: db::users::count(c)?,
                active_sessions: db::sessions::count_active(c, now)?,
                clients: db::clients::count(c)?,
                logins_24h: db::audit::count_since(c, "login.ok", day)?,
                failed_logins_24h: db::audit::count_since(c, "login.failed", day)?
                    + db::audit::count_since(c, "mfa.failed", day)?,
                locked_accounts: db::users::count_locked(c, now)?,
            })
        })
        .await?)
}

/// Signing keys, oldest first, each with its `status`: `signing`, `published` (a
/// rotation's successor, signing from `signs_from`), `retiring` (signs until its
/// `retired_at`) or `retired` (verifies the tokens it signed until they expire).
pub async fn keys(state: &AppState) -> Result<Vec<Value>, AdminError> {
    let now = state.clock.now();
    let keys = state.db.read(db::keys::list).await?;
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
pub async fn rotate_key(state: &AppState, actor: &Actor, alg: &str) -> Result<Value, AdminError> {
    let cx = state.ctx();
    let alg = Alg::parse(alg)
        .filter(|a| ["RS256", "ES256", "EdDSA"].contains(&a.as_str()))
        .ok_or_else(|| invalid("alg", "one of RS256, ES256, EdDSA"))?;
    let (now, master, actor) = (cx.now, state.settings.master_key.clone(), actor.clone());
    let delay = state.settings.key_publish_delay();
    let kid = state
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
    if let Err(e) = crate::oidc::keys::reload(&cx).await {
        tracing::error!(error = %e, "reloading keys after rotation failed; the reloader will retry");
    }
    Ok(json!({"kid": kid, "alg": alg.as_str(), "signs_from": now + delay}))
}

/// Audit entries, newest first: filters `event` (a name, or a prefix ending in `.`),
/// `who` (actor or target), `since` and `until` (Unix seconds).
pub async fn audit(state: &AppState, q: &ListQuery) -> Result<Listed<Entry>, AdminError> {
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
    let (items, total) = state
        .db
        .read(move |c| db::audit::list(c, &filter, limit, offset))
        .await?;
    Ok(Listed {
        items,
        total,
        limit,
        offset,
    })
}
