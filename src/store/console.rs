//! What the operator console reads beyond the API's lists: delivery counts per partner, outcome
//! and hour (the overview's figures and chart), the refusals grouped by who and why, and a stored
//! payload. Every query is bounded by time or by a LIMIT, and reads indexed columns
//! (`deliveries.received_at`, the `refusals` primary key, `inbox.id`).

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use uuid::Uuid;

use super::{Db, Store, StoreError};

/// Deliveries (or refused attempts, their outcome prefixed `refused: `) of one partner with one
/// outcome in one clock hour (UTC).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ActivityCount {
    /// Empty when no partner was proven (open mode, or a refusal before authentication).
    pub partner_id: String,
    pub outcome: String,
    /// The first instant of the hour.
    pub hour: DateTime<Utc>,
    pub count: i64,
}

/// What arrived in the last day, for the overview.
#[derive(Debug, Default)]
pub struct Activity {
    /// The current clock hour (so far) and the 23 before it, counted per hour.
    pub hours: Vec<ActivityCount>,
    /// The last 60 minutes, their `hour` the hour each count began in.
    pub last_hour: Vec<ActivityCount>,
}

/// How long after an hour ends its counts are taken as final and kept in memory: past the longest
/// a first delivery's transaction runs, and the background writer's flush.
const SETTLED_AFTER: TimeDelta = TimeDelta::minutes(10);

/// The counts of hours that ended [`SETTLED_AFTER`] ago, so that an overview reads the database
/// only for the last hour or two, however much arrived in the day: a million deliveries a day are
/// counted once per hour, not on every refresh of every operator's page. A row written later than
/// that into a settled hour (an audit writer catching up after an outage) is counted by another
/// instance or after a restart.
#[derive(Default)]
pub(super) struct ActivityCache {
    /// Up to when hours are counted, and their counts.
    settled: tokio::sync::Mutex<(Option<DateTime<Utc>>, Vec<ActivityCount>)>,
}

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
    /// Deliveries (the audit trail) and refused attempts of the current clock hour and the 23
    /// before it, counted per partner, outcome and hour, and those of the last 60 minutes: settled
    /// hours from memory ([`ActivityCache`]), the rest in one pass over an hour or two of rows.
    pub async fn activity(&self, now: DateTime<Utc>) -> Result<Activity, StoreError> {
        let first = hour_of(now) - TimeDelta::hours(23);
        let settle = hour_of(now - SETTLED_AFTER).max(first);
        let (settled, settle) = {
            let mut cache = self.shared.activity.settled.lock().await;
            let (until, counts) = &mut *cache;
            let from = until.filter(|until| *until > first).unwrap_or(first);
            if from < settle {
                counts.extend(self.counted(from, settle, settle).await?.into_iter().map(|(count, _)| count));
                *until = Some(settle);
            }
            counts.retain(|count| count.hour >= first);
            (counts.clone(), from.max(settle))
        };
        let recent = now - TimeDelta::hours(1);
        let live = self.counted(recent.min(settle), now + TimeDelta::days(1), recent).await?;
        let mut activity = Activity { hours: settled, last_hour: Vec::new() };
        for (count, in_last_hour) in live {
            if count.hour >= settle {
                activity.hours.push(count.clone());
            }
            if in_last_hour {
                activity.last_hour.push(count);
            }
        }
        Ok(activity)
    }

    /// What arrived in `[from, until)`, counted per partner, outcome, clock hour and whether it
    /// arrived at or after `recent`.
    async fn counted(
        &self,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
        recent: DateTime<Utc>,
    ) -> Result<Vec<(ActivityCount, bool)>, StoreError> {
        const POSTGRES: &str = "SELECT COALESCE(partner_id, '') AS partner_id, outcome, \
                date_trunc('hour', received_at, 'UTC') AS hour, received_at >= $3 AS recent, COUNT(*) AS count \
            FROM deliveries WHERE received_at >= $1 AND received_at < $2 GROUP BY 1, 2, 3, 4 \
            UNION ALL \
            SELECT partner_id, 'refused: ' || outcome, date_trunc('hour', minute, 'UTC'), minute >= $3, \
                CAST(SUM(attempts) AS BIGINT) \
            FROM refusals WHERE minute >= $1 AND minute < $2 GROUP BY 1, 2, 3, 4";
        const SQLITE: &str = "SELECT COALESCE(partner_id, '') AS partner_id, outcome, \
                strftime('%Y-%m-%dT%H:00:00Z', received_at) AS hour, received_at >= $3 AS recent, COUNT(*) AS count \
            FROM deliveries WHERE received_at >= $1 AND received_at < $2 GROUP BY 1, 2, 3, 4 \
            UNION ALL \
            SELECT partner_id, 'refused: ' || outcome, strftime('%Y-%m-%dT%H:00:00Z', minute), minute >= $3, \
                CAST(SUM(attempts) AS BIGINT) \
            FROM refusals WHERE minute >= $1 AND minute < $2 GROUP BY 1, 2, 3, 4";
        #[derive(sqlx::FromRow)]
        struct Row {
            #[sqlx(flatten)]
            count: ActivityCount,
            recent: bool,
        }
        let rows: Vec<Row> = match &self.db {
            Db::Postgres(postgres) => {
                let query = sqlx::query_as(POSTGRES).bind(from).bind(until).bind(recent);
                query.fetch_all(&postgres.primary.pool()).await?
            }
            Db::Sqlite(sqlite) => {
                sqlx::query_as(SQLITE).bind(from).bind(until).bind(recent).fetch_all(&sqlite.pool).await?
            }
        };
        Ok(rows.into_iter().map(|row| (row.count, row.recent)).collect())
    }

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

/// The first instant of the clock hour `at` is in.
fn hour_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(TimeDelta::hours(1)).unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use chrono::{DateTime, TimeDelta, Utc};
    use uuid::Uuid;

    use crate::store::{Db, Store, StoreOptions};

    async fn store(path: &std::path::Path) -> Store {
        let options = StoreOptions {
            max_connections: 2,
            acquire_timeout: Duration::from_secs(5),
            replay_cache_bytes: 0,
            partner_cache_ttl: Duration::from_secs(1),
            require_synchronous_standby: false,
            timeline_file: None,
        };
        let store = Store::connect(&format!("sqlite://{}", path.display()), &options).await.expect("store");
        store.migrate().await.expect("migrated");
        store
    }

    async fn delivered(store: &Store, at: DateTime<Utc>) {
        let Db::Sqlite(sqlite) = &store.db else { unreachable!() };
        sqlx::query(
            "INSERT INTO deliveries (id, partner_id, outcome, status, body_bytes, received_at) \
             VALUES ($1, 'acme', 'recorded', 201, 1, $2)",
        )
        .bind(Uuid::now_v7())
        .bind(at)
        .execute(&sqlite.pool)
        .await
        .expect("insert");
    }

    /// Per hour (as `HH` of `at`'s day or `-HH` of the day before), and the last hour's total.
    async fn counted(store: &Store, now: DateTime<Utc>) -> (BTreeMap<String, i64>, i64) {
        let activity = store.activity(now).await.expect("activity");
        let mut hours = BTreeMap::new();
        for count in &activity.hours {
            let day = if count.hour.date_naive() == now.date_naive() { "" } else { "-" };
            *hours.entry(format!("{day}{}", count.hour.format("%H"))).or_insert(0) += count.count;
        }
        (hours, activity.last_hour.iter().map(|count| count.count).sum())
    }

    #[tokio::test]
    async fn settled_hours_are_counted_once_and_the_last_ones_live() {
        let path = std::env::temp_dir().join(format!("edi-inbox-activity-{}.db", Uuid::now_v7()));
        let (cached, at) = (store(&path).await, |text: &str| text.parse::<DateTime<Utc>>().unwrap());
        let now = at("2026-12-06T10:30:00Z");
        for moment in ["2026-12-05T10:40:00Z", "2026-12-05T11:15:00Z", "2026-12-06T08:10:00Z"] {
            delivered(&cached, at(moment)).await;
        }
        for moment in ["2026-12-06T08:50:00Z", "2026-12-06T09:45:00Z", "2026-12-06T10:05:00Z"] {
            delivered(&cached, at(moment)).await;
        }
        let expected: BTreeMap<String, i64> =
            [("-11", 1), ("08", 2), ("09", 1), ("10", 1)].map(|(h, n)| (h.to_owned(), n)).into();
        assert_eq!(counted(&cached, now).await, (expected.clone(), 2), "the day outside of it left out");

        // A delivery of this hour is seen at once; one written late into a settled hour is not.
        delivered(&cached, at("2026-12-06T10:25:00Z")).await;
        delivered(&cached, at("2026-12-06T08:30:00Z")).await;
        let mut now_seen = expected.clone();
        now_seen.insert("10".into(), 2);
        assert_eq!(counted(&cached, now).await, (now_seen.clone(), 3));

        // Two hours on, hour 10 is settled from the database; the rest still from memory.
        let later = now + TimeDelta::hours(2);
        now_seen.remove("-11");
        assert_eq!(counted(&cached, later).await, (now_seen.clone(), 0));
        let fresh = store(&path).await;
        now_seen.insert("08".into(), 3);
        assert_eq!(counted(&fresh, later).await, (now_seen, 0), "a fresh count sees the late row");
        cached.close().await;
        fresh.close().await;
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
