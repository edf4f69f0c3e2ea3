//! `/v1/admin/outbox`: the messages to the accounting API, and the dead-letter re-drive, for
//! operators holding the admin token.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use chrono::Utc;
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use super::problem::{ApiError, Problem};
use super::{ApiContext, page_limit, parse_id};
use crate::accounting::{OutboxEntry, OutboxPage};
use crate::inbox::outbox::AccountingStatus;
use crate::store::{OutboxFilter, Transition};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OutboxQuery {
    /// Only messages in this state (`dead`: the dead-letter queue).
    status: Option<AccountingStatus>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<Uuid>,
}

/// List outbox messages, newest first.
#[utoipa::path(get, path = "/v1/admin/outbox", tag = "admin", security(("admin_token" = [])),
    params(OutboxQuery),
    responses(
        (status = 200, description = "One page of outbox messages", body = OutboxPage),
        (status = 400, description = "`invalid-request`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_outbox(
    State(ctx): State<ApiContext>,
    query: Result<Query<OutboxQuery>, QueryRejection>,
) -> Result<Json<OutboxPage>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let filter = OutboxFilter { status: query.status, cursor: query.cursor, limit: page_limit(query.limit)? };
    Ok(Json(ctx.store.outbox(&filter).await?))
}

/// Send a dead message again, with a fresh budget of attempts.
#[utoipa::path(post, path = "/v1/admin/outbox/{id}/retry", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Outbox message id")),
    responses(
        (status = 200, description = "The message, pending again", body = OutboxEntry),
        (status = 400, description = "`invalid-request`: the id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not-found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`wrong-state`: the message is not dead", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn retry_message(
    State(ctx): State<ApiContext>,
    Path(id): Path<String>,
) -> Result<Json<OutboxEntry>, ApiError> {
    answer(ctx.store.redrive(parse_id(&id)?, Utc::now()).await?)
}

/// Give up on a dead message: it is never sent.
#[utoipa::path(post, path = "/v1/admin/outbox/{id}/discard", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Outbox message id")),
    responses(
        (status = 200, description = "The message, discarded", body = OutboxEntry),
        (status = 400, description = "`invalid-request`: the id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not-found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`wrong-state`: the message is not dead", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn discard_message(
    State(ctx): State<ApiContext>,
    Path(id): Path<String>,
) -> Result<Json<OutboxEntry>, ApiError> {
    answer(ctx.store.discard(parse_id(&id)?).await?)
}

fn answer(transition: Transition) -> Result<Json<OutboxEntry>, ApiError> {
    match transition {
        Transition::Done(entry) => Ok(Json(entry)),
        Transition::NotFound => Err(ApiError::NotFound),
        Transition::NotDead(status) => Err(ApiError::WrongState(format!(
            "the message is {}; only dead messages are retried or discarded",
            status.as_str()
        ))),
    }
}
