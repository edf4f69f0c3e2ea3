//! Held deliveries (see `inbox::quarantine`). Holding is idempotent: a broker's redelivery of the
//! same content finds the entry it made before. The SQL is shared by both engines.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::filter::Conditions;
use super::{Store, StoreError};
use crate::edi::Fingerprint;
use crate::inbox::quarantine::{QuarantineReason, QuarantineStatus, Quarantined};
use crate::inbox::resource::Page;
use crate::partners::PartnerId;

/// A delivery to hold.
#[derive(Debug)]
pub struct Hold<'a> {
    pub partner_id: &'a PartnerId,
    pub source: &'a str,
    pub message_id: &'a str,
    pub payload_sha256: &'a Fingerprint,
    pub reason: QuarantineReason,
    pub payload: &'a [u8],
    pub content_type: Option<&'a str>,
    pub problem: String,
    pub interchange_id: Uuid,
    pub received_at: DateTime<Utc>,
}

/// A held delivery with what releasing it needs.
#[derive(Debug)]
pub struct HeldPayload {
    pub entry: Quarantined,
    pub payload: Bytes,
    pub content_type: Option<String>,
}

/// Filters of `GET /v1/admin/quarantine`.
#[derive(Debug, Default)]
pub struct QuarantineFilter {
    pub status: Option<QuarantineStatus>,
    pub cursor: Option<Uuid>,
    pub limit: u32,
}

#[derive(sqlx::FromRow)]
struct HeldRow {
    #[sqlx(flatten)]
    entry: Quarantined,
    payload: Vec<u8>,
    content_type: Option<String>,
}

const COLUMNS: &str = "id, partner_id, reason, status, source, message_id, payload_sha256, interchange_id, \
    problem, received_at, resolved_at, released_as";

impl Store {
    /// Holds a delivery, or finds the entry an earlier delivery of the same content made; true
    /// when it was held just now.
    pub async fn hold(&self, hold: &Hold<'_>) -> Result<(Quarantined, bool), StoreError> {
        const INSERT: &str =
            "INSERT INTO quarantine (id, partner_id, source, message_id, payload_sha256, reason,
                status, payload, content_type, problem, interchange_id, received_at)
            VALUES ($1, $2, $3, $4, $5, $6, 'held', $7, $8, $9, $10, $11)
            ON CONFLICT (source, message_id, payload_sha256) DO NOTHING";
        let id = Uuid::now_v7();
        on_pool!(self, pool => sqlx::query(INSERT)
            .bind(id).bind(hold.partner_id.as_str()).bind(hold.source).bind(hold.message_id).bind(hold.payload_sha256.as_str())
            .bind(hold.reason.as_str()).bind(hold.payload).bind(hold.content_type).bind(&hold.problem)
            .bind(hold.interchange_id).bind(hold.received_at)
            .execute(pool).await.map(|_| ())?);
        let entry = self.held_entry(hold.source, hold.message_id, hold.payload_sha256).await?;
        let entry =
            entry.ok_or_else(|| StoreError::Corrupt("a quarantine entry vanished as it was held".into()))?;
        let fresh = entry.id == id;
        Ok((entry, fresh))
    }

    /// The entry holding this content under this key, if it was held.
    pub async fn held_entry(
        &self,
        source: &str,
        message_id: &str,
        payload_sha256: &Fingerprint,
    ) -> Result<Option<Quarantined>, StoreError> {
        let select = format!(
            "SELECT {COLUMNS} FROM quarantine WHERE source = $1 AND message_id = $2 AND payload_sha256 = $3"
        );
        Ok(on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(select))
            .bind(source).bind(message_id).bind(payload_sha256.as_str())
            .fetch_optional(pool).await?))
    }

    /// Held deliveries, newest first.
    pub async fn quarantined(&self, filter: &QuarantineFilter) -> Result<Page<Quarantined>, StoreError> {
        let conditions = Conditions::default()
            .and("status = ", filter.status.map(QuarantineStatus::as_str))
            .and("id < ", filter.cursor);
        let select = ["SELECT ", COLUMNS, " FROM quarantine"];
        let items: Vec<Quarantined> = on_pool!(self, pool => conditions
            .list(&select, "id DESC", Some(filter.limit)).build_query_as().fetch_all(pool).await?);
        Ok(Page::new(items, filter.limit, |item| item.id))
    }

    /// One held delivery with its payload.
    pub async fn held(&self, id: Uuid) -> Result<Option<HeldPayload>, StoreError> {
        let sql = format!("SELECT {COLUMNS}, payload, content_type FROM quarantine WHERE id = $1");
        let row: Option<HeldRow> = on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(pool).await?);
        Ok(row.map(|row| HeldPayload {
            entry: row.entry,
            payload: Bytes::from(row.payload),
            content_type: row.content_type,
        }))
    }

    /// Claims a held entry for a release before its delivery is recorded: marked `released` (with
    /// no `released_as` yet), so that a discard racing it finds it resolved. An entry a release
    /// claimed but did not finish (the process died in between) is claimed again. `None` when
    /// another operator resolved it first.
    pub async fn claim_release(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Option<Quarantined>, StoreError> {
        let sql = format!(
            "UPDATE quarantine SET status = 'released', resolved_at = $2 \
             WHERE id = $1 AND (status = 'held' OR (status = 'released' AND released_as IS NULL)) \
             RETURNING {COLUMNS}"
        );
        let entry: Option<Quarantined> = on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id).bind(now).fetch_optional(pool).await?);
        Ok(entry)
    }

    /// Finishes a claimed release: the interchange it recorded.
    pub async fn finish_release(
        &self,
        id: Uuid,
        released_as: Uuid,
    ) -> Result<Option<Quarantined>, StoreError> {
        let sql = format!(
            "UPDATE quarantine SET released_as = $2 WHERE id = $1 AND status = 'released' RETURNING {COLUMNS}"
        );
        let entry: Option<Quarantined> = on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id).bind(released_as).fetch_optional(pool).await?);
        Ok(entry)
    }

    /// Gives a claimed release's entry back to the operators: its delivery was not recorded.
    pub async fn unclaim_release(&self, id: Uuid) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE quarantine SET status = 'held', resolved_at = NULL \
            WHERE id = $1 AND status = 'released' AND released_as IS NULL";
        on_pool!(self, pool => { sqlx::query(SQL).bind(id).execute(pool).await?; });
        Ok(())
    }

    /// Moves a held entry to `status` (released as `released_as`, or discarded); `None` when it is
    /// no longer held (another operator was first).
    pub async fn resolve_hold(
        &self,
        id: Uuid,
        status: QuarantineStatus,
        released_as: Option<Uuid>,
        now: DateTime<Utc>,
    ) -> Result<Option<Quarantined>, StoreError> {
        let sql = format!(
            "UPDATE quarantine SET status = $2, released_as = $3, resolved_at = $4 \
             WHERE id = $1 AND status = 'held' RETURNING {COLUMNS}"
        );
        let entry: Option<Quarantined> = on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id).bind(status.as_str()).bind(released_as).bind(now)
            .fetch_optional(pool).await?);
        Ok(entry)
    }
}
