//! The mail queue as administrators see it: pending, sent and failed messages with the
//! server's last answer (never the bodies, which may hold live links).

use super::{invalid, AdminError, ListQuery};
use crate::context::Ctx;
use crate::lifecycle::QueueView;

pub async fn queue(cx: &Ctx<'_>, q: &ListQuery) -> Result<QueueView, AdminError> {
    let status = q.filters.get("status").cloned();
    if let Some(s) = status.as_deref() {
        if !matches!(s, "pending" | "sent" | "failed") {
            return Err(invalid("status", "one of pending, sent, failed"));
        }
    }
    Ok(crate::lifecycle::queue_view(cx, status, q.limit).await?)
}
