//! `/v1/interchanges`: the inbox endpoint that receives interchanges, and reading them back.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use super::problem::{ApiError, PROBLEM_JSON, Problem};
use super::{ApiContext, page_limit, parse_id};
use crate::edi::{self, PartyId, Standard, ack};
use crate::inbox::resource::{IdempotencyKey, InterchangePage, InterchangeResource};
use crate::inbox::{Delivery, Outcome, Status};
use crate::store::{InterchangeFilter, StoredInterchange};

/// Media types an interchange may be posted as; parameters such as `charset` are ignored.
const ACCEPTED_MEDIA_TYPES: [&str; 5] = [
    "application/edi-x12",
    "application/edifact",
    "application/edi-consent",
    "text/plain",
    "application/octet-stream",
];

/// Set on every response that repeats the outcome of an earlier delivery.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Receive an X12 or EDIFACT interchange (exactly once).
///
/// The idempotency key is read from the envelope: sender qualifier and id plus the interchange
/// control number (ISA05/ISA06 + ISA13, or UNB S002 + 0020). The first delivery of a key is recorded
/// with its invoices in one transaction and answered 201 after COMMIT; every later delivery of the same
/// content (even re-wrapped or with re-stamped envelope dates) is answered 200 with the original body
/// and `Idempotent-Replayed: true`. A rejected (422) interchange replays its 422.
#[utoipa::path(
    post,
    path = "/v1/interchanges",
    tag = "interchanges",
    params(("Accept" = Option<String>, Header,
        description = "`application/edi-x12` or `application/edifact` to get the acknowledgement as the body")),
    request_body(
        description = "The raw interchange. The standard is detected from ISA / UNA / UNB.",
        content(
            ("application/edi-x12"),
            ("application/edifact"),
            ("application/edi-consent"),
            ("text/plain"),
            ("application/octet-stream")
        )
    ),
    responses(
        (status = 201, description = "First delivery: recorded and booked. With `Accept: application/edi-x12` or `application/edifact` the body is the acknowledgement (997/999/TA1 or CONTRL) instead",
            content((InterchangeResource = "application/json"), ("application/edi-x12"), ("application/edifact")),
            headers(("Location" = String, description = "URL of the interchange resource"))),
        (status = 200, description = "Replay of a recorded interchange: the original body (or the original acknowledgement)",
            content((InterchangeResource = "application/json"), ("application/edi-x12"), ("application/edifact")),
            headers(("Idempotent-Replayed" = String, description = "`true`"),
                ("Content-Location" = String, description = "URL of the interchange resource"))),
        (status = 400, description = "`malformed-interchange`: no idempotency key can be read; nothing stored",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`control-number-conflict`: the key was used for different content; nothing stored",
            body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload-too-large`", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported-media-type`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`invalid-interchange`: stored as rejected, replayed with `Idempotent-Replayed: true`; a corrected resend with the same key replaces it",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`unavailable`: the database cannot be reached; nothing was recorded, retry after `Retry-After` seconds",
            body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = String, description = "Seconds to wait"))),
    )
)]
pub async fn receive(
    State(ctx): State<ApiContext>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let received_at = Utc::now();
    let content_type = accepted_content_type(&headers)?;
    let body = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(ctx.body_limit),
        _ => ApiError::BadRequest(rejection.body_text()),
    })?;
    let mut unwrapped = Vec::new();
    let interchange = edi::parse(&body, &mut unwrapped).map_err(ApiError::Malformed)?;
    let delivery = match interchange.documents() {
        Ok(documents) => {
            Delivery::processed(&interchange, documents, body.clone(), content_type, received_at)
        }
        Err(error) => {
            Delivery::rejected(&interchange, &error, body.clone(), content_type, received_at, |id| {
                ApiError::Invalid { error: error.clone(), interchange_id: id }.body()
            })
        }
    };
    let outcome = ctx.store.record(&delivery).await?;
    tracing::info!(
        source = %delivery.key.source,
        message_id = %delivery.key.message_id,
        outcome = ?outcome_name(&outcome),
        "interchange received"
    );
    let ack_wanted = wants_ack(&headers);
    let (status, body, replayed, id) = match outcome {
        Outcome::Recorded { ack_control_number } => {
            let body = if ack_wanted {
                ack::with_control_number(&delivery.ack, ack_control_number)
            } else {
                delivery.response
            };
            (delivery.status, body, false, delivery.id)
        }
        Outcome::Replayed { id, status, body } => {
            let body = if ack_wanted { ctx.store.ack(id).await?.ok_or(ApiError::NotFound)? } else { body };
            (status, body, true, id)
        }
        Outcome::Conflict { original_id } => {
            return Err(ApiError::Conflict {
                original_id,
                sender: delivery.key.source,
                message_id: delivery.key.message_id,
            });
        }
    };
    let code = match (status, replayed) {
        (Status::Processed, false) => StatusCode::CREATED,
        (Status::Processed, true) => StatusCode::OK,
        (Status::Rejected, _) => StatusCode::UNPROCESSABLE_ENTITY,
    };
    let content_type = match (ack_wanted, status) {
        (true, _) => ack_media_type(delivery.envelope.standard),
        (false, Status::Processed) => "application/json",
        (false, Status::Rejected) => PROBLEM_JSON,
    };
    let mut response = (code, [(header::CONTENT_TYPE, content_type)], body).into_response();
    let headers = response.headers_mut();
    if replayed {
        headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    if status == Status::Processed {
        let location = format!("/v1/interchanges/{id}");
        let name = if replayed { header::CONTENT_LOCATION } else { header::LOCATION };
        headers.insert(name, HeaderValue::from_str(&location).map_err(|_| ApiError::Internal)?);
    }
    Ok(response)
}

/// The acknowledgement is the body when the client accepts EDI (`Accept: application/edi-x12` or
/// `application/edifact`), as AS2 gateways do for synchronous acknowledgements.
fn wants_ack(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(
        |range| {
            let media_type = range.split(';').next().unwrap_or_default().trim();
            media_type.eq_ignore_ascii_case("application/edi-x12")
                || media_type.eq_ignore_ascii_case("application/edifact")
        },
    )
}

fn ack_media_type(standard: Standard) -> &'static str {
    match standard {
        Standard::X12 => "application/edi-x12",
        Standard::Edifact => "application/edifact",
    }
}

fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Recorded { .. } => "recorded",
        Outcome::Replayed { .. } => "replayed",
        Outcome::Conflict { .. } => "conflict",
    }
}

/// The request's media type when it is one we accept; a missing one counts as `application/octet-stream`.
fn accepted_content_type(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| ApiError::UnsupportedMediaType(format!("{value:?}")))?;
    let media_type = text.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if ACCEPTED_MEDIA_TYPES.contains(&media_type.as_str()) {
        Ok(Some(text.to_owned()))
    } else {
        Err(ApiError::UnsupportedMediaType(text.to_owned()))
    }
}

/// Read one interchange.
///
/// The same JSON as the POST response; a rejected interchange has `status: "rejected"` and its problem
/// under `error`.
#[utoipa::path(
    get,
    path = "/v1/interchanges/{id}",
    tag = "interchanges",
    params(("id" = Uuid, Path, description = "Interchange id")),
    responses(
        (status = 200, description = "The interchange", body = InterchangeResource),
        (status = 400, description = "`invalid-request`: the id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not-found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_interchange(
    State(ctx): State<ApiContext>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let row = ctx.store.interchange(parse_id(&id)?).await?.ok_or(ApiError::NotFound)?;
    let body = match Status::parse(&row.status) {
        Some(Status::Processed) => row.response_body,
        _ => serde_json::to_string(&rejected_resource(row)?).map_err(|_| ApiError::Internal)?,
    };
    Ok(([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response())
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
    params(("id" = Uuid, Path, description = "Interchange id")),
    responses(
        (status = 200, description = "The acknowledgement", content(("application/edi-x12"), ("application/edifact"))),
        (status = 400, description = "`invalid-request`: the id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not-found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_ack(State(ctx): State<ApiContext>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let row = ctx.store.interchange(id).await?.ok_or(ApiError::NotFound)?;
    let ack = ctx.store.ack(id).await?.ok_or(ApiError::NotFound)?;
    let standard = Standard::parse(&row.standard).ok_or(ApiError::Internal)?;
    Ok(([(header::CONTENT_TYPE, ack_media_type(standard))], ack).into_response())
}

/// A rejected interchange as a resource: envelope facts from its row, the stored problem as `error`.
fn rejected_resource(row: StoredInterchange) -> Result<InterchangeResource, ApiError> {
    Ok(InterchangeResource {
        id: row.id,
        status: Status::Rejected,
        standard: Standard::parse(&row.standard).ok_or(ApiError::Internal)?,
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
    /// Sender id (ISA06 / UNB S002 id), without qualifier.
    sender: Option<String>,
    /// Interchange control number as sent.
    control_number: Option<String>,
    /// `processed` or `rejected`.
    status: Option<String>,
    /// Page size, 1 to 500 (default 50).
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<Uuid>,
}

/// List interchanges, newest first.
#[utoipa::path(
    get,
    path = "/v1/interchanges",
    tag = "interchanges",
    params(InterchangeQuery),
    responses(
        (status = 200, description = "One page of interchanges", body = InterchangePage),
        (status = 400, description = "`invalid-request`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_interchanges(
    State(ctx): State<ApiContext>,
    query: Result<Query<InterchangeQuery>, QueryRejection>,
) -> Result<Json<InterchangePage>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    if let Some(status) = query.status.as_deref().filter(|s| Status::parse(s).is_none()) {
        return Err(ApiError::BadRequest(format!("status must be processed or rejected, not {status:?}")));
    }
    let filter = InterchangeFilter {
        sender: query.sender,
        control_number: query.control_number,
        status: query.status,
        cursor: query.cursor,
        limit: page_limit(query.limit)?,
    };
    Ok(Json(ctx.store.interchanges(&filter).await?))
}
