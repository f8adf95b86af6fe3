//! Signing-key lifecycle: one active key per algorithm, rotation that keeps old public
//! keys published until the tokens they signed have expired, and reloading in the
//! server when another process (the CLI) rotates.

use crate::clock::Clock;
use crate::crypto::keys::{Alg, KeySet, SigningKeyRecord};
use crate::crypto::random::random_id;
use crate::db::{self, Db, DbError};
use crate::state::AppState;

/// How long a retired key stays in the JWKS: longer than any token it signed lives.
pub fn keep_retired(state_lifetimes: &crate::config::TokenLifetimes) -> i64 {
    state_lifetimes.access_token.max(state_lifetimes.id_token) + 300
}

#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{0}")]
    Key(#[from] crate::crypto::KeyError),
}

/// Makes sure each algorithm has an active key, generating what is missing.
pub async fn ensure(db: &Db, clock: &Clock, keep: i64) -> Result<KeySet, KeysError> {
    let mut records = db.read(db::keys::list).await?;
    for alg in Alg::ALL {
        if !records.iter().any(|k| k.alg == alg && k.retired_at.is_none()) {
            let key = SigningKeyRecord::generate(alg, random_id(), clock.now())?;
            let stored = key.clone();
            db.write(move |c| db::keys::insert(c, &stored)).await?;
            tracing::info!(kid = %key.kid, alg = alg.as_str(), "generated a new signing key");
            records.push(key);
        }
    }
    Ok(KeySet::from_records(&records, clock.now(), keep)?)
}

/// Adds a new key for `alg` and retires the previous one, in one transaction.
pub fn rotate(conn: &db::Conn, alg: Alg, now: i64) -> Result<SigningKeyRecord, KeysError> {
    let key = SigningKeyRecord::generate(alg, random_id(), now)?;
    let tx = conn.unchecked_transaction().map_err(DbError::from)?;
    db::keys::retire_active(&tx, alg, now)?;
    db::keys::insert(&tx, &key)?;
    tx.commit().map_err(DbError::from)?;
    Ok(key)
}

/// Polls the key table and swaps the in-memory set when it changed.
pub fn spawn_reloader(state: AppState) {
    tokio::spawn(async move {
        let mut seen = None;
        let mut ticks: u64 = 0;
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(10));
        loop {
            tick.tick().await;
            let print = match state.db.read(db::keys::fingerprint).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot check signing keys");
                    continue;
                }
            };
            ticks += 1;
            // Unchanged keys are still rebuilt every five minutes, which drops retired
            // keys whose publication window has passed.
            if seen == Some(print) && ticks % 30 != 0 {
                continue;
            }
            seen = Some(print);
            if let Err(e) = reload(&state).await {
                tracing::error!(error = %e, "reloading signing keys failed; keeping the current set");
            }
        }
    });
}

pub async fn reload(state: &AppState) -> Result<(), KeysError> {
    let records = state.db.read(db::keys::list).await?;
    let keep = keep_retired(&state.settings.lifetimes);
    let set = KeySet::from_records(&records, state.clock.now(), keep)?;
    state.keys.replace(set);
    Ok(())
}
