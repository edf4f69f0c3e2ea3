//! PostgreSQL writes. Deliveries are recorded in batches (group commit, see `batch`): one statement
//! claims every key of the batch (`INSERT … ON CONFLICT DO NOTHING` on the unique (source,
//! message_id) index, in key order) and writes, for the deliveries whose row is their own, documents,
//! invoices, lines, acknowledgements, audit rows and outbox messages from arrays; the same statement reads the rows
//! that hold the other keys, writing nothing to them. One statement is one transaction and one
//! commit for the batch, so a delivery and its effects commit together or not at all. A concurrent
//! duplicate waits for the winner's COMMIT in the unique index and then sees its row: a replay or a
//! conflict. No row is updated by more than one delivery.

use std::collections::HashMap;

use sqlx::PgPool;
use sqlx::postgres::{PgArguments, PgPoolOptions};
use sqlx::query::QueryAs;
use uuid::Uuid;

use super::batch::{self, Job};
use super::{StoreError, StoreOptions, audit, effect_rows, position};
use crate::edi::ack;
use crate::inbox::outbox::{self, OutboxMessage};
use crate::inbox::{Claim, Delivery, Next, Outcome, StoredDocument, decide};

/// The pool and the queue of the writer tasks.
#[derive(Clone)]
pub(super) struct Postgres {
    pub(super) pool: PgPool,
    pub(super) queue: batch::Queue,
}

impl Postgres {
    pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<Postgres, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect(url)
            .await?;
        // A few batches in flight at once keep the pool busy without one writer's latency bounding
        // everyone's throughput.
        let writers = usize::try_from(options.max_connections / 8).unwrap_or(1).max(1);
        let queue = batch::Queue::start("postgres", writers, {
            let pool = pool.clone();
            move |jobs| {
                let pool = pool.clone();
                async move {
                    let outcomes = record_batch(&pool, &jobs).await;
                    (jobs, outcomes)
                }
            }
        });
        Ok(Postgres { pool, queue })
    }
}

/// Writes, for every row `claim` returns, that delivery's documents, invoices, lines,
/// acknowledgement (its control number from the cycling sequence, which never waits for another
/// delivery's COMMIT), audit row and outbox messages, then selects `$tail`. The arrays cover every
/// delivery of the batch, each row naming its delivery; only claimed deliveries' rows are written.
/// `$16`–`$73` are bound by [`bind_effects`].
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
                    OR EXISTS (SELECT FROM unnest($71::text[], $72::text[], $54::text[], $55::text[])
                            WITH ORDINALITY AS earlier (door, transport_id, source, message_id, position)
                        WHERE earlier.position < a.position AND earlier.transport_id = a.transport_id
                            AND earlier.door = a.door
                            AND (earlier.source, earlier.message_id) IS DISTINCT FROM (a.source, a.message_id)))
                FROM unnest($51::uuid[], $52::uuid[], $53::text[], $54::text[], $55::text[], $56::text[],
                    $57::int4[], $58::text[], $59::text[], $60::text[], $61::text[], $62::int8[],
                    $63::timestamptz[], $71::text[], $72::text[], $73::text[]) WITH ORDINALITY
                    AS a (id, inbox_id, partner_id, source, message_id, outcome, status, request_id,
                        remote_addr, user_agent, content_type, body_bytes, received_at, door, transport_id,
                        transport, position)
                JOIN claim ON claim.id = a.inbox_id
                RETURNING inbox_id, transport_reused
            ), outbox_written AS (
                INSERT INTO outbox (id, invoice_id, destination, idempotency_key, payload, status,
                    next_attempt_at, created_at)
                SELECT o.id, o.invoice_id, $64, o.idempotency_key, o.payload, 'pending', o.created_at,
                    o.created_at
                FROM unnest($65::uuid[], $66::uuid[], $67::uuid[], $68::text[], $69::text[],
                    $70::timestamptz[])
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
    let rows: Vec<Claimed> = bind_batch(sqlx::query_as(CLAIM), jobs).fetch_all(pool).await?;
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
                let query = bind_inbox_row!(sqlx::query_as::<_, Claimed>(REPLACE_REJECTED), delivery);
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

/// One array of `$field` over `$rows`.
macro_rules! column {
    ($rows:expr, $field:ident) => {
        $rows.iter().map(|row| row.$field.clone()).collect::<Vec<_>>()
    };
}

/// Binds `$1`–`$15`, the inbox rows of the batch as column arrays, then its effects.
fn bind_batch<'q>(query: ClaimQuery<'q>, jobs: &'q [Job]) -> ClaimQuery<'q> {
    let d: Vec<&Delivery> = jobs.iter().map(|job| &*job.delivery).collect();
    let query = query
        .bind(d.iter().map(|d| d.id).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.key.source.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.key.message_id.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.envelope.standard.as_str()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.envelope.sender.qualifier.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.envelope.sender.id.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.envelope.receiver.qualifier.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.envelope.receiver.id.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.envelope.control_number.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.fingerprint.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.payload.to_vec()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.content_type.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.status.as_str()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.response.clone()).collect::<Vec<_>>())
        .bind(d.iter().map(|d| d.received_at).collect::<Vec<_>>());
    bind_effects(query, jobs)
}

/// Binds `$16`–`$73`: documents, invoices, lines, acknowledgements, audit rows and outbox messages
/// of `jobs` as column arrays, each row naming its delivery.
fn bind_effects<'q>(query: ClaimQuery<'q>, jobs: &'q [Job]) -> ClaimQuery<'q> {
    let documents: Vec<(&Delivery, &StoredDocument)> =
        jobs.iter().flat_map(|job| job.delivery.documents.iter().map(|doc| (&*job.delivery, doc))).collect();
    let outbox: Vec<(&Delivery, &OutboxMessage)> =
        jobs.iter().flat_map(|job| job.delivery.outbox.iter().map(|m| (&*job.delivery, m))).collect();
    let (mut invoices, mut lines) = (Vec::new(), Vec::new());
    for job in jobs {
        let (more_invoices, more_lines) = effect_rows(&job.delivery);
        invoices.extend(more_invoices);
        lines.extend(more_lines.into_iter().map(|line| (job.delivery.id, line)));
    }
    let line_inbox_ids: Vec<Uuid> = lines.iter().map(|(id, _)| *id).collect();
    let lines: Vec<_> = lines.into_iter().map(|(_, line)| line).collect();
    query
        .bind(documents.iter().map(|(_, s)| s.id).collect::<Vec<_>>())
        .bind(documents.iter().map(|(d, _)| d.id).collect::<Vec<_>>())
        .bind(documents.iter().map(|(_, s)| position(s.document.position)).collect::<Vec<_>>())
        .bind(documents.iter().map(|(_, s)| s.document.kind.clone()).collect::<Vec<_>>())
        .bind(documents.iter().map(|(_, s)| s.document.control_number.clone()).collect::<Vec<_>>())
        .bind(column!(invoices, id))
        .bind(column!(invoices, inbox_id))
        .bind(column!(invoices, document_id))
        .bind(column!(invoices, number))
        .bind(column!(invoices, issue_date))
        .bind(column!(invoices, purchase_order))
        .bind(column!(invoices, currency))
        .bind(column!(invoices, total))
        .bind(column!(invoices, tax_total))
        .bind(column!(invoices, tax_rate))
        .bind(column!(invoices, seller_name))
        .bind(column!(invoices, seller_qualifier))
        .bind(column!(invoices, seller_id))
        .bind(column!(invoices, buyer_name))
        .bind(column!(invoices, buyer_qualifier))
        .bind(column!(invoices, buyer_id))
        .bind(column!(invoices, allowances_charges))
        .bind(line_inbox_ids)
        .bind(column!(lines, invoice_id))
        .bind(column!(lines, line_number))
        .bind(column!(lines, quantity))
        .bind(column!(lines, unit))
        .bind(column!(lines, unit_price))
        .bind(column!(lines, product_id))
        .bind(column!(lines, description))
        .bind(column!(lines, amount))
        .bind(jobs.iter().map(|job| job.delivery.id).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.delivery.ack.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.delivery.received_at).collect::<Vec<_>>())
        .bind(ack::CONTROL_NUMBER)
        .bind(jobs.iter().map(|_| Uuid::now_v7()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.delivery.id).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.partner_id.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.delivery.key.source.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.delivery.key.message_id.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.outcome).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| i32::from(job.first.status)).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.request_id.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.remote_addr.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.user_agent.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.content_type.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.body_bytes).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.delivery.received_at).collect::<Vec<_>>())
        .bind(outbox::ACCOUNTING_API)
        .bind(outbox.iter().map(|(d, _)| d.id).collect::<Vec<_>>())
        .bind(outbox.iter().map(|(_, m)| m.id).collect::<Vec<_>>())
        .bind(outbox.iter().map(|(_, m)| m.invoice_id).collect::<Vec<_>>())
        .bind(outbox.iter().map(|(_, m)| m.idempotency_key.clone()).collect::<Vec<_>>())
        .bind(outbox.iter().map(|(_, m)| m.payload.clone()).collect::<Vec<_>>())
        .bind(outbox.iter().map(|(d, _)| d.received_at).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.transport.door.as_str()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.transport.id.clone()).collect::<Vec<_>>())
        .bind(jobs.iter().map(|job| job.first.facts.transport.meta_json()).collect::<Vec<_>>())
}
