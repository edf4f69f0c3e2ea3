//! A partner's conflict policy `quarantine`: a delivery that would be refused (a conflict, or an
//! invalid interchange, first or replayed) is held for an operator instead, with the problem it
//! would have been answered with.

use super::Ingest;
use crate::inbox::quarantine::QuarantineReason;
use crate::inbox::{Delivery, Outcome, Status};
use crate::store::Hold;

/// What a quarantine-policy partner's delivery is held for, if it would be refused.
pub(super) fn quarantine<'a>(
    ingest: &Ingest,
    partner_id: &'a str,
    delivery: &'a Delivery,
    outcome: &Outcome,
) -> Option<Hold<'a>> {
    let (reason, interchange_id, problem) = match outcome {
        Outcome::Conflict { original_id } => {
            (QuarantineReason::Conflict, *original_id, (ingest.answers.conflict)(*original_id, &delivery.key))
        }
        Outcome::Recorded { .. } if delivery.status == Status::Rejected => {
            (QuarantineReason::Invalid, delivery.id, delivery.response.clone())
        }
        Outcome::Replayed { id, status: Status::Rejected, body } => {
            (QuarantineReason::Invalid, *id, body.clone())
        }
        Outcome::Recorded { .. } | Outcome::Replayed { .. } => return None,
    };
    Some(Hold {
        partner_id,
        source: &delivery.key.source,
        message_id: &delivery.key.message_id,
        payload_sha256: &delivery.fingerprint,
        reason,
        payload: &delivery.payload,
        content_type: delivery.content_type.as_deref(),
        problem,
        interchange_id,
        received_at: delivery.received_at,
    })
}
