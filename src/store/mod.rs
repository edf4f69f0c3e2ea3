//! Persistence: the only module that speaks SQL. One [`Store`] over PostgreSQL (production, many
//! replicas) or SQLite (embedded default). Writes are backend-specific to use each engine's fastest
//! race-free claim; reads share their SQL text, which both engines understand.

/// Runs the same code against whichever pool a [`Db`] holds; the SQL must suit both engines.
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::store::Db::Postgres(postgres) => {
                let $pool = &postgres.pool;
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
                let mut $tx = postgres.pool.begin().await?;
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

/// Binds `$1`–`$15`, the `inbox` row of a delivery, on either engine's query.
macro_rules! bind_inbox_row {
    ($query:expr, $d:expr) => {
        $query
            .bind($d.id)
            .bind(&$d.key.source)
            .bind(&$d.key.message_id)
            .bind($d.envelope.standard.as_str())
            .bind(&$d.envelope.sender.qualifier)
            .bind(&$d.envelope.sender.id)
            .bind(&$d.envelope.receiver.qualifier)
            .bind(&$d.envelope.receiver.id)
            .bind(&$d.envelope.control_number)
            .bind(&$d.fingerprint)
            .bind($d.payload.as_ref())
            .bind(&$d.content_type)
            .bind($d.status.as_str())
            .bind(&$d.response)
            .bind($d.received_at)
    };
}

mod audit;
mod batch;
mod exports;
mod outbox;
mod partners;
mod postgres;
mod purge;
mod quarantine;
mod replays;
mod rows;
mod sns;
mod sqlite;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use crate::edi::invoice::{AllowanceCharge, Invoice, InvoiceLine, Party};
use crate::inbox::outbox::{AccountingState, AccountingStatus};
use crate::inbox::resource::{InterchangePage, InterchangeSummary, InvoicePage, InvoiceResource};
use crate::inbox::{Claim, Delivery, Next, Outcome, Status, decide};
pub use audit::{Attempt, AttemptFacts};
pub use exports::{Export, FinishedExport};
pub use outbox::{Leased, OutboxFilter, OutboxStats, Settled, StorageStats, Transition};
pub use partners::DeliveryAttempt;
pub use purge::{PurgeRun, Purged};
pub use quarantine::{HeldPayload, Hold, QuarantineFilter};
pub use sns::{SnsStatus, SnsSubscription};

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
    fn is_closed(&self) -> bool {
        on_db!(self, pool => pool.is_closed())
    }
}

struct Shared {
    replays: replays::ReplayCache,
    audit: audit::AuditQueue,
    directory: partners::DirectoryCache,
    /// Signalled when outbox messages are committed or re-driven, so that a relay in this process
    /// sends them at once instead of at its next poll.
    outbox_written: tokio::sync::Notify,
    /// The latest backlog figures and when they were read: probes and scrapes read them at most
    /// once per [`outbox::STATS_TTL`].
    outbox_stats: std::sync::Mutex<Option<(std::time::Instant, OutboxStats)>>,
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
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    #[error("stored data is not readable: {0}")]
    Corrupt(String),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("unsupported database URL {0:?}: use postgres://… or sqlite://…")]
    UnsupportedUrl(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> StoreError {
        if is_transient(&error) { StoreError::Unavailable(error) } else { StoreError::Database(error) }
    }
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
            _ => {
                ["08", "53", "57P"].iter().any(|class| code.starts_with(class))
                    || code == "40001"
                    || code == "40P01"
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
}

/// A stored interchange row, as `GET /v1/interchanges/{id}` needs it.
#[derive(Debug, sqlx::FromRow)]
pub struct StoredInterchange {
    pub id: Uuid,
    #[sqlx(try_from = "String")]
    pub status: Status,
    pub standard: String,
    pub sender_qualifier: String,
    pub sender_id: String,
    pub receiver_qualifier: String,
    pub receiver_id: String,
    pub control_number: String,
    pub source: String,
    pub message_id: String,
    pub payload_sha256: String,
    pub received_at: DateTime<Utc>,
    pub processed_at: DateTime<Utc>,
    pub response_body: String,
}

/// Filters of `GET /v1/interchanges`.
#[derive(Debug, Default)]
pub struct InterchangeFilter {
    pub sender: Option<String>,
    pub control_number: Option<String>,
    pub status: Option<Status>,
    pub cursor: Option<Uuid>,
    pub limit: u32,
}

/// Filters of `GET /v1/invoices`.
#[derive(Debug, Default)]
pub struct InvoiceFilter {
    pub interchange_id: Option<Uuid>,
    pub number: Option<String>,
    pub accounting_status: Option<AccountingStatus>,
    /// Only the invoices of this export.
    pub export_id: Option<Uuid>,
    pub cursor: Option<Uuid>,
    pub limit: u32,
}

impl Store {
    /// Connects to `postgres://…` or `sqlite://…` (the SQLite file is created when missing) and
    /// starts the background audit writer (and, on SQLite, the group-commit writer).
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Store, StoreError> {
        let db = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Db::Postgres(postgres::Postgres::connect(url, options).await?)
        } else if url.starts_with("sqlite:") {
            Db::Sqlite(sqlite::Sqlite::connect(url, options).await?)
        } else {
            return Err(StoreError::UnsupportedUrl(redacted(url)));
        };
        let shared = Arc::new(Shared {
            replays: replays::ReplayCache::new(options.replay_cache_bytes),
            audit: audit::AuditQueue::default(),
            directory: partners::DirectoryCache::new(options.partner_cache_ttl),
            outbox_written: tokio::sync::Notify::new(),
            outbox_stats: std::sync::Mutex::default(),
        });
        tokio::spawn(audit::run(db.clone(), Arc::downgrade(&shared)));
        Ok(Store { db, shared })
    }

    /// Applies the migrations of this backend that are not applied yet.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.db {
            Db::Postgres(postgres) => sqlx::migrate!("migrations/postgres").run(&postgres.pool).await?,
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
        if let Some(cached) = self.shared.replays.get(&delivery.key) {
            let claim = Claim {
                id: cached.id,
                fresh: false,
                status: Status::Processed,
                payload_sha256: cached.fingerprint,
                response_body: Some(cached.response),
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
        let outcome = queue.record(Arc::clone(delivery), first.clone()).await?;
        let processed = |id: Uuid, response: &str| replays::Processed {
            id,
            fingerprint: delivery.fingerprint.clone(),
            response: response.to_owned(),
        };
        match &outcome {
            Outcome::Recorded { .. } if delivery.status == Status::Processed => {
                self.shared.replays.insert(&delivery.key, processed(delivery.id, &delivery.response));
                if !delivery.outbox.is_empty() {
                    self.shared.outbox_written.notify_one();
                }
            }
            Outcome::Replayed { id, status: Status::Processed, body } => {
                self.shared.replays.insert(&delivery.key, processed(*id, body));
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

    pub async fn interchange(&self, id: Uuid) -> Result<Option<StoredInterchange>, StoreError> {
        const SQL: &str = "SELECT id, status, standard, sender_qualifier, sender_id, receiver_qualifier, \
            receiver_id, control_number, source, message_id, payload_sha256, received_at, processed_at, \
            response_body FROM inbox WHERE id = $1";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(id).fetch_optional(pool).await?))
    }

    /// The newest acknowledgement sent for an interchange.
    pub async fn ack(&self, interchange_id: Uuid) -> Result<Option<String>, StoreError> {
        const SQL: &str =
            "SELECT body FROM acks WHERE inbox_id = $1 ORDER BY created_at DESC, control_number DESC LIMIT 1";
        Ok(on_pool!(self, pool => sqlx::query_scalar(SQL).bind(interchange_id).fetch_optional(pool).await?))
    }

    /// Newest first, keyset-paginated on the time-ordered id.
    pub async fn interchanges(&self, filter: &InterchangeFilter) -> Result<InterchangePage, StoreError> {
        const SQL: &str = "SELECT id, status, standard, sender_id, control_number, received_at, \
            (SELECT COUNT(*) FROM deliveries d WHERE d.source = inbox.source AND d.message_id = inbox.message_id) \
                AS deliveries, \
            (SELECT MAX(d.received_at) FROM deliveries d WHERE d.source = inbox.source \
                AND d.message_id = inbox.message_id) AS last_delivery_at \
            FROM inbox \
            WHERE ($1 IS NULL OR sender_id = $1) AND ($2 IS NULL OR control_number = $2) \
            AND ($3 IS NULL OR status = $3) AND ($4 IS NULL OR id < $4) \
            ORDER BY id DESC LIMIT $5";
        let limit = i64::from(filter.limit);
        let items: Vec<InterchangeSummary> = on_pool!(self, pool => sqlx::query_as(SQL)
            .bind(&filter.sender)
            .bind(&filter.control_number)
            .bind(filter.status.map(Status::as_str))
            .bind(filter.cursor)
            .bind(limit)
            .fetch_all(pool)
            .await?);
        let next_cursor = next_cursor(&items, filter.limit, |item| item.id);
        Ok(InterchangePage { items, next_cursor })
    }

    pub async fn invoice(&self, id: Uuid) -> Result<Option<InvoiceResource>, StoreError> {
        let filter = InvoiceFilter { cursor: None, limit: 1, ..InvoiceFilter::default() };
        let invoices = self.load_invoices(&filter, Some(id)).await?;
        Ok(invoices.into_iter().next())
    }

    /// Newest first, keyset-paginated on the time-ordered id; each invoice with its lines.
    pub async fn invoices(&self, filter: &InvoiceFilter) -> Result<InvoicePage, StoreError> {
        let items = self.load_invoices(filter, None).await?;
        let next_cursor = next_cursor(&items, filter.limit, |item| item.id);
        Ok(InvoicePage { items, next_cursor })
    }

    /// The requested page of invoices with their lines, read by one statement (one snapshot: an
    /// invoice committing meanwhile cannot shift the lines of another).
    async fn load_invoices(
        &self,
        filter: &InvoiceFilter,
        id: Option<Uuid>,
    ) -> Result<Vec<InvoiceResource>, StoreError> {
        const SQL: &str = "SELECT i.id, i.inbox_id, i.document_id, i.number, CAST(i.issue_date AS TEXT) AS issue_date, \
            i.purchase_order, i.currency, CAST(i.total AS TEXT) AS total, CAST(i.tax_total AS TEXT) AS tax_total, \
            CAST(i.tax_rate AS TEXT) AS tax_rate, i.seller_name, i.seller_qualifier, i.seller_id, i.buyer_name, \
            i.buyer_qualifier, i.buyer_id, CAST(i.allowances_charges AS TEXT) AS allowances_charges, \
            l.line_number, CAST(l.quantity AS TEXT) AS quantity, l.unit, CAST(l.unit_price AS TEXT) AS unit_price, \
            l.product_id, l.description, CAST(l.amount AS TEXT) AS amount, \
            o.status AS accounting_status, o.reference AS accounting_reference, \
            o.attempts AS accounting_attempts, o.last_error AS accounting_last_error \
            FROM (SELECT * FROM invoices \
                WHERE ($1 IS NULL OR id = $1) AND ($2 IS NULL OR inbox_id = $2) AND ($3 IS NULL OR number = $3) \
                AND ($4 IS NULL OR id < $4) \
                AND ($6 IS NULL OR id IN (SELECT invoice_id FROM outbox WHERE status = $6)) \
                AND ($7 IS NULL OR id IN (SELECT invoice_id FROM exported_invoices WHERE export_id = $7)) \
                ORDER BY id DESC LIMIT $5) AS i \
            LEFT JOIN invoice_lines l ON l.invoice_id = i.id \
            LEFT JOIN outbox o ON o.invoice_id = i.id \
            ORDER BY i.id DESC, l.line_number";
        let limit = i64::from(filter.limit);
        let rows: Vec<InvoiceLineRow> = on_pool!(self, pool => sqlx::query_as(SQL)
            .bind(id).bind(filter.interchange_id).bind(&filter.number).bind(filter.cursor).bind(limit)
            .bind(filter.accounting_status.map(AccountingStatus::as_str)).bind(filter.export_id)
            .fetch_all(pool).await?);
        let mut invoices: Vec<InvoiceResource> = Vec::new();
        for row in rows {
            let line = row.line.into_line()?;
            match invoices.last_mut() {
                Some(last) if last.id == row.invoice.id => last.invoice.lines.extend(line),
                _ => {
                    let mut invoice = row.invoice.into_resource(line.into_iter().collect())?;
                    invoice.accounting = row.accounting.into_state()?;
                    invoices.push(invoice);
                }
            }
        }
        Ok(invoices)
    }

    /// Writes the queued audit records, then closes the pool.
    pub async fn close(&self) {
        if let Err(error) = audit::flush(&self.db, &self.shared.audit).await {
            tracing::warn!(%error, "the last audit records could not be written");
        }
        on_pool!(self, pool => pool.close().await);
    }
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

/// The cursor of the next page: the last id, when the page is full.
fn next_cursor<T>(items: &[T], limit: u32, id: impl Fn(&T) -> Uuid) -> Option<Uuid> {
    if items.len() == usize::try_from(limit).unwrap_or(usize::MAX) { items.last().map(id) } else { None }
}

/// An `invoices` row as written and read: dates and decimals as text, which PostgreSQL casts and
/// SQLite keeps.
#[derive(sqlx::FromRow)]
struct InvoiceRow {
    id: Uuid,
    inbox_id: Uuid,
    document_id: Uuid,
    number: String,
    issue_date: String,
    purchase_order: Option<String>,
    currency: String,
    total: String,
    tax_total: Option<String>,
    tax_rate: Option<String>,
    seller_name: Option<String>,
    seller_qualifier: Option<String>,
    seller_id: Option<String>,
    buyer_name: Option<String>,
    buyer_qualifier: Option<String>,
    buyer_id: Option<String>,
    allowances_charges: String,
}

/// An `invoice_lines` row as written.
struct LineRow {
    invoice_id: Uuid,
    line_number: i32,
    quantity: String,
    unit: Option<String>,
    unit_price: Option<String>,
    product_id: Option<String>,
    description: Option<String>,
    amount: String,
}

fn decimal(text: &str) -> Result<Decimal, StoreError> {
    Decimal::from_str(text).map_err(|e| StoreError::Corrupt(format!("decimal {text:?}: {e}")))
}

fn party(name: Option<String>, qualifier: Option<String>, id: Option<String>) -> Option<Party> {
    (name.is_some() || qualifier.is_some() || id.is_some()).then_some(Party { name, qualifier, id })
}

impl InvoiceRow {
    fn into_resource(self, lines: Vec<InvoiceLine>) -> Result<InvoiceResource, StoreError> {
        let allowances_charges: Vec<AllowanceCharge> = serde_json::from_str(&self.allowances_charges)
            .map_err(|e| StoreError::Corrupt(format!("allowances_charges: {e}")))?;
        Ok(InvoiceResource {
            id: self.id,
            interchange_id: self.inbox_id,
            accounting: None,
            invoice: Invoice {
                number: self.number,
                issue_date: NaiveDate::from_str(&self.issue_date)
                    .map_err(|e| StoreError::Corrupt(format!("issue_date: {e}")))?,
                purchase_order: self.purchase_order,
                currency: self.currency,
                total: decimal(&self.total)?,
                tax_total: self.tax_total.as_deref().map(decimal).transpose()?,
                tax_rate: self.tax_rate.as_deref().map(decimal).transpose()?,
                seller: party(self.seller_name, self.seller_qualifier, self.seller_id),
                buyer: party(self.buyer_name, self.buyer_qualifier, self.buyer_id),
                lines,
                allowances_charges,
            },
        })
    }
}

/// An invoice with one of its lines, as the invoice listing reads them (no line: an invoice without
/// lines, which the LEFT JOIN still returns).
#[derive(sqlx::FromRow)]
struct InvoiceLineRow {
    #[sqlx(flatten)]
    invoice: InvoiceRow,
    #[sqlx(flatten)]
    line: JoinedLine,
    #[sqlx(flatten)]
    accounting: JoinedAccounting,
}

/// The invoice's outbox message, when it has one.
#[derive(sqlx::FromRow)]
struct JoinedAccounting {
    accounting_status: Option<String>,
    accounting_reference: Option<String>,
    accounting_attempts: Option<i32>,
    accounting_last_error: Option<String>,
}

impl JoinedAccounting {
    fn into_state(self) -> Result<Option<AccountingState>, StoreError> {
        let Some(status) = self.accounting_status else { return Ok(None) };
        Ok(Some(AccountingState {
            status: AccountingStatus::try_from(status).map_err(StoreError::Corrupt)?,
            reference: self.accounting_reference,
            attempts: self.accounting_attempts.unwrap_or_default(),
            last_error: self.accounting_last_error,
        }))
    }
}

#[derive(sqlx::FromRow)]
struct JoinedLine {
    line_number: Option<i32>,
    quantity: Option<String>,
    unit: Option<String>,
    unit_price: Option<String>,
    product_id: Option<String>,
    description: Option<String>,
    amount: Option<String>,
}

impl JoinedLine {
    fn into_line(self) -> Result<Option<InvoiceLine>, StoreError> {
        let (Some(number), Some(quantity), Some(amount)) = (self.line_number, self.quantity, self.amount)
        else {
            return Ok(None);
        };
        Ok(Some(InvoiceLine {
            number: u32::try_from(number).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            quantity: decimal(&quantity)?,
            unit: self.unit,
            unit_price: self.unit_price.as_deref().map(decimal).transpose()?,
            product_id: self.product_id,
            description: self.description,
            amount: decimal(&amount)?,
        }))
    }
}

/// The invoice and line rows a delivery writes.
fn effect_rows(delivery: &Delivery) -> (Vec<InvoiceRow>, Vec<LineRow>) {
    let field = |party: &Option<Party>, get: fn(&Party) -> &Option<String>| {
        party.as_ref().and_then(|p| get(p).clone())
    };
    let mut invoices = Vec::new();
    let mut lines = Vec::new();
    for (document, id, invoice) in delivery.invoices() {
        invoices.push(InvoiceRow {
            id,
            inbox_id: delivery.id,
            document_id: document.id,
            number: invoice.number.clone(),
            issue_date: invoice.issue_date.to_string(),
            purchase_order: invoice.purchase_order.clone(),
            currency: invoice.currency.clone(),
            total: invoice.total.to_string(),
            tax_total: invoice.tax_total.map(|d| d.to_string()),
            tax_rate: invoice.tax_rate.map(|d| d.to_string()),
            seller_name: field(&invoice.seller, |p| &p.name),
            seller_qualifier: field(&invoice.seller, |p| &p.qualifier),
            seller_id: field(&invoice.seller, |p| &p.id),
            buyer_name: field(&invoice.buyer, |p| &p.name),
            buyer_qualifier: field(&invoice.buyer, |p| &p.qualifier),
            buyer_id: field(&invoice.buyer, |p| &p.id),
            allowances_charges: serde_json::to_string(&invoice.allowances_charges)
                .unwrap_or_else(|_| "[]".into()),
        });
        lines.extend(invoice.lines.iter().map(|line| LineRow {
            invoice_id: id,
            line_number: i32::try_from(line.number).unwrap_or(i32::MAX),
            quantity: line.quantity.to_string(),
            unit: line.unit.clone(),
            unit_price: line.unit_price.map(|d| d.to_string()),
            product_id: line.product_id.clone(),
            description: line.description.clone(),
            amount: line.amount.to_string(),
        }));
    }
    (invoices, lines)
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
