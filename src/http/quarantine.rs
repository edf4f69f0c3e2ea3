//! `/v1/admin/quarantine` and `/v1/admin/sns-subscriptions`: what the front doors hold for an
//! operator (deliveries of quarantine-policy partners that would have been refused, and SNS
//! subscription messages to confirm), for operators holding the admin token.

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::Deserialize;
use std::sync::Arc;
use utoipa::IntoParams;
use uuid::Uuid;

use super::extract::{Id, Params};
use super::problem::{ApiError, Problem};
use super::{ApiContext, PageQuery, page_limit};
use crate::inbox::quarantine::{QuarantineStatus, Quarantined};
use crate::inbox::resource::Page;
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

/// Process a held delivery after all.
///
/// Parsed again under the partner's current settings (so that a partner switched to `lenient`
/// validation gets its interchange booked) and recorded under `{control number}#{fingerprint prefix}`.
#[utoipa::path(post, path = "/v1/admin/quarantine/{id}/release", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Quarantine entry id")),
    responses(
        (status = 200, description = "Released: `released_as` is the recorded interchange", body = Quarantined),
        (status = 409, description = "`wrong-state`: not held, or still invalid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn release_held(State(ctx): State<ApiContext>, Id(id): Id) -> Result<Json<Quarantined>, ApiError> {
    Ok(Json(release(&ctx, id).await?))
}

/// Releases a held delivery: the one code path of the admin API and the console.
pub(super) async fn release(ctx: &ApiContext, id: Uuid) -> Result<Quarantined, ApiError> {
    let held = ctx.store.held(id).await?.ok_or(ApiError::NotFound)?;
    let partner = ctx.store.partner(&held.entry.partner_id).await?.ok_or(ApiError::NotFound)?;
    Ok(ctx.ingest.release(held, Arc::new(partner)).await?)
}

/// Give up on a held delivery.
#[utoipa::path(post, path = "/v1/admin/quarantine/{id}/discard", tag = "admin", security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Quarantine entry id")),
    responses(
        (status = 200, description = "Discarded", body = Quarantined),
        (status = 409, description = "`wrong-state`: not held", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn discard_held(State(ctx): State<ApiContext>, Id(id): Id) -> Result<Json<Quarantined>, ApiError> {
    Ok(Json(discard(&ctx, id).await?))
}

/// Discards a held delivery: the one code path of the admin API and the console.
pub(super) async fn discard(ctx: &ApiContext, id: Uuid) -> Result<Quarantined, ApiError> {
    let held = ctx.store.held(id).await?.ok_or(ApiError::NotFound)?;
    still_held(&held.entry)?;
    let discarded = ctx.store.resolve_hold(id, QuarantineStatus::Discarded, None, Utc::now()).await?;
    discarded.ok_or_else(|| ApiError::WrongState("it was resolved by someone else meanwhile".into()))
}

fn still_held(entry: &Quarantined) -> Result<(), ApiError> {
    match entry.status {
        QuarantineStatus::Held => Ok(()),
        other => Err(ApiError::WrongState(format!(
            "the delivery is {}; only held ones are resolved",
            other.as_str()
        ))),
    }
}

/// List the SNS subscription and unsubscribe confirmations received, newest first.
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
    Ok(Json(ctx.store.confirm_sns(id, Utc::now()).await?.ok_or(ApiError::NotFound)?))
}
