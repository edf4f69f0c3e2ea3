//! The retention purge, at scale. On PostgreSQL, payloads and the audit trail go a day partition at
//! a time (`partitions`: detached and dropped whole), once all of the day is past the horizon: they
//! are kept up to a day longer than the retention, and never deleted row by row. Every other kind
//! of expired row (on SQLite, every kind) goes in batches of `batch` rows, each batch its own short
//! statement (on PostgreSQL taking only rows nobody has locked, `SKIP LOCKED`). Each step (a batch,
//! a day) is followed by a rest four times as long as it took, so that ingest never waits behind
//! the purge and has the database to itself four fifths of the purge's time. On PostgreSQL one
//! replica purges at a time (a session advisory lock; the others skip the run). A dry run counts
//! instead.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Db, Store, StoreError, partitions};

/// The advisory lock key of the purge ("edi-inbo" in ASCII).
const PURGE_LOCK: i64 = 0x6564_692d_696e_626f;

/// What a purge run drops.
#[derive(Debug, Clone, Copy)]
pub struct PurgeRun {
    /// Payloads, audited attempts, refusal counts, settled outbox payloads, resolved quarantine
    /// entries and SNS confirmation messages older than this go (on PostgreSQL, payloads and
    /// attempts with the last whole UTC day before it).
    pub payloads_before: DateTime<Utc>,
    /// Interchanges (keys, outcomes, documents, invoices, acknowledgements, outbox rows) older than
    /// this go too; `None` keeps them forever.
    pub keys_before: Option<DateTime<Utc>>,
    pub now: DateTime<Utc>,
    pub batch: u32,
    pub dry_run: bool,
}

/// What a purge dropped (or, in a dry run, would drop).
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Purged {
    pub payloads: u64,
    pub attempts: u64,
    pub refusals: u64,
    pub outbox_payloads: u64,
    /// Quarantine entries an operator resolved (released or discarded); held ones stay.
    pub quarantine: u64,
    /// SNS confirmation messages, confirmed or not (SNS's tokens expire after three days).
    pub sns_messages: u64,
    /// Console sessions past their expiry (signed out or not).
    pub console_sessions: u64,
    pub console_devices: u64,
    /// Recorded operator actions older than the retention.
    pub operator_actions: u64,
    pub interchanges: u64,
    /// Counted, not dropped.
    pub dry_run: bool,
    /// Another replica was purging; this run did nothing.
    pub skipped: bool,
}

/// Where a step's rows end: a time, or (for the interchanges, found by their time-ordered id on
/// the primary key) the smallest UUIDv7 of that time.
#[derive(Clone, Copy)]
enum Horizon {
    Time(DateTime<Utc>),
    Id(Uuid),
}

/// One kind of expired row: its table, which rows (`$1` is the horizon), and what happens to them.
struct Step {
    table: &'static str,
    filter: &'static str,
    /// `SET …` for an UPDATE, `None` to delete.
    set: Option<&'static str>,
    /// The primary key of a table partitioned by day on PostgreSQL (whose `ctid` names a row only
    /// within its partition); `None` for the others.
    partitioned_key: Option<&'static str>,
}

const PAYLOADS: Step = Step {
    table: "payloads",
    filter: "received_at < $1",
    set: None,
    partitioned_key: Some("received_at, inbox_id"),
};
const ATTEMPTS: Step = Step {
    table: "deliveries",
    filter: "received_at < $1",
    set: None,
    partitioned_key: Some("id, received_at"),
};
const REFUSALS: Step = Step { table: "refusals", filter: "minute < $1", set: None, partitioned_key: None };
const OUTBOX_PAYLOADS: Step = Step {
    table: "outbox",
    filter: "payload IS NOT NULL AND status IN ('delivered', 'discarded') AND created_at < $1",
    set: Some("payload = NULL"),
    partitioned_key: None,
};
const QUARANTINE: Step = Step {
    table: "quarantine",
    filter: "status IN ('released', 'discarded') AND resolved_at < $1",
    set: None,
    partitioned_key: None,
};
const SNS_MESSAGES: Step =
    Step { table: "sns_subscriptions", filter: "received_at < $1", set: None, partitioned_key: None };
const CONSOLE_SESSIONS: Step =
    Step { table: "console_sessions", filter: "expires_at < $1", set: None, partitioned_key: None };
const CONSOLE_DEVICES: Step =
    Step { table: "console_devices", filter: "expires_at < $1", set: None, partitioned_key: None };
const OPERATOR_ACTIONS: Step =
    Step { table: "operator_actions", filter: "at < $1", set: None, partitioned_key: None };
const INTERCHANGES: Step = Step { table: "inbox", filter: "id < $1", set: None, partitioned_key: None };

/// The tables partitioned by day on PostgreSQL.
pub(super) const PARTITIONED: [&str; 2] = [PAYLOADS.table, ATTEMPTS.table];

impl Step {
    /// One batch: at most `$2` rows, on PostgreSQL only rows no other transaction holds.
    fn batch_sql(&self, db: &Db) -> String {
        let change = match self.set {
            Some(set) => format!("UPDATE {} SET {set}", self.table),
            None => format!("DELETE FROM {}", self.table),
        };
        let rows = |row: &str, lock: &str| {
            format!("SELECT {row} FROM {} WHERE {} LIMIT $2{lock}", self.table, self.filter)
        };
        match (db, self.partitioned_key) {
            (Db::Postgres(_), Some(key)) => {
                format!("{change} WHERE ({key}) IN ({})", rows(key, " FOR UPDATE SKIP LOCKED"))
            }
            (Db::Postgres(_), None) => {
                format!("{change} WHERE ctid = ANY(ARRAY({}))", rows("ctid", " FOR UPDATE SKIP LOCKED"))
            }
            (Db::Sqlite(_), _) => format!("{change} WHERE rowid IN ({})", rows("rowid", "")),
        }
    }

    fn count_sql(&self) -> String {
        format!("SELECT COUNT(*) FROM {} WHERE {}", self.table, self.filter)
    }
}

/// Binds a horizon as its column type.
macro_rules! bind_horizon {
    ($query:expr, $horizon:expr) => {
        match $horizon {
            Horizon::Time(time) => $query.bind(time),
            Horizon::Id(id) => $query.bind(id),
        }
    };
}

/// Runs `step` to the end (batches until one comes back short), or counts it in a dry run.
macro_rules! run_step {
    ($db:expr, $conn:expr, $step:expr, $horizon:expr, $run:expr) => {{
        let (step, horizon, run): (&Step, Horizon, &PurgeRun) = (&$step, $horizon, &$run);
        if run.dry_run {
            let sql = step.count_sql();
            let count: i64 = bind_horizon!(sqlx::query_scalar(sqlx::AssertSqlSafe(sql)), horizon)
                .fetch_one(&mut *$conn)
                .await?;
            u64::try_from(count).unwrap_or_default()
        } else {
            let sql = step.batch_sql($db);
            let mut total = 0;
            loop {
                let started = std::time::Instant::now();
                let query = bind_horizon!(sqlx::query(sqlx::AssertSqlSafe(sql.clone())), horizon)
                    .bind(i64::from(run.batch));
                let dropped = query.execute(&mut *$conn).await?.rows_affected();
                total += dropped;
                if dropped < u64::from(run.batch) {
                    break total;
                }
                yield_to_ingest(started).await;
            }
        }
    }};
}

/// Every step of `run` on `conn`.
macro_rules! run_all {
    ($db:expr, $conn:expr, $run:expr, $partitioned_before:expr) => {{
        let run: PurgeRun = $run;
        let time = Horizon::Time(run.payloads_before);
        let days = Horizon::Time($partitioned_before);
        let purged = Purged {
            payloads: run_step!($db, $conn, PAYLOADS, days, run),
            attempts: run_step!($db, $conn, ATTEMPTS, days, run),
            refusals: run_step!($db, $conn, REFUSALS, time, run),
            outbox_payloads: run_step!($db, $conn, OUTBOX_PAYLOADS, time, run),
            quarantine: run_step!($db, $conn, QUARANTINE, time, run),
            sns_messages: run_step!($db, $conn, SNS_MESSAGES, time, run),
            console_sessions: run_step!($db, $conn, CONSOLE_SESSIONS, Horizon::Time(run.now), run),
            console_devices: run_step!($db, $conn, CONSOLE_DEVICES, Horizon::Time(run.now), run),
            operator_actions: run_step!($db, $conn, OPERATOR_ACTIONS, time, run),
            interchanges: match run.keys_before {
                Some(before) => run_step!($db, $conn, INTERCHANGES, Horizon::Id(first_id_at(before)), run),
                None => 0,
            },
            dry_run: run.dry_run,
            skipped: false,
        };
        Ok::<Purged, StoreError>(purged)
    }};
}

/// How many times as long as each step took the purge then waits: a step (a batch of rows, or a
/// day partition detached, counted and dropped) keeps one connection busy, taking one of the
/// database's CPUs from ingest while it runs. Resting four times as long leaves ingest all of them
/// four fifths of the time (`bench/purge.sh` measured 0.6 times the undisturbed rate inside
/// unpaced partition drops on two CPUs).
const REST_PER_WORK: u32 = 4;

/// Rests after a step that started at `started`; see [`REST_PER_WORK`].
async fn yield_to_ingest(started: std::time::Instant) {
    tokio::time::sleep(started.elapsed() * REST_PER_WORK).await;
}

/// Drops `table`'s day partitions whose whole day is before `horizon`, one at a time, resting after
/// each; returns the rows they held.
async fn drop_expired_days(
    conn: &mut sqlx::PgConnection,
    table: &str,
    horizon: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let mut rows = 0;
    for partition in partitions::expired(conn, table, horizon).await? {
        let started = std::time::Instant::now();
        rows += partitions::drop(conn, table, &partition).await?;
        yield_to_ingest(started).await;
    }
    Ok(rows)
}

/// The smallest UUIDv7 of `time`: every id minted before it sorts below.
fn first_id_at(time: DateTime<Utc>) -> Uuid {
    let millis = u128::try_from(time.timestamp_millis()).unwrap_or(0) & ((1 << 48) - 1);
    Uuid::from_u128((millis << 80) | (0x7 << 76))
}

impl Store {
    /// Drops (or counts) what `run` says has expired; see [`PurgeRun`].
    pub async fn purge(&self, run: PurgeRun) -> Result<Purged, StoreError> {
        match &self.db {
            Db::Postgres(postgres) => {
                let mut conn = postgres.primary.pool().acquire().await?;
                // Every replica makes the coming days' partitions, whichever purges.
                partitions::create_ahead(&mut conn, &PARTITIONED, run.now).await?;
                let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                    .bind(PURGE_LOCK)
                    .fetch_one(&mut *conn)
                    .await?;
                if !locked {
                    return Ok(Purged { skipped: true, dry_run: run.dry_run, ..Purged::default() });
                }
                let days = partitions::day_start(run.payloads_before);
                let purged = async {
                    // Whole days only: the batches then find rows only where a day could not be
                    // dropped (a partition that is not one of the service's days).
                    let (mut payloads, mut attempts) = (0, 0);
                    if !run.dry_run {
                        payloads = drop_expired_days(&mut conn, PAYLOADS.table, days).await?;
                        attempts = drop_expired_days(&mut conn, ATTEMPTS.table, days).await?;
                    }
                    let purged = run_all!(&self.db, conn, run, days)?;
                    Ok::<Purged, StoreError>(Purged {
                        payloads: purged.payloads + payloads,
                        attempts: purged.attempts + attempts,
                        ..purged
                    })
                }
                .await;
                let unlocked =
                    sqlx::query("SELECT pg_advisory_unlock($1)").bind(PURGE_LOCK).execute(&mut *conn).await;
                if unlocked.is_err() {
                    // A connection that may still hold the lock must not go back to the pool.
                    conn.close_on_drop();
                }
                purged
            }
            Db::Sqlite(sqlite) => {
                let mut conn = sqlite.pool.acquire().await?;
                run_all!(&self.db, conn, run, run.payloads_before)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_id_of_a_time_sorts_after_every_earlier_id_and_before_later_ones() {
        let now = Utc::now();
        let bound = first_id_at(now);
        let earlier = first_id_at(now - chrono::Duration::milliseconds(1));
        let minted = Uuid::now_v7();
        assert!(earlier < bound && bound <= minted, "{earlier} {bound} {minted}");
        assert_eq!(bound.get_version_num(), 7);
        assert_eq!(first_id_at(DateTime::<Utc>::MIN_UTC), Uuid::from_u128(0x7 << 76));
    }
}
