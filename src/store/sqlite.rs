//! SQLite writes. `BEGIN IMMEDIATE` takes the database write lock before the claim, so concurrent
//! deliveries of one key are serialized (WAL keeps readers going meanwhile); the claim upsert, the
//! documents, invoices and lines, and the stored response then commit together.

use std::str::FromStr;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, SqliteConnection, SqlitePool};

use super::{PoolOptions, StoreError, effect_rows, position};
use crate::edi::ack;
use crate::inbox::{Claim, Delivery, Next, Outcome, decide};

pub(super) async fn connect(url: &str, options: &PoolOptions) -> Result<SqlitePool, StoreError> {
    let connect = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(options.acquire_timeout);
    Ok(SqlitePoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .connect_with(connect)
        .await?)
}

const CLAIM: &str = "INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id,
        receiver_qualifier, receiver_id, control_number, payload_sha256, payload, content_type, status,
        response_body, received_at, processed_at, last_delivery_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $15)
    ON CONFLICT (source, message_id) DO UPDATE
        SET deliveries = deliveries + 1, last_delivery_at = excluded.last_delivery_at
    RETURNING id, deliveries = 1 AS fresh, status, payload_sha256,
        CASE WHEN deliveries > 1 THEN response_body END AS response_body, NULL AS ack_control_number";

const REPLACE_REJECTED: &str =
    "UPDATE inbox SET id = $1, standard = $4, sender_qualifier = $5, sender_id = $6,
        receiver_qualifier = $7, receiver_id = $8, control_number = $9, payload_sha256 = $10, payload = $11,
        content_type = $12, status = $13, response_body = $14, received_at = $15, processed_at = $15,
        payload_purged_at = NULL
    WHERE source = $2 AND message_id = $3 AND status = 'rejected' AND payload_sha256 = $16";

pub(super) async fn record(pool: &SqlitePool, d: &Delivery) -> Result<Outcome, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let claim: Claim = bind_inbox_row!(sqlx::query_as::<_, Claim>(CLAIM), d).fetch_one(&mut *tx).await?;
    let outcome = match decide(claim, d) {
        Next::Done(Outcome::Recorded { .. }) => write_effects(&mut tx, d).await?,
        Next::Done(outcome) => outcome,
        // The write lock is held: nobody can have changed the rejected row since the claim.
        Next::ReplaceRejected { previous_fingerprint } => {
            bind_inbox_row!(sqlx::query(REPLACE_REJECTED), d)
                .bind(previous_fingerprint)
                .execute(&mut *tx)
                .await?;
            write_effects(&mut tx, d).await?
        }
    };
    tx.commit().await?;
    Ok(outcome)
}

/// Rows per multi-row INSERT: 17 columns × 500 stays far below SQLite's 32,766 bound parameters.
const BATCH_ROWS: usize = 500;

/// Writes documents, invoices, lines (in multi-row batches) and the acknowledgement of a fresh delivery.
async fn write_effects(tx: &mut SqliteConnection, d: &Delivery) -> Result<Outcome, StoreError> {
    for batch in d.documents.chunks(BATCH_ROWS) {
        QueryBuilder::new("INSERT INTO documents (id, inbox_id, position, doc_type, control_number) ")
            .push_values(batch, |mut row, stored| {
                row.push_bind(stored.id)
                    .push_bind(d.id)
                    .push_bind(position(stored.document.position))
                    .push_bind(&stored.document.kind)
                    .push_bind(&stored.document.control_number);
            })
            .build()
            .execute(&mut *tx)
            .await?;
    }
    let (invoices, lines) = effect_rows(d);
    for batch in invoices.chunks(BATCH_ROWS) {
        QueryBuilder::new(
            "INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, purchase_order, currency, total,
                tax_total, tax_rate, seller_name, seller_qualifier, seller_id, buyer_name, buyer_qualifier,
                buyer_id, allowances_charges) ",
        )
        .push_values(batch, |mut row, i| {
            row.push_bind(i.id)
                .push_bind(i.inbox_id)
                .push_bind(i.document_id)
                .push_bind(&i.number)
                .push_bind(&i.issue_date)
                .push_bind(&i.purchase_order)
                .push_bind(&i.currency)
                .push_bind(&i.total)
                .push_bind(&i.tax_total)
                .push_bind(&i.tax_rate)
                .push_bind(&i.seller_name)
                .push_bind(&i.seller_qualifier)
                .push_bind(&i.seller_id)
                .push_bind(&i.buyer_name)
                .push_bind(&i.buyer_qualifier)
                .push_bind(&i.buyer_id)
                .push_bind(&i.allowances_charges);
        })
        .build()
        .execute(&mut *tx)
        .await?;
    }
    for batch in lines.chunks(BATCH_ROWS) {
        QueryBuilder::new(
            "INSERT INTO invoice_lines (invoice_id, line_number, quantity, unit, unit_price, product_id,
                description, amount) ",
        )
        .push_values(batch, |mut row, l| {
            row.push_bind(l.invoice_id)
                .push_bind(l.line_number)
                .push_bind(&l.quantity)
                .push_bind(&l.unit)
                .push_bind(&l.unit_price)
                .push_bind(&l.product_id)
                .push_bind(&l.description)
                .push_bind(&l.amount);
        })
        .build()
        .execute(&mut *tx)
        .await?;
    }
    let ack_control_number: i64 = sqlx::query_scalar(
        "INSERT INTO ack_counters (source, last_control_number) VALUES ($1, 1)
        ON CONFLICT (source) DO UPDATE SET last_control_number = last_control_number % 999999999 + 1
        RETURNING last_control_number",
    )
    .bind(&d.key.source)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query("INSERT INTO acks (inbox_id, control_number, body, created_at) VALUES ($1, $2, $3, $4)")
        .bind(d.id)
        .bind(ack_control_number)
        .bind(ack::with_control_number(&d.ack, ack_control_number))
        .bind(d.received_at)
        .execute(&mut *tx)
        .await?;
    Ok(Outcome::Recorded { ack_control_number })
}
