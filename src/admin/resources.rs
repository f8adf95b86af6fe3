//! Registered resource servers (RFC 8707), as the CLI and the admin API manage them.

use serde_json::{json, Value};

use super::{invalid, Actor, AdminError};
use crate::context::Ctx;
use crate::db::{self, resources::Resource};
use crate::domain::Scope;

/// What a resource looks like in the API, the CLI's `--json` and the audit log.
pub fn view(r: &Resource) -> Value {
    json!({ "uri": r.uri, "scopes": r.scopes, "created_at": r.created_at })
}

/// Scopes given as one or more space- or comma-separated lists.
pub fn parse_scopes(given: &[String]) -> Result<Vec<String>, AdminError> {
    let joined = given.join(" ").replace(',', " ");
    let scope = Scope::parse(&joined).map_err(|e| invalid("scope", e.0))?;
    Ok(scope.iter().map(str::to_string).collect())
}

pub async fn list(cx: &Ctx<'_>) -> Result<Vec<Resource>, AdminError> {
    Ok(cx.db.read(db::resources::list).await?)
}

/// Registers a resource (RFC 8707 §2: an absolute URI without a fragment).
pub async fn create(cx: &Ctx<'_>, actor: &Actor, uri: &str, scopes: &[String]) -> Result<Resource, AdminError> {
    let uri = crate::oidc::resource::parse_uri(uri).map_err(|e| invalid("uri", e))?;
    let resource = Resource {
        uri,
        scopes: parse_scopes(scopes)?,
        created_at: cx.now,
    };
    let (now, actor, stored, after) = (cx.now, actor.clone(), resource.clone(), view(&resource));
    cx.db
        .write(move |c| {
            let taken = || {
                Ok(Err(AdminError::Conflict(format!(
                    "the resource {} is registered already",
                    stored.uri
                ))))
            };
            if db::resources::find(c, &stored.uri)?.is_some() {
                return taken();
            }
            match db::resources::insert(c, &stored) {
                Ok(()) => {}
                Err(db::DbError::Conflict) => return taken(),
                Err(e) => return Err(e),
            }
            actor
                .event("admin.resource_created")
                .target(format!("resource:{}", stored.uri))
                .detail(json!({ "after": after }))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await??;
    Ok(resource)
}

/// Removes a resource. Tokens already issued for it keep their audience until they
/// expire; new requests naming it get `invalid_target`.
pub async fn delete(cx: &Ctx<'_>, actor: &Actor, uri: &str) -> Result<(), AdminError> {
    let (now, actor, uri) = (cx.now, actor.clone(), uri.to_string());
    cx.db
        .write(move |c| {
            let Some(existing) = db::resources::find(c, &uri)? else {
                return Ok(Err(AdminError::NotFound("resource")));
            };
            db::resources::delete(c, &uri)?;
            actor
                .event("admin.resource_deleted")
                .target(format!("resource:{uri}"))
                .detail(json!({ "before": view(&existing) }))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await?
}
