//! Operations endpoints: `/healthz` (the process answers), `/readyz` (the database
//! reads and commits) and `/metrics` (Prometheus text, optionally behind a token).

use std::sync::atomic::Ordering;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};

use super::errors;
use crate::state::AppState;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(serde_json::json!({ "status": "ok" }))
}

/// Ready when the database answers a read and the writer commits.
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let read = state.db.ping().await;
    let write = state.db.write_probe().await;
    let (status, body) = match (read, write) {
        (Ok(_), Ok(())) => (StatusCode::OK, serde_json::json!({ "status": "ready" })),
        (r, w) => {
            tracing::warn!(read_ok = r.is_ok(), write_ok = w.is_ok(), "not ready");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "status": "unavailable" }),
            )
        }
    };
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(body)
}

pub async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(expected) = state.settings.metrics_token.as_ref().map(|t| t.expose()) {
        let presented = super::userinfo::header_token(&req).ok().flatten().unwrap_or_default();
        let same = presented.len() == expected.len()
            && bool::from(subtle::ConstantTimeEq::ct_eq(presented.as_bytes(), expected.as_bytes()));
        if !same {
            return errors::bearer(None);
        }
    }
    let writer = state.db.writer_stats();
    let hash = state.hasher.stats();
    let db_bytes = state.db.size_bytes().await.unwrap_or(0);
    let gauges = crate::metrics::Gauges {
        hash_queue_depth: state.hasher.queue_depth(),
        hash_wait_seconds_total: hash.wait_micros.load(Ordering::Relaxed) as f64 / 1e6,
        hash_jobs_total: hash.jobs.load(Ordering::Relaxed),
        writer_batches_total: writer.batches,
        writer_operations_total: writer.operations,
        writer_commit_seconds_total: writer.commit_micros_total as f64 / 1e6,
        db_bytes,
    };
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(state.metrics.render(&gauges))
}
