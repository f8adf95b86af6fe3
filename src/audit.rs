//! Security events: written to the audit table (in the caller's transaction where one
//! exists) and mirrored to the log under the `audit` target.

use serde_json::Value;

use crate::db::{self, audit::NewEntry, Db};

/// One event. `actor` is who acted (a username, `client:<id>`, `system`); `target`
/// is what it was done to.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: &'static str,
    pub actor: Option<String>,
    pub target: Option<String>,
    pub ip: Option<String>,
    pub detail: Value,
}

impl Event {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            actor: None,
            target: None,
            ip: None,
            detail: Value::Object(Default::default()),
        }
    }

    pub fn actor(mut self, actor: impl Into<String>) -> Self {
        self.actor = Some(actor.into());
        self
    }

    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    pub fn ip(mut self, ip: Option<impl Into<String>>) -> Self {
        self.ip = ip.map(Into::into);
        self
    }

    pub fn detail(mut self, detail: Value) -> Self {
        self.detail = detail;
        self
    }

    /// Writes the event inside an existing write operation.
    pub fn write(&self, conn: &db::Tx<'_>, now: i64) -> Result<(), db::DbError> {
        tracing::info!(
            target: "audit",
            event = self.name,
            actor = self.actor.as_deref().unwrap_or("-"),
            target = self.target.as_deref().unwrap_or("-"),
            ip = self.ip.as_deref().unwrap_or("-"),
            "audit"
        );
        db::audit::record(
            conn,
            &NewEntry {
                at: now,
                event: self.name,
                actor: self.actor.as_deref(),
                target: self.target.as_deref(),
                ip: self.ip.as_deref(),
                detail: &self.detail,
            },
        )
    }

    /// Writes the event on its own. A failure is logged, not returned: the action it
    /// records has already happened.
    pub async fn log(self, db: &Db, now: i64) {
        let name = self.name;
        if let Err(e) = db.write(move |c| self.write(c, now)).await {
            tracing::error!(event = name, error = %e, "could not write an audit entry");
        }
    }
}

/// A token event of a client's grant (issued, revoked, reuse detected), from the
/// client's address.
pub fn token(name: &'static str, client_id: &str, grant_type: &str, grant_id: &str, ip: &str) -> Event {
    Event::new(name)
        .actor(format!("client:{client_id}"))
        .ip(Some(ip))
        .detail(serde_json::json!({"grant_type": grant_type, "grant": grant_id}))
}
