//! The accounting side of a delivery, as the inbox transaction writes it and the resources show it:
//! the outbox message booking each invoice (the transactional Outbox, the Inbox's mirror) and the
//! invoice's state with the accounting API.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::Booking;
use super::resource::InvoiceResource;

/// The `destination` of the outbox messages the relay sends to the accounting API.
pub const ACCOUNTING_API: &str = "accounting-api";

text_enum! {
    /// Where an invoice stands with the accounting API.
    AccountingStatus {
        /// Waiting for its (next) attempt.
        Pending = "pending",
        /// The accounting API booked it.
        Delivered = "delivered",
        /// Every attempt failed, or the accounting API refused it for good; an operator retries or
        /// discards it.
        Dead = "dead",
        /// An operator decided it is not to be sent.
        Discarded = "discarded",
    }
}

/// An outbox message as the inbox transaction writes it.
#[derive(Clone, Debug)]
pub struct OutboxMessage {
    pub id: Uuid,
    pub invoice_id: Uuid,
    pub idempotency_key: String,
    /// The invoice JSON the accounting API receives.
    pub payload: String,
}

impl OutboxMessage {
    /// The message that books `invoice`: its idempotency key is derived from its business key
    /// and revision ([`Booking::idempotency_key`]), so every attempt, from any replica, carries the
    /// same one, and so would the same invoice booked again by any path.
    pub fn booking(invoice: &InvoiceResource, booking: &Booking) -> OutboxMessage {
        OutboxMessage {
            id: Uuid::now_v7(),
            invoice_id: invoice.id,
            idempotency_key: booking.idempotency_key(),
            payload: serde_json::to_string(invoice).unwrap_or_default(),
        }
    }
}

/// An invoice's accounting state, as the invoice resource shows it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct AccountingState {
    pub status: AccountingStatus,
    /// The accounting API's id of the booked invoice.
    pub reference: Option<String>,
    /// Attempts made so far.
    pub attempts: i32,
    /// Why the latest attempt failed.
    pub last_error: Option<String>,
}
