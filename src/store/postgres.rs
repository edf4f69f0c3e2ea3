//! PostgreSQL writes. Deliveries are recorded in batches (group commit, see `batch`): one statement
//! claims every key of the batch (`INSERT … ON CONFLICT DO NOTHING` on the unique (source,
//! message_id) index, in key order) and writes, for the deliveries whose row is their own, documents,
//! invoices, lines, acknowledgements, audit rows and outbox messages from arrays; the same statement reads the rows
//! that hold the other keys, writing nothing to them. One statement is one transaction and one
//! commit for the batch, so a delivery and its effects commit together or not at all. A concurrent
//! duplicate waits for the winner's COMMIT in the unique index and then sees its row: a replay or a
//! conflict. No row is updated by more than one delivery.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use uuid::Uuid;

use super::batch::{self, Job};
use super::invoices::effect_rows;
use std::sync::Arc;

use super::hosts::Primary;
use super::{StoreError, StoreOptions, audit, position};
use crate::edi::ack;
use crate::inbox::outbox;
use crate::inbox::{Claim, Next, Outcome, decide};

/// The pool (on the current primary) and the queue of the writer tasks.
#[derive(Clone)]
pub(super) struct Postgres {
    pub(super) primary: Arc<Primary>,
    pub(super) queue: batch::Queue,
}

impl Postgres {
    pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<Postgres, StoreError> {
        let primary = Primary::connect(url, options).await?;
        // A few batches in flight at once keep the pool busy without one writer's latency bounding
        // everyone's throughput.
        let writers = usize::try_from(options.max_connections / 8).unwrap_or(1).max(1);
        let queue = batch::Queue::start("postgres", writers, {
            let primary = Arc::clone(&primary);
            move |jobs| {
                let pool = primary.pool();
                async move {
                    // A failover closes the pool: the batch ends then (503, retried), not at its
                    // acquire timeout, and the deliveries queued behind it go to the new primary.
                    let outcomes = match pool.close_event().do_until(record_batch(&pool, &jobs)).await {
                        Ok(outcomes) => outcomes,
                        Err(_) => jobs
                            .iter()
                            .map(|_| Err(StoreError::Unavailable(sqlx::Error::PoolClosed)))
                            .collect(),
                    };
                    (jobs, outcomes)
                }
            }
        });
        Ok(Postgres { primary, queue })
    }
}

/// Writes, for every row `claim` returns, that delivery's documents, invoices, lines,
/// acknowledgement (its control number from the cycling sequence, which never waits for another
/// delivery's COMMIT), audit row and outbox messages, then selects `$tail`. The arrays cover every
/// delivery of the batch, each row naming its delivery; only claimed deliveries' rows are written.
/// `$16`–`$73` are bound by [`bind_effects`], one table's columns after another.
macro_rules! with_effects {
    ($claim:literal, $tail:literal) => {
        concat!(
            "WITH ",
            $claim,
            ", documents_written AS (
                INSERT INTO documents (id, inbox_id, position, doc_type, control_number)
                SELECT d.id, d.inbox_id, d.position, d.doc_type, d.control_number
                FROM unnest($16::uuid[], $17::uuid[], $18::int4[], $19::text[], $20::text[])
                    AS d (id, inbox_id, position, doc_type, control_number)
                JOIN claim ON claim.id = d.inbox_id
            ), invoices_written AS (
                INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, purchase_order, currency,
                    total, tax_total, tax_rate, seller_name, seller_qualifier, seller_id, buyer_name,
                    buyer_qualifier, buyer_id, allowances_charges)
                SELECT i.id, i.inbox_id, i.document_id, i.number, i.issue_date::date, i.purchase_order,
                    i.currency, i.total::numeric, i.tax_total::numeric, i.tax_rate::numeric, i.seller_name,
                    i.seller_qualifier, i.seller_id, i.buyer_name, i.buyer_qualifier, i.buyer_id,
                    i.allowances_charges::jsonb
                FROM unnest($21::uuid[], $22::uuid[], $23::uuid[], $24::text[], $25::text[], $26::text[],
                    $27::text[], $28::text[], $29::text[], $30::text[], $31::text[], $32::text[], $33::text[],
                    $34::text[], $35::text[], $36::text[], $37::text[])
                    AS i (id, inbox_id, document_id, number, issue_date, purchase_order, currency, total,
                        tax_total, tax_rate, seller_name, seller_qualifier, seller_id, buyer_name,
                        buyer_qualifier, buyer_id, allowances_charges)
                JOIN claim ON claim.id = i.inbox_id
            ), lines_written AS (
                INSERT INTO invoice_lines (invoice_id, line_number, quantity, unit, unit_price, product_id,
                    description, amount)
                SELECT l.invoice_id, l.line_number, l.quantity::numeric, l.unit, l.unit_price::numeric,
                    l.product_id, l.description, l.amount::numeric
                FROM unnest($38::uuid[], $39::uuid[], $40::int4[], $41::text[], $42::text[], $43::text[],
                    $44::text[], $45::text[], $46::text[])
                    AS l (inbox_id, invoice_id, line_number, quantity, unit, unit_price, product_id,
                        description, amount)
                JOIN claim ON claim.id = l.inbox_id
            ), ack_written AS (
                INSERT INTO acks (inbox_id, control_number, body, created_at)
                SELECT a.inbox_id, a.value, replace(a.body, $50, lpad(a.value::text, 9, '0')), a.created_at
                FROM (SELECT a.inbox_id, a.body, a.created_at, nextval('ack_control_numbers') AS value
                    FROM unnest($47::uuid[], $48::text[], $49::timestamptz[]) AS a (inbox_id, body, created_at)
                    JOIN claim ON claim.id = a.inbox_id) AS a
                RETURNING inbox_id, control_number
            ), audit_written AS (
                INSERT INTO deliveries (id, inbox_id, partner_id, source, message_id, outcome, status, request_id,
                    remote_addr, user_agent, content_type, body_bytes, received_at, door, transport_id, transport,
                    transport_reused)
                SELECT a.id, a.inbox_id, a.partner_id, a.source, a.message_id, a.outcome, a.status, a.request_id,
                    a.remote_addr, a.user_agent, a.content_type, a.body_bytes, a.received_at, a.door,
                    a.transport_id, a.transport,
                    a.transport_id IS NOT NULL AND (EXISTS (SELECT FROM deliveries seen
                        WHERE seen.transport_id = a.transport_id AND seen.door = a.door
                            AND (seen.source IS DISTINCT FROM a.source OR seen.message_id IS DISTINCT FROM a.message_id))
                    OR EXISTS (SELECT FROM unnest($64::text[], $65::text[], $54::text[], $55::text[])
                            WITH ORDINALITY AS earlier (door, transport_id, source, message_id, position)
                        WHERE earlier.position < a.position AND earlier.transport_id = a.transport_id
                            AND earlier.door = a.door
                            AND (earlier.source, earlier.message_id) IS DISTINCT FROM (a.source, a.message_id)))
                FROM unnest($51::uuid[], $52::uuid[], $53::text[], $54::text[], $55::text[], $56::text[],
                    $57::int4[], $58::text[], $59::text[], $60::text[], $61::text[], $62::int8[],
                    $63::timestamptz[], $64::text[], $65::text[], $66::text[]) WITH ORDINALITY
                    AS a (id, inbox_id, partner_id, source, message_id, outcome, status, request_id,
                        remote_addr, user_agent, content_type, body_bytes, received_at, door, transport_id,
                        transport, position)
                JOIN claim ON claim.id = a.inbox_id
                RETURNING inbox_id, transport_reused
            ), outbox_written AS (
                INSERT INTO outbox (id, invoice_id, destination, idempotency_key, payload, status,
                    next_attempt_at, created_at)
                SELECT o.id, o.invoice_id, $67, o.idempotency_key, o.payload, 'pending', o.created_at,
                    o.created_at
                FROM unnest($68::uuid[], $69::uuid[], $70::uuid[], $71::text[], $72::text[],
                    $73::timestamptz[])
                    AS o (inbox_id, id, invoice_id, idempotency_key, payload, created_at)
                JOIN claim ON claim.id = o.inbox_id
            )
            SELECT claim.id AS delivery_id, claim.id, true AS fresh, claim.status, claim.payload_sha256,
                NULL::text AS response_body, ack_written.control_number AS ack_control_number,
                COALESCE(audit_written.transport_reused, false) AS transport_reused
            FROM claim LEFT JOIN ack_written ON ack_written.inbox_id = claim.id
                LEFT JOIN audit_written ON audit_written.inbox_id = claim.id",
            $tail
        )
    };
}

/// Claims every delivery of a batch: inserts the rows whose key is free (in key order, so that
/// concurrent batches wait for each other in one order and never deadlock) with their effects, and
/// reads the rows that hold the other keys (no row lock: DO NOTHING does not lock the existing
/// row). A key whose holder committed after this statement's snapshot was taken (a concurrent
/// duplicate, or an earlier delivery of the same batch) returns no row; [`READ`] fetches it.
const CLAIM: &str = with_effects!(
    "incoming AS (
        SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
            $7::text[], $8::text[], $9::text[], $10::text[], $11::bytea[], $12::text[], $13::text[],
            $14::text[], $15::timestamptz[])
            AS i (id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier,
                receiver_id, control_number, payload_sha256, payload, content_type, status, response_body,
                received_at)
    ), claim AS (
        INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier,
            receiver_id, control_number, payload_sha256, payload, content_type, status, response_body,
            received_at, processed_at)
        SELECT id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier, receiver_id,
            control_number, payload_sha256, payload, content_type, status, response_body, received_at,
            received_at
        FROM incoming ORDER BY source, message_id
        ON CONFLICT (source, message_id) DO NOTHING
        RETURNING id, status, payload_sha256
    )",
    "
    UNION ALL
    SELECT incoming.id, inbox.id, false, inbox.status, inbox.payload_sha256, inbox.response_body, NULL::bigint,
        false
    FROM incoming JOIN inbox ON inbox.source = incoming.source AND inbox.message_id = incoming.message_id
    WHERE NOT EXISTS (SELECT FROM claim WHERE claim.id = incoming.id)"
);

/// The row holding a key, read with a fresh snapshot.
const READ: &str = "SELECT id, false AS fresh, status, payload_sha256, response_body,
        NULL::bigint AS ack_control_number
    FROM inbox WHERE source = $1 AND message_id = $2";

/// Overwrites a rejected attempt that still holds fingerprint `$74` with one delivery.
const REPLACE_REJECTED: &str = with_effects!(
    "claim AS (
        UPDATE inbox SET id = $1, standard = $4, sender_qualifier = $5, sender_id = $6,
            receiver_qualifier = $7, receiver_id = $8, control_number = $9, payload_sha256 = $10,
            payload = $11, content_type = $12, status = $13, response_body = $14, received_at = $15,
            processed_at = $15, payload_purged_at = NULL
        WHERE source = $2 AND message_id = $3 AND status = 'rejected' AND payload_sha256 = $74
        RETURNING id, status, payload_sha256
    )",
    ""
);

/// How often a delivery claims again after losing a race (to replace a rejected attempt, or to a
/// holder it could not see yet).
const MAX_ATTEMPTS: usize = 3;

/// A claim with the delivery it answers.
#[derive(sqlx::FromRow)]
struct Claimed {
    delivery_id: Uuid,
    #[sqlx(flatten)]
    claim: Claim,
}

/// Records a batch with one statement. Should it fail, each delivery is recorded again with a
/// statement of its own, so that a failure stays that delivery's.
async fn record_batch(pool: &PgPool, jobs: &[Job]) -> Vec<Result<Outcome, StoreError>> {
    let mut claims = match claim(pool, jobs).await {
        Ok(claims) => claims,
        Err(error) if jobs.len() == 1 => return vec![Err(error)],
        Err(_) => {
            let mut outcomes = Vec::with_capacity(jobs.len());
            for job in jobs {
                let outcome = match claim(pool, std::slice::from_ref(job)).await {
                    Ok(mut claims) => resolve(pool, job, claims.remove(&job.delivery.id)).await,
                    Err(error) => Err(error),
                };
                outcomes.push(outcome);
            }
            return outcomes;
        }
    };
    let mut outcomes = Vec::with_capacity(jobs.len());
    for job in jobs {
        outcomes.push(resolve(pool, job, claims.remove(&job.delivery.id)).await);
    }
    outcomes
}

/// Runs [`CLAIM`] for `jobs`: each claimed or already held key's row, by delivery id.
async fn claim(pool: &PgPool, jobs: &[Job]) -> Result<HashMap<Uuid, Claim>, StoreError> {
    let rows: Vec<Claimed> = bind_batch(presized(CLAIM, jobs), jobs).fetch_all(pool).await?;
    Ok(rows.into_iter().map(|row| (row.delivery_id, row.claim)).collect())
}

/// Decides one delivery after the batch statement, from its claim or, when it got none, the
/// holder read afresh; replaces a rejected holder when that is the decision.
async fn resolve(pool: &PgPool, job: &Job, claim: Option<Claim>) -> Result<Outcome, StoreError> {
    let delivery = &job.delivery;
    let mut claim = claim;
    for _ in 0..MAX_ATTEMPTS {
        let current = match claim.take() {
            Some(claim) => claim,
            None => {
                let holder = sqlx::query_as(READ)
                    .bind(&delivery.key.source)
                    .bind(&delivery.key.message_id)
                    .fetch_optional(pool)
                    .await?;
                let Some(holder) = holder else { continue };
                holder
            }
        };
        if current.transport_reused {
            audit::transport_reused(&job.first.facts.transport, &delivery.key);
        }
        match decide(current, delivery) {
            Next::Done(outcome) => return Ok(outcome),
            Next::ReplaceRejected { previous_fingerprint } => {
                let query = bind_inbox_row!(presized(REPLACE_REJECTED, std::slice::from_ref(job)), delivery);
                let replaced = bind_effects(query, std::slice::from_ref(job))
                    .bind(previous_fingerprint)
                    .fetch_optional(pool)
                    .await?;
                if let Some(replaced) = replaced {
                    if replaced.claim.transport_reused {
                        audit::transport_reused(&job.first.facts.transport, &delivery.key);
                    }
                    return Ok(Outcome::Recorded {
                        ack_control_number: replaced.claim.ack_control_number.unwrap_or_default(),
                    });
                }
            }
        }
    }
    Err(StoreError::Unavailable(sqlx::Error::Protocol("the key kept changing while it was claimed".into())))
}

type ClaimQuery<'q> = QueryAs<'q, sqlx::Postgres, Claimed, PgArguments>;

/// `sql` with its parameters' buffer sized once for what `jobs` write: grown by doubling instead, a
/// large interchange's parameters would hold up to twice their size.
fn presized<'q>(sql: &'static str, jobs: &[Job]) -> ClaimQuery<'q> {
    let mut arguments = PgArguments::default();
    sqlx::Arguments::reserve(
        &mut arguments,
        CLAIM_BINDS,
        jobs.iter().map(|job| job.delivery.written_bytes()).sum(),
    );
    sqlx::query_as_with(sql, arguments)
}

/// A table's rows as one array per column, bound in the order the fields are declared (which is
/// the order of the statement's `$n`); `COUNT` is how many binds that is.
macro_rules! columns {
    ($(#[$meta:meta])* $name:ident { $($field:ident: $ty:ty),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Default)]
        struct $name {
            $($field: Vec<$ty>),+
        }

        impl $name {
            const COUNT: usize = [$(stringify!($field)),+].len();

            fn bind(self, query: ClaimQuery<'_>) -> ClaimQuery<'_> {
                query$(.bind(self.$field))+
            }
        }
    };
}

columns! {
    /// `$1`–`$15`: the batch's `inbox` rows.
    InboxColumns {
        id: Uuid, source: String, message_id: String, standard: &'static str, sender_qualifier: String,
        sender_id: String, receiver_qualifier: String, receiver_id: String, control_number: String,
        payload_sha256: String, payload: Vec<u8>, content_type: Option<String>, status: &'static str,
        response_body: String, received_at: DateTime<Utc>,
    }
}

columns! {
    /// `$16`–`$20`: `documents`.
    DocumentColumns { id: Uuid, inbox_id: Uuid, position: i32, doc_type: String, control_number: String }
}

columns! {
    /// `$21`–`$37`: `invoices`.
    InvoiceColumns {
        id: Uuid, inbox_id: Uuid, document_id: Uuid, number: String, issue_date: String,
        purchase_order: Option<String>, currency: String, total: String, tax_total: Option<String>,
        tax_rate: Option<String>, seller_name: Option<String>, seller_qualifier: Option<String>,
        seller_id: Option<String>, buyer_name: Option<String>, buyer_qualifier: Option<String>,
        buyer_id: Option<String>, allowances_charges: String,
    }
}

columns! {
    /// `$38`–`$46`: `invoice_lines`, each naming its delivery.
    LineColumns {
        inbox_id: Uuid, invoice_id: Uuid, line_number: i32, quantity: String, unit: Option<String>,
        unit_price: Option<String>, product_id: Option<String>, description: Option<String>, amount: String,
    }
}

columns! {
    /// `$47`–`$49`: `acks`, each body with the placeholder `$50` where its number goes.
    AckColumns { inbox_id: Uuid, body: String, created_at: DateTime<Utc> }
}

columns! {
    /// `$51`–`$66`: the first deliveries' `deliveries` rows.
    AuditColumns {
        id: Uuid, inbox_id: Option<Uuid>, partner_id: Option<String>, source: String, message_id: String,
        outcome: &'static str, status: i32, request_id: Option<String>, remote_addr: Option<String>,
        user_agent: Option<String>, content_type: Option<String>, body_bytes: i64, received_at: DateTime<Utc>,
        door: &'static str, transport_id: Option<String>, transport: Option<String>,
    }
}

columns! {
    /// `$68`–`$73`: `outbox`, after `$67`, their destination.
    OutboxColumns {
        inbox_id: Uuid, id: Uuid, invoice_id: Uuid, idempotency_key: String, payload: String,
        created_at: DateTime<Utc>,
    }
}

/// The parameters of [`CLAIM`]: the inbox rows, then the effects' columns with the acknowledgement
/// placeholder after theirs and the accounting destination before the outbox's.
const CLAIM_BINDS: usize = InboxColumns::COUNT
    + DocumentColumns::COUNT
    + InvoiceColumns::COUNT
    + LineColumns::COUNT
    + AckColumns::COUNT
    + 1
    + AuditColumns::COUNT
    + 1
    + OutboxColumns::COUNT;

/// Binds `$1`–`$15`, the inbox rows of the batch, then its effects.
fn bind_batch<'q>(query: ClaimQuery<'q>, jobs: &'q [Job]) -> ClaimQuery<'q> {
    let mut inbox = InboxColumns::default();
    for d in jobs.iter().map(|job| &*job.delivery) {
        inbox.id.push(d.id);
        inbox.source.push(d.key.source.clone());
        inbox.message_id.push(d.key.message_id.clone());
        inbox.standard.push(d.envelope.standard.as_str());
        inbox.sender_qualifier.push(d.envelope.sender.qualifier.clone());
        inbox.sender_id.push(d.envelope.sender.id.clone());
        inbox.receiver_qualifier.push(d.envelope.receiver.qualifier.clone());
        inbox.receiver_id.push(d.envelope.receiver.id.clone());
        inbox.control_number.push(d.envelope.control_number.clone());
        inbox.payload_sha256.push(d.fingerprint.clone());
        inbox.payload.push(d.payload.to_vec());
        inbox.content_type.push(d.content_type.clone());
        inbox.status.push(d.status.as_str());
        inbox.response_body.push(d.response.clone());
        inbox.received_at.push(d.received_at);
    }
    bind_effects(inbox.bind(query), jobs)
}

/// Binds `$16`–`$73`: documents, invoices, lines, acknowledgements, audit rows and outbox messages
/// of `jobs`, each row naming its delivery.
fn bind_effects<'q>(query: ClaimQuery<'q>, jobs: &'q [Job]) -> ClaimQuery<'q> {
    let (mut documents, mut invoices, mut lines) =
        (DocumentColumns::default(), InvoiceColumns::default(), LineColumns::default());
    let (mut acks, mut audit, mut outbox) =
        (AckColumns::default(), AuditColumns::default(), OutboxColumns::default());
    for job in jobs {
        let d = &*job.delivery;
        for stored in &d.documents {
            documents.id.push(stored.id);
            documents.inbox_id.push(d.id);
            documents.position.push(position(stored.document.position));
            documents.doc_type.push(stored.document.kind.clone());
            documents.control_number.push(stored.document.control_number.clone());
        }
        let (invoice_rows, line_rows) = effect_rows(d);
        for i in invoice_rows {
            invoices.id.push(i.id);
            invoices.inbox_id.push(i.inbox_id);
            invoices.document_id.push(i.document_id);
            invoices.number.push(i.number);
            invoices.issue_date.push(i.issue_date);
            invoices.purchase_order.push(i.purchase_order);
            invoices.currency.push(i.currency);
            invoices.total.push(i.total);
            invoices.tax_total.push(i.tax_total);
            invoices.tax_rate.push(i.tax_rate);
            invoices.seller_name.push(i.seller_name);
            invoices.seller_qualifier.push(i.seller_qualifier);
            invoices.seller_id.push(i.seller_id);
            invoices.buyer_name.push(i.buyer_name);
            invoices.buyer_qualifier.push(i.buyer_qualifier);
            invoices.buyer_id.push(i.buyer_id);
            invoices.allowances_charges.push(i.allowances_charges);
        }
        for l in line_rows {
            lines.inbox_id.push(d.id);
            lines.invoice_id.push(l.invoice_id);
            lines.line_number.push(l.line_number);
            lines.quantity.push(l.quantity);
            lines.unit.push(l.unit);
            lines.unit_price.push(l.unit_price);
            lines.product_id.push(l.product_id);
            lines.description.push(l.description);
            lines.amount.push(l.amount);
        }
        acks.inbox_id.push(d.id);
        acks.body.push(d.ack.clone());
        acks.created_at.push(d.received_at);
        let row = job.audit_row(false);
        audit.id.push(row.id);
        audit.inbox_id.push(row.inbox_id);
        audit.partner_id.push(row.facts.partner_id.clone());
        audit.source.push(row.key.source.clone());
        audit.message_id.push(row.key.message_id.clone());
        audit.outcome.push(row.outcome);
        audit.status.push(i32::from(row.status));
        audit.request_id.push(row.facts.request_id.clone());
        audit.remote_addr.push(row.facts.remote_addr.clone());
        audit.user_agent.push(row.facts.user_agent.clone());
        audit.content_type.push(row.facts.content_type.clone());
        audit.body_bytes.push(row.facts.body_bytes);
        audit.received_at.push(row.at);
        audit.door.push(row.facts.transport.door.as_str());
        audit.transport_id.push(row.facts.transport.id.clone());
        audit.transport.push(row.facts.transport.meta_json());
        for m in &d.outbox {
            outbox.inbox_id.push(d.id);
            outbox.id.push(m.id);
            outbox.invoice_id.push(m.invoice_id);
            outbox.idempotency_key.push(m.idempotency_key.clone());
            outbox.payload.push(m.payload.clone());
            outbox.created_at.push(d.received_at);
        }
    }
    let query = lines.bind(invoices.bind(documents.bind(query)));
    let query = audit.bind(acks.bind(query).bind(ack::CONTROL_NUMBER));
    outbox.bind(query.bind(outbox::ACCOUNTING_API))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The highest `$n` a statement names.
    fn highest_parameter(sql: &str) -> usize {
        sql.split('$')
            .skip(1)
            .filter_map(|rest| {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn every_parameter_of_the_claim_is_bound_once() {
        assert_eq!(highest_parameter(CLAIM), CLAIM_BINDS);
        // REPLACE_REJECTED binds one inbox row ($1–$15), the effects and the previous fingerprint.
        assert_eq!(highest_parameter(REPLACE_REJECTED), CLAIM_BINDS + 1);
        let mut query = bind_batch(presized(CLAIM, &[]), &[]);
        let arguments = sqlx::Execute::take_arguments(&mut query).expect("bound").expect("arguments");
        assert_eq!(sqlx::Arguments::len(&arguments), highest_parameter(CLAIM));
    }
}
