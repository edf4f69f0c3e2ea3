//! What waits for an operator, grouped so that many can be acted on at once: dead letters by their
//! last error, held deliveries by their reason, and the ids of a group.

use uuid::Uuid;

use super::{Store, StoreError};
use crate::inbox::quarantine::QuarantineReason;

/// Items waiting for an operator that share what went wrong.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WaitingGroup {
    /// A dead letter's last error (empty when none was kept), or a held delivery's reason.
    pub key: String,
    pub count: i64,
}

/// How many groups are listed, the largest first.
const GROUPS: i64 = 50;

impl Store {
    /// Dead letters grouped by their last error.
    pub async fn dead_letter_groups(&self) -> Result<Vec<WaitingGroup>, StoreError> {
        const SQL: &str = "SELECT COALESCE(last_error, '') AS key, COUNT(*) AS count FROM outbox \
            WHERE status = 'dead' GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(GROUPS).fetch_all(pool).await?))
    }

    /// The dead letters whose last error is `error` (empty: none kept), at most `limit`.
    pub async fn dead_letters_erring(&self, error: &str, limit: u32) -> Result<Vec<Uuid>, StoreError> {
        const SQL: &str = "SELECT id FROM outbox WHERE status = 'dead' AND COALESCE(last_error, '') = $1 \
            ORDER BY id LIMIT $2";
        Ok(
            on_pool!(self, pool => sqlx::query_scalar(SQL).bind(error).bind(i64::from(limit)).fetch_all(pool).await?),
        )
    }

    /// Held deliveries grouped by their reason.
    pub async fn held_groups(&self) -> Result<Vec<WaitingGroup>, StoreError> {
        const SQL: &str = "SELECT reason AS key, COUNT(*) AS count FROM quarantine WHERE status = 'held' \
            GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(GROUPS).fetch_all(pool).await?))
    }

    /// The held deliveries of one reason, at most `limit`.
    pub async fn held_for(&self, reason: QuarantineReason, limit: u32) -> Result<Vec<Uuid>, StoreError> {
        const SQL: &str =
            "SELECT id FROM quarantine WHERE status = 'held' AND reason = $1 ORDER BY id LIMIT $2";
        Ok(
            on_pool!(self, pool => sqlx::query_scalar(SQL).bind(reason.as_str()).bind(i64::from(limit)).fetch_all(pool).await?),
        )
    }
}
