//! Signing-key lifecycle: one active key per algorithm, rotation that publishes a new
//! key before it signs and keeps old public keys published until the tokens they
//! signed have expired, and reloading when another node or the CLI rotates.

use crate::clock::Clock;
use crate::crypto::keys::{Alg, KeySet, SigningKeyRecord};
use crate::crypto::random::random_id;
use crate::crypto::sealed::{self, MasterKey};
use crate::db::{self, Db, DbError};
use crate::oidc::client_spec::MAX_CLIENT_ACCESS_TTL;
use crate::oidc::context::MakeCtx;
use crate::oidc::Ctx;

/// How long a retired key stays in the JWKS: longer than any token it signed lives,
/// including a client's own access-token lifetime (up to `MAX_CLIENT_ACCESS_TTL`).
pub fn keep_retired(state_lifetimes: &crate::config::TokenLifetimes) -> i64 {
    state_lifetimes
        .access_token
        .max(state_lifetimes.id_token)
        .max(MAX_CLIENT_ACCESS_TTL)
        + 300
}

#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{0}")]
    Key(#[from] crate::crypto::KeyError),
    #[error("{0}")]
    Sealed(String),
}

/// The stored form of a key: its private part sealed when a master key is set.
pub fn to_stored(mut rec: SigningKeyRecord, master: Option<&MasterKey>) -> Result<SigningKeyRecord, KeysError> {
    if let Some(key) = master {
        if !sealed::is_sealed(&rec.private_pem) {
            rec.private_pem = sealed::seal(key, rec.private_pem.as_bytes()).map_err(KeysError::Sealed)?;
        }
    }
    Ok(rec)
}

/// The usable form of stored keys: sealed private parts opened with the master key.
pub fn opened(records: Vec<SigningKeyRecord>, master: Option<&MasterKey>) -> Result<Vec<SigningKeyRecord>, KeysError> {
    records
        .into_iter()
        .map(|mut rec| {
            if sealed::is_sealed(&rec.private_pem) {
                let Some(key) = master else {
                    return Err(KeysError::Sealed(
                        "the signing keys are encrypted; set TESSERA_MASTER_KEY or --master-key-file".into(),
                    ));
                };
                let pem = sealed::open(key, &rec.private_pem)
                    .map_err(|e| KeysError::Sealed(format!("signing key {}: {e}", rec.kid)))?;
                rec.private_pem = String::from_utf8(pem).map_err(|_| KeysError::Sealed("bad key text".into()))?;
            }
            Ok(rec)
        })
        .collect()
}

/// Makes sure each algorithm has an active key, generating what is missing; with a
/// master key, keys stored in clear are sealed in place.
pub async fn ensure(db: &Db, clock: &Clock, keep: i64, master: Option<&MasterKey>) -> Result<KeySet, KeysError> {
    let stored = db.read(db::keys::list).await?;
    if let Some(key) = master {
        let clear: Vec<SigningKeyRecord> = stored
            .iter()
            .filter(|r| !sealed::is_sealed(&r.private_pem))
            .cloned()
            .collect();
        if !clear.is_empty() {
            let sealed_now = clear
                .into_iter()
                .map(|r| to_stored(r, Some(key)))
                .collect::<Result<Vec<_>, _>>()?;
            db.write(move |c| {
                for rec in &sealed_now {
                    db::keys::set_private(c, &rec.kid, &rec.private_pem)?;
                }
                Ok(())
            })
            .await?;
            tracing::info!("signing keys are now encrypted at rest");
        }
    }
    let mut records = opened(stored, master)?;
    let mut adopted = false;
    for alg in Alg::ALL {
        if !records.iter().any(|k| k.alg == alg && k.retired_at.is_none()) {
            let key = SigningKeyRecord::generate(alg, random_id(), clock.now())?;
            let stored = to_stored(key.clone(), master)?;
            if db.write(move |c| db::keys::insert_unless_active(c, &stored)).await? {
                tracing::info!(kid = %key.kid, alg = alg.as_str(), "generated a new signing key");
                records.push(key);
            } else {
                // Another node starting at the same moment stored one first.
                adopted = true;
            }
        }
    }
    if adopted {
        records = opened(db.read(db::keys::list).await?, master)?;
    }
    Ok(KeySet::from_records(&records, clock.now(), keep)?)
}

/// With a master key, client_secret_jwt keys stored in clear (before the key was set)
/// are sealed in place, as signing keys are.
pub async fn seal_client_secrets(db: &Db, master: Option<&MasterKey>) -> Result<(), KeysError> {
    let Some(key) = master else {
        // Sealed secrets without the key would fail every sign-in of their clients:
        // refuse to start, as for sealed signing keys.
        if db.read(db::clients::any_sealed_hmac).await? {
            return Err(KeysError::Sealed(
                "client secrets are encrypted; set TESSERA_MASTER_KEY or --master-key-file".into(),
            ));
        }
        return Ok(());
    };
    let clear = db.read(db::clients::clear_hmac_secrets).await?;
    if clear.is_empty() {
        return Ok(());
    }
    let sealed_now = clear
        .into_iter()
        .map(|(id, secret)| {
            sealed::seal(key, secret.as_bytes())
                .map(|s| (id, s))
                .map_err(KeysError::Sealed)
        })
        .collect::<Result<Vec<_>, _>>()?;
    db.write(move |c| {
        for (id, stored) in &sealed_now {
            db::clients::set_hmac_secret(c, id, stored)?;
        }
        Ok(())
    })
    .await?;
    tracing::info!("client secrets are now encrypted at rest");
    Ok(())
}

/// Adds a new key for `alg`, inside the caller's write. The key is published at once
/// but signs only from `now + publish_delay`, when the previous key retires: by then
/// every node has reloaded and lists it in its JWKS, so no relying party meets a kid
/// the JWKS it fetched from any node lacks. Returns the key and when it starts to sign.
pub fn rotate(
    conn: &db::Tx<'_>,
    alg: Alg,
    now: i64,
    publish_delay: i64,
    master: Option<&MasterKey>,
) -> Result<(SigningKeyRecord, i64), KeysError> {
    let key = SigningKeyRecord::generate(alg, random_id(), now)?;
    // Rotations on two nodes at once would each retire only the key they saw and
    // leave two unretired: they take turns instead.
    db::keys::lock(conn)?;
    // Refuse to add a clear key beside sealed ones (or one sealed with another key).
    opened(db::keys::list(conn)?, master)?;
    let stored = to_stored(key.clone(), master)?;
    let signs_from = now + publish_delay;
    db::keys::retire_active(conn, alg, signs_from)?;
    db::keys::insert(conn, &stored)?;
    Ok((key, signs_from))
}

/// Polls the key table and swaps the in-memory set when it changed.
pub fn spawn_reloader(state: impl MakeCtx) {
    tokio::spawn(async move {
        let mut seen = None;
        let mut ticks: u64 = 0;
        let every = state.ctx().settings.key_reload_every.max(1);
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(every));
        // Rebuilding unchanged keys about every five minutes drops retired keys whose
        // publication window has passed.
        let rebuild_every = (300 / every).max(1);
        loop {
            tick.tick().await;
            let cx = state.ctx();
            let print = match cx.db.read(db::keys::fingerprint).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot check signing keys");
                    continue;
                }
            };
            ticks += 1;
            if seen == Some(print) && ticks % rebuild_every != 0 {
                continue;
            }
            match reload(&cx).await {
                // Only a set actually loaded counts as seen, so a failed reload is
                // tried again at the next tick.
                Ok(()) => seen = Some(print),
                // The database gone for a moment is the pool's to report.
                Err(KeysError::Db(e)) => {
                    tracing::warn!(error = %e, "cannot reload signing keys; keeping the current set")
                }
                Err(e) => tracing::error!(error = %e, "reloading signing keys failed; keeping the current set"),
            }
        }
    });
}

/// Verifies a token of ours. A `kid` this node does not know may be a key another
/// node just created: the set is reloaded once (at most once a second) and the token
/// tried again, so a rotation elsewhere never makes this node refuse good tokens.
pub async fn verify(cx: &Ctx<'_>, token: &str) -> Result<crate::crypto::jwt::Signed, crate::crypto::JwtError> {
    let first = crate::crypto::jwt::verify(&cx.keys.current(), token);
    if first.is_ok() {
        return first;
    }
    let unknown = crate::crypto::jwt::unverified_kid(token).is_some_and(|kid| !cx.keys.current().knows(&kid));
    if !unknown || !cx.keys.may_reload_for_unknown_kid(cx.now) {
        return first;
    }
    if let Err(e) = reload(cx).await {
        tracing::warn!(error = %e, "cannot reload signing keys for an unknown key id");
        return first;
    }
    crate::crypto::jwt::verify(&cx.keys.current(), token)
}

pub async fn reload(cx: &Ctx<'_>) -> Result<(), KeysError> {
    let records = opened(cx.db.read(db::keys::list).await?, cx.settings.master_key.as_ref())?;
    let keep = keep_retired(&cx.settings.lifetimes);
    let set = KeySet::from_records(&records, cx.now, keep)?;
    cx.keys.replace(set);
    Ok(())
}
