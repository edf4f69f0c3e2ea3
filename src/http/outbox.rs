//! `/v1/admin/outbox`: the messages to the accounting API, and the dead-letter re-drive, for
//! operators holding the admin token.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Id, Params};
use super::problem::{ApiError, Problem};
use super::{ApiContext, page_limit};
use crate::accounting::OutboxEntry;
use crate::inbox::outbox::AccountingStatus;
use crate::inbox::resource::Page;
use crate::operate::{Actor, outbox};
use crate::store::OutboxFilter;

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
///
/// One message per booked invoice for the accounting API, with its status (`pending`, `delivered`,
/// `dead`, `discarded`), attempts and last error; filter by status, page with `cursor`.
#[utoipa::path(get, path = "/v1/admin/outbox", tag = "admin", security(("admin_token" = [])),
    params(OutboxQuery),
    responses(
        (status = 200, description = "One page of outbox messages", body = Page<OutboxEntry>),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_outbox(
    State(ctx): State<ApiContext>,
    Params(query): Params<OutboxQuery>,
) -> Result<Json<Page<OutboxEntry>>, ApiError> {
    let filter = OutboxFilter { status: query.status, cursor: query.cursor, limit: page_limit(query.limit)? };
    Ok(Json(ctx.store.outbox(&filter).await?))
}

/// Send a dead message again, with a fresh budget of attempts.
///
/// Only a `dead` message is retried (409 `wrong-state` otherwise); the relay sends it at once, with
/// the same `Idempotency-Key`, so the accounting API books it at most once.
#[utoipa::path(post, path = "/v1/admin/outbox/{id}/retry", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Outbox message id")),
    responses(
        (status = 200, description = "The message, pending again", body = OutboxEntry),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`wrong-state`: the message is not dead", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn retry_message(State(ctx): State<ApiContext>, Id(id): Id) -> Result<Json<OutboxEntry>, ApiError> {
    Ok(Json(outbox::retry(&ctx.store, id, &Actor::AdminApi).await?))
}

/// Give up on a dead message: it is never sent.
///
/// Only a `dead` message is discarded (409 `wrong-state` otherwise). The invoice stays booked here;
/// its `accounting` state says it was given up.
#[utoipa::path(post, path = "/v1/admin/outbox/{id}/discard", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Outbox message id")),
    responses(
        (status = 200, description = "The message, discarded", body = OutboxEntry),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`wrong-state`: the message is not dead", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn discard_message(
    State(ctx): State<ApiContext>,
    Id(id): Id,
) -> Result<Json<OutboxEntry>, ApiError> {
    Ok(Json(outbox::discard(&ctx.store, id, &Actor::AdminApi).await?))
}

/// The outbox and its dead-letter re-drive.
pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new()
        .routes(routes!(list_outbox))
        .routes(routes!(retry_message))
        .routes(routes!(discard_message))
}
