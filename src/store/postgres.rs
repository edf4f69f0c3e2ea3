//! PostgreSQL writes. Every delivery costs one round trip and at most one commit: a single statement
//! claims the key (`INSERT … ON CONFLICT DO NOTHING` on the unique (source, message_id) index) and,
//! only when the row is its own, writes documents, invoices, lines, the acknowledgement and the audit
//! row from arrays; otherwise the same statement reads the row that holds the key, writing nothing.
//! One statement is one transaction, so the key and its effects commit together or not at all. A
//! concurrent duplicate waits for the winner's COMMIT in the unique index and then sees its row: a
//! replay or a conflict. No row is updated by more than one delivery.

use sqlx::PgPool;
use sqlx::postgres::{PgArguments, PgPoolOptions};
use sqlx::query::QueryAs;

use super::{FirstAttempt, StoreError, StoreOptions, effect_rows, position};
use crate::edi::ack;
use crate::inbox::{Claim, Delivery, Next, Outcome, decide};

pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<PgPool, StoreError> {
    Ok(PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .connect(url)
        .await?)
}

/// Writes documents, invoices, lines, the acknowledgement (its control number from the cycling
/// sequence, which never waits for another delivery's COMMIT) and the first delivery's audit row
/// for every row `claim` returns, then selects `$tail`. `$1`–`$54` are bound by [`bind`].
macro_rules! with_effects {
    ($claim:literal, $tail:literal) => {
        concat!(
            "WITH claim AS (",
            $claim,
            "), documents_written AS (
                INSERT INTO documents (id, inbox_id, position, doc_type, control_number)
                SELECT d.id, claim.id, d.position, d.doc_type, d.control_number
                FROM claim, unnest($16::uuid[], $17::int4[], $18::text[], $19::text[])
                    AS d (id, position, doc_type, control_number)
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
            ), lines_written AS (
                INSERT INTO invoice_lines (invoice_id, line_number, quantity, unit, unit_price, product_id,
                    description, amount)
                SELECT l.invoice_id, l.line_number, l.quantity::numeric, l.unit, l.unit_price::numeric,
                    l.product_id, l.description, l.amount::numeric
                FROM claim, unnest($36::uuid[], $37::int4[], $38::text[], $39::text[], $40::text[],
                    $41::text[], $42::text[], $43::text[])
                    AS l (invoice_id, line_number, quantity, unit, unit_price, product_id, description, amount)
            ), ack_written AS (
                INSERT INTO acks (inbox_id, control_number, body, created_at)
                SELECT claim.id, n.value, replace($44, $45, lpad(n.value::text, 9, '0')), $15
                FROM claim, LATERAL (SELECT nextval('ack_control_numbers') AS value) AS n
                RETURNING control_number
            ), audit_written AS (
                INSERT INTO deliveries (id, inbox_id, partner_id, source, message_id, outcome, status, request_id,
                    remote_addr, user_agent, content_type, body_bytes, received_at)
                SELECT $46, claim.id, $47, $2, $3, $48, $49, $50, $51, $52, $53, $54, $15
                FROM claim
            )
            SELECT id, true AS fresh, $13::text AS status, $10::text AS payload_sha256, NULL::text AS response_body,
                (SELECT control_number FROM ack_written) AS ack_control_number
            FROM claim",
            $tail
        )
    };
}

/// A first delivery inserts the row and its effects; any later one writes nothing and reads the
/// row that holds the key (no row lock: DO NOTHING does not lock the existing row). When the holder
/// committed after this statement's snapshot was taken (a concurrent duplicate), no row comes back
/// and [`READ`] fetches it.
const CLAIM: &str = with_effects!(
    "INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier,
        receiver_id, control_number, payload_sha256, payload, content_type, status, response_body,
        received_at, processed_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)
    ON CONFLICT (source, message_id) DO NOTHING
    RETURNING id",
    "
    UNION ALL
    SELECT id, false, status, payload_sha256, response_body, NULL::bigint
    FROM inbox WHERE source = $2 AND message_id = $3 AND NOT EXISTS (SELECT FROM claim)"
);

/// The row holding a key, read with a fresh snapshot.
const READ: &str = "SELECT id, false AS fresh, status, payload_sha256, response_body,
        NULL::bigint AS ack_control_number
    FROM inbox WHERE source = $1 AND message_id = $2";

/// Overwrites a rejected attempt that still holds fingerprint `$55`.
const REPLACE_REJECTED: &str = with_effects!(
    "UPDATE inbox SET id = $1, standard = $4, sender_qualifier = $5, sender_id = $6,
        receiver_qualifier = $7, receiver_id = $8, control_number = $9, payload_sha256 = $10, payload = $11,
        content_type = $12, status = $13, response_body = $14, received_at = $15, processed_at = $15,
        payload_purged_at = NULL
    WHERE source = $2 AND message_id = $3 AND status = 'rejected' AND payload_sha256 = $55
    RETURNING id",
    ""
);

/// How often a delivery claims again after losing a race (to replace a rejected attempt, or to a
/// holder it could not see yet).
const MAX_ATTEMPTS: usize = 3;

pub(super) async fn record(
    pool: &PgPool,
    delivery: &Delivery,
    first: &FirstAttempt,
) -> Result<Outcome, StoreError> {
    for _ in 0..MAX_ATTEMPTS {
        let claimed = bind(sqlx::query_as(CLAIM), delivery, first).fetch_optional(pool).await?;
        let claim = match claimed {
            Some(claim) => claim,
            None => {
                let holder = sqlx::query_as(READ)
                    .bind(&delivery.key.source)
                    .bind(&delivery.key.message_id)
                    .fetch_optional(pool)
                    .await?;
                let Some(holder) = holder else { continue };
                holder
            }
        };
        match decide(claim, delivery) {
            Next::Done(outcome) => return Ok(outcome),
            Next::ReplaceRejected { previous_fingerprint } => {
                let replaced = bind(sqlx::query_as(REPLACE_REJECTED), delivery, first)
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
    Err(StoreError::Unavailable(sqlx::Error::Protocol("the key kept changing while it was claimed".into())))
}

type ClaimQuery<'q> = QueryAs<'q, sqlx::Postgres, Claim, PgArguments>;

/// Binds `$1`–`$54`: the inbox row; documents, invoices and lines as column arrays; the
/// acknowledgement; the audit row.
fn bind<'q>(query: ClaimQuery<'q>, d: &'q Delivery, first: &'q FirstAttempt) -> ClaimQuery<'q> {
    let (invoices, lines) = effect_rows(d);
    macro_rules! column {
        ($rows:expr, $field:ident) => {
            $rows.iter().map(|row| row.$field.clone()).collect::<Vec<_>>()
        };
    }
    let query = bind_inbox_row!(query, d)
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
        .bind(ack::CONTROL_NUMBER);
    bind_audit_row!(query, d, first)
}
