//! How the domain's types are read from rows: each `FromRow` is written here, once for both
//! engines, so that the types themselves (in `inbox`, `partners`, `accounting`) know nothing of
//! sqlx. A column stored as text and read as an enum or a parsed value is decoded with [`text`],
//! which names the column when the text is not one the type knows.

use sqlx::Row;

use crate::accounting::OutboxEntry;
use crate::inbox::Claim;
use crate::inbox::quarantine::{QUARANTINED, Quarantined};
use crate::inbox::resource::InterchangeSummary;
use crate::partners::Credential;
use crate::partners::directory::ActiveCredential;

/// `FromRow` of `$type` on PostgreSQL and on SQLite, with the same body.
macro_rules! from_row {
    ($type:ty, |$row:ident| $body:expr) => {
        impl<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> for $type {
            fn from_row($row: &'r sqlx::postgres::PgRow) -> Result<Self, sqlx::Error> {
                $body
            }
        }

        impl<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow> for $type {
            fn from_row($row: &'r sqlx::sqlite::SqliteRow) -> Result<Self, sqlx::Error> {
                $body
            }
        }
    };
}

/// A text column parsed into `T`.
fn text<R, T>(row: &R, column: &str) -> Result<T, sqlx::Error>
where
    R: Row,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'c> &'c str: sqlx::ColumnIndex<R>,
    T: TryFrom<String, Error: Into<Box<dyn std::error::Error + Send + Sync>>>,
{
    T::try_from(row.try_get::<String, _>(column)?)
        .map_err(|error| sqlx::Error::ColumnDecode { index: column.to_owned(), source: error.into() })
}

from_row!(OutboxEntry, |row| Ok(OutboxEntry {
    id: row.try_get("id")?,
    invoice_id: row.try_get("invoice_id")?,
    destination: row.try_get("destination")?,
    idempotency_key: row.try_get("idempotency_key")?,
    status: text(row, "status")?,
    attempts: row.try_get("attempts")?,
    next_attempt_at: row.try_get("next_attempt_at")?,
    reference: row.try_get("reference")?,
    last_error: row.try_get("last_error")?,
    created_at: row.try_get("created_at")?,
    delivered_at: row.try_get("delivered_at")?,
}));

from_row!(Credential, |row| Ok(Credential {
    id: row.try_get("id")?,
    kind: text(row, "kind")?,
    created_at: row.try_get("created_at")?,
    revoked_at: row.try_get("revoked_at")?,
}));

from_row!(ActiveCredential, |row| Ok(ActiveCredential {
    partner_id: text(row, "partner_id")?,
    kind: text(row, "kind")?,
    key_sha256: row.try_get("key_sha256")?,
    secret: row.try_get("secret")?,
}));

from_row!(Quarantined, |row| Ok(Quarantined {
    id: row.try_get("id")?,
    outcome: QUARANTINED,
    partner_id: text(row, "partner_id")?,
    reason: text(row, "reason")?,
    status: text(row, "status")?,
    source: row.try_get("source")?,
    message_id: row.try_get("message_id")?,
    payload_sha256: row.try_get("payload_sha256")?,
    interchange_id: row.try_get("interchange_id")?,
    problem: text(row, "problem")?,
    received_at: row.try_get("received_at")?,
    resolved_at: row.try_get("resolved_at")?,
    released_as: row.try_get("released_as")?,
}));

from_row!(Claim, |row| Ok(Claim {
    id: row.try_get("id")?,
    fresh: row.try_get("fresh")?,
    status: text(row, "status")?,
    payload_sha256: text(row, "payload_sha256")?,
    response_body: row.try_get("response_body")?,
    lists_from_rows: row.try_get("lists_from_rows")?,
    ack_control_number: row.try_get("ack_control_number")?,
    // Only PostgreSQL's claim reports it; SQLite's is looked up by the audit trail.
    transport_reused: match row.try_get("transport_reused") {
        Err(sqlx::Error::ColumnNotFound(_)) => false,
        other => other?,
    },
}));

from_row!(InterchangeSummary, |row| Ok(InterchangeSummary {
    id: row.try_get("id")?,
    status: text(row, "status")?,
    standard: text(row, "standard")?,
    sender_id: row.try_get("sender_id")?,
    control_number: row.try_get("control_number")?,
    received_at: row.try_get("received_at")?,
    deliveries: row.try_get("deliveries")?,
    last_delivery_at: row.try_get("last_delivery_at")?,
    partner_id: row.try_get("partner_id")?,
    invoice_count: row.try_get("invoice_count")?,
    first_invoice_number: row.try_get("first_invoice_number")?,
    first_invoice_total: row.try_get("first_invoice_total")?,
    first_invoice_currency: row.try_get("first_invoice_currency")?,
}));
