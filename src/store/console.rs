//! What the operator console reads beyond the API's lists: delivery counts per partner, outcome
//! and hour (the overview's figures and chart), the refusals grouped by who and why, and a stored
//! payload. Every query is bounded by time or by a LIMIT, and reads indexed columns
//! (`deliveries.received_at`, the `refusals` primary key, `inbox.id`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Db, Store, StoreError};

/// Deliveries (or refused attempts, their outcome prefixed `refused: `) of one partner with one
/// outcome in one hour, `hours_ago` 0 being the last 60 minutes.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ActivityCount {
    /// Empty when no partner was proven (open mode, or a refusal before authentication).
    pub partner_id: String,
    pub outcome: String,
    pub hours_ago: i64,
    pub count: i64,
}

/// Refused attempts from one address, of one partner (empty: none proven), for one reason.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RefusalGroup {
    pub partner_id: String,
    pub remote_addr: String,
    pub outcome: String,
    pub status: i32,
    pub attempts: i64,
    pub last_minute: DateTime<Utc>,
    pub user_agent: Option<String>,
}

/// How many refusal groups the console lists: the most frequent first.
const REFUSAL_GROUPS: i64 = 200;

impl Store {
    /// Deliveries (the audit trail) and refusals in the `hours` before `now`, counted per partner,
    /// outcome and hour: one pass over each table serves the overview's counts and its chart.
    pub async fn activity(&self, now: DateTime<Utc>, hours: i64) -> Result<Vec<ActivityCount>, StoreError> {
        const POSTGRES: &str = "SELECT COALESCE(partner_id, '') AS partner_id, outcome, \
                CAST(FLOOR(EXTRACT(EPOCH FROM ($1 - received_at)) / 3600) AS BIGINT) AS hours_ago, COUNT(*) AS count \
            FROM deliveries WHERE received_at > $2 GROUP BY 1, 2, 3 \
            UNION ALL \
            SELECT partner_id, 'refused: ' || outcome, \
                CAST(FLOOR(EXTRACT(EPOCH FROM ($1 - minute)) / 3600) AS BIGINT), CAST(SUM(attempts) AS BIGINT) \
            FROM refusals WHERE minute > $2 GROUP BY 1, 2, 3";
        const SQLITE: &str = "SELECT COALESCE(partner_id, '') AS partner_id, outcome, \
                CAST((julianday($1) - julianday(received_at)) * 24 AS INTEGER) AS hours_ago, COUNT(*) AS count \
            FROM deliveries WHERE received_at > $2 GROUP BY 1, 2, 3 \
            UNION ALL \
            SELECT partner_id, 'refused: ' || outcome, \
                CAST((julianday($1) - julianday(minute)) * 24 AS INTEGER), CAST(SUM(attempts) AS BIGINT) \
            FROM refusals WHERE minute > $2 GROUP BY 1, 2, 3";
        let since = now - chrono::Duration::hours(hours);
        Ok(match &self.db {
            Db::Postgres(postgres) => {
                sqlx::query_as(POSTGRES).bind(now).bind(since).fetch_all(&postgres.primary.pool()).await?
            }
            Db::Sqlite(sqlite) => {
                sqlx::query_as(SQLITE).bind(now).bind(since).fetch_all(&sqlite.pool).await?
            }
        })
    }

    /// Refused attempts since `since`, grouped by partner, address, outcome and status, the most
    /// frequent first.
    pub async fn refusal_groups(&self, since: DateTime<Utc>) -> Result<Vec<RefusalGroup>, StoreError> {
        const SQL: &str = "SELECT partner_id, remote_addr, outcome, status, CAST(SUM(attempts) AS BIGINT) AS attempts, \
                MAX(minute) AS last_minute, MAX(user_agent) AS user_agent \
            FROM refusals WHERE minute >= $1 GROUP BY partner_id, remote_addr, outcome, status \
            ORDER BY 5 DESC, 6 DESC LIMIT $2";
        Ok(
            on_pool!(self, pool => sqlx::query_as(SQL).bind(since).bind(REFUSAL_GROUPS).fetch_all(pool).await?),
        )
    }

    /// An interchange's stored payload and its content type; `None` when there is no such
    /// interchange or its payload was purged.
    pub async fn payload(&self, id: Uuid) -> Result<Option<(Vec<u8>, Option<String>)>, StoreError> {
        // The day of `received_at` names the one partition to read on PostgreSQL.
        const SQL: &str = "SELECT p.body, i.content_type FROM inbox i \
            JOIN payloads p ON p.inbox_id = i.id AND p.received_at = i.received_at WHERE i.id = $1";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(id).fetch_optional(pool).await?))
    }
}
