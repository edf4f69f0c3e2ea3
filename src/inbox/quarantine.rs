//! Quarantine: for partners whose conflict policy is `quarantine`, a delivery that would be refused
//! with 409 or 422 (and that a push broker would retry for days) is answered 2xx and held, payload
//! and all, until an operator releases it (processes it after all) or discards it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::partners::PartnerId;

text_enum! {
    /// Why a delivery was held.
    QuarantineReason {
        /// Its control number was used before for other content (it would have been a 409).
        Conflict = "conflict",
        /// Its content is invalid (it would have been a 422).
        Invalid = "invalid",
        /// Its stated figures do not reconcile, and its partner holds such invoices.
        Mismatch = "mismatch",
        /// An invoice number its seller had booked before, with other content (its partner holds
        /// such invoices, the default): to be booked as a new invoice, as the replacement of the
        /// earlier one, or discarded.
        DuplicateNumber = "duplicate-number",
    }
}

text_enum! {
    /// What an operator books a held delivery as when its invoice number was booked before with
    /// other content (reason `duplicate-number`).
    ReleaseAs {
        /// A new invoice: the number's next revision, sent to accounting as its own invoice.
        New = "new",
        /// The replacement of the earlier invoice: the next revision, naming the one it replaces.
        Replacement = "replacement",
    }
}

text_enum! {
    /// Where a held delivery stands.
    QuarantineStatus {
        /// Waiting for an operator.
        Held = "held",
        /// Processed by an operator's release.
        Released = "released",
        /// Given up on by an operator.
        Discarded = "discarded",
    }
}

/// A held delivery, as listed and as answered to its sender.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Quarantined {
    pub id: Uuid,
    /// Always `quarantined`: what the sender's 2xx answer says happened.
    #[schema(example = "quarantined")]
    pub outcome: &'static str,
    #[schema(value_type = String)]
    pub partner_id: PartnerId,
    pub reason: QuarantineReason,
    pub status: QuarantineStatus,
    pub source: String,
    pub message_id: String,
    pub payload_sha256: String,
    /// The interchange it conflicts with, or the rejected interchange.
    pub interchange_id: Uuid,
    /// The problem it would have been refused with.
    #[schema(value_type = super::problem::Problem)]
    pub problem: StoredProblem,
    pub received_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// The interchange the release recorded.
    pub released_as: Option<Uuid>,
}

/// A problem+json body as stored (text), served as JSON.
#[derive(Clone, Debug, Serialize)]
#[serde(transparent)]
pub struct StoredProblem(pub serde_json::Value);

impl TryFrom<String> for StoredProblem {
    type Error = serde_json::Error;

    fn try_from(text: String) -> Result<StoredProblem, serde_json::Error> {
        serde_json::from_str(&text).map(StoredProblem)
    }
}

/// What the sender's answer is called.
pub const QUARANTINED: &str = "quarantined";
