//! Administering invitations (admin pages, API and `tessera user invite`): invite an
//! address with groups and a role, list the live invitations, revoke one. The link is
//! shown once, when the invitation is made: only its digest is stored.

use serde::Deserialize;
use serde_json::json;

use super::{invalid, Actor, AdminError, Problems};
use crate::context::Ctx;
use crate::db;
use crate::domain::Email;
use crate::lifecycle::invite;

pub use crate::lifecycle::invite::{Created, Pending};

/// An invitation as asked for.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvitationInput {
    pub email: String,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub admin: bool,
}

/// Invites the address: the link is returned (and mailed when mail is on), the
/// address's earlier invitation voided, the change audited, in one transaction.
pub async fn create(cx: &Ctx<'_>, actor: &Actor, input: InvitationInput) -> Result<Created, AdminError> {
    if !invite::enabled(cx.settings) {
        return Err(AdminError::Conflict(invite::OFF.into()));
    }
    let email = Email::parse(&input.email).map_err(|e| invalid("email", e.0))?;
    let mut groups: Vec<String> = input
        .groups
        .iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    groups.sort();
    groups.dedup();
    let grants = invite::Grants {
        groups,
        admin: input.admin,
    };
    let (now, actor, settings, issuer) = (cx.now, actor.clone(), cx.settings.clone(), cx.issuer.to_string());
    let mail = crate::mail::outbox::Mail::new(cx.settings);
    let created = cx
        .db
        .write(move |c| {
            let mut problems = Problems::new();
            // Unknown groups are refused up front, not dropped at acceptance.
            if let Some(g) = first_unknown(c, &grants.groups)? {
                problems.insert("groups".into(), format!("there is no group named `{g}`"));
            }
            if db::users::email_taken(c, email.as_str())? {
                problems.insert("email".into(), "an account with this address exists".into());
            }
            if !problems.is_empty() {
                return Ok(Err(AdminError::Invalid(problems)));
            }
            let created = invite::create_in(c, &settings, &mail, &issuer, &email, &grants, now)?;
            actor
                .event("admin.invitation_created")
                .target(email.as_str())
                .detail(
                    json!({"invitation": created.id, "groups": grants.groups, "admin": grants.admin,
                    "mailed": created.mailed, "expires_at": created.expires_at}),
                )
                .write(c, now)?;
            Ok(Ok(created))
        })
        .await??;
    if created.mailed {
        cx.mail_wakeup.notify_one();
    }
    Ok(created)
}

fn first_unknown(conn: &db::Tx<'_>, groups: &[String]) -> Result<Option<String>, db::DbError> {
    for g in groups {
        if db::groups::id_of(conn, g)?.is_none() {
            return Ok(Some(g.clone()));
        }
    }
    Ok(None)
}

/// The live invitations, newest first.
pub async fn list(cx: &Ctx<'_>) -> Result<Vec<Pending>, AdminError> {
    let now = cx.now;
    Ok(cx.db.read(move |c| invite::pending(c, now)).await?)
}

/// Revokes a live invitation: its link stops working at once.
pub async fn revoke(cx: &Ctx<'_>, actor: &Actor, id: i64) -> Result<(), AdminError> {
    let (now, actor) = (cx.now, actor.clone());
    cx.db
        .write(move |c| {
            let Some(found) = invite::pending(c, now)?.into_iter().find(|p| p.id == id) else {
                return Ok(Err(AdminError::NotFound("invitation")));
            };
            if !db::email_tokens::void(c, id, db::email_tokens::INVITE, now)? {
                return Ok(Err(AdminError::NotFound("invitation")));
            }
            actor
                .event("admin.invitation_revoked")
                .target(&found.email)
                .detail(json!({"invitation": id}))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await?
}
