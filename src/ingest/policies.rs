//! What a partner holds for an operator instead of refusing it: under the conflict policy
//! `quarantine`, every delivery that would be refused (a conflict, or an invalid interchange, first
//! or replayed); under `on_mismatch: quarantine`, an invoice whose stated figures do not reconcile;
//! under `on_duplicate_number: quarantine` (the default), an invoice number booked before with other
//! content.
//! A held delivery keeps the problem it would have been answered with.

use super::Ingest;
use crate::inbox::quarantine::QuarantineReason;
use crate::inbox::{Delivery, Outcome, Refused, Status};
use crate::partners::{ConflictPolicy, DuplicateNumberPolicy, MismatchPolicy, Partner};
use crate::store::Hold;

/// Whether `partner` holds `delivery` when it is rejected, rather than answering 422.
pub(super) fn holds_rejection(partner: Option<&Partner>, delivery: &Delivery) -> bool {
    partner.is_some_and(|partner| {
        partner.conflict_policy == ConflictPolicy::Quarantine
            || match delivery.refused() {
                Some(Refused::Mismatch) => partner.on_mismatch == MismatchPolicy::Quarantine,
                Some(Refused::DuplicateNumber) => {
                    partner.on_duplicate_number == DuplicateNumberPolicy::Quarantine
                }
                None => false,
            }
    })
}

/// What `partner`'s delivery is held for, if it would be refused and the partner holds it.
pub(super) fn quarantine<'a>(
    ingest: &Ingest,
    partner: &'a Partner,
    delivery: &'a Delivery,
    outcome: &Outcome,
) -> Option<Hold<'a>> {
    let rejection = match delivery.refused() {
        Some(Refused::Mismatch) => QuarantineReason::Mismatch,
        Some(Refused::DuplicateNumber) => QuarantineReason::DuplicateNumber,
        None => QuarantineReason::Invalid,
    };
    let rejection_held = holds_rejection(Some(partner), delivery);
    let (reason, interchange_id, problem) = match outcome {
        Outcome::Conflict { original_id } if partner.conflict_policy == ConflictPolicy::Quarantine => (
            QuarantineReason::Conflict,
            *original_id,
            (ingest.answers.conflict)(*original_id, delivery.key()),
        ),
        Outcome::Recorded { .. } if delivery.status() == Status::Rejected && rejection_held => {
            (rejection, delivery.id(), delivery.response().to_owned())
        }
        Outcome::Replayed { id, status: Status::Rejected, body, .. } if rejection_held => {
            (rejection, *id, body.clone())
        }
        Outcome::Conflict { .. } | Outcome::Recorded { .. } | Outcome::Replayed { .. } => return None,
    };
    Some(Hold {
        partner_id: &partner.id,
        source: delivery.key().source.as_str(),
        message_id: &delivery.key().message_id,
        payload_sha256: delivery.fingerprint(),
        reason,
        payload: delivery.payload(),
        content_type: delivery.content_type(),
        problem,
        interchange_id,
        received_at: delivery.received_at(),
    })
}
