//! SQLite writes. One writer task owns them all and commits the deliveries queued at that moment in
//! one `BEGIN IMMEDIATE` transaction (group commit): with `synchronous = FULL` an answered delivery
//! survives power loss, and one fsync serves the whole batch. A delivery that fails makes the batch
//! retry one delivery per transaction, so it fails only itself; every reply goes out after COMMIT.
//! The queue is FIFO, so waiting is fair. Readers use the rest of the pool concurrently (WAL).

use std::str::FromStr;
use std::sync::Arc;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, QueryBuilder, SqliteConnection, SqlitePool};
use tokio::sync::Mutex;

use std::collections::HashSet;

use uuid::Uuid;

use super::batch::{self, Job};
use super::invoices::effect_rows;
use super::rows::{AuditRow, CHUNK_ROWS, insert_chunked, insert_deliveries};
use super::{StoreError, StoreOptions, audit, position};
use crate::edi::ack;
use crate::inbox::outbox::{self, AccountingStatus, OutboxMessage};
use crate::inbox::{Claim, Delivery, Next, Outcome, StoredDocument, decide};

/// The pool (for reads) and the queue of the writer task.
#[derive(Clone)]
pub(super) struct Sqlite {
    pub(super) pool: SqlitePool,
    pub(super) queue: batch::Queue,
}

impl Sqlite {
    pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<Sqlite, StoreError> {
        let connect = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(options.acquire_timeout);
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect.clone())
            .await?;
        // The one writer has a connection of its own, outside the readers' pool (one page cache for
        // every write), opened again after an error.
        let writer = Arc::new(Mutex::new(None::<SqliteConnection>));
        let queue = batch::Queue::start("sqlite", 1, move |jobs| {
            let (connect, writer) = (connect.clone(), Arc::clone(&writer));
            async move {
                let mut connection = writer.lock().await;
                let committed = async {
                    let conn = match &mut *connection {
                        Some(conn) => conn,
                        None => connection.insert(SqliteConnection::connect_with(&connect).await?),
                    };
                    commit_batch(conn, &jobs).await
                };
                let outcomes = match committed.await {
                    Ok(outcomes) => outcomes,
                    Err(error) => {
                        *connection = None;
                        batch::all_failed(&jobs, &error)
                    }
                };
                (jobs, outcomes)
            }
        });
        Ok(Sqlite { pool, queue })
    }
}

/// Records every job of the batch in one transaction. Should one fail, the whole transaction is
/// rolled back and each job is recorded again in a transaction of its own, so that the failure stays
/// its own (rare, and cheaper on the common path than a savepoint per delivery).
async fn commit_batch(
    conn: &mut SqliteConnection,
    batch: &[Job],
) -> Result<Vec<Result<Outcome, StoreError>>, StoreError> {
    let jobs: Vec<&Job> = batch.iter().collect();
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    match record_batch(&mut tx, &jobs).await {
        Ok(outcomes) => {
            tx.commit().await?;
            Ok(outcomes.into_iter().map(Ok).collect())
        }
        Err(error) => {
            tx.rollback().await?;
            if batch.len() > 1 { Ok(one_by_one(conn, batch).await) } else { Ok(vec![Err(error)]) }
        }
    }
}

/// Records each job in a transaction of its own.
async fn one_by_one(conn: &mut SqliteConnection, batch: &[Job]) -> Vec<Result<Outcome, StoreError>> {
    let mut outcomes = Vec::with_capacity(batch.len());
    for job in batch {
        let recorded = async {
            let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
            match record_batch(&mut tx, &[job]).await {
                Ok(mut outcome) => {
                    tx.commit().await?;
                    outcome.pop().ok_or_else(|| StoreError::Corrupt("a delivery without an outcome".into()))
                }
                Err(error) => {
                    tx.rollback().await?;
                    Err(error)
                }
            }
        };
        outcomes.push(recorded.await);
    }
    outcomes
}

const READ: &str =
    "SELECT id, false AS fresh, status, payload_sha256, response_body, NULL AS ack_control_number
    FROM inbox WHERE source = $1 AND message_id = $2";

const REPLACE_REJECTED: &str =
    "UPDATE inbox SET id = $1, standard = $4, sender_qualifier = $5, sender_id = $6,
        receiver_qualifier = $7, receiver_id = $8, control_number = $9, payload_sha256 = $10, payload = $11,
        content_type = $12, status = $13, response_body = $14, received_at = $15, processed_at = $15,
        payload_purged_at = NULL
    WHERE source = $2 AND message_id = $3 AND status = 'rejected' AND payload_sha256 = $16";

/// Records the jobs in the open transaction (the write lock is held: nobody else claims or replaces
/// meanwhile), with a handful of statements whatever their number: one multi-row claim, a read for
/// each key that another row holds (an earlier job of the same batch included), one allocation of
/// acknowledgement numbers, then every fresh delivery's documents, invoices, lines, acknowledgement
/// and audit row in multi-row inserts.
async fn record_batch(tx: &mut SqliteConnection, jobs: &[&Job]) -> Result<Vec<Outcome>, StoreError> {
    let mut claimed = HashSet::new();
    for chunk in jobs.chunks(CHUNK_ROWS) {
        let ids: Vec<Uuid> = QueryBuilder::new(
            "INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier,
                receiver_id, control_number, payload_sha256, payload, content_type, status, response_body,
                received_at, processed_at) ",
        )
        .push_values(chunk, |mut row, job| {
            let d = &job.delivery;
            row.push_bind(d.id)
                .push_bind(&d.key.source)
                .push_bind(&d.key.message_id)
                .push_bind(d.envelope.standard.as_str())
                .push_bind(&d.envelope.sender.qualifier)
                .push_bind(&d.envelope.sender.id)
                .push_bind(&d.envelope.receiver.qualifier)
                .push_bind(&d.envelope.receiver.id)
                .push_bind(&d.envelope.control_number)
                .push_bind(&d.fingerprint)
                .push_bind(d.payload.as_ref())
                .push_bind(&d.content_type)
                .push_bind(d.status.as_str())
                .push_bind(&d.response)
                .push_bind(d.received_at)
                .push_bind(d.received_at);
        })
        .push(" ON CONFLICT (source, message_id) DO NOTHING RETURNING id")
        .build_query_scalar()
        .persistent(false)
        .fetch_all(&mut *tx)
        .await?;
        claimed.extend(ids);
    }
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(jobs.len());
    let mut fresh: Vec<&Job> = Vec::new();
    for job in jobs {
        let d = &job.delivery;
        if claimed.contains(&d.id) {
            fresh.push(job);
            outcomes.push(None);
            continue;
        }
        let holder: Claim =
            sqlx::query_as(READ).bind(&d.key.source).bind(&d.key.message_id).fetch_one(&mut *tx).await?;
        match decide(holder, d) {
            Next::Done(outcome) => outcomes.push(Some(outcome)),
            Next::ReplaceRejected { previous_fingerprint } => {
                bind_inbox_row!(sqlx::query(REPLACE_REJECTED), d)
                    .bind(previous_fingerprint)
                    .execute(&mut *tx)
                    .await?;
                fresh.push(job);
                outcomes.push(None);
            }
        }
    }
    let numbers = write_effects(tx, &fresh).await?;
    let mut numbers = numbers.into_iter();
    outcomes
        .into_iter()
        .map(|outcome| match outcome {
            Some(outcome) => Ok(outcome),
            None => numbers
                .next()
                .map(|ack_control_number| Outcome::Recorded { ack_control_number })
                .ok_or_else(|| StoreError::Corrupt("fewer acknowledgement numbers than deliveries".into())),
        })
        .collect()
}

/// Largest acknowledgement control number; the sequence then starts again at 1.
const MAX_ACK_CONTROL_NUMBER: i64 = 999_999_999;

/// Writes documents, invoices, lines, acknowledgements, audit rows and outbox messages of the fresh deliveries in
/// multi-row inserts; returns their acknowledgement control numbers, in order.
async fn write_effects(tx: &mut SqliteConnection, fresh: &[&Job]) -> Result<Vec<i64>, StoreError> {
    if fresh.is_empty() {
        return Ok(Vec::new());
    }
    let count = i64::try_from(fresh.len()).unwrap_or(i64::MAX);
    let allocated: i64 =
        sqlx::query_scalar("UPDATE ack_sequence SET last = last + $1 WHERE id = 1 RETURNING last")
            .bind(count)
            .fetch_one(&mut *tx)
            .await?;
    let numbers: Vec<i64> =
        (0..count).map(|n| (allocated - count + n) % MAX_ACK_CONTROL_NUMBER + 1).collect();
    let conn = &mut *tx;
    let documents: Vec<(&Delivery, &StoredDocument)> =
        fresh.iter().flat_map(|job| job.delivery.documents.iter().map(|doc| (&*job.delivery, doc))).collect();
    insert_chunked(
        conn,
        "INSERT INTO documents (id, inbox_id, position, doc_type, control_number) ",
        &documents,
        |mut row, (d, stored)| {
            row.push_bind(stored.id)
                .push_bind(d.id)
                .push_bind(position(stored.document.position))
                .push_bind(&stored.document.kind)
                .push_bind(&stored.document.control_number);
        },
        "",
    )
    .await?;
    let (mut invoices, mut lines) = (Vec::new(), Vec::new());
    for job in fresh {
        let (more_invoices, more_lines) = effect_rows(&job.delivery);
        invoices.extend(more_invoices);
        lines.extend(more_lines);
    }
    insert_chunked(
        conn,
        "INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, purchase_order, currency, total,
            tax_total, tax_rate, seller_name, seller_qualifier, seller_id, buyer_name, buyer_qualifier,
            buyer_id, allowances_charges) ",
        &invoices,
        |mut row, i| {
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
        },
        "",
    )
    .await?;
    insert_chunked(
        conn,
        "INSERT INTO invoice_lines (invoice_id, line_number, quantity, unit, unit_price, product_id, description,
            amount) ",
        &lines,
        |mut row, l| {
            row.push_bind(l.invoice_id)
                .push_bind(l.line_number)
                .push_bind(&l.quantity)
                .push_bind(&l.unit)
                .push_bind(&l.unit_price)
                .push_bind(&l.product_id)
                .push_bind(&l.description)
                .push_bind(&l.amount);
        },
        "",
    )
    .await?;
    let numbered: Vec<(&Job, i64)> = fresh.iter().copied().zip(numbers.iter().copied()).collect();
    insert_chunked(
        conn,
        "INSERT INTO acks (inbox_id, control_number, body, created_at) ",
        &numbered,
        |mut row, (job, number)| {
            row.push_bind(job.delivery.id)
                .push_bind(*number)
                .push_bind(ack::with_control_number(&job.delivery.ack, *number))
                .push_bind(job.delivery.received_at);
        },
        "",
    )
    .await?;
    let keyed: Vec<_> = fresh.iter().map(|job| (&job.first.facts.transport, &job.delivery.key)).collect();
    let reused = audit::reused_transport_ids!(&mut *conn, &keyed);
    let audited: Vec<AuditRow> =
        fresh.iter().zip(reused).map(|(job, reused)| job.audit_row(reused)).collect();
    insert_deliveries!(conn, &audited).await?;
    let outbox: Vec<(&Delivery, &OutboxMessage)> =
        fresh.iter().flat_map(|job| job.delivery.outbox.iter().map(|m| (&*job.delivery, m))).collect();
    insert_chunked(
        conn,
        "INSERT INTO outbox (id, invoice_id, destination, idempotency_key, payload, status, next_attempt_at,
            created_at) ",
        &outbox,
        |mut row, (d, m)| {
            row.push_bind(m.id)
                .push_bind(m.invoice_id)
                .push_bind(outbox::ACCOUNTING_API)
                .push_bind(&m.idempotency_key)
                .push_bind(&m.payload)
                .push_bind(AccountingStatus::Pending.as_str())
                .push_bind(d.received_at)
                .push_bind(d.received_at);
        },
        "",
    )
    .await?;
    Ok(numbers)
}
