//! The accounting side effect, behind the transactional outbox: every invoice recorded while an
//! accounting API is configured gets an outbox message in the inbox transaction; the [`relay`]
//! delivers it afterwards, at least once and with an `Idempotency-Key`, so exactly once in effect.
//! The [`export`] writes processed invoices to CSV files, each invoice in exactly one file.

pub mod csv;
pub mod retry;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::inbox::outbox::AccountingStatus;

/// An outbox message as the admin API lists it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct OutboxEntry {
    pub id: Uuid,
    pub invoice_id: Uuid,
    #[schema(example = "accounting-api")]
    pub destination: String,
    /// Sent as `Idempotency-Key` with every attempt.
    pub idempotency_key: String,
    pub status: AccountingStatus,
    pub attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub reference: Option<String>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    Delivered { reference: Option<String> },
    Retry { at: DateTime<Utc>, error: String },
    Dead { error: String },
}
