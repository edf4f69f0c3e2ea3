//! Every error the API answers with, as RFC 9457 `application/problem+json`. This is the one place
//! where errors of the other layers become status codes.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::edi::EdiError;
use crate::store::StoreError;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// Seconds a client is asked to wait before retrying a 503.
const RETRY_AFTER_SECONDS: &str = "5";

/// Whole seconds to wait, at least one.
fn retry_after(wait: std::time::Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

/// An RFC 9457 problem. `type` is a stable relative URI; EDI errors add their location.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    #[schema(example = "/problems/invalid-interchange")]
    pub kind: String,
    #[schema(example = "Invalid interchange")]
    pub title: String,
    #[schema(example = 422)]
    pub status: u16,
    pub detail: String,
    /// 1-based segment number of the error (ISA or UNB is 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment_position: Option<usize>,
    /// Tag of the segment in error.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "IEA")]
    pub segment: Option<String>,
    /// Element in error, e.g. `IEA02`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "IEA02")]
    pub element: Option<String>,
    /// The interchange this problem is about: the stored rejected one (422) or the original (409).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interchange_id: Option<Uuid>,
}

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Malformed(EdiError),
    #[error("{error}")]
    Invalid { error: EdiError, interchange_id: Uuid },
    #[error("content type {0:?} is not accepted")]
    UnsupportedMediaType(String),
    #[error("the body exceeds the limit of {0} bytes")]
    PayloadTooLarge(usize),
    #[error("control number reused for different content")]
    Conflict { original_id: Uuid, sender: String, message_id: String },
    #[error("not found")]
    NotFound,
    #[error("{0}")]
    BadRequest(String),
    /// The push message or event around the interchange is not what its door requires.
    #[error("{0}")]
    InvalidTransport(String),
    #[error("{0}")]
    AlreadyExists(String),
    /// The resource exists but is not in a state that allows this change.
    #[error("{0}")]
    WrongState(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("rate limit reached")]
    RateLimited(std::time::Duration),
    #[error("request timed out")]
    Timeout,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error")]
    Internal,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Malformed(_) | ApiError::BadRequest(_) | ApiError::InvalidTransport(_) => {
                StatusCode::BAD_REQUEST
            }
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Conflict { .. } | ApiError::AlreadyExists(_) | ApiError::WrongState(_) => {
                StatusCode::CONFLICT
            }
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Timeout | ApiError::Store(StoreError::Unavailable(_)) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Store(_) | ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The problem document; internals of database errors are logged, never sent.
    pub fn problem(&self) -> Problem {
        let (kind, title) = match self {
            ApiError::Malformed(_) => ("malformed-interchange", "Malformed interchange"),
            ApiError::Invalid { .. } => ("invalid-interchange", "Invalid interchange"),
            ApiError::UnsupportedMediaType(_) => ("unsupported-media-type", "Unsupported media type"),
            ApiError::PayloadTooLarge(_) => ("payload-too-large", "Payload too large"),
            ApiError::Conflict { .. } => ("control-number-conflict", "Control number conflict"),
            ApiError::AlreadyExists(_) => ("already-exists", "Already exists"),
            ApiError::WrongState(_) => ("wrong-state", "Not possible in this state"),
            ApiError::NotFound => ("not-found", "Not found"),
            ApiError::BadRequest(_) => ("invalid-request", "Invalid request"),
            ApiError::InvalidTransport(_) => ("invalid-transport", "Invalid push message"),
            ApiError::Unauthorized(_) => ("unauthorized", "Unauthorized"),
            ApiError::Forbidden(_) => ("forbidden-sender", "Forbidden"),
            ApiError::RateLimited(_) => ("rate-limited", "Too many requests"),
            ApiError::Timeout | ApiError::Store(StoreError::Unavailable(_)) => {
                ("unavailable", "Service unavailable")
            }
            ApiError::Store(_) | ApiError::Internal => ("internal-error", "Internal error"),
        };
        let detail = match self {
            ApiError::Malformed(e) => format!("no idempotency key can be read: {e}"),
            ApiError::UnsupportedMediaType(found) => format!(
                "content type {found:?} is not accepted; send application/edi-x12, application/edifact, \
                 application/edi-consent, text/plain or application/octet-stream"
            ),
            ApiError::Conflict { original_id, sender: source, message_id } => format!(
                "{source} already used control number {message_id} for different content in interchange \
                 {original_id}; nothing was recorded"
            ),
            ApiError::Timeout | ApiError::Store(StoreError::Unavailable(_)) => {
                "the interchange was not recorded; retry later".to_owned()
            }
            ApiError::RateLimited(wait) => {
                format!("too many requests; nothing was recorded, retry in {} s", retry_after(*wait))
            }
            ApiError::Store(_) | ApiError::Internal => {
                "the request could not be completed; it was logged".to_owned()
            }
            other => other.to_string(),
        };
        let location = match self {
            ApiError::Malformed(e) | ApiError::Invalid { error: e, .. } => Some(e),
            _ => None,
        };
        Problem {
            kind: format!("/problems/{kind}"),
            title: title.to_owned(),
            status: self.status().as_u16(),
            detail,
            segment_position: location.and_then(|e| e.segment_position),
            segment: location.and_then(|e| e.segment.clone()),
            element: location.and_then(|e| e.element.clone()),
            interchange_id: match self {
                ApiError::Invalid { interchange_id, .. } => Some(*interchange_id),
                ApiError::Conflict { original_id, .. } => Some(*original_id),
                _ => None,
            },
        }
    }

    /// The audit trail's name for a delivery refused with this error.
    pub fn outcome(&self) -> &'static str {
        match self {
            ApiError::Malformed(_) => "malformed",
            ApiError::InvalidTransport(_) => "invalid-transport",
            ApiError::Invalid { .. } => "rejected",
            ApiError::UnsupportedMediaType(_) => "unsupported-media-type",
            ApiError::PayloadTooLarge(_) => "too-large",
            ApiError::Conflict { .. } => "conflict",
            ApiError::Unauthorized(_) => "unauthenticated",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::RateLimited(_) => "rate-limited",
            ApiError::BadRequest(_)
            | ApiError::NotFound
            | ApiError::AlreadyExists(_)
            | ApiError::WrongState(_) => "bad-request",
            ApiError::Timeout | ApiError::Store(StoreError::Unavailable(_)) => "unavailable",
            ApiError::Store(_) | ApiError::Internal => "error",
        }
    }

    /// The problem serialized, as stored for a rejected interchange and sent on every replay.
    pub fn body(&self) -> String {
        serde_json::to_string(&self.problem()).unwrap_or_default()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            ApiError::Store(error) => tracing::error!(%error, "store error"),
            ApiError::Internal => tracing::error!("internal error"),
            other => tracing::info!(error = %other, status = other.status().as_u16(), "request refused"),
        }
        let mut response =
            (self.status(), [(header::CONTENT_TYPE, PROBLEM_JSON)], self.body()).into_response();
        let headers = response.headers_mut();
        match &self {
            ApiError::RateLimited(wait) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after(*wait)));
            }
            ApiError::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ if self.status() == StatusCode::SERVICE_UNAVAILABLE => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECONDS));
            }
            _ => {}
        }
        response
    }
}
