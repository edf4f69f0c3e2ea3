//! The answer to a recorded (or replayed, conflicting, held, bypassed) delivery: the stored body
//! or acknowledgement, with its status and headers.

use std::sync::Arc;

use axum::Json;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::edi::ack;
use crate::http::ApiContext;
use crate::http::problem::{self, ApiError, PROBLEM_JSON};
use crate::http::representation::{Representation, ack_media_type};
use crate::inbox::{Delivery, Status};
use crate::ingest::Ingested;

/// The answer of a delivery just recorded, sent from where it was rendered rather than a copy.
struct Answer(Arc<Delivery>);

impl AsRef<[u8]> for Answer {
    fn as_ref(&self) -> &[u8] {
        self.0.response().as_bytes()
    }
}

/// Set on every response that repeats the outcome of an earlier delivery.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The HTTP answer to an ingested delivery: the stored body (or acknowledgement) with its status
/// and headers.
pub(super) async fn respond(
    ctx: &ApiContext,
    representation: Representation,
    ingested: &Ingested,
) -> Result<Response, ApiError> {
    let ack_wanted = representation == Representation::Ack;
    let (delivery, status, (body, applied), replayed, id) = match ingested {
        Ingested::Recorded { delivery, ack_control_number } => {
            let status = delivery.status();
            let answer = match (representation, status) {
                (Representation::Ack, _) => {
                    (Bytes::from(ack::with_control_number(delivery.ack(), *ack_control_number)), None)
                }
                (Representation::Minimal, Status::Processed) => {
                    Representation::minimal(&delivery.minimal().map_err(|_| ApiError::Internal)?)?
                }
                // A large interchange's documents and invoices are listed from their rows, as
                // every replay lists them.
                _ if delivery.lists_from_rows() => {
                    let whole =
                        ctx.store.whole_answer(delivery.id(), delivery.response().to_owned(), true).await?;
                    (Bytes::from(whole), None)
                }
                _ => (Bytes::from_owner(Answer(Arc::clone(delivery))), None),
            };
            (delivery, status, answer, false, delivery.id())
        }
        Ingested::Replayed { delivery, id, status, body } => {
            let answer = match (ack_wanted, status) {
                (true, _) => (Bytes::from(ctx.store.ack(*id).await?.ok_or(ApiError::NotFound)?), None),
                (false, Status::Processed) => representation.interchange(Bytes::from(body.clone()))?,
                (false, Status::Rejected) => (Bytes::from(body.clone()), None),
            };
            (delivery, *status, answer, true, *id)
        }
        Ingested::Conflict { delivery, original_id } => {
            return Ok(problem::conflict(*original_id, delivery.key()).into_response());
        }
        Ingested::Quarantined { entry, fresh, .. } => {
            let mut response = (StatusCode::ACCEPTED, Json(entry)).into_response();
            if !fresh {
                response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
            }
            return Ok(response);
        }
        Ingested::Bypassed(resource) => return Ok((StatusCode::OK, Json(resource)).into_response()),
    };
    let code = problem::reply_status(ingested.reply());
    let content_type = match (ack_wanted, status) {
        (true, _) => ack_media_type(delivery.envelope().standard),
        (false, Status::Processed) => "application/json",
        (false, Status::Rejected) => PROBLEM_JSON,
    };
    let mut response = (code, [(header::CONTENT_TYPE, content_type)], body).into_response();
    let headers = response.headers_mut();
    headers.extend(applied);
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
