//! `/v1/admin/quarantine` and `/v1/admin/sns-subscriptions`: what the front doors hold for an
//! operator (deliveries of quarantine-policy partners that would have been refused, and SNS
//! subscription messages to confirm), for operators holding the admin token.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Id, Params};
use super::problem::{ApiError, Problem};
use super::{ApiContext, PageQuery, page_limit};
use crate::inbox::quarantine::{QuarantineStatus, Quarantined, ReleaseAs};
use crate::inbox::resource::Page;
use crate::operate::{Actor, quarantine, sns};
use crate::store::{QuarantineFilter, SnsSubscription};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QuarantineQuery {
    /// Only entries in this state (`held`: waiting for an operator).
    status: Option<QuarantineStatus>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<Uuid>,
}

/// List quarantined deliveries, newest first.
///
/// Deliveries of partners with `conflict_policy` or `on_mismatch` `quarantine` that would have been
/// refused, held for an operator with their problem; filter by status (`held`, `released`,
/// `discarded`).
#[utoipa::path(get, path = "/v1/admin/quarantine", tag = "admin", security(("admin_token" = [])),
    params(QuarantineQuery),
    responses(
        (status = 200, description = "One page of quarantined deliveries", body = Page<Quarantined>),
    ))]
pub async fn list_quarantine(
    State(ctx): State<ApiContext>,
    Params(query): Params<QuarantineQuery>,
) -> Result<Json<Page<Quarantined>>, ApiError> {
    let filter =
        QuarantineFilter { status: query.status, cursor: query.cursor, limit: page_limit(query.limit)? };
    Ok(Json(ctx.store.quarantined(&filter).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReleaseQuery {
    /// For a `duplicate-number` entry (an invoice number booked before with other content): book
    /// the invoice as a `new` invoice (the number's next revision) or as the `replacement` of the
    /// earlier one. Without it such an entry is refused again (409).
    #[serde(rename = "as")]
    #[param(rename = "as")]
    release_as: Option<ReleaseAs>,
}

/// Process a held delivery after all.
///
/// Parsed again under the partner's current settings (so that a partner switched to `lenient`
/// validation gets its interchange booked) and recorded under `{control number}#{fingerprint prefix}`.
/// A `duplicate-number` entry says with `as` what its invoice is booked as.
#[utoipa::path(post, path = "/v1/admin/quarantine/{id}/release", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Quarantine entry id"), ReleaseQuery),
    responses(
        (status = 200, description = "Released: `released_as` is the recorded interchange", body = Quarantined),
        (status = 409, description = "`wrong-state`: not held, or still invalid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn release_held(
    State(ctx): State<ApiContext>,
    Id(id): Id,
    Params(query): Params<ReleaseQuery>,
) -> Result<Json<Quarantined>, ApiError> {
    Ok(Json(quarantine::release(&ctx.ingest, id, query.release_as, &Actor::AdminApi).await?))
}

/// Give up on a held delivery.
///
/// Only a held delivery is discarded (409 `wrong-state` otherwise); it is never booked.
#[utoipa::path(post, path = "/v1/admin/quarantine/{id}/discard", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Quarantine entry id")),
    responses(
        (status = 200, description = "Discarded", body = Quarantined),
        (status = 409, description = "`wrong-state`: not held", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn discard_held(State(ctx): State<ApiContext>, Id(id): Id) -> Result<Json<Quarantined>, ApiError> {
    Ok(Json(quarantine::discard(&ctx.store, id, &Actor::AdminApi).await?))
}

/// List the SNS subscription and unsubscribe confirmations received, newest first.
///
/// Each kept once, however often SNS resends it, with its topic, token and `subscribe_url`.
#[utoipa::path(get, path = "/v1/admin/sns-subscriptions", tag = "admin", security(("admin_token" = [])),
    params(PageQuery),
    responses((status = 200, description = "One page of the kept confirmation messages", body = Page<SnsSubscription>)))]
pub async fn list_sns(
    State(ctx): State<ApiContext>,
    Params(page): Params<PageQuery>,
) -> Result<Json<Page<SnsSubscription>>, ApiError> {
    Ok(Json(ctx.store.sns_subscriptions(page.cursor, page_limit(page.limit)?).await?))
}

/// Mark an SNS subscription message confirmed.
///
/// This service does not call AWS: visit the message's `subscribe_url` (or call `ConfirmSubscription`
/// with its `token`), then record it here.
#[utoipa::path(post, path = "/v1/admin/sns-subscriptions/{id}/confirm", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Subscription message id")),
    responses(
        (status = 200, description = "Confirmed", body = SnsSubscription),
    ))]
pub async fn confirm_sns(
    State(ctx): State<ApiContext>,
    Id(id): Id,
) -> Result<Json<SnsSubscription>, ApiError> {
    Ok(Json(sns::confirm(&ctx.store, id, &Actor::AdminApi).await?))
}

/// Held deliveries and SNS subscription messages.
pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new()
        .routes(routes!(list_quarantine))
        .routes(routes!(release_held))
        .routes(routes!(discard_held))
        .routes(routes!(list_sns))
        .routes(routes!(confirm_sns))
}
