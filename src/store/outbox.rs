//! The outbox's SQL: leases for the relay (a row is sent by one relay at a time, on every engine),
//! settling an attempt (only by the holder of the lease), and what operators list and re-drive.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::filter::Conditions;
use super::{Db, Store, StoreError};
use crate::accounting::{OutboxEntry, Settlement};
use crate::inbox::outbox::AccountingStatus;
use crate::inbox::resource::Page;

/// How long the backlog figures are reused.
const STATS_TTL: Duration = Duration::from_secs(1);
/// How long the storage figures are reused.
const STORAGE_TTL: Duration = Duration::from_secs(60);

/// A figure read from the database at most once per time to live, however often probes, scrapes
/// and pages ask for it.
pub(super) struct Recent<T> {
    read: std::sync::Mutex<Option<(Instant, T)>>,
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Recent { read: std::sync::Mutex::new(None) }
    }
}

impl<T: Copy> Recent<T> {
    /// The figure read less than `ttl` ago, or else `fresh`'s.
    async fn read(
        &self,
        ttl: Duration,
        fresh: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let kept = self.read.lock().ok().and_then(|kept| *kept);
        if let Some((_, figure)) = kept.filter(|(at, _)| at.elapsed() < ttl) {
            return Ok(figure);
        }
        let figure = fresh.await?;
        if let Ok(mut kept) = self.read.lock() {
            *kept = Some((Instant::now(), figure));
        }
        Ok(figure)
    }
}

/// A message leased for one attempt.
#[derive(Debug, sqlx::FromRow)]
pub struct Leased {
    pub id: Uuid,
    pub invoice_id: Uuid,
    pub idempotency_key: String,
    pub payload: String,
    /// Attempts including this one.
    pub attempts: i32,
}

/// How one leased attempt ended, at `at`.
#[derive(Debug, Clone)]
pub struct Settled {
    pub id: Uuid,
    pub token: Uuid,
    pub settlement: Settlement,
    pub at: DateTime<Utc>,
}

/// What the relay's state looks like from outside: the backlog and its age.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct OutboxStats {
    pub pending: i64,
    pub dead: i64,
    pub oldest_pending: Option<DateTime<Utc>>,
}

/// What is stored: interchanges (on PostgreSQL the statistics collector's live-row estimate, which
/// costs nothing to read; on SQLite an exact count) and when the oldest payload still stored
/// arrived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct StorageStats {
    pub interchanges: i64,
    pub oldest_payload: Option<DateTime<Utc>>,
}

/// The answer to an operator's re-drive or discard.
#[derive(Debug)]
pub enum Transition {
    Done(OutboxEntry),
    NotFound,
    /// The message is not dead: only dead messages are retried or discarded.
    NotDead(AccountingStatus),
}

/// Filters of `GET /v1/admin/outbox`.
#[derive(Debug, Default)]
pub struct OutboxFilter {
    pub status: Option<AccountingStatus>,
    pub cursor: Option<Uuid>,
    pub limit: u32,
}

/// Leases due messages nobody holds, oldest due first. On PostgreSQL, rows another relay is
/// leasing right now are skipped (`SKIP LOCKED`), so concurrent relays take disjoint rows; on
/// SQLite the write lock serialises the statement.
const LEASE_POSTGRES: &str = "UPDATE outbox SET leased_until = $1, lease_token = $2, attempts = attempts + 1
    WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' AND next_attempt_at <= $3
        AND (leased_until IS NULL OR leased_until < $3)
        ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
    RETURNING id, invoice_id, idempotency_key, payload, attempts";
const LEASE_SQLITE: &str = "UPDATE outbox SET leased_until = $1, lease_token = $2, attempts = attempts + 1
    WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' AND next_attempt_at <= $3
        AND (leased_until IS NULL OR leased_until < $3)
        ORDER BY next_attempt_at, id LIMIT $4)
    RETURNING id, invoice_id, idempotency_key, payload, attempts";

const ENTRY_COLUMNS: &str = "id, invoice_id, destination, idempotency_key, status, attempts, next_attempt_at, \
    reference, last_error, created_at, delivered_at";

impl Store {
    /// Leases up to `limit` due messages until `until` under `token`.
    pub async fn lease_outbox(
        &self,
        limit: usize,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        token: Uuid,
    ) -> Result<Vec<Leased>, StoreError> {
        let sql = match self.db {
            Db::Postgres(_) => LEASE_POSTGRES,
            Db::Sqlite(_) => LEASE_SQLITE,
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Ok(on_pool!(self, pool => sqlx::query_as(sql)
            .bind(until).bind(token).bind(now).bind(limit)
            .fetch_all(pool).await?))
    }

    /// Records how attempts ended, all in one transaction: for each, whether its `token` still
    /// held the lease (false when it was lost, expired and taken by another relay; then nothing
    /// changes for it).
    pub async fn settle_outbox(&self, attempts: &[Settled]) -> Result<Vec<bool>, StoreError> {
        const SQL: &str = "UPDATE outbox SET status = $3, reference = $4, last_error = $5, \
            next_attempt_at = COALESCE($6, next_attempt_at), delivered_at = $7, leased_until = NULL, \
            lease_token = NULL WHERE id = $1 AND lease_token = $2";
        in_write_transaction!(&self.db, tx => {
            let mut held = Vec::with_capacity(attempts.len());
            for attempt in attempts {
                let (status, reference, error, retry_at, delivered_at) = match &attempt.settlement {
                    Settlement::Delivered { reference } => {
                        (AccountingStatus::Delivered, reference.as_deref(), None, None, Some(attempt.at))
                    }
                    Settlement::Retry { at, error } => (AccountingStatus::Pending, None, Some(error), Some(*at), None),
                    Settlement::Dead { error } => (AccountingStatus::Dead, None, Some(error), None, None),
                };
                let updated = sqlx::query(SQL)
                    .bind(attempt.id)
                    .bind(attempt.token)
                    .bind(status.as_str())
                    .bind(reference)
                    .bind(error)
                    .bind(retry_at)
                    .bind(delivered_at)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                held.push(updated == 1);
            }
            tx.commit().await?;
            Ok(held)
        })
    }

    /// The backlog: pending and dead messages, and when the oldest pending one was written; read
    /// at most once per [`STATS_TTL`], however often probes and scrapes ask.
    pub async fn outbox_stats(&self) -> Result<OutboxStats, StoreError> {
        const SQL: &str = "SELECT (SELECT COUNT(*) FROM outbox WHERE status = 'pending') AS pending, \
            (SELECT COUNT(*) FROM outbox WHERE status = 'dead') AS dead, \
            (SELECT MIN(created_at) FROM outbox WHERE status = 'pending') AS oldest_pending";
        self.shared
            .outbox_stats
            .read(STATS_TTL, async { Ok(on_pool!(self, pool => sqlx::query_as(SQL).fetch_one(pool).await?)) })
            .await
    }

    /// Stored interchanges and the arrival of the oldest payload not purged yet (the first column of
    /// the payloads' primary key); read at most once per [`STORAGE_TTL`]: on SQLite the count is a
    /// pass over an index, a quarter of a second at a million interchanges.
    pub async fn storage_stats(&self) -> Result<StorageStats, StoreError> {
        const POSTGRES: &str = "SELECT COALESCE((SELECT n_live_tup FROM pg_stat_user_tables \
            WHERE relid = 'inbox'::regclass), 0) AS interchanges, \
            (SELECT MIN(received_at) FROM payloads) AS oldest_payload";
        const SQLITE: &str = "SELECT (SELECT COUNT(*) FROM inbox) AS interchanges, \
            (SELECT MIN(received_at) FROM payloads) AS oldest_payload";
        let sql = match self.db {
            Db::Postgres(_) => POSTGRES,
            Db::Sqlite(_) => SQLITE,
        };
        self.shared
            .storage_stats
            .read(STORAGE_TTL, async {
                Ok(on_pool!(self, pool => sqlx::query_as(sql).fetch_one(pool).await?))
            })
            .await
    }

    /// Connections of the pool: open, and idle among them.
    pub fn pool_connections(&self) -> (u32, u32) {
        on_pool!(self, pool => (pool.size(), u32::try_from(pool.num_idle()).unwrap_or(u32::MAX)))
    }

    /// Newest first, keyset-paginated on the time-ordered id.
    pub async fn outbox(&self, filter: &OutboxFilter) -> Result<Page<OutboxEntry>, StoreError> {
        let conditions = Conditions::default()
            .and("status = ", filter.status.map(AccountingStatus::as_str))
            .and("id < ", filter.cursor);
        let select = ["SELECT ", ENTRY_COLUMNS, " FROM outbox"];
        let items: Vec<OutboxEntry> = on_pool!(self, pool => conditions
            .list(&select, "id DESC", Some(filter.limit)).build_query_as().fetch_all(pool).await?);
        Ok(Page::new(items, filter.limit, |item| item.id))
    }

    /// Sends a dead message again, with a fresh budget of attempts, from `now`.
    pub async fn redrive(&self, id: Uuid, now: DateTime<Utc>) -> Result<Transition, StoreError> {
        let sql = format!(
            "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $2, leased_until = NULL, \
             lease_token = NULL WHERE id = $1 AND status = 'dead' RETURNING {ENTRY_COLUMNS}"
        );
        let changed = on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id).bind(now).fetch_optional(pool).await?);
        if changed.is_some() {
            self.shared.outbox_written.notify_one();
        }
        self.transition(id, changed).await
    }

    /// Gives up on a dead message for good.
    pub async fn discard(&self, id: Uuid) -> Result<Transition, StoreError> {
        let sql = format!(
            "UPDATE outbox SET status = 'discarded' WHERE id = $1 AND status = 'dead' RETURNING {ENTRY_COLUMNS}"
        );
        let changed = on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(pool).await?);
        self.transition(id, changed).await
    }

    /// Why a transition changed nothing, when it did not.
    async fn transition(&self, id: Uuid, changed: Option<OutboxEntry>) -> Result<Transition, StoreError> {
        if let Some(entry) = changed {
            return Ok(Transition::Done(entry));
        }
        const SQL: &str = "SELECT status FROM outbox WHERE id = $1";
        let status: Option<String> =
            on_pool!(self, pool => sqlx::query_scalar(SQL).bind(id).fetch_optional(pool).await?);
        match status {
            None => Ok(Transition::NotFound),
            Some(status) => {
                Ok(Transition::NotDead(AccountingStatus::try_from(status).map_err(StoreError::Corrupt)?))
            }
        }
    }
}
