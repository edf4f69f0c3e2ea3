//! SQLite writes. One writer task owns them all and commits the deliveries queued at that moment in
//! one `BEGIN IMMEDIATE` transaction (group commit): with `synchronous = FULL` an answered delivery
//! survives power loss, and one fsync serves the whole batch. A delivery that fails makes the batch
//! retry one delivery per transaction, so it fails only itself; every reply goes out after COMMIT.
//! The queue is FIFO, so waiting is fair. Readers use the rest of the pool concurrently (WAL).

use std::str::FromStr;
use std::sync::Arc;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, SqliteConnection, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use super::{FirstAttempt, StoreError, StoreOptions, effect_rows, position};
use crate::edi::ack;
use crate::inbox::{Claim, Delivery, Next, Outcome, decide};

/// Deliveries waiting for the writer before senders wait for room.
const QUEUE: usize = 1024;
/// Deliveries committed together at most.
const MAX_BATCH: usize = 128;

/// The pool (for reads) and the queue of the writer task.
#[derive(Clone)]
pub(super) struct Sqlite {
    pub(super) pool: SqlitePool,
    jobs: mpsc::Sender<Job>,
}

struct Job {
    delivery: Arc<Delivery>,
    first: FirstAttempt,
    reply: oneshot::Sender<Result<Outcome, StoreError>>,
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
            .connect_with(connect)
            .await?;
        let (jobs, queue) = mpsc::channel(QUEUE);
        tokio::spawn(write_batches(pool.clone(), queue));
        Ok(Sqlite { pool, jobs })
    }

    /// Queues a delivery for the writer and waits for its committed outcome.
    pub(super) async fn record(
        &self,
        delivery: Arc<Delivery>,
        first: FirstAttempt,
    ) -> Result<Outcome, StoreError> {
        let (reply, answer) = oneshot::channel();
        let stopped = || StoreError::Unavailable(sqlx::Error::PoolClosed);
        self.jobs.send(Job { delivery, first, reply }).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The writer task: runs until every sender is gone.
async fn write_batches(pool: SqlitePool, mut queue: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while queue.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let outcomes = match commit_batch(&pool, &batch).await {
            Ok(outcomes) => outcomes,
            Err(error) => {
                let failed = || {
                    StoreError::Unavailable(sqlx::Error::Protocol(format!(
                        "the group commit failed: {error}"
                    )))
                };
                batch.iter().map(|_| Err(failed())).collect()
            }
        };
        for (job, outcome) in batch.drain(..).zip(outcomes) {
            // A sender that gave up (timeout) finds its delivery committed when it retries.
            let _ = job.reply.send(outcome);
        }
    }
}

/// Records every job of the batch in one transaction. Should one fail, the whole transaction is
/// rolled back and each job is recorded again in a transaction of its own, so that the failure stays
/// its own (rare, and cheaper on the common path than a savepoint per delivery).
async fn commit_batch(
    pool: &SqlitePool,
    batch: &[Job],
) -> Result<Vec<Result<Outcome, StoreError>>, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let mut outcomes = Vec::with_capacity(batch.len());
    for job in batch {
        match record_one(&mut tx, &job.delivery, &job.first).await {
            Ok(outcome) => outcomes.push(Ok(outcome)),
            Err(_) if batch.len() > 1 => {
                tx.rollback().await?;
                return Ok(one_by_one(pool, batch).await);
            }
            Err(error) => return Ok(vec![Err(error)]),
        }
    }
    tx.commit().await?;
    Ok(outcomes)
}

/// Records each job in a transaction of its own.
async fn one_by_one(pool: &SqlitePool, batch: &[Job]) -> Vec<Result<Outcome, StoreError>> {
    let mut outcomes = Vec::with_capacity(batch.len());
    for job in batch {
        let recorded = async {
            let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
            let outcome = record_one(&mut tx, &job.delivery, &job.first).await?;
            tx.commit().await?;
            Ok(outcome)
        };
        outcomes.push(recorded.await);
    }
    outcomes
}

const CLAIM: &str = "INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id,
        receiver_qualifier, receiver_id, control_number, payload_sha256, payload, content_type, status,
        response_body, received_at, processed_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)
    ON CONFLICT (source, message_id) DO NOTHING
    RETURNING id, true AS fresh, status, payload_sha256, NULL AS response_body, NULL AS ack_control_number";

const READ: &str =
    "SELECT id, false AS fresh, status, payload_sha256, response_body, NULL AS ack_control_number
    FROM inbox WHERE source = $1 AND message_id = $2";

const REPLACE_REJECTED: &str =
    "UPDATE inbox SET id = $1, standard = $4, sender_qualifier = $5, sender_id = $6,
        receiver_qualifier = $7, receiver_id = $8, control_number = $9, payload_sha256 = $10, payload = $11,
        content_type = $12, status = $13, response_body = $14, received_at = $15, processed_at = $15,
        payload_purged_at = NULL
    WHERE source = $2 AND message_id = $3 AND status = 'rejected' AND payload_sha256 = $16";

/// Claims the key (the write lock is held: nobody else can claim or replace meanwhile) and writes
/// the effects when the row is this delivery's.
async fn record_one(
    tx: &mut SqliteConnection,
    d: &Delivery,
    first: &FirstAttempt,
) -> Result<Outcome, StoreError> {
    let claimed: Option<Claim> =
        bind_inbox_row!(sqlx::query_as::<_, Claim>(CLAIM), d).fetch_optional(&mut *tx).await?;
    let claim = match claimed {
        Some(claim) => claim,
        None => sqlx::query_as(READ).bind(&d.key.source).bind(&d.key.message_id).fetch_one(&mut *tx).await?,
    };
    match decide(claim, d) {
        Next::Done(Outcome::Recorded { .. }) => write_effects(tx, d, first).await,
        Next::Done(outcome) => Ok(outcome),
        Next::ReplaceRejected { previous_fingerprint } => {
            bind_inbox_row!(sqlx::query(REPLACE_REJECTED), d)
                .bind(previous_fingerprint)
                .execute(&mut *tx)
                .await?;
            write_effects(tx, d, first).await
        }
    }
}

/// Rows per multi-row INSERT: 17 columns × 500 stays far below SQLite's 32,766 bound parameters.
const BATCH_ROWS: usize = 500;

/// Writes documents, invoices, lines (in multi-row batches), the acknowledgement and the audit row of
/// a fresh delivery.
async fn write_effects(
    tx: &mut SqliteConnection,
    d: &Delivery,
    first: &FirstAttempt,
) -> Result<Outcome, StoreError> {
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
    let ack_control_number: i64 =
        sqlx::query_scalar("UPDATE ack_sequence SET last = last % 999999999 + 1 WHERE id = 1 RETURNING last")
            .fetch_one(&mut *tx)
            .await?;
    sqlx::query("INSERT INTO acks (inbox_id, control_number, body, created_at) VALUES ($1, $2, $3, $4)")
        .bind(d.id)
        .bind(ack_control_number)
        .bind(ack::with_control_number(&d.ack, ack_control_number))
        .bind(d.received_at)
        .execute(&mut *tx)
        .await?;
    bind_audit_row!(
        sqlx::query(
            "INSERT INTO deliveries (id, partner_id, outcome, status, request_id, remote_addr, user_agent,
                content_type, body_bytes, inbox_id, source, message_id, received_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        ),
        d,
        first
    )
    .bind(d.id)
    .bind(&d.key.source)
    .bind(&d.key.message_id)
    .bind(d.received_at)
    .execute(&mut *tx)
    .await?;
    Ok(Outcome::Recorded { ack_control_number })
}
