//! Persistence: the only module that speaks SQL. One [`Store`] over PostgreSQL (production, many
//! replicas) or SQLite (embedded default). Writes are backend-specific to use each engine's fastest
//! race-free claim; reads share their SQL text, which both engines understand. A list's WHERE
//! clause is built by [`filter::Conditions`] from the filters given, never as `($n IS NULL OR …)`.

/// Runs the same code against whichever pool a [`Db`] holds; the SQL must suit both engines.
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::store::Db::Postgres(postgres) => {
                let $pool = &postgres.primary.pool();
                $body
            }
            $crate::store::Db::Sqlite(sqlite) => {
                let $pool = &sqlite.pool;
                $body
            }
        }
    };
}

/// Runs `$body` with `$tx`, a write transaction on whichever pool a [`Db`] holds; on SQLite the
/// write lock is taken at BEGIN (`IMMEDIATE`), so that the transaction cannot find its snapshot
/// stale when it first writes. `$body` commits or rolls back.
macro_rules! in_write_transaction {
    ($db:expr, $tx:ident => $body:expr) => {
        match $db {
            $crate::store::Db::Postgres(postgres) => {
                let mut $tx = postgres.primary.pool().begin().await?;
                $body
            }
            $crate::store::Db::Sqlite(sqlite) => {
                let mut $tx = sqlite.pool.begin_with("BEGIN IMMEDIATE").await?;
                $body
            }
        }
    };
}

/// [`on_db!`] on a store's database.
macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        on_db!(&$store.db, $pool => $body)
    };
}

mod actions;
mod activity;
mod answers;
mod audit;
mod batch;
mod confirmed;
mod console;
mod copy;
mod decode;
mod durability;
mod exports;
mod filter;
mod hosts;
mod invoices;
mod operators;
mod outbox;
mod partitions;
mod partners;
mod pieces;
mod postgres;
mod purge;
mod quarantine;
mod replays;
mod rows;
mod search;
mod sns;
mod sqlite;
mod tables;
mod waiting;
mod written;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::edi::Standard;
use crate::inbox::{Claim, Delivery, Next, Outcome, Source, Status, decide};
pub use actions::OperatorAction;
pub use activity::{Activity, ActivityCount};
pub use audit::{Attempt, AttemptFacts};
pub use confirmed::CommitNotices;
pub use console::RefusalGroup;
pub use durability::Synchronous;
pub use exports::{Export, FinishedExport};
pub use invoices::{InvoiceFilter, InvoiceFindings};
pub use operators::{ConsoleSession, Counted, Guesses};
pub use outbox::{Leased, OutboxFilter, OutboxStats, Settled, StorageStats, Transition};
pub use partners::DeliveryAttempt;
pub use purge::{PurgeRun, Purged};
pub use quarantine::{HeldPayload, Hold, QuarantineFilter};
pub use search::InterchangeFilter;
pub use sns::{SnsStatus, SnsSubscription};
pub use waiting::WaitingGroup;

/// One of the two supported databases, with what every clone of the store shares: the cache of
/// processed outcomes, the audit queue, the partner directory and the relay's wake-up call.
#[derive(Clone)]
pub struct Store {
    db: Db,
    shared: Arc<Shared>,
}

#[derive(Clone)]
enum Db {
    Postgres(postgres::Postgres),
    Sqlite(sqlite::Sqlite),
}

impl Db {
    /// Whether the store was closed (a pool replaced after a failover is not).
    fn is_closed(&self) -> bool {
        match self {
            Db::Postgres(postgres) => postgres.primary.is_closed(),
            Db::Sqlite(sqlite) => sqlite.pool.is_closed(),
        }
    }
}

struct Shared {
    replays: replays::ReplayCache,
    audit: audit::AuditQueue,
    directory: partners::DirectoryCache,
    /// Signalled when outbox messages are committed or re-driven, so that a relay in this process
    /// sends them at once instead of at its next poll.
    outbox_written: tokio::sync::Notify,
    /// The latest backlog figures and when they were read.
    outbox_stats: outbox::Recent<OutboxStats>,
    /// The latest storage figures and when they were read.
    storage_stats: outbox::Recent<StorageStats>,
    /// The overview's counts of past hours.
    activity: activity::ActivityCache,
}

/// The audit row of a first delivery, written by the statement that records it: the request's facts
/// and the status it is answered with.
#[derive(Clone, Debug)]
pub struct FirstAttempt {
    pub facts: AttemptFacts,
    /// The audit trail's name for it (`recorded` or `rejected`).
    pub outcome: &'static str,
    pub status: u16,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or is overloaded right now; the client should retry.
    #[error("the database is unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// The commit is on the primary only: its wait for the synchronous standby was cancelled (see
    /// `confirmed`). Not acknowledged; a retry is answered as the database then holds it.
    #[error(
        "the commit was not confirmed by the synchronous standby (it stands on the primary only): retry; \
         the resend is answered as the database holds it"
    )]
    Unconfirmed,
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    /// The database refused a value of the request itself (a data exception such as a NUL in
    /// text, an index row over its size limit): retrying the same request can never succeed.
    #[error("the database refused a value: {0}")]
    Refused(#[source] sqlx::Error),
    /// An invoice's business key is booked already (the unique index `invoices_business_key`
    /// refused it): nothing was written; the delivery is checked against what was booked, and
    /// recorded again.
    #[error("an invoice of this delivery was booked already under its business key")]
    InvoiceNumberTaken,
    #[error("stored data is not readable: {0}")]
    Corrupt(String),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("unsupported database URL {0:?}: use postgres://… or sqlite://…")]
    UnsupportedUrl(String),
    /// `--timeline-file` cannot be read: it may be all that tells an old primary from the new one.
    #[error("the timeline file cannot be used: {0}")]
    TimelineFile(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> StoreError {
        if is_transient(&error) {
            StoreError::Unavailable(error)
        } else if is_business_key_taken(&error) {
            StoreError::InvoiceNumberTaken
        } else if is_data_exception(&error) {
            StoreError::Refused(error)
        } else {
            StoreError::Database(error)
        }
    }
}

/// A unique violation of an invoice's business key, or of the accounting `Idempotency-Key` derived
/// from it (whichever of the two a statement meets first): PostgreSQL names the index; SQLite names
/// only the columns (`UNIQUE constraint failed: invoices.business_key, invoices.revision`).
fn is_business_key_taken(error: &sqlx::Error) -> bool {
    const INDEXES: [&str; 2] = ["invoices_business_key", "outbox_idempotency_key_key"];
    const COLUMNS: [&str; 2] = ["invoices.business_key", "outbox.idempotency_key"];
    matches!(error, sqlx::Error::Database(db) if db.is_unique_violation()
        && (db.constraint().is_some_and(|name| INDEXES.contains(&name))
            || COLUMNS.iter().any(|column| db.message().contains(column))))
}

/// A value, not the moment, is wrong, and no retry can cure it: PostgreSQL's data exceptions
/// (SQLSTATE class 22, a NUL in text) and program limits (class 54, an index row over its size),
/// SQLite's `SQLITE_TOOBIG` (18).
fn is_data_exception(error: &sqlx::Error) -> bool {
    let refused = |code: &str| match code.len() {
        5 => code.starts_with("22") || code.starts_with("54"),
        _ => code.parse::<u32>().is_ok_and(|sqlite| sqlite & 0xff == 18),
    };
    matches!(error, sqlx::Error::Database(db) if db.code().is_some_and(|code| refused(&code)))
}

/// Errors a retry may cure: no connection, connection lost, server shutting down or overloaded,
/// SQLite busy. Matched on SQLSTATE / result codes, never on message text.
fn is_transient(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| match code.parse::<u32>() {
            // SQLite result codes (primary code in the low byte): BUSY, LOCKED.
            Ok(sqlite) if code.len() < 5 => matches!(sqlite & 0xff, 5 | 6),
            // PostgreSQL SQLSTATE: 08 connection exception, 53 insufficient resources, 57P0x shutdown
            // or cannot connect now, 40001/40P01 serialization failure / deadlock.
            // 25006: read-only transaction, a primary demoted under us (failover).
            _ => {
                ["08", "53", "57P"].iter().any(|class| code.starts_with(class))
                    || matches!(code.as_ref(), "40001" | "40P01" | "25006")
            }
        }),
        _ => false,
    }
}

/// Pool and cache settings.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    pub max_connections: u32,
    /// How long a request waits for a connection before the store reports itself unavailable.
    pub acquire_timeout: Duration,
    /// Bytes of processed outcomes kept in memory to answer resends without the database.
    pub replay_cache_bytes: usize,
    /// How long the in-memory partner directory is used before it is read again (changes made
    /// through this instance apply at once).
    pub partner_cache_ttl: Duration,
    /// PostgreSQL only: refuse to start on a primary whose settings do not make commits wait for a
    /// synchronous standby, and be not ready while none streams (`durability`).
    pub require_synchronous_standby: bool,
    /// PostgreSQL with several hosts: the file in which the cluster and timeline last written to
    /// are remembered across restarts (`written`); unset, only while the process runs.
    pub timeline_file: Option<std::path::PathBuf>,
}

/// A stored interchange row, as `GET /v1/interchanges/{id}` needs it.
#[derive(Debug, sqlx::FromRow)]
pub struct StoredInterchange {
    pub id: Uuid,
    #[sqlx(try_from = "String")]
    pub status: Status,
    #[sqlx(try_from = "String")]
    pub standard: Standard,
    pub sender_qualifier: String,
    pub sender_id: String,
    pub receiver_qualifier: String,
    pub receiver_id: String,
    pub control_number: String,
    #[sqlx(try_from = "String")]
    pub source: Source,
    pub message_id: String,
    pub payload_sha256: String,
    pub received_at: DateTime<Utc>,
    pub processed_at: DateTime<Utc>,
    pub response_body: String,
}

impl Store {
    /// Connects to `postgres://…` or `sqlite://…` (the SQLite file is created when missing) and
    /// starts the background audit writer (and, on SQLite, the group-commit writer).
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Store, StoreError> {
        let db = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Db::Postgres(postgres::Postgres::connect(url, options).await?)
        } else if url.starts_with("sqlite:") {
            if options.require_synchronous_standby {
                return Err(StoreError::Unavailable(sqlx::Error::Configuration(
                    "--require-synchronous-standby needs PostgreSQL: SQLite has no standby".into(),
                )));
            }
            Db::Sqlite(sqlite::Sqlite::connect(url, options).await?)
        } else {
            return Err(StoreError::UnsupportedUrl(redacted(url)));
        };
        let shared = Arc::new(Shared {
            replays: replays::ReplayCache::new(options.replay_cache_bytes),
            audit: audit::AuditQueue::default(),
            directory: partners::DirectoryCache::new(options.partner_cache_ttl),
            outbox_written: tokio::sync::Notify::new(),
            outbox_stats: outbox::Recent::default(),
            storage_stats: outbox::Recent::default(),
            activity: activity::ActivityCache::default(),
        });
        tokio::spawn(audit::run(db.clone(), Arc::downgrade(&shared)));
        if let Db::Postgres(postgres) = &db {
            let shared = Arc::downgrade(&shared);
            postgres.primary.watch(move |host| {
                metrics::counter!("edi_inbox_db_failovers_total").increment(1);
                tracing::warn!(host, "PostgreSQL failover: new connections go to the new primary");
                // What this process remembers of the old primary may not be on the new one (an
                // asynchronous standby loses its last commits): answer from the database again.
                if let Some(shared) = shared.upgrade() {
                    shared.replays.clear();
                    shared.directory.set(None);
                }
            });
        }
        Ok(Store { db, shared })
    }

    /// With `--require-synchronous-standby`, what the primary says of its synchronous replication
    /// (one round trip); otherwise none.
    pub async fn synchronous(&self) -> Result<Option<Synchronous>, StoreError> {
        match &self.db {
            Db::Postgres(postgres) if postgres.require_synchronous_standby => {
                Ok(Some(durability::synchronous(&postgres.primary.pool()).await?))
            }
            _ => Ok(None),
        }
    }

    /// `host:port` of the PostgreSQL server written to (none on SQLite).
    pub fn primary_host(&self) -> Option<String> {
        match &self.db {
            Db::Postgres(postgres) => Some(postgres.primary.hosts().current().to_owned()),
            Db::Sqlite(_) => None,
        }
    }

    /// Applies the migrations of this backend that are not applied yet; on PostgreSQL, then makes
    /// the day partitions of the coming week.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.db {
            Db::Postgres(postgres) => {
                let pool = postgres.primary.pool();
                sqlx::migrate!("migrations/postgres").run(&pool).await?;
                let mut conn = pool.acquire().await?;
                partitions::create_ahead(&mut conn, &purge::PARTITIONED, chrono::Utc::now()).await?;
            }
            Db::Sqlite(sqlite) => sqlx::migrate!("migrations/sqlite").run(&sqlite.pool).await?,
        }
        Ok(())
    }

    pub fn backend(&self) -> &'static str {
        match self.db {
            Db::Postgres(_) => "postgres",
            Db::Sqlite(_) => "sqlite",
        }
    }

    /// Records a delivery exactly once: claims its key and writes its documents, invoices, response
    /// and `first` audit row in one transaction, or reports the earlier delivery that holds the key.
    /// A resend of a processed interchange is answered from memory when it is cached.
    pub async fn record(
        &self,
        delivery: &Arc<Delivery>,
        first: &FirstAttempt,
    ) -> Result<Outcome, StoreError> {
        if let Some(cached) = self.shared.replays.get(delivery.key()) {
            let claim = Claim {
                id: cached.id,
                fresh: false,
                status: Status::Processed,
                payload_sha256: cached.fingerprint,
                response_body: Some(cached.response),
                lists_from_rows: false,
                ack_control_number: None,
                transport_reused: false,
            };
            if let Next::Done(outcome) = decide(claim, delivery) {
                return Ok(outcome);
            }
        }
        let queue = match &self.db {
            Db::Postgres(postgres) => &postgres.queue,
            Db::Sqlite(sqlite) => &sqlite.queue,
        };
        let outcome = match queue.record(Arc::clone(delivery), first.clone()).await {
            Err(StoreError::Unconfirmed) => {
                metrics::counter!("edi_inbox_db_unconfirmed_commits_total").increment(1);
                tracing::error!(
                    interchange_id = %delivery.id(),
                    "a delivery's commit was not confirmed by the synchronous standby: answered 503, not acknowledged"
                );
                self.audit(Attempt {
                    inbox_id: Some(delivery.id()),
                    key: delivery.key().clone(),
                    outcome: "unconfirmed",
                    status: 503,
                    facts: first.facts.clone(),
                    at: Utc::now(),
                });
                return Err(StoreError::Unconfirmed);
            }
            outcome => outcome?,
        };
        let mut outcome = outcome;
        if let Outcome::Replayed { id, body, lists_from_rows, .. } = &mut outcome {
            *body = self.whole_answer(*id, std::mem::take(body), *lists_from_rows).await?;
            *lists_from_rows = false;
        }
        if matches!(outcome, Outcome::Recorded { .. }) && delivery.books_with_accounting() {
            self.shared.outbox_written.notify_one();
        }
        match &outcome {
            Outcome::Recorded { .. }
                if delivery.status() == Status::Processed && !delivery.lists_from_rows() =>
            {
                self.shared.replays.insert(
                    delivery.key(),
                    delivery.id(),
                    delivery.fingerprint(),
                    delivery.response(),
                );
            }
            Outcome::Replayed { id, status: Status::Processed, body, .. } => {
                self.shared.replays.insert(delivery.key(), *id, delivery.fingerprint(), body);
            }
            _ => {}
        }
        Ok(outcome)
    }

    /// Resolves when this process committed or re-drove outbox messages since the last call.
    pub async fn outbox_written(&self) {
        self.shared.outbox_written.notified().await;
    }

    /// Queues the audit row of a replay or conflicting resend (written in the background).
    pub fn audit(&self, attempt: Attempt) {
        self.shared.audit.attempt(attempt);
    }

    /// Counts a refused request (no credential, wrong sender, too large, …) under its remote
    /// address, partner, outcome and minute.
    pub fn refused(&self, outcome: &'static str, status: u16, facts: &AttemptFacts, at: DateTime<Utc>) {
        self.shared.audit.refusal(outcome, status, facts, at);
    }

    /// Readiness: the database answers and every migration is applied.
    pub async fn ready(&self) -> Result<bool, StoreError> {
        const SQL: &str = "SELECT COUNT(*) FROM _sqlx_migrations WHERE success";
        let applied: i64 = on_pool!(self, pool => sqlx::query_scalar(SQL).fetch_one(pool).await?);
        let known = match self.db {
            Db::Postgres(_) => sqlx::migrate!("migrations/postgres").iter().count(),
            Db::Sqlite(_) => sqlx::migrate!("migrations/sqlite").iter().count(),
        };
        Ok(usize::try_from(applied).is_ok_and(|applied| applied >= known))
    }

    /// An interchange with its whole answer.
    pub async fn interchange(&self, id: Uuid) -> Result<Option<StoredInterchange>, StoreError> {
        const SQL: &str = "SELECT id, status, standard, sender_qualifier, sender_id, receiver_qualifier, \
            receiver_id, control_number, source, message_id, payload_sha256, received_at, processed_at, \
            response_body, lists_from_rows FROM inbox WHERE id = $1";
        /// The row, and whether its answer's lists are read from rows.
        #[derive(sqlx::FromRow)]
        struct Row {
            #[sqlx(flatten)]
            interchange: StoredInterchange,
            lists_from_rows: bool,
        }
        let row: Option<Row> =
            on_pool!(self, pool => sqlx::query_as(SQL).bind(id).fetch_optional(pool).await?);
        let Some(Row { mut interchange, lists_from_rows }) = row else { return Ok(None) };
        let stored = std::mem::take(&mut interchange.response_body);
        interchange.response_body = self.whole_answer(id, stored, lists_from_rows).await?;
        Ok(Some(interchange))
    }

    /// The newest acknowledgement sent for an interchange.
    pub async fn ack(&self, interchange_id: Uuid) -> Result<Option<String>, StoreError> {
        const SQL: &str =
            "SELECT body FROM acks WHERE inbox_id = $1 ORDER BY created_at DESC, control_number DESC LIMIT 1";
        Ok(on_pool!(self, pool => sqlx::query_scalar(SQL).bind(interchange_id).fetch_optional(pool).await?))
    }

    /// Writes the queued audit records, then closes the pool.
    pub async fn close(&self) {
        if let Err(error) = audit::flush(&self.db, &self.shared.audit).await {
            tracing::warn!(%error, "the last audit records could not be written");
        }
        match &self.db {
            Db::Postgres(postgres) => postgres.primary.close().await,
            Db::Sqlite(sqlite) => sqlite.pool.close().await,
        }
    }
}

/// The file of a SQLite database URL (`None` for PostgreSQL and in-memory databases).
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    if !url.starts_with("sqlite:") || url.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    let options: sqlx::sqlite::SqliteConnectOptions = url.parse().ok()?;
    Some(options.get_filename().to_path_buf())
}

/// A database URL fit for messages: without its password.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// A segment position as an INTEGER column.
fn position(position: usize) -> i32 {
    i32::try_from(position).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unsupported_url_is_reported_without_its_password() {
        let options = StoreOptions {
            max_connections: 1,
            acquire_timeout: Duration::from_secs(1),
            replay_cache_bytes: 0,
            partner_cache_ttl: Duration::from_secs(1),
            require_synchronous_standby: false,
            timeline_file: None,
        };
        let Err(error) = Store::connect("mysql://app:s3cr3t@db.example/inbox", &options).await else {
            panic!("mysql is not supported");
        };
        let message = error.to_string();
        assert!(
            !message.contains("s3cr3t") && message.contains("mysql://app:***@db.example/inbox"),
            "{message}"
        );
        assert_eq!(redacted("postgres://app@db/inbox"), "postgres://app@db/inbox");
    }
}
