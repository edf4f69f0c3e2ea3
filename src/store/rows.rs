//! Multi-row INSERTs on either engine: rows go in chunks that stay far below the engines'
//! bound-parameter limits (SQLite's is 32,766). And the rows a delivery writes, built from it in
//! one place for both engines: its `inbox` row, payload, documents, acknowledgement, outbox messages, and
//! the `deliveries` row the audit trail writes for every attempt, first deliveries included.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use sqlx::database::HasStatementCache;
use sqlx::query_builder::Separated;
use sqlx::{Connection, Database, Executor, IntoArguments, QueryBuilder};
use uuid::Uuid;

use super::StoreError;
use super::audit::AttemptFacts;
use super::position;
use super::tables::{self, AckRow, Bind, DeliveryRow, DocumentRow, InboxRow, OutboxRow, PayloadRow, Table};
use crate::edi::ack;
use crate::inbox::outbox::{self, AccountingStatus, OutboxMessage};
use crate::inbox::resource::IdempotencyKey;
use crate::inbox::{Delivery, StoredDocument, Taken};
use crate::partners::PartnerId;

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

impl<'a> AuditRow<'a> {
    /// The `deliveries` row it is written as.
    pub(super) fn row(self) -> DeliveryRow<'a> {
        let (facts, key) = (self.facts, self.key);
        DeliveryRow {
            id: self.id,
            inbox_id: self.inbox_id,
            partner_id: facts.partner_id.as_ref().map(PartnerId::as_str),
            source: key.source.as_str(),
            message_id: &key.message_id,
            outcome: self.outcome,
            status: i32::from(self.status),
            request_id: facts.request_id.as_deref(),
            remote_addr: facts.remote_addr.as_deref(),
            user_agent: facts.user_agent.as_deref(),
            content_type: facts.content_type.as_deref(),
            body_bytes: facts.body_bytes,
            received_at: self.at,
            door: facts.transport.door.as_str(),
            transport_id: facts.transport.id.as_deref(),
            transport: facts.transport.meta_json(),
            transport_reused: self.transport_reused,
        }
    }
}

/// Inserts `rows` into their table ([`Table`]: its name and columns, each row binding itself), on
/// a connection of either engine, with `tail` after the values, [`CHUNK_ROWS`] at a time, each chunk
/// built when its turn comes (a large interchange's rows are never all held at once).
pub(super) async fn insert_rows<C, T>(
    conn: &mut C,
    rows: impl IntoIterator<Item = T>,
    tail: &str,
) -> Result<(), sqlx::Error>
where
    C: Connection,
    C::Database: HasStatementCache,
    <C::Database as Database>::Arguments: IntoArguments<C::Database>,
    for<'c> &'c mut C: Executor<'c, Database = C::Database>,
    T: Table + Bind<C::Database>,
{
    let insert = tables::insert::<T>();
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<T> = rows.by_ref().take(CHUNK_ROWS).collect();
        insert_chunked(conn, &insert, &chunk, |row, r| r.push(row), tail).await?;
    }
    Ok(())
}

/// The `inbox` row of a delivery.
pub(super) fn inbox_row(d: &Delivery) -> InboxRow<'_> {
    InboxRow {
        id: d.id(),
        source: d.key().source.as_str(),
        message_id: &d.key().message_id,
        standard: d.envelope().standard.as_str(),
        sender_qualifier: &d.envelope().sender.qualifier,
        sender_id: &d.envelope().sender.id,
        receiver_qualifier: &d.envelope().receiver.qualifier,
        receiver_id: &d.envelope().receiver.id,
        control_number: &d.envelope().control_number,
        payload_sha256: d.fingerprint().as_str(),
        content_type: d.content_type(),
        status: d.status().as_str(),
        response_body: d.response(),
        lists_from_rows: d.lists_from_rows(),
        received_at: d.received_at(),
        processed_at: d.received_at(),
    }
}

/// The `payloads` row of a delivery.
pub(super) fn payload_row(d: &Delivery) -> PayloadRow<'_> {
    PayloadRow { inbox_id: d.id(), received_at: d.received_at(), body: d.payload().as_ref() }
}

/// Documents of delivery `d` as the store takes them (see [`Delivery::documents`]).
pub(super) fn walked<'a>(
    d: &'a Delivery,
    documents: impl Iterator<Item = Taken<'a>> + 'a,
) -> impl Iterator<Item = Result<Cow<'a, StoredDocument>, StoreError>> + 'a {
    documents.map(move |taken| {
        taken.map_err(|error| {
            StoreError::Corrupt(format!(
                "interchange {} maps otherwise than when it was read: {error}",
                d.id()
            ))
        })
    })
}

/// The `documents` row of one of the documents of delivery `inbox_id`.
pub(super) fn document_row(inbox_id: Uuid, stored: &StoredDocument) -> DocumentRow<'_> {
    DocumentRow {
        id: stored.id,
        inbox_id,
        position: position(stored.document.position),
        doc_type: &stored.document.kind,
        control_number: &stored.document.control_number,
    }
}

/// The `documents` rows of a small delivery (a large one's are walked).
pub(super) fn document_rows(d: &Delivery) -> impl Iterator<Item = DocumentRow<'_>> {
    d.held_documents().iter().map(|stored| document_row(d.id(), stored))
}

/// The `acks` row of a delivery numbered `control_number`; 0: numbered by the statement that
/// writes it, the body keeping its placeholder.
pub(super) fn ack_row(d: &Delivery, control_number: i64) -> AckRow<'_> {
    let body = match control_number {
        0 => Cow::Borrowed(d.ack()),
        number => Cow::Owned(ack::with_control_number(d.ack(), number)),
    };
    AckRow { inbox_id: d.id(), control_number, body, created_at: d.received_at() }
}

/// The `outbox` row of message `m` of a delivery received `at`: an invoice to hand to the
/// accounting API, due now.
pub(super) fn outbox_row(m: &OutboxMessage, at: DateTime<Utc>) -> OutboxRow<'_> {
    OutboxRow {
        id: m.id,
        invoice_id: m.invoice_id,
        destination: outbox::ACCOUNTING_API,
        idempotency_key: &m.idempotency_key,
        payload: &m.payload,
        status: AccountingStatus::Pending.as_str(),
        next_attempt_at: at,
        created_at: at,
    }
}

/// The `outbox` rows of a small delivery (a large one's are made as its documents are walked).
pub(super) fn outbox_rows(d: &Delivery) -> impl Iterator<Item = OutboxRow<'_>> {
    d.outbox().iter().map(|m| outbox_row(m, d.received_at()))
}
