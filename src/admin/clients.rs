//! Registering relying parties: listing, creating, updating, re-keying and deleting
//! clients for the CLI, the admin pages and the admin API. The specification they
//! share and the rules that check it live in `oidc::client_spec`.

use serde_json::{json, Value};

use super::{invalid, Actor, AdminError, ListQuery, Listed};
use crate::context::Ctx;
pub use crate::db::clients::{DEFAULT_ALG, DEFAULT_GRANT_TYPES};
use crate::db::{self, clients::Client};
use crate::domain::Secret;
use crate::oidc::client_cache::ClientCache;
pub use crate::oidc::client_spec::{
    auth_family, build, spec_of, view, ClientSpec, FieldKind, ALGS, AUTH_METHODS, FIELDS, GRANT_TYPES,
};

fn unknown_group(conn: &db::Tx<'_>, groups: &[String]) -> Result<Option<String>, db::DbError> {
    for g in groups {
        if db::groups::id_of(conn, g)?.is_none() {
            return Ok(Some(format!("there is no group named `{g}`")));
        }
    }
    Ok(None)
}

/// One page of registrations as stored (the admin pages show more than the view).
pub async fn page(cx: &Ctx<'_>, q: &ListQuery) -> Result<(Vec<Client>, i64), AdminError> {
    let (search, limit, offset) = (q.q.clone(), q.limit, q.offset);
    Ok(cx
        .db
        .read(move |c| db::clients::search(c, search.as_deref(), false, limit, offset))
        .await?)
}

/// Every registration, by id (the command line's list).
pub async fn all(cx: &Ctx<'_>) -> Result<Vec<Client>, AdminError> {
    Ok(cx.db.read(db::clients::list).await?)
}

pub async fn list(cx: &Ctx<'_>, q: &ListQuery) -> Result<Listed<Value>, AdminError> {
    q.sort_among(&["client_id"], "client_id")?;
    let (search, desc, limit, offset) = (q.q.clone(), q.descending, q.limit, q.offset);
    let (clients, total) = cx
        .db
        .read(move |c| db::clients::search(c, search.as_deref(), desc, limit, offset))
        .await?;
    Ok(Listed {
        items: clients.iter().map(view).collect(),
        total,
        limit,
        offset,
    })
}

pub async fn get(cx: &Ctx<'_>, id: &str) -> Result<Client, AdminError> {
    let id = id.to_string();
    cx.db
        .read(move |c| db::clients::find(c, &id))
        .await?
        .ok_or(AdminError::NotFound("client"))
}

/// A client_secret_jwt secret as stored: the HMAC key must be read back, so it is
/// sealed with the master key when one is set (like signing keys), never hashed.
pub fn seal_hmac(cx: &Ctx<'_>, secret: &str) -> Result<String, AdminError> {
    crate::crypto::sealed::seal_text(cx.settings.master_key.as_ref(), secret).map_err(|e| {
        tracing::error!(error = %e, "cannot seal a client secret");
        AdminError::Server(crate::error::Internal::Failed)
    })
}

/// Registers a client; the secret, if any, is returned once.
pub async fn create(cx: &Ctx<'_>, actor: &Actor, spec: &ClientSpec) -> Result<(Client, Option<Secret>), AdminError> {
    let (mut client, secret) = build(spec, cx.now).map_err(AdminError::Invalid)?;
    client.secret_for_hmac = client
        .secret_for_hmac
        .as_deref()
        .map(|s| seal_hmac(cx, s))
        .transpose()?;
    let (now, actor, stored) = (cx.now, actor.clone(), client.clone());
    cx.db
        .write(move |c| {
            if let Some(msg) = unknown_group(c, &stored.allowed_groups)? {
                return Ok(Err(invalid("allowed_groups", msg)));
            }
            match db::clients::insert(c, &stored) {
                Ok(()) => {}
                Err(db::DbError::Conflict) => return Ok(Err(invalid("client_id", "a client with this id exists"))),
                Err(e) => return Err(e),
            }
            actor
                .event("admin.client_created")
                .target(format!("client:{}", stored.client_id))
                .detail(json!({"after": view(&stored)}))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await??;
    Ok((client, secret))
}

/// Applies a specification to an existing client. The id, secret and creation time
/// stay; a change of authentication family (secret ↔ keys ↔ public) is refused.
pub async fn update(
    cx: &Ctx<'_>,
    clients: &ClientCache,
    actor: &Actor,
    id: &str,
    spec: &ClientSpec,
) -> Result<Client, AdminError> {
    let existing = get(cx, id).await?;
    let mut spec = spec.clone();
    spec.client_id = existing.client_id.clone();
    let (mut client, _) = build(&spec, existing.created_at).map_err(AdminError::Invalid)?;
    if auth_family(&client.auth_method) != auth_family(&existing.auth_method) {
        return Err(invalid(
            "token_endpoint_auth_method",
            format!(
                "cannot change from {} to {}; register a new client",
                existing.auth_method, client.auth_method
            ),
        ));
    }
    client.secret_hash = existing.secret_hash;
    client.secret_for_hmac = existing.secret_for_hmac.clone();
    let (now, actor, stored) = (cx.now, actor.clone(), client.clone());
    cx.db
        .write(move |c| {
            if let Some(msg) = unknown_group(c, &stored.allowed_groups)? {
                return Ok(Err(invalid("allowed_groups", msg)));
            }
            if !db::clients::update(c, &stored, now)? {
                return Ok(Err(AdminError::NotFound("client")));
            }
            // Users its new allowed groups leave out lose their grants at once.
            db::grants::revoke_outside_allowed_groups(c, None, Some(&stored.client_id), now)?;
            actor
                .event("admin.client_updated")
                .target(format!("client:{}", stored.client_id))
                .detail(json!({"before": view(&existing), "after": view(&stored)}))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await??;
    clients.forget(id);
    Ok(client)
}

/// Replaces a confidential client's secret and returns the new one, once.
pub async fn rotate_secret(cx: &Ctx<'_>, clients: &ClientCache, actor: &Actor, id: &str) -> Result<Secret, AdminError> {
    let existing = get(cx, id).await?;
    if existing.secret_hash.is_none() {
        return Err(AdminError::Conflict("this client has no secret to rotate".into()));
    }
    let jwt = existing.auth_method == "client_secret_jwt";
    let secret = if jwt {
        Secret::generate_hmac_key()
    } else {
        Secret::generate()
    };
    let hmac = jwt.then(|| seal_hmac(cx, secret.expose())).transpose()?;
    let (hash, now, actor, cid) = (secret.hash(), cx.now, actor.clone(), existing.client_id.clone());
    cx.db
        .write(move |c| {
            db::clients::set_secret(c, &cid, &hash, hmac.as_deref(), now)?;
            actor
                .event("admin.client_secret_rotated")
                .target(format!("client:{cid}"))
                .write(c, now)
        })
        .await?;
    clients.forget(id);
    Ok(secret)
}

pub async fn delete(cx: &Ctx<'_>, clients: &ClientCache, actor: &Actor, id: &str) -> Result<(), AdminError> {
    let existing = get(cx, id).await?;
    let (now, actor) = (cx.now, actor.clone());
    cx.db
        .write(move |c| {
            db::clients::delete(c, &existing.client_id)?;
            actor
                .event("admin.client_deleted")
                .target(format!("client:{}", existing.client_id))
                .detail(json!({"before": view(&existing)}))
                .write(c, now)
        })
        .await?;
    clients.forget(id);
    Ok(())
}
