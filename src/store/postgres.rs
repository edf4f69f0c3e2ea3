//! PostgreSQL writes. A first delivery costs one round trip: a single statement claims the key
//! (`INSERT … ON CONFLICT DO UPDATE` on the unique (source, message_id) index, counting the delivery)
//! and, only when the row is its own, writes documents, invoices and lines from arrays. One statement
//! is one transaction, so the key and its effects commit together or not at all. A concurrent
//! duplicate blocks on the winner's row lock and then sees the committed row: a replay or a conflict.

use sqlx::PgPool;
use sqlx::postgres::{PgArguments, PgPoolOptions};
use sqlx::query::QueryAs;

use super::{PoolOptions, StoreError, effect_rows, position};
use crate::edi::ack;
use crate::inbox::{Claim, Delivery, Next, Outcome, decide};

pub(super) async fn connect(url: &str, options: &PoolOptions) -> Result<PgPool, StoreError> {
    Ok(PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .connect(url)
        .await?)
}

/// Writes documents, invoices, lines and the acknowledgement (with a control number from the
/// partner's counter) when `claim.fresh`; reads the claim back. `$1`–`$45` are bound by [`bind`].
macro_rules! with_effects {
    ($claim:literal) => {
        concat!(
            "WITH claim AS (",
            $claim,
            "), documents_written AS (
                INSERT INTO documents (id, inbox_id, position, doc_type, control_number)
                SELECT d.id, claim.id, d.position, d.doc_type, d.control_number
                FROM claim, unnest($16::uuid[], $17::int4[], $18::text[], $19::text[])
                    AS d (id, position, doc_type, control_number)
                WHERE claim.fresh
            ), invoices_written AS (
                INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, purchase_order, currency,
                    total, tax_total, tax_rate, seller_name, seller_qualifier, seller_id, buyer_name,
                    buyer_qualifier, buyer_id, allowances_charges)
                SELECT i.id, claim.id, i.document_id, i.number, i.issue_date::date, i.purchase_order, i.currency,
                    i.total::numeric, i.tax_total::numeric, i.tax_rate::numeric, i.seller_name,
                    i.seller_qualifier, i.seller_id, i.buyer_name, i.buyer_qualifier, i.buyer_id,
                    i.allowances_charges::jsonb
                FROM claim, unnest($20::uuid[], $21::uuid[], $22::text[], $23::text[], $24::text[],
                    $25::text[], $26::text[], $27::text[], $28::text[], $29::text[], $30::text[], $31::text[],
                    $32::text[], $33::text[], $34::text[], $35::text[])
                    AS i (id, document_id, number, issue_date, purchase_order, currency, total, tax_total,
                        tax_rate, seller_name, seller_qualifier, seller_id, buyer_name, buyer_qualifier,
                        buyer_id, allowances_charges)
                WHERE claim.fresh
            ), lines_written AS (
                INSERT INTO invoice_lines (invoice_id, line_number, quantity, unit, unit_price, product_id,
                    description, amount)
                SELECT l.invoice_id, l.line_number, l.quantity::numeric, l.unit, l.unit_price::numeric,
                    l.product_id, l.description, l.amount::numeric
                FROM claim, unnest($36::uuid[], $37::int4[], $38::text[], $39::text[], $40::text[],
                    $41::text[], $42::text[], $43::text[])
                    AS l (invoice_id, line_number, quantity, unit, unit_price, product_id, description, amount)
                WHERE claim.fresh
            ), ack_counter AS (
                INSERT INTO ack_counters (source, last_control_number)
                SELECT $2, 1 FROM claim WHERE claim.fresh
                ON CONFLICT (source) DO UPDATE
                    SET last_control_number = ack_counters.last_control_number % 999999999 + 1
                RETURNING last_control_number
            ), ack_written AS (
                INSERT INTO acks (inbox_id, control_number, body, created_at)
                SELECT claim.id, ack_counter.last_control_number,
                    replace($44, $45, lpad(ack_counter.last_control_number::text, 9, '0')), $15
                FROM claim, ack_counter
            )
            SELECT id, fresh, status, payload_sha256, response_body,
                (SELECT last_control_number FROM ack_counter) AS ack_control_number
            FROM claim"
        )
    };
}

/// First delivery inserts the row (fresh); any later one only counts itself and reads the row.
const CLAIM: &str = with_effects!(
    "INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier,
        receiver_id, control_number, payload_sha256, payload, content_type, status, response_body,
        received_at, processed_at, last_delivery_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $15)
    ON CONFLICT (source, message_id) DO UPDATE
        SET deliveries = inbox.deliveries + 1, last_delivery_at = EXCLUDED.last_delivery_at
    RETURNING id, deliveries = 1 AS fresh, status, payload_sha256,
        CASE WHEN deliveries > 1 THEN response_body END AS response_body"
);

/// Overwrites a rejected attempt that still holds fingerprint `$46` (the delivery was counted already).
const REPLACE_REJECTED: &str = with_effects!(
    "UPDATE inbox SET id = $1, standard = $4, sender_qualifier = $5, sender_id = $6,
        receiver_qualifier = $7, receiver_id = $8, control_number = $9, payload_sha256 = $10, payload = $11,
        content_type = $12, status = $13, response_body = $14, received_at = $15, processed_at = $15,
        payload_purged_at = NULL
    WHERE source = $2 AND message_id = $3 AND status = 'rejected' AND payload_sha256 = $46
    RETURNING id, true AS fresh, status, payload_sha256, NULL::text AS response_body"
);

/// How often a delivery re-claims after losing a race to replace a rejected attempt.
const MAX_ATTEMPTS: usize = 3;

pub(super) async fn record(pool: &PgPool, delivery: &Delivery) -> Result<Outcome, StoreError> {
    for _ in 0..MAX_ATTEMPTS {
        let claim = bind(sqlx::query_as(CLAIM), delivery).fetch_one(pool).await?;
        match decide(claim, delivery) {
            Next::Done(outcome) => return Ok(outcome),
            Next::ReplaceRejected { previous_fingerprint } => {
                let replaced = bind(sqlx::query_as(REPLACE_REJECTED), delivery)
                    .bind(previous_fingerprint)
                    .fetch_optional(pool)
                    .await?;
                if let Some(claim) = replaced {
                    return Ok(Outcome::Recorded {
                        ack_control_number: claim.ack_control_number.unwrap_or_default(),
                    });
                }
            }
        }
    }
    Err(StoreError::Unavailable(sqlx::Error::Protocol(
        "the key kept changing while replacing a rejected interchange".into(),
    )))
}

type ClaimQuery<'q> = QueryAs<'q, sqlx::Postgres, Claim, PgArguments>;

/// Binds `$1`–`$45`: the inbox row; documents, invoices and lines as column arrays; the acknowledgement.
fn bind<'q>(query: ClaimQuery<'q>, d: &'q Delivery) -> ClaimQuery<'q> {
    let (invoices, lines) = effect_rows(d);
    macro_rules! column {
        ($rows:expr, $field:ident) => {
            $rows.iter().map(|row| row.$field.clone()).collect::<Vec<_>>()
        };
    }
    bind_inbox_row!(query, d)
        .bind(d.documents.iter().map(|s| s.id).collect::<Vec<_>>())
        .bind(d.documents.iter().map(|s| position(s.document.position)).collect::<Vec<_>>())
        .bind(d.documents.iter().map(|s| s.document.kind.clone()).collect::<Vec<_>>())
        .bind(d.documents.iter().map(|s| s.document.control_number.clone()).collect::<Vec<_>>())
        .bind(column!(invoices, id))
        .bind(column!(invoices, document_id))
        .bind(column!(invoices, number))
        .bind(column!(invoices, issue_date))
        .bind(column!(invoices, purchase_order))
        .bind(column!(invoices, currency))
        .bind(column!(invoices, total))
        .bind(column!(invoices, tax_total))
        .bind(column!(invoices, tax_rate))
        .bind(column!(invoices, seller_name))
        .bind(column!(invoices, seller_qualifier))
        .bind(column!(invoices, seller_id))
        .bind(column!(invoices, buyer_name))
        .bind(column!(invoices, buyer_qualifier))
        .bind(column!(invoices, buyer_id))
        .bind(column!(invoices, allowances_charges))
        .bind(column!(lines, invoice_id))
        .bind(column!(lines, line_number))
        .bind(column!(lines, quantity))
        .bind(column!(lines, unit))
        .bind(column!(lines, unit_price))
        .bind(column!(lines, product_id))
        .bind(column!(lines, description))
        .bind(column!(lines, amount))
        .bind(&d.ack)
        .bind(ack::CONTROL_NUMBER)
}
