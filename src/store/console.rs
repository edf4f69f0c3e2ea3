//! What the operator console reads beyond the API's lists: delivery counts per partner and outcome,
//! the hourly series of the overview chart, the refusals grouped by who and why, and a stored
//! payload. Every query is bounded by time or by a LIMIT, and reads indexed columns
//! (`deliveries.received_at`, the `refusals` primary key, `inbox.id`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Db, Store, StoreError};

/// Deliveries of one partner with one outcome, in the last hour and the last day.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ActivityRow {
    /// Empty when no partner was proven (open mode, or a refusal before authentication).
    pub partner_id: String,
    pub outcome: String,
    pub last_hour: i64,
    pub last_day: i64,
}

/// Deliveries with one outcome in one hour, `hours_ago` 0 being the current one.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HourlyCount {
    pub hours_ago: i64,
    pub outcome: String,
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
    /// Deliveries (the audit trail) and refusals since `day`, counted per partner and outcome, with
    /// those since `hour` counted apart.
    pub async fn activity(
        &self,
        day: DateTime<Utc>,
        hour: DateTime<Utc>,
    ) -> Result<Vec<ActivityRow>, StoreError> {
        const SQL: &str = "SELECT COALESCE(partner_id, '') AS partner_id, outcome, \
                CAST(SUM(CASE WHEN received_at >= $2 THEN 1 ELSE 0 END) AS BIGINT) AS last_hour, \
                COUNT(*) AS last_day \
            FROM deliveries WHERE received_at >= $1 GROUP BY partner_id, outcome \
            UNION ALL \
            SELECT partner_id, 'refused: ' || outcome, \
                CAST(SUM(CASE WHEN minute >= $2 THEN attempts ELSE 0 END) AS BIGINT), \
                CAST(SUM(attempts) AS BIGINT) \
            FROM refusals WHERE minute >= $1 GROUP BY partner_id, outcome \
            ORDER BY 1, 2";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(day).bind(hour).fetch_all(pool).await?))
    }

    /// Deliveries per hour and outcome over the `hours` before `now`.
    pub async fn hourly(&self, now: DateTime<Utc>, hours: i64) -> Result<Vec<HourlyCount>, StoreError> {
        const POSTGRES: &str = "SELECT CAST(FLOOR(EXTRACT(EPOCH FROM ($1 - received_at)) / 3600) AS BIGINT) AS hours_ago, \
            outcome, COUNT(*) AS count FROM deliveries WHERE received_at > $1 - make_interval(hours => $2::int) \
            AND received_at <= $1 GROUP BY 1, 2";
        const SQLITE: &str = "SELECT CAST((julianday($1) - julianday(received_at)) * 24 AS INTEGER) AS hours_ago, \
            outcome, COUNT(*) AS count FROM deliveries WHERE received_at > $3 AND received_at <= $1 GROUP BY 1, 2";
        let since = now - chrono::Duration::hours(hours);
        Ok(match &self.db {
            Db::Postgres(postgres) => {
                sqlx::query_as(POSTGRES).bind(now).bind(hours).fetch_all(&postgres.primary.pool()).await?
            }
            Db::Sqlite(sqlite) => {
                sqlx::query_as(SQLITE).bind(now).bind(hours).bind(since).fetch_all(&sqlite.pool).await?
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
        const SQL: &str = "SELECT payload, content_type FROM inbox WHERE id = $1 AND payload IS NOT NULL";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(id).fetch_optional(pool).await?))
    }
}
