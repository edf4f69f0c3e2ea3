//! Liveness and readiness probes.

use axum::extract::State;
use axum::http::StatusCode;

use super::ApiContext;
use super::problem::{ApiError, Problem};
use crate::store::StoreError;

/// Liveness: the process serves HTTP.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Alive", body = String)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the database answers and all migrations are applied.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "Ready", body = String),
        (status = 503, description = "`unavailable`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn readyz(State(ctx): State<ApiContext>) -> Result<(StatusCode, &'static str), ApiError> {
    match ctx.store.ready().await {
        Ok(true) => Ok((StatusCode::OK, "ready")),
        Ok(false) => Err(ApiError::Store(StoreError::Unavailable(sqlx::Error::Protocol(
            "migrations are not applied".into(),
        )))),
        Err(error) => Err(ApiError::Store(StoreError::Unavailable(match error {
            StoreError::Unavailable(e) | StoreError::Database(e) => e,
            other => sqlx::Error::Protocol(other.to_string()),
        }))),
    }
}
