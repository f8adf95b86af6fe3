//! Initial access tokens for dynamic client registration, as the CLI, the admin pages
//! and the admin API create, list and revoke them. A token is shown once, when it is
//! made: only its SHA-256 is stored (RFC 7591 §3, `registration_tokens`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{invalid, Actor, AdminError};
use crate::context::Ctx;
use crate::db::{self, registration::InitialToken};
use crate::domain::Secret;

/// Shortest and longest lifetime of an initial access token: a minute is enough to
/// paste it, and a month-old bearer credential should not still open the door.
pub const MIN_TTL: u64 = 60;
pub const MAX_TTL: u64 = 30 * 86_400;
pub const DEFAULT_TTL: &str = "1h";
/// More registrations than any one token should allow.
pub const MAX_USES: i64 = 10_000;

/// A token as asked for (the admin API's body, the page's form, the CLI's flags).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenInput {
    /// `30m`, `1h`, `7d` [default 1h].
    #[serde(default)]
    pub ttl: Option<String>,
    /// Registrations it allows [default: any number until it expires].
    #[serde(default)]
    pub uses: Option<i64>,
}

/// A token just made: the only time its value is seen.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    pub id: String,
    pub token: String,
    pub expires_at: i64,
    pub uses: Option<i64>,
}

/// A live token as listed: never its value.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub id: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub uses_left: Option<i64>,
    pub created_by: String,
}

/// The public name of a token: the start of its digest, which says nothing of the
/// token itself and is unique enough among the few live ones.
pub fn id_of(t: &InitialToken) -> String {
    URL_SAFE_NO_PAD.encode(&t.token_hash.as_bytes()[..9])
}

fn listed(t: &InitialToken) -> Listed {
    Listed {
        id: id_of(t),
        created_at: t.created_at,
        expires_at: t.expires_at,
        uses_left: t.uses_left,
        created_by: t.created_by.clone(),
    }
}

/// The lifetime in seconds, within `MIN_TTL`–`MAX_TTL`.
pub fn parse_ttl(text: &str) -> Result<i64, AdminError> {
    let secs = crate::config::parse_interval("ttl", text, MIN_TTL).map_err(|_| {
        invalid(
            "ttl",
            format!("`{text}` is not a lifetime between 1m and 30d, written like 30m, 1h or 7d"),
        )
    })?;
    if secs > MAX_TTL {
        return Err(invalid("ttl", "at most 30 days (30d)"));
    }
    Ok(secs as i64)
}

/// Makes a token and records who made it, in one transaction.
pub async fn create(cx: &Ctx<'_>, actor: &Actor, input: TokenInput) -> Result<Created, AdminError> {
    let ttl = parse_ttl(input.ttl.as_deref().unwrap_or(DEFAULT_TTL))?;
    if let Some(n) = input.uses.filter(|n| !(1..=MAX_USES).contains(n)) {
        return Err(invalid("uses", format!("{n}: between 1 and {MAX_USES}")));
    }
    let token = Secret::generate();
    let now = cx.now;
    let row = InitialToken {
        token_hash: token.hash(),
        created_at: now,
        expires_at: now + ttl,
        uses_left: input.uses,
        created_by: actor.name.clone(),
    };
    let created = Created {
        id: id_of(&row),
        token: token.expose().to_string(),
        expires_at: row.expires_at,
        uses: input.uses,
    };
    let (actor, id) = (actor.clone(), created.id.clone());
    cx.db
        .write(move |c| {
            db::registration::insert_token(c, &row)?;
            actor
                .event("admin.registration_token_created")
                .target(format!("registration_token:{id}"))
                .detail(json!({"expires_at": row.expires_at, "uses": row.uses_left}))
                .write(c, now)
        })
        .await?;
    Ok(created)
}

/// The tokens that still allow a registration, newest first.
pub async fn list(cx: &Ctx<'_>) -> Result<Vec<Listed>, AdminError> {
    let now = cx.now;
    let tokens = cx.db.read(move |c| db::registration::live_tokens(c, now)).await?;
    Ok(tokens.iter().map(listed).collect())
}

/// Revokes a live token by its id: it allows no registration from now on. Clients
/// already registered with it stay.
pub async fn revoke(cx: &Ctx<'_>, actor: &Actor, id: &str) -> Result<(), AdminError> {
    let (now, actor, id) = (cx.now, actor.clone(), id.to_string());
    cx.db
        .write(move |c| {
            let found = db::registration::live_tokens(c, now)?
                .into_iter()
                .find(|t| id_of(t) == id);
            let Some(t) = found else {
                return Ok(Err(AdminError::NotFound("registration token")));
            };
            db::registration::delete_token(c, &t.token_hash)?;
            actor
                .event("admin.registration_token_revoked")
                .target(format!("registration_token:{id}"))
                .write(c, now)?;
            Ok(Ok(()))
        })
        .await?
}
