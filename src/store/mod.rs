//! Persistence: the only module that speaks SQL. One [`Store`] over PostgreSQL (production, many
//! replicas) or SQLite (embedded default). Writes are backend-specific to use each engine's fastest
//! race-free claim; reads share their SQL text, which both engines understand.

/// Runs the same code against whichever pool the store holds; the SQL must suit both engines.
macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match $store {
            Store::Postgres($pool) => $body,
            Store::Sqlite($pool) => $body,
        }
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

mod partners;
mod postgres;
mod sqlite;

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use sqlx::{PgPool, SqlitePool};
use uuid::Uuid;

use crate::edi::invoice::{AllowanceCharge, Invoice, InvoiceLine, Party};
use crate::inbox::resource::{InterchangePage, InterchangeSummary, InvoicePage, InvoiceResource};
use crate::inbox::{Delivery, Outcome};
pub use partners::{AttemptFacts, DeliveryAttempt};

/// A connection pool to one of the two supported databases.
#[derive(Clone, Debug)]
pub enum Store {
    Postgres(PgPool),
    Sqlite(SqlitePool),
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

/// Pool settings.
#[derive(Clone, Debug)]
pub struct PoolOptions {
    pub max_connections: u32,
    /// How long a request waits for a connection before the store reports itself unavailable.
    pub acquire_timeout: Duration,
}

/// A stored interchange row, as `GET /v1/interchanges/{id}` needs it.
#[derive(Debug, sqlx::FromRow)]
pub struct StoredInterchange {
    pub id: Uuid,
    pub status: String,
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
    pub status: Option<String>,
    pub cursor: Option<Uuid>,
    pub limit: u32,
}

/// Filters of `GET /v1/invoices`.
#[derive(Debug, Default)]
pub struct InvoiceFilter {
    pub interchange_id: Option<Uuid>,
    pub number: Option<String>,
    pub cursor: Option<Uuid>,
    pub limit: u32,
}

impl Store {
    /// Connects to `postgres://…` or `sqlite://…` (the SQLite file is created when missing).
    pub async fn connect(url: &str, options: &PoolOptions) -> Result<Store, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Store::Postgres(postgres::connect(url, options).await?))
        } else if url.starts_with("sqlite:") {
            Ok(Store::Sqlite(sqlite::connect(url, options).await?))
        } else {
            Err(StoreError::UnsupportedUrl(url.to_owned()))
        }
    }

    /// Applies the migrations of this backend that are not applied yet.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match self {
            Store::Postgres(pool) => sqlx::migrate!("migrations/postgres").run(pool).await?,
            Store::Sqlite(pool) => sqlx::migrate!("migrations/sqlite").run(pool).await?,
        }
        Ok(())
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Store::Postgres(_) => "postgres",
            Store::Sqlite(_) => "sqlite",
        }
    }

    /// Records a delivery exactly once: claims its key and writes its documents, invoices and
    /// response in one transaction, or reports the earlier delivery that holds the key.
    pub async fn record(&self, delivery: &Delivery) -> Result<Outcome, StoreError> {
        match self {
            Store::Postgres(pool) => postgres::record(pool, delivery).await,
            Store::Sqlite(pool) => sqlite::record(pool, delivery).await,
        }
    }

    /// Readiness: the database answers and every migration is applied.
    pub async fn ready(&self) -> Result<bool, StoreError> {
        const SQL: &str = "SELECT COUNT(*) FROM _sqlx_migrations WHERE success";
        let applied: i64 = on_pool!(self, pool => sqlx::query_scalar(SQL).fetch_one(pool).await?);
        let known = match self {
            Store::Postgres(_) => sqlx::migrate!("migrations/postgres").iter().count(),
            Store::Sqlite(_) => sqlx::migrate!("migrations/sqlite").iter().count(),
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
        const SQL: &str = "SELECT id, status, standard, sender_id, control_number, received_at, deliveries, \
            last_delivery_at FROM inbox \
            WHERE ($1 IS NULL OR sender_id = $1) AND ($2 IS NULL OR control_number = $2) \
            AND ($3 IS NULL OR status = $3) AND ($4 IS NULL OR id < $4) \
            ORDER BY id DESC LIMIT $5";
        let limit = i64::from(filter.limit);
        let items: Vec<InterchangeSummary> = on_pool!(self, pool => sqlx::query_as(SQL)
            .bind(&filter.sender)
            .bind(&filter.control_number)
            .bind(&filter.status)
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

    async fn load_invoices(
        &self,
        filter: &InvoiceFilter,
        id: Option<Uuid>,
    ) -> Result<Vec<InvoiceResource>, StoreError> {
        /// The ids of the requested page; `$1`–`$5` are bound below.
        macro_rules! page {
            () => {
                "SELECT id FROM invoices \
                WHERE ($1 IS NULL OR id = $1) AND ($2 IS NULL OR inbox_id = $2) AND ($3 IS NULL OR number = $3) \
                AND ($4 IS NULL OR id < $4) ORDER BY id DESC LIMIT $5"
            };
        }
        const INVOICES: &str = concat!(
            "SELECT id, inbox_id, document_id, number, CAST(issue_date AS TEXT) AS issue_date, purchase_order, currency, \
            CAST(total AS TEXT) AS total, CAST(tax_total AS TEXT) AS tax_total, \
            CAST(tax_rate AS TEXT) AS tax_rate, seller_name, seller_qualifier, seller_id, buyer_name, \
            buyer_qualifier, buyer_id, CAST(allowances_charges AS TEXT) AS allowances_charges \
            FROM invoices WHERE id IN (",
            page!(),
            ") ORDER BY id DESC"
        );
        const LINES: &str = concat!(
            "SELECT invoice_id, line_number, CAST(quantity AS TEXT) AS quantity, unit, \
            CAST(unit_price AS TEXT) AS unit_price, product_id, description, CAST(amount AS TEXT) AS amount \
            FROM invoice_lines WHERE invoice_id IN (",
            page!(),
            ") ORDER BY invoice_id DESC, line_number"
        );
        let limit = i64::from(filter.limit);
        let (invoices, lines): (Vec<InvoiceRow>, Vec<LineRow>) = on_pool!(self, pool => {
            let invoices = sqlx::query_as(INVOICES)
                .bind(id).bind(filter.interchange_id).bind(&filter.number).bind(filter.cursor).bind(limit)
                .fetch_all(pool).await?;
            let lines = sqlx::query_as(LINES)
                .bind(id).bind(filter.interchange_id).bind(&filter.number).bind(filter.cursor).bind(limit)
                .fetch_all(pool).await?;
            (invoices, lines)
        });
        let mut lines = lines.into_iter().peekable();
        invoices
            .into_iter()
            .map(|row| {
                let mut invoice_lines = Vec::new();
                while let Some(line) = lines.next_if(|line| line.invoice_id == row.id) {
                    invoice_lines.push(line.into_line()?);
                }
                row.into_resource(invoice_lines)
            })
            .collect()
    }

    /// Drops the stored payload of interchanges received before `before`; keys, fingerprints and
    /// outcomes stay so that late resends are still recognised. Returns how many bodies were purged.
    pub async fn purge_payloads(&self, before: DateTime<Utc>, now: DateTime<Utc>) -> Result<u64, StoreError> {
        const SQL: &str = "UPDATE inbox SET payload = NULL, payload_purged_at = $2 \
            WHERE payload IS NOT NULL AND received_at < $1";
        let done = on_pool!(self, pool => sqlx::query(SQL).bind(before).bind(now).execute(pool).await?.rows_affected());
        Ok(done)
    }

    pub async fn close(&self) {
        on_pool!(self, pool => pool.close().await);
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

/// An `invoice_lines` row as written and read.
#[derive(sqlx::FromRow)]
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

impl LineRow {
    fn into_line(self) -> Result<InvoiceLine, StoreError> {
        Ok(InvoiceLine {
            number: u32::try_from(self.line_number).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            quantity: decimal(&self.quantity)?,
            unit: self.unit,
            unit_price: self.unit_price.as_deref().map(decimal).transpose()?,
            product_id: self.product_id,
            description: self.description,
            amount: decimal(&self.amount)?,
        })
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
