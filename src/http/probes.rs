//! Operations endpoints: `/healthz` (the process answers), `/readyz` (the database
//! reads and commits) and `/metrics` (Prometheus text, optionally behind a token).

use std::sync::atomic::Ordering;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};

use crate::http::errors;
use crate::state::AppState;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(serde_json::json!({ "status": "ok" }))
}

/// How long `/readyz` waits for the database. A prober gives up after its own timeout
/// (Kubernetes' default is one second, load balancers' a few): an answer after that
/// counts for nothing. And a node that cannot get a trivial query through in this time
/// is not serving anyone else within a reasonable deadline either. Without it an
/// unreachable PostgreSQL made the probe wait out the pool's checkout twice (10 s).
const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Ready when the database answers a read and the writer commits, both within
/// `READY_WITHIN` (they run at once: each may wait for a connection).
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let probes = async { tokio::join!(state.db.ping(), state.db.write_probe()) };
    let outcome = tokio::time::timeout(READY_WITHIN, probes).await;
    let (status, body) = match outcome {
        Ok((Ok(()), Ok(()))) => (StatusCode::OK, serde_json::json!({ "status": "ready" })),
        Err(_) => {
            tracing::warn!(
                within_s = READY_WITHIN.as_secs(),
                "not ready: the database did not answer in time"
            );
            (
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "status": "unavailable" }),
            )
        }
        Ok((r, w)) => {
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
        let presented = crate::http::protocol::credentials::header_token(&req)
            .ok()
            .flatten()
            .unwrap_or_default();
        let same = presented.len() == expected.len()
            && bool::from(subtle::ConstantTimeEq::ct_eq(presented.as_bytes(), expected.as_bytes()));
        if !same {
            return errors::bearer(None);
        }
    }
    let hash = state.hasher.stats();
    let db_bytes = state.db.size_bytes().await.unwrap_or(0);
    let gauges = crate::metrics::Gauges {
        hash_queue_depth: state.hasher.queue_depth(),
        hash_wait_seconds_total: hash.wait_micros.load(Ordering::Relaxed) as f64 / 1e6,
        hash_jobs_total: hash.jobs.load(Ordering::Relaxed),
        hash_paired_total: hash.paired.load(Ordering::Relaxed),
        writer: state.db.writer_stats(),
        pool: state.db.pool_stats(),
        db_bytes,
        replication: state.replication.as_ref().map(|r| {
            let s = &r.stats;
            crate::metrics::ReplicationGauges {
                lag_seconds: s.lag_seconds(state.clock.now_millis()),
                failures: s.failures.load(Ordering::Relaxed),
                last_shipped_seconds: s.last_shipped_ms.load(Ordering::Relaxed) as f64 / 1000.0,
                shipped_bytes: s.shipped_bytes.load(Ordering::Relaxed),
                steps: s.steps.load(Ordering::Relaxed),
                snapshots: s.snapshots.load(Ordering::Relaxed),
            }
        }),
        backups: state.settings.backups.as_ref().map(|_| {
            let b = &state.backups;
            (
                b.written.load(Ordering::Relaxed),
                b.failed.load(Ordering::Relaxed),
                b.last_ok.load(Ordering::Relaxed),
            )
        }),
    };
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(state.metrics.render(&gauges))
}
