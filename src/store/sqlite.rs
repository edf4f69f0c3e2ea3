//! SQLite writes. One writer task owns them all and commits the deliveries queued at that moment in
//! one `BEGIN IMMEDIATE` transaction (group commit): with `synchronous = FULL` an answered delivery
//! survives power loss, and one fsync serves the whole batch. A delivery that fails makes the batch
//! retry one delivery per transaction, so it fails only itself; every reply goes out after COMMIT.
//! The queue is FIFO, so waiting is fair. Readers use the rest of the pool concurrently (WAL).

use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, QueryBuilder, SqliteConnection, SqlitePool};
use tokio::sync::Mutex;

use std::collections::HashSet;

use uuid::Uuid;

use super::batch::{self, Job};
use super::invoices;
use super::rows::{self, CHUNK_ROWS, insert_rows, walked};
use super::tables::{self, AckRow, Bind, DeliveryRow, InboxRow};
use super::{StoreError, StoreOptions, audit, pieces};
use crate::inbox::{Claim, Delivery, Next, Outcome, decide};

/// The pool (for reads) and the queue of the writer task.
#[derive(Clone)]
pub(super) struct Sqlite {
    pub(super) pool: SqlitePool,
    pub(super) queue: batch::Queue,
}

impl Sqlite {
    pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<Sqlite, StoreError> {
        if let Some(file) = super::sqlite_file(url) {
            create_private(&file)?;
        }
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

/// Creates the database file, when there is none yet, readable by its owner only: it holds the
/// console's cookie key, operators' password hashes and partners' secrets. SQLite creates the
/// `-wal` and `-shm` files with the permissions of the database file. An existing file keeps its
/// own (an operator's choice).
fn create_private(file: &std::path::Path) -> Result<(), StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(file) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(StoreError::Unavailable(sqlx::Error::Io(error))),
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

const READ: &str = "SELECT id, false AS fresh, status, payload_sha256, response_body, lists_from_rows,
        NULL AS ack_control_number
    FROM inbox WHERE source = $1 AND message_id = $2";

/// The INSERT of `inbox` rows.
static INSERT_INBOX: LazyLock<String> = LazyLock::new(tables::insert::<InboxRow>);

/// After [`INSERT_INBOX`] of one delivery: overwrites the rejected attempt holding its key if it
/// still holds the previous fingerprint (bound after): every column but the key.
static REPLACE_REJECTED: LazyLock<String> = LazyLock::new(|| {
    format!(
        " ON CONFLICT (source, message_id) DO UPDATE SET {}
        WHERE inbox.status = 'rejected' AND inbox.payload_sha256 = ",
        tables::inbox_replaced_from("excluded")
    )
});

/// Drops the stored payload of the rejected attempt a delivery replaces.
const DROP_REPLACED_PAYLOAD: &str = "DELETE FROM payloads WHERE inbox_id = \
    (SELECT id FROM inbox WHERE source = $1 AND message_id = $2 AND status = 'rejected')";

/// Records the jobs in the open transaction (the write lock is held: nobody else claims or replaces
/// meanwhile), with a handful of statements whatever their number: one multi-row claim, a read for
/// each key that another row holds (an earlier job of the same batch included), one allocation of
/// acknowledgement numbers, then every fresh delivery's documents, invoices, lines, acknowledgement
/// and audit row in multi-row inserts.
async fn record_batch(tx: &mut SqliteConnection, jobs: &[&Job]) -> Result<Vec<Outcome>, StoreError> {
    let mut claimed = HashSet::new();
    for chunk in jobs.chunks(CHUNK_ROWS) {
        let ids: Vec<Uuid> = QueryBuilder::new(INSERT_INBOX.as_str())
            .push_values(chunk, |row, job| rows::inbox_row(&job.delivery).push(row))
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
        if claimed.contains(&d.id()) {
            fresh.push(job);
            outcomes.push(None);
            continue;
        }
        let holder: Claim = sqlx::query_as(READ)
            .bind(d.key().source.as_str())
            .bind(&d.key().message_id)
            .fetch_one(&mut *tx)
            .await?;
        match decide(holder, d) {
            Next::Done(outcome) => outcomes.push(Some(outcome)),
            Next::ReplaceRejected { previous_fingerprint } => {
                sqlx::query(DROP_REPLACED_PAYLOAD)
                    .bind(d.key().source.as_str())
                    .bind(&d.key().message_id)
                    .execute(&mut *tx)
                    .await?;
                QueryBuilder::new(INSERT_INBOX.as_str())
                    .push_values([d], |row, d| rows::inbox_row(d).push(row))
                    .push(REPLACE_REJECTED.as_str())
                    .push_bind(previous_fingerprint.as_str())
                    .build()
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

/// The rows `of` each delivery of `jobs` gives, one after another, built as they are taken.
fn each<'a, R, I>(jobs: &'a [&'a Job], of: fn(&'a Delivery) -> I) -> impl Iterator<Item = R> + Send + 'a
where
    I: Iterator<Item = R> + Send + 'a,
{
    jobs.iter().flat_map(move |job| of(&job.delivery))
}

/// Largest acknowledgement control number; the sequence then starts again at 1.
const MAX_ACK_CONTROL_NUMBER: i64 = 999_999_999;

/// Writes payloads, documents, invoices, lines, acknowledgements, audit rows and outbox messages of
/// the fresh deliveries in multi-row inserts; returns their acknowledgement control numbers, in order.
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
    let (piecewise, bound): (Vec<&Job>, Vec<&Job>) =
        fresh.iter().partition(|job| job.delivery.payload().len() >= pieces::PIECEWISE_BYTES);
    insert_rows(conn, each(&bound, |d| std::iter::once(rows::payload_row(d))), "").await?;
    for job in piecewise {
        pieces::write_piecewise(conn, &rows::payload_row(&job.delivery)).await?;
    }
    insert_rows(conn, each(fresh, rows::document_rows), "").await?;
    insert_rows(conn, each(fresh, invoices::invoice_rows), "").await?;
    insert_rows(conn, each(fresh, invoices::line_rows), "").await?;
    let acks: Vec<AckRow> =
        fresh.iter().zip(&numbers).map(|(job, &number)| rows::ack_row(&job.delivery, number)).collect();
    insert_rows(conn, acks, "").await?;
    let keyed: Vec<_> = fresh.iter().map(|job| (&job.first.facts.transport, job.delivery.key())).collect();
    let reused = audit::reused_transport_ids!(&mut *conn, &keyed);
    let audited: Vec<DeliveryRow> =
        fresh.iter().zip(reused).map(|(job, reused)| job.audit_row(reused).row()).collect();
    insert_rows(conn, audited, "").await?;
    insert_rows(conn, each(fresh, rows::outbox_rows), "").await?;
    for job in fresh.iter().filter(|job| job.delivery.lists_from_rows()) {
        write_walked(conn, &job.delivery).await?;
    }
    Ok(numbers)
}

/// Documents of a large delivery mapped and written at a time: with their rows, less than the memory
/// budget charges a large delivery for them (a megabyte). More at a time makes fewer statements and
/// holds more: eight interchanges of 19,828 invoices at once took 10.2 s with 64 (the peak of one:
/// 7.4 times its body), 8.0 s with 128 (7.8 times) and 7.9 s with 256 (7.9 times).
const WALKED_CHUNK: usize = 64;

/// Writes a large delivery's documents, invoices, lines and outbox messages [`WALKED_CHUNK`]
/// documents at a time, mapped again as they are taken.
async fn write_walked(conn: &mut SqliteConnection, d: &Delivery) -> Result<(), StoreError> {
    let mut documents = walked(d, d.documents());
    loop {
        let chunk: Vec<_> = documents.by_ref().take(WALKED_CHUNK).collect::<Result<_, _>>()?;
        if chunk.is_empty() {
            return Ok(());
        }
        // Each table's rows are made before its insert is awaited.
        let documents: Vec<_> = chunk.iter().map(|stored| rows::document_row(d.id(), stored)).collect();
        insert_rows(conn, documents, "").await?;
        let invoices: Vec<_> =
            chunk.iter().filter_map(|stored| invoices::invoice_row(d.id(), stored)).collect();
        insert_rows(conn, invoices, "").await?;
        let lines: Vec<_> = chunk.iter().flat_map(|stored| invoices::lines_of(stored)).collect();
        insert_rows(conn, lines, "").await?;
        let bookings: Vec<_> = chunk.iter().filter_map(|stored| d.booking(stored)).collect();
        let outbox: Vec<_> = bookings.iter().map(|m| rows::outbox_row(m, d.received_at())).collect();
        insert_rows(conn, outbox, "").await?;
    }
}
