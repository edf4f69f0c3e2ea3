//! The overview's counts: deliveries (the audit trail) and refused attempts per partner, outcome
//! and clock hour over the last day, and over the last 60 minutes. Minutes that ended
//! [`SETTLED_AFTER`] ago are counted once and kept in memory (folded into their hour once they
//! leave the last hour), so a refresh reads only the last few minutes' rows however much arrived
//! in the day. A row written into a minute already counted (a first delivery whose transaction ran
//! longer than that, the background audit writer catching up after an outage) is counted by
//! another instance, or after a restart.

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

use super::{Db, Store, StoreError};

/// Deliveries (or refused attempts, their outcome prefixed `refused: `) of one partner with one
/// outcome in one clock hour (UTC), or one minute.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ActivityCount {
    /// Empty when no partner was proven (open mode, or a refusal before authentication).
    pub partner_id: String,
    pub outcome: String,
    /// The first instant of the hour (or minute).
    pub at: DateTime<Utc>,
    pub count: i64,
}

/// What arrived in the last day, for the overview.
#[derive(Debug, Default)]
pub struct Activity {
    /// The current clock hour (so far) and the 23 before it, counted per hour.
    pub hours: Vec<ActivityCount>,
    /// The last 60 minutes, counted per minute.
    pub last_hour: Vec<ActivityCount>,
}

/// How long after a minute ends its counts are taken as final: past the request deadline within
/// which a first delivery's transaction commits, and many of the audit writer's flushes.
const SETTLED_AFTER: TimeDelta = TimeDelta::minutes(2);

/// Counts of settled minutes, kept in memory.
#[derive(Default)]
pub(super) struct ActivityCache {
    settled: tokio::sync::Mutex<Settled>,
}

#[derive(Default)]
struct Settled {
    /// Minutes before this one are counted.
    until: Option<DateTime<Utc>>,
    /// Per minute, while the minute is in the last hour.
    minutes: Vec<ActivityCount>,
    /// Per (hour, partner, outcome), for older minutes.
    hours: BTreeMap<(DateTime<Utc>, String, String), i64>,
}

impl Settled {
    /// Folds minutes before `recent` into their hours and drops hours before `first`.
    fn fold(&mut self, recent: DateTime<Utc>, first: DateTime<Utc>) {
        let (old, kept) = std::mem::take(&mut self.minutes).into_iter().partition(|count| count.at < recent);
        self.minutes = kept;
        for count in old {
            *self.hours.entry((hour_of(count.at), count.partner_id, count.outcome)).or_default() +=
                count.count;
        }
        self.hours.retain(|(hour, _, _), _| *hour >= first);
    }
}

impl Store {
    /// Deliveries and refused attempts of the current clock hour and the 23 before it, per
    /// partner, outcome and hour, and those of the last 60 minutes (to the minute): settled minutes
    /// from memory ([`ActivityCache`]), the last few from the database.
    pub async fn activity(&self, now: DateTime<Utc>) -> Result<Activity, StoreError> {
        let first = hour_of(now) - TimeDelta::hours(23);
        let recent = minute_of(now) - TimeDelta::minutes(59);
        let settle = minute_of(now - SETTLED_AFTER);
        let mut activity = Activity::default();
        let settle = {
            let mut settled = self.shared.activity.settled.lock().await;
            let from = settled.until.filter(|until| *until > first).unwrap_or(first);
            if from < settle {
                let counted = self.counted(from, settle).await?;
                settled.minutes.extend(counted);
                settled.until = Some(settle);
            }
            settled.fold(recent, first);
            for ((hour, partner_id, outcome), count) in &settled.hours {
                let (partner_id, outcome) = (partner_id.clone(), outcome.clone());
                activity.hours.push(ActivityCount { partner_id, outcome, at: *hour, count: *count });
            }
            activity.last_hour.extend(settled.minutes.iter().cloned());
            from.max(settle)
        };
        // Settled minutes before `recent` are folded into hours; the rest, and all from `settle`
        // on, are the last hour's.
        activity.last_hour.extend(self.counted(settle, now + TimeDelta::days(1)).await?);
        for count in &activity.last_hour {
            activity.hours.push(ActivityCount { at: hour_of(count.at), ..count.clone() });
        }
        Ok(activity)
    }

    /// What arrived in `[from, until)`, counted per partner, outcome and minute.
    async fn counted(
        &self,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<ActivityCount>, StoreError> {
        const POSTGRES: &str = "SELECT COALESCE(partner_id, '') AS partner_id, outcome, \
                date_trunc('minute', received_at, 'UTC') AS at, COUNT(*) AS count \
            FROM deliveries WHERE received_at >= $1 AND received_at < $2 GROUP BY 1, 2, 3 \
            UNION ALL \
            SELECT partner_id, 'refused: ' || outcome, minute, CAST(SUM(attempts) AS BIGINT) \
            FROM refusals WHERE minute >= $1 AND minute < $2 GROUP BY 1, 2, 3";
        const SQLITE: &str = "SELECT COALESCE(partner_id, '') AS partner_id, outcome, \
                strftime('%Y-%m-%dT%H:%M:00Z', received_at) AS at, COUNT(*) AS count \
            FROM deliveries WHERE received_at >= $1 AND received_at < $2 GROUP BY 1, 2, 3 \
            UNION ALL \
            SELECT partner_id, 'refused: ' || outcome, strftime('%Y-%m-%dT%H:%M:00Z', minute), \
                CAST(SUM(attempts) AS BIGINT) \
            FROM refusals WHERE minute >= $1 AND minute < $2 GROUP BY 1, 2, 3";
        let sql = match self.db {
            Db::Postgres(_) => POSTGRES,
            Db::Sqlite(_) => SQLITE,
        };
        Ok(on_pool!(self, pool => sqlx::query_as(sql).bind(from).bind(until).fetch_all(pool).await?))
    }
}

/// The first instant of the clock hour `at` is in.
fn hour_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(TimeDelta::hours(1)).unwrap_or(at)
}

/// The first instant of the minute `at` is in.
fn minute_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(TimeDelta::minutes(1)).unwrap_or(at)
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
            let day = if count.at.date_naive() == now.date_naive() { "" } else { "-" };
            *hours.entry(format!("{day}{}", count.at.format("%H"))).or_insert(0) += count.count;
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

        // A delivery of the last two minutes is seen at once; one written late into a settled minute is not.
        delivered(&cached, at("2026-12-06T10:29:00Z")).await;
        delivered(&cached, at("2026-12-06T08:30:00Z")).await;
        let mut now_seen = expected.clone();
        now_seen.insert("10".into(), 2);
        assert_eq!(counted(&cached, now).await, (now_seen.clone(), 3));

        // Two hours on, the minutes since are settled from the database; the rest still from memory.
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
