//! PostgreSQL writes. Deliveries are recorded in batches (group commit, see `batch`): one statement
//! claims every key of the batch (`INSERT … ON CONFLICT DO NOTHING` on the unique (source,
//! message_id) index, in key order) and writes, for the deliveries whose row is their own, payloads, documents,
//! invoices, lines, acknowledgements, audit rows and outbox messages from arrays; the same statement reads the rows
//! that hold the other keys, writing nothing to them. One statement is one transaction and one
//! commit for the batch, so a delivery and its effects commit together or not at all. A concurrent
//! duplicate waits for the winner's COMMIT in the unique index and then sees its row: a replay or a
//! conflict. No row is updated by more than one delivery. A large delivery (see [`Effects`]) is
//! claimed by the same statement (its answer leaves its lists to their rows) with its payload,
//! documents, invoices, lines and outbox messages left out; those are streamed with `COPY` in the
//! same transaction before its one commit.

use std::collections::HashMap;

use sqlx::PgPool;
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use uuid::Uuid;

use std::sync::{Arc, LazyLock};

use super::batch::{self, Job};
use super::copy::CopyRow;
use super::copy::{copy_payload, copy_rows};
use super::invoices;
use super::rows::{self, walked};
use super::tables::{
    self, AckArrays, AckRow, Arrays, DeliveryArrays, DeliveryRow, DocumentArrays, DocumentRow, InboxArrays,
    InboxRow, InvoiceArrays, InvoiceRow, LineArrays, LineRow, OutboxArrays, OutboxRow, PayloadArrays,
    PayloadRow, Table,
};

use super::confirmed::watched;
use super::durability::synchronous;
use super::hosts::Primary;
use super::{StoreError, StoreOptions, audit};
use crate::edi::ack;
use crate::inbox::{Claim, Next, Outcome, decide};

/// The pool (on the current primary) and the queue of the writer tasks.
#[derive(Clone)]
pub(super) struct Postgres {
    pub(super) primary: Arc<Primary>,
    pub(super) queue: batch::Queue,
    pub(super) require_synchronous_standby: bool,
}

impl Postgres {
    pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<Postgres, StoreError> {
        let primary = Primary::connect(url, options).await?;
        if options.require_synchronous_standby {
            let synchronous = synchronous(&primary.pool()).await?;
            if let Some(wrong) = synchronous.misconfigured() {
                return Err(StoreError::Unavailable(sqlx::Error::Configuration(
                    format!("--require-synchronous-standby: on {}, {wrong}", primary.hosts().current())
                        .into(),
                )));
            }
            if let Some(away) = synchronous.shortfall() {
                tracing::warn!(host = primary.hosts().current(), "{away}; not ready until one does");
            }
        }
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
        Ok(Postgres { primary, queue, require_synchronous_standby: options.require_synchronous_standby })
    }
}

/// The `$n` of [`claim_statement`], numbered from the tables' descriptions in the order they are
/// bound: the inbox rows, payloads, documents, invoices, lines, acknowledgements and the placeholder of their
/// control number, audit rows, outbox messages.
struct Numbering {
    inbox: usize,
    payloads: usize,
    documents: usize,
    invoices: usize,
    lines: usize,
    acks: usize,
    ack_placeholder: usize,
    audit: usize,
    outbox: usize,
    /// Every parameter of the claim (one more, the previous fingerprint, replaces a rejected row).
    total: usize,
}

const NUMBERING: Numbering = {
    let inbox = 1;
    let payloads = inbox + tables::params(InboxRow::COLUMNS);
    let documents = payloads + tables::params(PayloadRow::COLUMNS);
    let invoices = documents + tables::params(DocumentRow::COLUMNS);
    let lines = invoices + tables::params(InvoiceRow::COLUMNS);
    let acks = lines + tables::params(LineRow::COLUMNS);
    let ack_placeholder = acks + tables::params(AckRow::COLUMNS);
    let audit = ack_placeholder + 1;
    let outbox = audit + tables::params(DeliveryRow::COLUMNS);
    let total = outbox + tables::params(OutboxRow::COLUMNS) - 1;
    Numbering { inbox, payloads, documents, invoices, lines, acks, ack_placeholder, audit, outbox, total }
};

/// `INSERT INTO table (columns) SELECT … FROM unnest(…) JOIN claim`: a table's rows of the claimed
/// deliveries, as `name_written`.
fn effect<T: Table>(first: usize) -> String {
    let columns = T::COLUMNS;
    format!(
        "{}_written AS ({}SELECT {} FROM {} JOIN claim ON claim.id = x.delivery)",
        T::NAME,
        tables::insert::<T>(),
        tables::select(columns, "x"),
        tables::unnest(columns, first, "x")
    )
}

/// The claim of a batch (`claim`, a CTE writing or updating `inbox` rows from `incoming`, and the
/// CTEs of `also`) with, for every row it returns, that delivery's payload, documents, invoices, lines, acknowledgement (its
/// control number from the cycling sequence, which never waits for another delivery's COMMIT),
/// audit row and outbox messages; then `tail`. The arrays cover every delivery of the batch, each
/// row naming its delivery; only claimed deliveries' rows are written.
fn claim_statement(claim: &str, also: &str, tail: &str) -> String {
    let n = &NUMBERING;
    let audit = DeliveryRow::COLUMNS;
    // `transport_reused` is the last column: computed here, from the trail and the batch itself.
    let (reused, logged) = audit.split_last().map(|(last, rest)| (last.name, rest)).unwrap_or(("", audit));
    let at = |name| tables::param(audit, n.audit, name);
    format!(
        "WITH incoming AS (SELECT * FROM {incoming}), claim AS ({claim}),{also}
        {payloads}, {documents}, {invoices}, {lines},
        ack_written AS (
            INSERT INTO acks (inbox_id, control_number, body, created_at)
            SELECT a.inbox_id, a.value, replace(a.body, ${placeholder}, lpad(a.value::text, 9, '0')), a.created_at
            FROM (SELECT a.inbox_id, a.body, a.created_at, nextval('ack_control_numbers') AS value
                FROM {acks} JOIN claim ON claim.id = a.delivery) AS a
            RETURNING inbox_id, control_number
        ), audit_written AS (
            INSERT INTO deliveries ({audit_names})
            SELECT {audit_select},
                a.transport_id IS NOT NULL AND (EXISTS (SELECT FROM deliveries seen
                    WHERE seen.transport_id = a.transport_id AND seen.door = a.door
                        AND (seen.source IS DISTINCT FROM a.source OR seen.message_id IS DISTINCT FROM a.message_id))
                OR EXISTS (SELECT FROM unnest({door}::text[], {transport_id}::text[], {source}::text[], {message_id}::text[])
                        WITH ORDINALITY AS earlier (door, transport_id, source, message_id, position)
                    WHERE earlier.position < a.position AND earlier.transport_id = a.transport_id
                        AND earlier.door = a.door
                        AND (earlier.source, earlier.message_id) IS DISTINCT FROM (a.source, a.message_id))) AS {reused}
            FROM unnest({audit_arrays}) WITH ORDINALITY AS a (delivery, {audit_all}, position)
            JOIN claim ON claim.id = a.delivery
            RETURNING inbox_id, transport_reused
        ), {outbox}
        SELECT claim.id AS delivery_id, claim.id, true AS fresh, claim.status, claim.payload_sha256,
            NULL::text AS response_body, false AS lists_from_rows,
            ack_written.control_number AS ack_control_number,
            COALESCE(audit_written.transport_reused, false) AS transport_reused
        FROM claim LEFT JOIN ack_written ON ack_written.inbox_id = claim.id
            LEFT JOIN audit_written ON audit_written.inbox_id = claim.id
        {tail}",
        incoming = tables::unnest(InboxRow::COLUMNS, n.inbox, "i"),
        payloads = effect::<PayloadRow>(n.payloads),
        documents = effect::<DocumentRow>(n.documents),
        invoices = effect::<InvoiceRow>(n.invoices),
        lines = effect::<LineRow>(n.lines),
        placeholder = n.ack_placeholder,
        acks = tables::unnest(AckRow::COLUMNS, n.acks, "a"),
        audit_names = tables::names(audit),
        audit_select = tables::select(logged, "a"),
        door = at("door"),
        transport_id = at("transport_id"),
        source = at("source"),
        message_id = at("message_id"),
        audit_arrays = tables::arrays(audit, n.audit),
        audit_all = tables::names(audit),
        outbox = effect::<OutboxRow>(n.outbox),
    )
}

/// Claims every delivery of a batch: inserts the rows whose key is free (in key order, so that
/// concurrent batches wait for each other in one order and never deadlock) with their effects, and
/// reads the rows that hold the other keys (no row lock: DO NOTHING does not lock the existing
/// row). A key whose holder committed after this statement's snapshot was taken (a concurrent
/// duplicate, or an earlier delivery of the same batch) returns no row; [`READ`] fetches it.
static CLAIM: LazyLock<String> = LazyLock::new(|| {
    claim_statement(
        &format!(
            "{}SELECT {} FROM incoming AS i ORDER BY i.source, i.message_id
            ON CONFLICT (source, message_id) DO NOTHING RETURNING id, status, payload_sha256",
            tables::insert::<InboxRow>(),
            tables::select(InboxRow::COLUMNS, "i"),
        ),
        "",
        "UNION ALL
        SELECT incoming.id, inbox.id, false, inbox.status, inbox.payload_sha256, inbox.response_body,
            inbox.lists_from_rows, NULL::bigint, false
        FROM incoming JOIN inbox ON inbox.source = incoming.source AND inbox.message_id = incoming.message_id
        WHERE NOT EXISTS (SELECT FROM claim WHERE claim.id = incoming.id)",
    )
});

/// The row holding a key, read with a fresh snapshot.
const READ: &str = "SELECT id, false AS fresh, status, payload_sha256, response_body, lists_from_rows,
        NULL::bigint AS ack_control_number
    FROM inbox WHERE source = $1 AND message_id = $2";

/// Overwrites a rejected attempt that still holds the previous fingerprint (the last parameter)
/// with one delivery: every column but the key, and its stored payload replaced.
static REPLACE_REJECTED: LazyLock<String> = LazyLock::new(|| {
    let rejected = format!(
        "held.source = i.source AND held.message_id = i.message_id AND held.status = 'rejected'
            AND held.payload_sha256 = ${}",
        NUMBERING.total + 1
    );
    claim_statement(
        &format!(
            "UPDATE inbox AS held SET {} FROM incoming AS i WHERE {rejected}
            RETURNING held.id, held.status, held.payload_sha256",
            tables::inbox_replaced_from("i"),
        ),
        &format!(
            " payload_replaced AS (DELETE FROM payloads p USING inbox AS held, incoming AS i
                WHERE {rejected} AND p.inbox_id = held.id AND p.received_at = held.received_at),"
        ),
        "",
    )
});

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

/// How a delivery's payload, documents, invoices, lines and outbox messages reach the database.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effects {
    /// As arrays bound to the claim statement, with every other delivery of its batch.
    Bound,
    /// Streamed with `COPY` after the claim, in its transaction: a large delivery
    /// ([`LARGE_DOCUMENTS`]), whose arrays, encoded into the statement's parameters and again into
    /// its wire message, would hold several times their size.
    Streamed,
}

impl Effects {
    fn of(job: &Job) -> Effects {
        match job.delivery.lists_from_rows() {
            true => Effects::Streamed,
            false => Effects::Bound,
        }
    }
}

/// Records a batch with one statement. Should it fail, each delivery is recorded again with a
/// statement of its own, so that a failure stays that delivery's. A batch holding a large delivery
/// is recorded one delivery at a time, the large ones streamed.
async fn record_batch(pool: &PgPool, jobs: &[Job]) -> Vec<Result<Outcome, StoreError>> {
    if jobs.len() > 1 && jobs.iter().any(|job| Effects::of(job) == Effects::Streamed) {
        let mut outcomes = Vec::with_capacity(jobs.len());
        for job in jobs {
            outcomes.extend(Box::pin(record_batch(pool, std::slice::from_ref(job))).await);
        }
        return outcomes;
    }
    if let [job] = jobs
        && Effects::of(job) == Effects::Streamed
    {
        return vec![record_streamed(pool, job).await];
    }
    let mut claims = match claim(pool, jobs).await {
        Ok(claims) => claims,
        // Committed on the primary only: none of the batch is acknowledged (claimed again one by
        // one, each would find its own row and answer it as a replay).
        Err(StoreError::Unconfirmed) => return jobs.iter().map(|_| Err(StoreError::Unconfirmed)).collect(),
        Err(error) if jobs.len() == 1 => return vec![Err(error)],
        Err(_) => {
            let mut outcomes = Vec::with_capacity(jobs.len());
            for job in jobs {
                let outcome = match claim(pool, std::slice::from_ref(job)).await {
                    Ok(mut claims) => resolve(pool, job, claims.remove(&job.delivery.id())).await,
                    Err(error) => Err(error),
                };
                outcomes.push(outcome);
            }
            return outcomes;
        }
    };
    let mut outcomes = Vec::with_capacity(jobs.len());
    for job in jobs {
        outcomes.push(resolve(pool, job, claims.remove(&job.delivery.id())).await);
    }
    outcomes
}

/// Records one large delivery: [`CLAIM`] of its key, acknowledgement and audit row, then, when the
/// key is its own, its payload, documents, invoices, lines and outbox messages streamed,
/// and one commit; otherwise nothing was written and the holder decides, as for any delivery.
async fn record_streamed(pool: &PgPool, job: &Job) -> Result<Outcome, StoreError> {
    let jobs = std::slice::from_ref(job);
    let (claimed, local_only) = watched(async {
        let mut tx = pool.begin().await?;
        let query = bind_batch(presized(CLAIM.as_str(), jobs, Effects::Streamed), jobs, Effects::Streamed);
        let claim = query.fetch_optional(&mut *tx).await?.map(|row| row.claim);
        if claim.as_ref().is_some_and(|claim| claim.fresh) {
            let d = &*job.delivery;
            copy_payload(&mut tx, &rows::payload_row(d)).await?;
            copy_rows::<DocumentRow, _>(&mut tx, walked(d, d.outlines()), |stored, out| {
                rows::document_row(d.id(), stored).write_line(out);
            })
            .await?;
            copy_rows::<InvoiceRow, _>(&mut tx, walked(d, d.documents()), |stored, out| {
                invoices::invoice_row(d.id(), stored).iter().for_each(|row| row.write_line(out));
            })
            .await?;
            copy_rows::<LineRow, _>(&mut tx, walked(d, d.documents()), |stored, out| {
                invoices::lines_of(stored).for_each(|row| row.write_line(out));
            })
            .await?;
            if d.books_with_accounting() {
                copy_rows::<OutboxRow, _>(&mut tx, walked(d, d.documents()), |stored, out| {
                    let message = d.booking(stored);
                    message.iter().for_each(|m| rows::outbox_row(m, d.received_at()).write_line(out));
                })
                .await?;
            }
            tx.commit().await?;
        }
        Ok::<_, StoreError>(claim)
    })
    .await;
    let claim = claimed?;
    if local_only {
        return Err(StoreError::Unconfirmed);
    }
    resolve(pool, job, claim).await
}

/// Runs [`CLAIM`] for `jobs`: each claimed or already held key's row, by delivery id; `Unconfirmed`
/// when its commit stands on the primary only.
async fn claim(pool: &PgPool, jobs: &[Job]) -> Result<HashMap<Uuid, Claim>, StoreError> {
    let query = bind_batch(presized(CLAIM.as_str(), jobs, Effects::Bound), jobs, Effects::Bound);
    let (rows, local_only) = watched(query.fetch_all(pool)).await;
    let rows: Vec<Claimed> = rows?;
    if local_only {
        return Err(StoreError::Unconfirmed);
    }
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
                    .bind(delivery.key().source.as_str())
                    .bind(&delivery.key().message_id)
                    .fetch_optional(pool)
                    .await?;
                let Some(holder) = holder else { continue };
                holder
            }
        };
        if current.transport_reused {
            audit::transport_reused(&job.first.facts.transport, delivery.key());
        }
        match decide(current, delivery) {
            Next::Done(outcome) => return Ok(outcome),
            Next::ReplaceRejected { previous_fingerprint } => {
                let replaced = std::slice::from_ref(job);
                let replace = bind_batch(
                    presized(REPLACE_REJECTED.as_str(), replaced, Effects::Bound),
                    replaced,
                    Effects::Bound,
                )
                .bind(previous_fingerprint.as_str());
                let (replaced, local_only) = watched(replace.fetch_optional(pool)).await;
                let replaced = replaced?;
                if local_only {
                    return Err(StoreError::Unconfirmed);
                }
                if let Some(replaced) = replaced {
                    if replaced.claim.transport_reused {
                        audit::transport_reused(&job.first.facts.transport, delivery.key());
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

/// `sql` with its parameters' buffer sized once for what `jobs` bind: grown by doubling instead, a
/// large interchange's parameters would hold up to twice their size.
fn presized<'q>(sql: &'static str, jobs: &[Job], effects: Effects) -> ClaimQuery<'q> {
    let mut arguments = PgArguments::default();
    let bytes = jobs.iter().map(|job| match effects {
        Effects::Bound => job.delivery.written_bytes(),
        Effects::Streamed => job.delivery.claimed_bytes(),
    });
    sqlx::Arguments::reserve(&mut arguments, NUMBERING.total, bytes.sum());
    sqlx::query_as_with(sql, arguments)
}

/// Binds every parameter of [`CLAIM`] (or [`REPLACE_REJECTED`] but its last): each table's rows of
/// `jobs` as arrays, in the order of [`NUMBERING`]; with [`Effects::Streamed`], the key row with its
/// answer, its acknowledgement and audit row only.
fn bind_batch<'q>(query: ClaimQuery<'q>, jobs: &'q [Job], effects: Effects) -> ClaimQuery<'q> {
    let (mut inbox, mut payloads) = (InboxArrays::default(), PayloadArrays::default());
    let (mut documents, mut invoices, mut lines) =
        (DocumentArrays::default(), InvoiceArrays::default(), LineArrays::default());
    let (mut acks, mut audit, mut outbox) =
        (AckArrays::default(), DeliveryArrays::default(), OutboxArrays::default());
    for job in jobs {
        let d = &*job.delivery;
        acks.add(d.id(), rows::ack_row(d, 0));
        audit.add(d.id(), job.audit_row(false).row());
        inbox.add(d.id(), rows::inbox_row(d));
        if effects == Effects::Streamed {
            continue;
        }
        payloads.add(d.id(), rows::payload_row(d));
        rows::document_rows(d).for_each(|row| documents.add(d.id(), row));
        invoices::invoice_rows(d).for_each(|row| invoices.add(d.id(), row));
        invoices::line_rows(d).for_each(|row| lines.add(d.id(), row));
        rows::outbox_rows(d).for_each(|row| outbox.add(d.id(), row));
    }
    let query = lines.bind(invoices.bind(documents.bind(payloads.bind(inbox.bind(query)))));
    outbox.bind(audit.bind(acks.bind(query).bind(ack::CONTROL_NUMBER)))
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
        assert_eq!(highest_parameter(&CLAIM), NUMBERING.total);
        // REPLACE_REJECTED binds the same, then the previous fingerprint.
        assert_eq!(highest_parameter(&REPLACE_REJECTED), NUMBERING.total + 1);
        assert_eq!(DeliveryRow::COLUMNS.last().map(|c| c.name), Some("transport_reused"));
        let mut query = bind_batch(presized(CLAIM.as_str(), &[], Effects::Bound), &[], Effects::Bound);
        let arguments = sqlx::Execute::take_arguments(&mut query).expect("bound").expect("arguments");
        assert_eq!(sqlx::Arguments::len(&arguments), highest_parameter(&CLAIM));
    }
}
