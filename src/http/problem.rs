//! Every error the API answers with, as RFC 9457 `application/problem+json`. This is the one place
//! where errors of the other layers become status codes.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use crate::as2::Failure as As2Failure;
use crate::edi::EdiError;
use crate::inbox::Logged;
pub use crate::inbox::problem::Problem;
use crate::inbox::resource::IdempotencyKey;
use crate::ingest::{self, Answers, Reply};
use crate::operate;
use crate::store::StoreError;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// Seconds a client is asked to wait before retrying a 503.
const RETRY_AFTER_SECONDS: &str = "5";

/// How long a delivery is asked to wait when the memory budget is spent by others.
const BUDGET_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Whole seconds to wait, at least one.
fn retry_after(wait: std::time::Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
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
    /// More memory than the server's whole budget would be needed: it never fits.
    #[error("{0}")]
    OverBudget(String),
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
    /// The memory budget is held by other deliveries now (retry soon).
    #[error(
        "this delivery needs about {needed} bytes of memory and {budget} bytes are all this server lets \
         such deliveries hold at once (EDI_INBOX_BUFFER_BYTES); they are held by others now: nothing was \
         recorded, retry in 1 s"
    )]
    Busy { needed: usize, budget: usize },
    /// The body arrived slower than the minimum rate.
    #[error(
        "the request body arrived slower than {0} bytes per second (EDI_INBOX_MIN_BODY_RATE) after the first \
         seconds; nothing was recorded"
    )]
    SlowBody(u64),
    /// The body was the slowest of the unproven requests' when a newcomer needed its slot.
    #[error(
        "the request body arrived at {0} bytes per second, the slowest of the requests not yet authenticated \
         when another needed its place; nothing was recorded"
    )]
    Overtaken(u64),
    #[error("request timed out")]
    Timeout,
    /// The instance is not ready to take deliveries, and why (told to operators only).
    #[error("{0}")]
    NotReady(String),
    /// An AS2 message that could not be opened (answered with an error MDN when one is asked).
    #[error(transparent)]
    As2(#[from] As2Failure),
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
            ApiError::PayloadTooLarge(_) | ApiError::OverBudget(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Conflict { .. } | ApiError::AlreadyExists(_) | ApiError::WrongState(_) => {
                StatusCode::CONFLICT
            }
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::As2(failure) => match failure {
                As2Failure::AuthenticationFailed(_) | As2Failure::IntegrityCheckFailed => {
                    StatusCode::UNAUTHORIZED
                }
                As2Failure::InsufficientSecurity(_) => StatusCode::FORBIDDEN,
                As2Failure::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
                As2Failure::Busy => StatusCode::TOO_MANY_REQUESTS,
                As2Failure::Malformed(_)
                | As2Failure::DecryptionFailed(_)
                | As2Failure::ReceiptUrlRefused(_) => StatusCode::BAD_REQUEST,
            },
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::RateLimited(_) | ApiError::Busy { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::SlowBody(_) | ApiError::Overtaken(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::Timeout
            | ApiError::NotReady(_)
            | ApiError::Store(StoreError::Unavailable(_) | StoreError::Unconfirmed) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Store(StoreError::Refused(_)) => StatusCode::BAD_REQUEST,
            ApiError::Store(_) | ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The problem document; internals of database errors are logged, never sent.
    pub fn problem(&self) -> Problem {
        let (kind, title) = match self {
            ApiError::Malformed(_) => ("malformed-interchange", "Malformed interchange"),
            ApiError::Invalid { error, .. } if error.kind == crate::edi::ErrorKind::DuplicateNumber => {
                ("duplicate-invoice-number", "Invoice number booked before with other content")
            }
            ApiError::Invalid { .. } => ("invalid-interchange", "Invalid interchange"),
            ApiError::UnsupportedMediaType(_) => ("unsupported-media-type", "Unsupported media type"),
            ApiError::PayloadTooLarge(_) | ApiError::OverBudget(_) => {
                ("payload-too-large", "Payload too large")
            }
            ApiError::Conflict { .. } => ("control-number-conflict", "Control number conflict"),
            ApiError::AlreadyExists(_) => ("already-exists", "Already exists"),
            ApiError::WrongState(_) => ("wrong-state", "Not possible in this state"),
            ApiError::NotFound => ("not-found", "Not found"),
            ApiError::BadRequest(_) => ("invalid-request", "Invalid request"),
            ApiError::InvalidTransport(_) => ("invalid-transport", "Invalid push message"),
            ApiError::As2(_) => match self.status() {
                StatusCode::UNAUTHORIZED => ("unauthorized", "Unauthorized"),
                StatusCode::FORBIDDEN => ("forbidden-sender", "Forbidden"),
                StatusCode::PAYLOAD_TOO_LARGE => ("payload-too-large", "Payload too large"),
                StatusCode::TOO_MANY_REQUESTS => ("rate-limited", "Memory budget spent"),
                _ => ("invalid-transport", "Invalid AS2 message"),
            },
            ApiError::Unauthorized(_) => ("unauthorized", "Unauthorized"),
            ApiError::Forbidden(_) => ("forbidden-sender", "Forbidden"),
            ApiError::RateLimited(_) => ("rate-limited", "Too many requests"),
            ApiError::Busy { .. } => ("rate-limited", "Memory budget spent"),
            ApiError::SlowBody(_) | ApiError::Overtaken(_) => ("request-timeout", "Request body too slow"),
            ApiError::Timeout
            | ApiError::NotReady(_)
            | ApiError::Store(StoreError::Unavailable(_) | StoreError::Unconfirmed) => {
                ("unavailable", "Service unavailable")
            }
            ApiError::Store(StoreError::Refused(_)) => ("invalid-request", "Invalid request"),
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
            ApiError::NotReady(why) => why.clone(),
            ApiError::Store(StoreError::Unconfirmed) => "the synchronous standby did not confirm the commit, so it \
                is not acknowledged (it may stand on the primary only); retry: the resend is answered as the \
                database then holds it"
                .to_owned(),
            ApiError::Store(StoreError::Refused(_)) => {
                "the database refused a value of this request; nothing was recorded, and a retry cannot succeed".to_owned()
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
            ApiError::PayloadTooLarge(_) | ApiError::OverBudget(_) => "too-large",
            ApiError::Conflict { .. } => "conflict",
            ApiError::Unauthorized(_) => "unauthenticated",
            ApiError::As2(As2Failure::Malformed(_) | As2Failure::ReceiptUrlRefused(_)) => "invalid-transport",
            ApiError::As2(As2Failure::TooLarge(_)) => "too-large",
            ApiError::As2(As2Failure::Busy) => "rate-limited",
            ApiError::As2(failure) => failure.modifier(),
            ApiError::Forbidden(_) => "forbidden",
            ApiError::RateLimited(_) | ApiError::Busy { .. } => "rate-limited",
            ApiError::SlowBody(_) | ApiError::Overtaken(_) => "timeout",
            ApiError::BadRequest(_)
            | ApiError::NotFound
            | ApiError::AlreadyExists(_)
            | ApiError::WrongState(_) => "bad-request",
            ApiError::Timeout
            | ApiError::NotReady(_)
            | ApiError::Store(StoreError::Unavailable(_) | StoreError::Unconfirmed) => "unavailable",
            ApiError::Store(StoreError::Refused(_)) => "bad-request",
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
            other => {
                tracing::info!(error = %Logged(&other.to_string()), status = other.status().as_u16(), "request refused")
            }
        }
        let mut response =
            (self.status(), [(header::CONTENT_TYPE, PROBLEM_JSON)], self.body()).into_response();
        let headers = response.headers_mut();
        match &self {
            ApiError::RateLimited(wait) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after(*wait)));
            }
            ApiError::Busy { .. } | ApiError::As2(As2Failure::Busy) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after(BUDGET_WAIT)));
            }
            ApiError::SlowBody(_) | ApiError::Overtaken(_) => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
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

impl From<operate::Error> for ApiError {
    fn from(error: operate::Error) -> ApiError {
        match error {
            operate::Error::Invalid(detail) => ApiError::BadRequest(detail),
            operate::Error::Exists(detail) => ApiError::AlreadyExists(detail),
            operate::Error::NotFound(_) => ApiError::NotFound,
            operate::Error::WrongState(detail) => ApiError::WrongState(detail),
            operate::Error::Busy(_) => ApiError::RateLimited(std::time::Duration::from_secs(1)),
            operate::Error::Ingest(error) => ApiError::from(error),
            operate::Error::Store(error) => ApiError::Store(error),
        }
    }
}

impl From<ingest::Error> for ApiError {
    fn from(error: ingest::Error) -> ApiError {
        match error {
            ingest::Error::Malformed(error) => ApiError::Malformed(error),
            ingest::Error::Forbidden(detail) => ApiError::Forbidden(detail),
            ingest::Error::WrongState(detail) => ApiError::WrongState(detail),
            ingest::Error::TooLarge(limit) => ApiError::PayloadTooLarge(limit),
            error @ ingest::Error::TooLargeToRecord { .. } => ApiError::OverBudget(error.to_string()),
            ingest::Error::Busy { needed, budget } => ApiError::Busy { needed, budget },
            ingest::Error::Store(error) => ApiError::Store(error),
            ingest::Error::Internal => ApiError::Internal,
        }
    }
}

/// The status of each reply to a delivery.
pub fn reply_status(reply: Reply) -> StatusCode {
    match reply {
        Reply::Created => StatusCode::CREATED,
        Reply::Replayed => StatusCode::OK,
        Reply::Rejected => StatusCode::UNPROCESSABLE_ENTITY,
        Reply::Conflict => StatusCode::CONFLICT,
        Reply::Held => StatusCode::ACCEPTED,
    }
}

/// The status a delivery refused by the use case is answered with (as its [`ApiError`] has it).
fn refusal_status(error: &ingest::Error) -> StatusCode {
    match error {
        ingest::Error::Malformed(_) => StatusCode::BAD_REQUEST,
        ingest::Error::Forbidden(_) => StatusCode::FORBIDDEN,
        ingest::Error::WrongState(_) => StatusCode::CONFLICT,
        ingest::Error::TooLarge(_) | ingest::Error::TooLargeToRecord { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        ingest::Error::Busy { .. } => StatusCode::TOO_MANY_REQUESTS,
        ingest::Error::Store(StoreError::Unavailable(_) | StoreError::Unconfirmed) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        ingest::Error::Store(StoreError::Refused(_)) => StatusCode::BAD_REQUEST,
        ingest::Error::Store(_) | ingest::Error::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The conflict of a delivery with the interchange holding its key.
pub fn conflict(original_id: Uuid, key: &IdempotencyKey) -> ApiError {
    ApiError::Conflict { original_id, sender: key.source.to_string(), message_id: key.message_id.clone() }
}

/// What the delivery use case stores of the HTTP contract.
pub const ANSWERS: Answers = Answers {
    invalid: |error, interchange_id| ApiError::Invalid { error: error.clone(), interchange_id }.body(),
    conflict: |original_id, key| conflict(original_id, key).body(),
    status: |reply| reply_status(reply).as_u16(),
    refusal: |error| refusal_status(error).as_u16(),
    receipt: super::as2::disposition_field,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edi::EdiError;

    #[test]
    fn a_refusal_is_audited_with_the_status_it_is_answered_with() {
        let unavailable = || StoreError::Unavailable(sqlx::Error::PoolTimedOut);
        let errors = [
            ingest::Error::Malformed(EdiError::unlocated("not an interchange")),
            ingest::Error::Forbidden("suspended".into()),
            ingest::Error::WrongState("resolved".into()),
            ingest::Error::TooLarge(10),
            ingest::Error::Store(unavailable()),
            ingest::Error::Store(StoreError::Corrupt("x".into())),
            ingest::Error::Store(StoreError::Refused(sqlx::Error::Protocol("22021".into()))),
            ingest::Error::Internal,
        ];
        for error in errors {
            let audited = (ANSWERS.refusal)(&error);
            assert_eq!(audited, ApiError::from(error).status().as_u16());
        }
    }
}
