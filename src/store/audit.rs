//! The audit trail. A first delivery's row is written by the statement that records it (see the
//! backends); everything else a request leaves behind — replays and conflicts (one `deliveries` row
//! each) and refusals (a count per remote address, partner, outcome and minute in `refusals`) — is
//! queued here and written by one background task in multi-row batches, one commit per batch and
//! never a commit on the request's path. The queue is bounded: beyond it, attempts are counted as
//! dropped and refusals fold into one `*` address, so a flood costs a bounded number of bytes.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use uuid::Uuid;

use super::rows::{AuditRow, insert_chunked, insert_rows};
use super::tables::DeliveryRow;
use super::{Db, Shared, StoreError};
use crate::inbox::resource::IdempotencyKey;
use crate::inbox::transport::Transport;
use crate::inbox::{Logged, truncated};
use crate::partners::PartnerId;

/// Longest header value the audit trail keeps, in bytes.
pub const MAX_HEADER_BYTES: usize = 256;
/// How often queued audit records are written.
const FLUSH_INTERVAL: Duration = Duration::from_millis(200);
/// Attempts waiting to be written before more are dropped (and counted).
const MAX_QUEUED_ATTEMPTS: usize = 20_000;
/// Distinct refusal counters (rows) per minute before further addresses fold into `*`.
const MAX_REFUSAL_KEYS: usize = 10_000;

/// For each `(transport, key)`, whether its transport id was seen before with another key: in
/// the audit trail (one statement for all) or earlier in the same list. Logged as a security event.
macro_rules! reused_transport_ids {
    ($conn:expr, $keyed:expr) => {{
        let keyed: &[(&$crate::inbox::transport::Transport, &$crate::inbox::resource::IdempotencyKey)] = $keyed;
        let ids: Vec<String> = keyed.iter().filter_map(|(transport, _)| transport.id.clone()).collect();
        let seen: Vec<$crate::store::audit::SeenTransport> = if ids.is_empty() {
            Vec::new()
        } else {
            let mut query = sqlx::QueryBuilder::new(
                "SELECT DISTINCT door, transport_id, source, message_id FROM deliveries WHERE transport_id IN (",
            );
            let mut list = query.separated(", ");
            for id in &ids {
                list.push_bind(id.as_str());
            }
            query.push(")");
            query.build_query_as().persistent(false).fetch_all($conn).await?
        };
        $crate::store::audit::flag_reused(keyed, seen)
    }};
}
pub(super) use reused_transport_ids;

/// A transport id as the audit trail has seen it.
#[derive(sqlx::FromRow)]
pub(super) struct SeenTransport {
    door: String,
    transport_id: String,
    source: Option<String>,
    message_id: Option<String>,
}

/// A `(source, message_id)` a transport id was audited with.
type SeenKey = (Option<String>, Option<String>);

/// See [`reused_transport_ids`].
pub(super) fn flag_reused(keyed: &[(&Transport, &IdempotencyKey)], seen: Vec<SeenTransport>) -> Vec<bool> {
    let mut known: HashMap<(String, String), Vec<SeenKey>> = HashMap::new();
    for row in seen {
        known.entry((row.door, row.transport_id)).or_default().push((row.source, row.message_id));
    }
    keyed
        .iter()
        .map(|(transport, key)| {
            let Some(id) = &transport.id else { return false };
            let keys = known.entry((transport.door.as_str().to_owned(), id.clone())).or_default();
            let reused = keys.iter().any(|(source, message_id)| {
                source.as_deref() != Some(key.source.as_str())
                    || message_id.as_deref() != Some(key.message_id.as_str())
            });
            keys.push((Some(key.source.to_string()), Some(key.message_id.clone())));
            if reused {
                transport_reused(transport, key);
            }
            reused
        })
        .collect()
}

/// Logs and counts a transport id that came back with another interchange: a broker or gateway
/// that reuses ids, or someone replaying a captured message id with other content.
pub fn transport_reused(transport: &Transport, key: &IdempotencyKey) {
    metrics::counter!("edi_inbox_security_events_total", "reason" => "transport-id-reused").increment(1);
    tracing::warn!(
        target: "edi_inbox::security",
        door = transport.door.as_str(),
        transport_id = %Logged(transport.id.as_deref().unwrap_or_default()),
        source = %Logged(key.source.as_str()),
        message_id = %Logged(&key.message_id),
        "transport id seen before with a different interchange"
    );
}

/// What the audit trail keeps of a request: transport facts, truncated, never credentials.
#[derive(Clone, Debug, Default)]
pub struct AttemptFacts {
    pub partner_id: Option<PartnerId>,
    pub request_id: Option<String>,
    /// The peer's IP address (without the port, so that repeated attempts aggregate).
    pub remote_addr: Option<String>,
    pub user_agent: Option<String>,
    pub content_type: Option<String>,
    pub body_bytes: i64,
    /// The door it came through, with the transport's message id and metadata.
    pub transport: Transport,
}

impl AttemptFacts {
    /// Facts from raw header values, each cut to [`MAX_HEADER_BYTES`].
    pub fn new(
        request_id: Option<&str>,
        remote_addr: Option<String>,
        user_agent: Option<&str>,
        content_type: Option<&str>,
    ) -> AttemptFacts {
        AttemptFacts {
            request_id: request_id.map(|v| truncated(v, MAX_HEADER_BYTES)),
            remote_addr,
            user_agent: user_agent.map(|v| truncated(v, MAX_HEADER_BYTES)),
            content_type: content_type.map(|v| truncated(v, MAX_HEADER_BYTES)),
            ..AttemptFacts::default()
        }
    }
}

/// One attempt on a key: a replay, a conflicting resend, a hold or a bypass (a first delivery
/// audits itself).
#[derive(Clone, Debug)]
pub struct Attempt {
    /// The interchange it was answered with; none for a bypassed one.
    pub inbox_id: Option<Uuid>,
    pub key: IdempotencyKey,
    pub outcome: &'static str,
    pub status: u16,
    pub facts: AttemptFacts,
    pub at: DateTime<Utc>,
}

/// What a refusal is counted under.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct RefusalKey {
    minute: DateTime<Utc>,
    remote_addr: String,
    partner_id: String,
    outcome: &'static str,
    status: u16,
}

#[derive(Debug)]
struct RefusalCount {
    attempts: i64,
    user_agent: Option<String>,
    request_id: Option<String>,
}

#[derive(Default)]
pub(super) struct AuditQueue {
    pending: Mutex<Pending>,
}

/// The refusal counters of the latest minute, written or pending: a flood from many addresses
/// writes at most [`MAX_REFUSAL_KEYS`] rows a minute, however many flushes the minute spans.
#[derive(Default)]
struct Counted {
    minute: Option<DateTime<Utc>>,
    keys: HashSet<RefusalKey>,
}

impl Counted {
    /// `key`, or the `*` counter of its minute when the minute has its most counters already.
    fn admit(&mut self, mut key: RefusalKey) -> RefusalKey {
        if self.minute < Some(key.minute) {
            self.minute = Some(key.minute);
            self.keys.clear();
        }
        if self.keys.len() >= MAX_REFUSAL_KEYS && !self.keys.contains(&key) {
            key.remote_addr = "*".into();
            key.partner_id = String::new();
        }
        self.keys.insert(key.clone());
        key
    }
}

#[derive(Default)]
struct Pending {
    attempts: Vec<Attempt>,
    refusals: HashMap<RefusalKey, RefusalCount>,
    dropped: u64,
    counted: Counted,
}

impl AuditQueue {
    pub(super) fn attempt(&self, attempt: Attempt) {
        let Ok(mut pending) = self.pending.lock() else { return };
        if pending.attempts.len() < MAX_QUEUED_ATTEMPTS {
            pending.attempts.push(attempt);
        } else {
            pending.dropped += 1;
        }
    }

    pub(super) fn refusal(
        &self,
        outcome: &'static str,
        status: u16,
        facts: &AttemptFacts,
        at: DateTime<Utc>,
    ) {
        let Ok(mut pending) = self.pending.lock() else { return };
        let key = pending.counted.admit(RefusalKey {
            minute: at.duration_trunc(TimeDelta::minutes(1)).unwrap_or(at),
            remote_addr: facts.remote_addr.clone().unwrap_or_default(),
            partner_id: facts.partner_id.as_ref().map(PartnerId::to_string).unwrap_or_default(),
            outcome,
            status,
        });
        let count = pending.refusals.entry(key).or_insert(RefusalCount {
            attempts: 0,
            user_agent: None,
            request_id: None,
        });
        count.attempts += 1;
        count.user_agent.clone_from(&facts.user_agent);
        count.request_id.clone_from(&facts.request_id);
    }

    /// What is queued now; the minute's counters stay counted.
    fn take(&self) -> Pending {
        let Ok(mut pending) = self.pending.lock() else { return Pending::default() };
        let counted = std::mem::take(&mut pending.counted);
        std::mem::replace(&mut *pending, Pending { counted, ..Pending::default() })
    }

    /// Puts back what could not be written (the database was down), within the bounds.
    fn restore(&self, failed: Pending) {
        let Ok(mut pending) = self.pending.lock() else { return };
        let room = MAX_QUEUED_ATTEMPTS.saturating_sub(pending.attempts.len());
        pending.dropped += failed.dropped + failed.attempts.len().saturating_sub(room) as u64;
        pending.attempts.extend(failed.attempts.into_iter().take(room));
        for (key, count) in failed.refusals {
            if pending.refusals.len() < MAX_REFUSAL_KEYS || pending.refusals.contains_key(&key) {
                pending
                    .refusals
                    .entry(key)
                    .or_insert(RefusalCount { attempts: 0, user_agent: None, request_id: None })
                    .attempts += count.attempts;
            }
        }
    }
}

/// Writes what is queued now; when the database is unavailable it stays queued for the next
/// flush. When the database refuses the batch itself (a value it cannot store), each record is
/// written alone, so that one bad record never holds back the others: the ones refused again are
/// dropped, counted and logged.
pub(super) async fn flush(db: &Db, queue: &AuditQueue) -> Result<(), StoreError> {
    let pending = queue.take();
    if pending.dropped > 0 {
        tracing::warn!(dropped = pending.dropped, "audit queue full: delivery attempts were not audited");
    }
    if pending.attempts.is_empty() && pending.refusals.is_empty() {
        return Ok(());
    }
    match write(db, &pending).await {
        Ok(()) => Ok(()),
        Err(error @ StoreError::Unavailable(_)) => {
            queue.restore(Pending { dropped: 0, ..pending });
            Err(error)
        }
        Err(error) => {
            tracing::warn!(%error, "the database refused an audit batch; writing its records one by one");
            one_by_one(db, queue, pending).await
        }
    }
}

/// Writes each record of `pending` alone; those the database refuses are dropped and counted, and
/// when it becomes unavailable the rest is queued again.
async fn one_by_one(db: &Db, queue: &AuditQueue, pending: Pending) -> Result<(), StoreError> {
    let singles =
        pending.attempts.into_iter().map(|attempt| Pending { attempts: vec![attempt], ..Pending::default() });
    let refusals = pending
        .refusals
        .into_iter()
        .map(|(key, count)| Pending { refusals: HashMap::from([(key, count)]), ..Pending::default() });
    let mut refused = 0u64;
    let mut singles = singles.chain(refusals);
    while let Some(single) = singles.next() {
        match write(db, &single).await {
            Ok(()) => {}
            Err(error @ StoreError::Unavailable(_)) => {
                queue.restore(single);
                singles.for_each(|rest| queue.restore(rest));
                return Err(error);
            }
            Err(error) => {
                refused += 1;
                tracing::warn!(%error, "an audit record the database refuses was dropped");
            }
        }
    }
    metrics::counter!("edi_inbox_audit_records_dropped_total").increment(refused);
    Ok(())
}

async fn write(db: &Db, pending: &Pending) -> Result<(), StoreError> {
    let refusals: Vec<(&RefusalKey, &RefusalCount)> = pending.refusals.iter().collect();
    let keyed: Vec<(&Transport, &IdempotencyKey)> =
        pending.attempts.iter().map(|a| (&a.facts.transport, &a.key)).collect();
    on_db!(db, pool => {
        let mut tx = pool.begin().await?;
        let reused = reused_transport_ids!(&mut *tx, &keyed);
        let rows: Vec<DeliveryRow> = pending.attempts.iter().zip(reused).map(|(a, reused)| AuditRow {
            id: Uuid::now_v7(),
            inbox_id: a.inbox_id,
            key: &a.key,
            outcome: a.outcome,
            status: a.status,
            facts: &a.facts,
            at: a.at,
            transport_reused: reused,
        }.row()).collect();
        insert_rows(&mut *tx, rows, "").await?;
        insert_chunked(
            &mut *tx,
            "INSERT INTO refusals (minute, remote_addr, partner_id, outcome, status, attempts, user_agent, request_id) ",
            &refusals,
            |mut row, (key, count)| {
                row.push_bind(key.minute)
                    .push_bind(&key.remote_addr)
                    .push_bind(&key.partner_id)
                    .push_bind(key.outcome)
                    .push_bind(i32::from(key.status))
                    .push_bind(count.attempts)
                    .push_bind(&count.user_agent)
                    .push_bind(&count.request_id);
            },
            " ON CONFLICT (minute, remote_addr, partner_id, outcome, status) DO UPDATE SET
                attempts = refusals.attempts + excluded.attempts, user_agent = excluded.user_agent,
                request_id = excluded.request_id",
        )
        .await?;
        tx.commit().await?;
    });
    Ok(())
}

/// Flushes the queue every [`FLUSH_INTERVAL`] until the store is closed or dropped.
pub(super) async fn run(db: Db, shared: Weak<Shared>) {
    let mut ticks = tokio::time::interval(FLUSH_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        if db.is_closed() {
            return;
        }
        if let Err(error) = flush(&db, &shared.audit).await {
            tracing::warn!(%error, "writing the audit trail failed; retrying");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(addr: &str) -> AttemptFacts {
        AttemptFacts::new(Some(&"r".repeat(1000)), Some(addr.into()), Some("é".repeat(300).as_str()), None)
    }

    #[test]
    fn header_values_are_truncated_on_a_character_boundary() {
        let facts = facts("192.0.2.1");
        assert_eq!(facts.request_id.as_deref().map(str::len), Some(MAX_HEADER_BYTES));
        let agent = facts.user_agent.unwrap();
        assert!(agent.len() <= MAX_HEADER_BYTES && agent.chars().all(|c| c == 'é'));
    }

    #[test]
    fn refusals_aggregate_per_address_and_minute_within_a_bound() {
        let queue = AuditQueue::default();
        let at = Utc::now();
        for _ in 0..1000 {
            queue.refusal("unauthenticated", 401, &facts("192.0.2.1"), at);
        }
        for n in 0..(MAX_REFUSAL_KEYS + 50) {
            queue.refusal(
                "unauthenticated",
                401,
                &facts(&format!("10.{}.{}.{}", n / 65536, n / 256 % 256, n % 256)),
                at,
            );
        }
        let pending = queue.take();
        assert_eq!(pending.refusals.len(), MAX_REFUSAL_KEYS + 1);
        let one = pending.refusals.iter().find(|(k, _)| k.remote_addr == "192.0.2.1").unwrap().1;
        assert_eq!(one.attempts, 1000);
        let folded = pending.refusals.iter().find(|(k, _)| k.remote_addr == "*").unwrap().1;
        assert_eq!(folded.attempts, 51);
        // The next flushes of the same minute: new addresses fold, counted ones keep their row.
        for n in 0..100 {
            queue.refusal("unauthenticated", 401, &facts(&format!("172.16.0.{n}")), at);
        }
        queue.refusal("unauthenticated", 401, &facts("192.0.2.1"), at);
        let later = queue.take();
        let addresses: Vec<&str> = later.refusals.keys().map(|k| k.remote_addr.as_str()).collect();
        assert_eq!(later.refusals.len(), 2, "{addresses:?}");
        assert_eq!(later.refusals.iter().find(|(k, _)| k.remote_addr == "*").unwrap().1.attempts, 100);
        // A new minute has its own counters.
        let next = at + TimeDelta::minutes(1);
        queue.refusal("unauthenticated", 401, &facts("172.16.0.1"), next);
        assert!(queue.take().refusals.keys().any(|k| k.remote_addr == "172.16.0.1"));
    }
}
