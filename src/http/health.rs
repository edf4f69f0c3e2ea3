//! Liveness and readiness probes.

use axum::Json;
use axum::extract::State;
use axum::http::request::Parts;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::problem::{ApiError, Problem};
use super::{ApiContext, auth};
use crate::store::{OutboxStats, StoreError, Synchronous};

/// Liveness: the process serves HTTP.
///
/// Asks nothing of the database: a load balancer restarts what fails this, and a database outage is
/// no reason to restart. Public in every mode.
#[utoipa::path(get, path = "/healthz", tag = "operations", security(()), responses(
    (status = 200, description = "Alive", body = String),
    (status = 400, description = "`invalid-request`: a NUL in the URL (refused on every route)", body = Problem, content_type = "application/problem+json"),
))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// A ready instance, with the accounting backlog for operators (the backlog never makes it
/// unready: deliveries are still recorded exactly once while the accounting API is away).
#[derive(Serialize, ToSchema)]
pub struct Readiness {
    #[schema(example = "ready")]
    pub status: &'static str,
    /// Only in open mode or with the admin token: the probe is public, the backlog is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbox: Option<Backlog>,
    /// Only in open mode or with the admin token, on PostgreSQL: `host:port` of the primary
    /// written to (of the hosts of a multi-host `DATABASE_URL`, the one found writable).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "db2.internal:5432")]
    pub primary: Option<String>,
    /// Only with `--require-synchronous-standby`, in open mode or with the admin token: the
    /// primary's synchronous replication (the instance is not ready without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synchronous_standby: Option<SynchronousStandby>,
}

/// What the primary says of its synchronous replication.
#[derive(Serialize, ToSchema)]
pub struct SynchronousStandby {
    /// `synchronous_standby_names`.
    #[schema(example = "ANY 1 (standby1, standby2)")]
    pub standby_names: String,
    /// `synchronous_commit` of this service's sessions: `on`, `remote_write` or `remote_apply`.
    #[schema(example = "on")]
    pub synchronous_commit: String,
    /// Standbys streaming as synchronous (`sync` or `quorum`) now.
    #[schema(example = 1)]
    pub streaming: i64,
}

impl From<Synchronous> for SynchronousStandby {
    fn from(state: Synchronous) -> SynchronousStandby {
        let Synchronous { standby_names, synchronous_commit, streaming } = state;
        SynchronousStandby { standby_names, synchronous_commit, streaming }
    }
}

/// The outbox messages not delivered yet.
#[derive(Serialize, ToSchema)]
pub struct Backlog {
    pub pending: i64,
    pub dead: i64,
    /// Age of the oldest pending message in seconds (0 when none is pending): how far the relay lags.
    pub relay_lag_seconds: f64,
}

impl From<OutboxStats> for Backlog {
    fn from(stats: OutboxStats) -> Backlog {
        Backlog {
            pending: stats.pending,
            dead: stats.dead,
            relay_lag_seconds: super::metrics::relay_lag_seconds(&stats),
        }
    }
}

/// Readiness: the database answers and all migrations are applied.
///
/// 503 `unavailable` otherwise, or, with `--require-synchronous-standby`, while no synchronous
/// standby streams. With the admin token (or in open mode) it also shows the accounting backlog,
/// the relay lag, the PostgreSQL primary and its synchronous standby.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    security((), ("admin_token" = [])),
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 400, description = "`invalid-request`: a NUL in the URL (refused on every route)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`unavailable`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn readyz(State(ctx): State<ApiContext>, parts: Parts) -> Result<Json<Readiness>, ApiError> {
    let unavailable = |error: StoreError| {
        ApiError::Store(StoreError::Unavailable(match error {
            StoreError::Unavailable(e) | StoreError::Database(e) => e,
            other => sqlx::Error::Protocol(other.to_string()),
        }))
    };
    match ctx.store.ready().await {
        Ok(true) => {}
        Ok(false) => return Err(unavailable(StoreError::Corrupt("migrations are not applied".into()))),
        Err(error) => return Err(unavailable(error)),
    }
    let operator = auth::is_operator(&ctx, &parts);
    let synchronous = ctx.store.synchronous().await.map_err(unavailable)?;
    if let Some(why) = synchronous.as_ref().and_then(Synchronous::shortfall) {
        tracing::warn!("not ready: {why}");
        return Err(ApiError::NotReady(match operator {
            true => format!("--require-synchronous-standby: {why}"),
            false => "not ready".to_owned(),
        }));
    }
    let (outbox, primary, synchronous_standby) = match operator {
        true => (
            Some(ctx.store.outbox_stats().await.map_err(unavailable)?.into()),
            ctx.store.primary_host(),
            synchronous.map(SynchronousStandby::from),
        ),
        false => (None, None, None),
    };
    Ok(Json(Readiness { status: "ready", outbox, primary, synchronous_standby }))
}

/// The probes.
pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new().routes(routes!(healthz)).routes(routes!(readyz))
}
