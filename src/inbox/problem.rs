//! The RFC 9457 problem document: what every refusal reads like, and what a rejected interchange
//! is stored and replayed with. The HTTP layer decides which problem (and status) an error is.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

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
