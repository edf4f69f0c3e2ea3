//! Multi-row INSERTs on either engine: rows go in chunks that stay far below the engines'
//! bound-parameter limits (SQLite's is 32,766), and the `deliveries` row the audit trail writes for
//! every attempt, first deliveries included, is bound in one place.

use chrono::{DateTime, Utc};
use sqlx::database::HasStatementCache;
use sqlx::query_builder::Separated;
use sqlx::{Connection, Database, Executor, IntoArguments, QueryBuilder};
use uuid::Uuid;

use super::audit::AttemptFacts;
use crate::inbox::resource::IdempotencyKey;

/// Rows per INSERT: 17 columns × 500 stays far below the limit. Their text varies with the row
/// count, so they are not kept prepared (`persistent(false)`): a cache of one prepared statement
/// per batch size held tens of MiB.
pub(super) const CHUNK_ROWS: usize = 500;

/// Inserts `rows` with `insert` (`INSERT INTO table (columns) `) and `tail` after the values (an
/// `ON CONFLICT` clause, or nothing), `bind` pushing one row's values, [`CHUNK_ROWS`] at a time.
pub(super) async fn insert_chunked<'a, C, T>(
    conn: &mut C,
    insert: &str,
    rows: &'a [T],
    mut bind: impl FnMut(Separated<'_, C::Database, &'static str>, &'a T),
    tail: &str,
) -> Result<(), sqlx::Error>
where
    C: Connection,
    C::Database: HasStatementCache,
    <C::Database as Database>::Arguments: IntoArguments<C::Database>,
    for<'c> &'c mut C: Executor<'c, Database = C::Database>,
{
    for chunk in rows.chunks(CHUNK_ROWS) {
        let mut query = QueryBuilder::<C::Database>::new(insert);
        query.push_values(chunk, &mut bind);
        query.push(tail);
        query.build().persistent(false).execute(&mut *conn).await?;
    }
    Ok(())
}

/// One `deliveries` row: an attempt on a key, with what the request's headers and transport told.
pub(super) struct AuditRow<'a> {
    pub id: Uuid,
    /// The interchange it was answered with; none for a bypassed one.
    pub inbox_id: Option<Uuid>,
    pub key: &'a IdempotencyKey,
    pub outcome: &'static str,
    pub status: u16,
    pub facts: &'a AttemptFacts,
    pub at: DateTime<Utc>,
    /// Its transport id came before with another key.
    pub transport_reused: bool,
}

/// The `deliveries` INSERT that [`insert_deliveries!`] completes.
pub(super) const INSERT_DELIVERIES: &str = "INSERT INTO deliveries (id, inbox_id, partner_id, source, message_id,
    outcome, status, request_id, remote_addr, user_agent, content_type, body_bytes, received_at, door, transport_id,
    transport, transport_reused) ";

/// Inserts `$rows` ([`AuditRow`]s) into `deliveries` on `$conn`, a connection of either engine.
macro_rules! insert_deliveries {
    ($conn:expr, $rows:expr) => {
        $crate::store::rows::insert_chunked(
            $conn,
            $crate::store::rows::INSERT_DELIVERIES,
            $rows,
            |mut row, r: &$crate::store::rows::AuditRow<'_>| {
                row.push_bind(r.id)
                    .push_bind(r.inbox_id)
                    .push_bind(&r.facts.partner_id)
                    .push_bind(&r.key.source)
                    .push_bind(&r.key.message_id)
                    .push_bind(r.outcome)
                    .push_bind(i32::from(r.status))
                    .push_bind(&r.facts.request_id)
                    .push_bind(&r.facts.remote_addr)
                    .push_bind(&r.facts.user_agent)
                    .push_bind(&r.facts.content_type)
                    .push_bind(r.facts.body_bytes)
                    .push_bind(r.at)
                    .push_bind(r.facts.transport.door.as_str())
                    .push_bind(&r.facts.transport.id)
                    .push_bind(r.facts.transport.meta_json())
                    .push_bind(r.transport_reused);
            },
            "",
        )
    };
}
pub(super) use insert_deliveries;
