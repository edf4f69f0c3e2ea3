//! What the operator console reads beyond the API's lists: the refusals grouped by who and why,
//! and a stored payload (the overview's counts are in `activity`). Every query is bounded by time
//! or by a LIMIT, and reads indexed columns (the `refusals` primary key, `inbox.id`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Store, StoreError};

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
