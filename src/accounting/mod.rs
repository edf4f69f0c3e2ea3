//! The accounting side effect, behind the transactional outbox: every invoice recorded while an
//! accounting API is configured gets an outbox message in the inbox transaction; the [`relay`]
//! delivers it afterwards, at least once and with an `Idempotency-Key`, so exactly once in effect.
//! The [`export`] writes processed invoices to CSV files, each invoice in exactly one file.

pub mod csv;
pub mod export;
pub mod relay;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::inbox::resource::InvoiceResource;

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
    /// The message that books `invoice`: its idempotency key is the invoice id, so every attempt,
    /// from any replica, carries the same one.
    pub fn booking(invoice: &InvoiceResource) -> OutboxMessage {
        OutboxMessage {
            id: Uuid::now_v7(),
            invoice_id: invoice.id,
            idempotency_key: invoice.id.to_string(),
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

/// An outbox message as the admin API lists it.
#[derive(Clone, Debug, Serialize, ToSchema, sqlx::FromRow)]
pub struct OutboxEntry {
    pub id: Uuid,
    pub invoice_id: Uuid,
    #[schema(example = "accounting-api")]
    pub destination: String,
    /// Sent as `Idempotency-Key` with every attempt.
    pub idempotency_key: String,
    #[sqlx(try_from = "String")]
    pub status: AccountingStatus,
    pub attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub reference: Option<String>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// One page of outbox messages; pass `next_cursor` as `cursor` to get the next one.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct OutboxPage {
    pub items: Vec<OutboxEntry>,
    pub next_cursor: Option<Uuid>,
}
