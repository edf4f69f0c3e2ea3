//! Reading interchanges back: one interchange (as its POST answered), its acknowledgement, its
//! delivery attempts, and the list. Receiving them is `receive`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Id, Params};
use super::problem::ApiError;
use super::representation::{Representation, ack_media_type};
use super::{ApiContext, PageQuery, non_empty, page_limit};
use crate::edi::{PartyId, Standard};
use crate::inbox::Status;
use crate::inbox::resource::{
    IdempotencyKey, InterchangeAnswer, InterchangeResource, InterchangeSummary, Order, Page,
};
use crate::store::{DeliveryAttempt, InterchangeFilter, StoredInterchange};

/// Read one interchange.
///
/// The same JSON as the POST response; a rejected interchange has `status: "rejected"` and its problem
/// under `error`.
#[utoipa::path(
    get,
    path = "/v1/interchanges/{id}",
    tag = "interchanges",
    security((), ("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Interchange id"),
        ("Prefer" = Option<String>, Header, description = "`return=minimal` (RFC 7240): the `MinimalInterchange` of a processed interchange (the envelope, counts and links), marked `Preference-Applied: return=minimal`")),
    responses(
        (status = 200, description = "The interchange, or its minimal form when asked", body = InterchangeAnswer),
    )
)]
pub async fn get_interchange(
    State(ctx): State<ApiContext>,
    Id(id): Id,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let row = ctx.store.interchange(id).await?.ok_or(ApiError::NotFound)?;
    let (body, applied) = match row.status {
        Status::Processed => match Representation::asked(&headers) {
            Some(Representation::Minimal) => Representation::Minimal.interchange(row.response_body.into())?,
            _ => (row.response_body.into(), None),
        },
        Status::Rejected => {
            let resource = serde_json::to_string(&rejected_resource(row)?).map_err(|_| ApiError::Internal)?;
            (resource.into(), None)
        }
    };
    let mut response =
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response();
    response.headers_mut().extend(applied);
    Ok(response)
}

/// Read the acknowledgement sent for an interchange.
///
/// X12: TA1 and/or 997 (versions before 00501) or 999; EDIFACT: CONTRL. Generated once, when the
/// interchange was recorded, with its own control number from the partner's counter; this returns the
/// newest (a corrected resend of a rejected interchange gets a new one).
#[utoipa::path(
    get,
    path = "/v1/interchanges/{id}/ack",
    tag = "interchanges",
    security((), ("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Interchange id")),
    responses(
        (status = 200, description = "The acknowledgement", content((String = "application/edi-x12"), (String = "application/edifact"))),
    )
)]
pub async fn get_ack(State(ctx): State<ApiContext>, Id(id): Id) -> Result<Response, ApiError> {
    let row = ctx.store.interchange(id).await?.ok_or(ApiError::NotFound)?;
    let ack = ctx.store.ack(id).await?.ok_or(ApiError::NotFound)?;
    Ok(([(header::CONTENT_TYPE, ack_media_type(row.standard))], ack).into_response())
}

/// List the delivery attempts of an interchange.
///
/// Every attempt is audited — first delivery, replays, conflicting resends — with its partner,
/// transport metadata, outcome and time; never credentials.
#[utoipa::path(
    get,
    path = "/v1/interchanges/{id}/deliveries",
    tag = "interchanges",
    security((), ("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Interchange id"), PageQuery),
    responses(
        (status = 200, description = "One page of the attempts, oldest first", body = Page<DeliveryAttempt>),
    )
)]
pub async fn list_deliveries(
    State(ctx): State<ApiContext>,
    Id(id): Id,
    Params(page): Params<PageQuery>,
) -> Result<Json<Page<DeliveryAttempt>>, ApiError> {
    ctx.store.interchange(id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(ctx.store.delivery_attempts(id, page.cursor, page_limit(page.limit)?).await?))
}

/// A rejected interchange as a resource: envelope facts from its row, the stored problem as `error`.
fn rejected_resource(row: StoredInterchange) -> Result<InterchangeResource, ApiError> {
    Ok(InterchangeResource {
        id: row.id,
        status: Status::Rejected,
        standard: row.standard,
        sender: PartyId { qualifier: row.sender_qualifier, id: row.sender_id },
        receiver: PartyId { qualifier: row.receiver_qualifier, id: row.receiver_id },
        control_number: row.control_number,
        idempotency_key: IdempotencyKey { source: row.source, message_id: row.message_id },
        payload_sha256: row.payload_sha256,
        received_at: row.received_at,
        processed_at: row.processed_at,
        documents: Vec::new(),
        invoices: Vec::new(),
        warnings: Vec::new(),
        error: Some(serde_json::from_str(&row.response_body).map_err(|_| ApiError::Internal)?),
    })
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InterchangeQuery {
    /// Search: an invoice number, a purchase order, a control number or its first digits (leading
    /// zeros aside: `1142` finds `000001142`), a sender id, or an invoice total as stated (`8000.00`).
    #[param(min_length = 1)]
    q: Option<String>,
    /// Only interchanges from one of this partner's sender identities.
    #[param(min_length = 1)]
    partner: Option<String>,
    standard: Option<Standard>,
    /// Received at or after (RFC 3339).
    received_from: Option<DateTime<Utc>>,
    /// Received before (RFC 3339).
    received_before: Option<DateTime<Utc>>,
    /// Sender id (ISA06 / UNB S002 id), without qualifier.
    #[param(min_length = 1)]
    sender: Option<String>,
    /// Interchange control number as sent.
    #[param(min_length = 1)]
    control_number: Option<String>,
    status: Option<Status>,
    /// `true`: only interchanges holding a duplicate invoice (one booked before, kept and not
    /// booked again).
    holding_duplicates: Option<bool>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// Newest first (the default) or oldest first.
    #[param(inline)]
    order: Option<Order>,
    /// `next_cursor` of the previous page.
    cursor: Option<Uuid>,
}

/// List interchanges, newest (or oldest) first.
///
/// Search (`q`) and filter by partner, sender, control number, standard, status, arrival time and
/// duplicates held; page with `cursor`. Each shows its partner, its first invoice and how often its key was
/// delivered.
#[utoipa::path(
    get,
    path = "/v1/interchanges",
    tag = "interchanges",
    security((), ("admin_token" = [])),
    params(InterchangeQuery),
    responses(
        (status = 200, description = "One page of interchanges", body = Page<InterchangeSummary>),
    )
)]
pub async fn list_interchanges(
    State(ctx): State<ApiContext>,
    Params(query): Params<InterchangeQuery>,
) -> Result<Json<Page<InterchangeSummary>>, ApiError> {
    let filter = InterchangeFilter {
        q: non_empty("q", query.q)?,
        partner: non_empty("partner", query.partner)?,
        standard: query.standard,
        received_from: query.received_from,
        received_before: query.received_before,
        sender: non_empty("sender", query.sender)?,
        control_number: non_empty("control_number", query.control_number)?,
        status: query.status,
        holding_duplicates: query.holding_duplicates.unwrap_or(false),
        order: query.order.unwrap_or_default(),
        cursor: query.cursor,
        limit: page_limit(query.limit)?,
    };
    Ok(Json(ctx.store.interchanges(&filter).await?))
}

/// Reading interchanges back.
pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new()
        .routes(routes!(list_interchanges))
        .routes(routes!(get_interchange))
        .routes(routes!(get_ack))
        .routes(routes!(list_deliveries))
}
