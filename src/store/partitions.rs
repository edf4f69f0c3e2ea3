//! Day partitions of what expires by time on PostgreSQL (`payloads` and the `deliveries` audit
//! trail, partitioned by UTC day of `received_at`): each day's partition is created ahead of time,
//! at start and by every purge run (`edi_inbox_partition`, migration 0015), and the purge drops a
//! day whole once all of it is past the retention — detached `CONCURRENTLY`, so that no insert
//! waits for it, then dropped. Nothing is updated or deleted row by row beside ingest.

use chrono::{DateTime, Days, NaiveDate, Utc};
use sqlx::PgConnection;

/// Days after today whose partitions exist before their first row: a week of purge runs (hourly)
/// may fail before a delivery finds no partition for its day.
const DAYS_AHEAD: u64 = 7;

/// Creates the missing partitions of `tables` for yesterday (a replica whose clock is behind)
/// through [`DAYS_AHEAD`] days after `now`, in one statement.
pub(super) async fn create_ahead(
    conn: &mut PgConnection,
    tables: &[&str],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let today = now.date_naive();
    let first = today.checked_sub_days(Days::new(1)).unwrap_or(today);
    let last = today.checked_add_days(Days::new(DAYS_AHEAD)).unwrap_or(today);
    sqlx::query(
        "SELECT edi_inbox_partition(t::regclass, d::date)
        FROM unnest($1::text[]) AS t, generate_series($2::date, $3::date, interval '1 day') AS d",
    )
    .bind(tables)
    .bind(first)
    .bind(last)
    .execute(conn)
    .await?;
    Ok(())
}

/// Where a day partition stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attachment {
    Attached,
    /// A concurrent detach that did not finish (its connection was lost).
    DetachPending,
    /// Detached but not dropped (the run ended in between).
    Detached,
}

/// One day partition of a table, named `{table}_pYYYYMMDD`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Partition {
    name: String,
    day: NaiveDate,
    attachment: Attachment,
}

impl Partition {
    /// The partition a table named `name` is, if it is one of `table`'s day partitions (an
    /// operator's own tables are never dropped).
    fn parse(table: &str, name: String, attachment: Attachment) -> Option<Partition> {
        let digits = name.strip_prefix(table)?.strip_prefix("_p")?;
        let exact = digits.len() == 8 && digits.bytes().all(|b| b.is_ascii_digit());
        let day = NaiveDate::parse_from_str(digits, "%Y%m%d").ok().filter(|_| exact)?;
        Some(Partition { name, day, attachment })
    }

    /// Whether every row it can hold was received before `horizon`.
    fn expired(&self, horizon: DateTime<Utc>) -> bool {
        self.day
            .succ_opt()
            .and_then(|next| next.and_hms_opt(0, 0, 0))
            .is_some_and(|end| end.and_utc() <= horizon)
    }
}

/// The start (00:00 UTC) of the day `time` falls in: the horizon of whole days before `time`.
pub(super) fn day_start(time: DateTime<Utc>) -> DateTime<Utc> {
    time.date_naive().and_hms_opt(0, 0, 0).map_or(time, |start| start.and_utc())
}

/// The partitions of `table` whose whole day is before `horizon`, oldest first (with those an
/// interrupted run left detached or half-detached).
pub(super) async fn expired(
    conn: &mut PgConnection,
    table: &str,
    horizon: DateTime<Utc>,
) -> Result<Vec<Partition>, sqlx::Error> {
    let listed: Vec<(String, Option<bool>)> = sqlx::query_as(
        "SELECT c.relname::text, i.inhdetachpending FROM pg_class c
            LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
        WHERE c.relkind = 'r' AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = $1::regclass)
            AND c.relname LIKE $1 || '\\_p%'",
    )
    .bind(table)
    .fetch_all(&mut *conn)
    .await?;
    let mut expired: Vec<Partition> = listed
        .into_iter()
        .filter_map(|(name, pending)| {
            let attachment = match pending {
                None => Attachment::Detached,
                Some(true) => Attachment::DetachPending,
                Some(false) => Attachment::Attached,
            };
            Partition::parse(table, name, attachment)
        })
        .filter(|partition| partition.expired(horizon))
        .collect();
    expired.sort_by_key(|partition| partition.day);
    Ok(expired)
}

/// Detaches `partition` of `table` (without blocking inserts into the table), counts its rows and
/// drops it; returns the rows it held.
pub(super) async fn drop(
    conn: &mut PgConnection,
    table: &str,
    partition: &Partition,
) -> Result<u64, sqlx::Error> {
    // The name was parsed from the catalogue: the table's name, `_p` and eight digits.
    let name = &partition.name;
    let detach = match partition.attachment {
        Attachment::Attached => Some("CONCURRENTLY"),
        Attachment::DetachPending => Some("FINALIZE"),
        Attachment::Detached => None,
    };
    if let Some(mode) = detach {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("ALTER TABLE {table} DETACH PARTITION {name} {mode}")))
            .execute(&mut *conn)
            .await?;
    }
    let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {name}")))
        .fetch_one(&mut *conn)
        .await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TABLE {name}"))).execute(&mut *conn).await?;
    Ok(u64::try_from(count).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tables_day_partitions_are_its_partitions() {
        let parsed = Partition::parse("payloads", "payloads_p20261205".into(), Attachment::Attached);
        let day = NaiveDate::from_ymd_opt(2026, 12, 5).unwrap();
        assert_eq!(
            parsed,
            Some(Partition { name: "payloads_p20261205".into(), day, attachment: Attachment::Attached })
        );
        for other in [
            "payloads_p2026120",
            "payloads_p202612051",
            "payloads_p2026-1-05",
            "payloads_p20261305",
            "payloads_archive",
            "deliveries_p20261205",
            "payloads_p+2026120",
        ] {
            assert_eq!(Partition::parse("payloads", other.into(), Attachment::Attached), None, "{other}");
        }
    }

    #[test]
    fn whole_days_end_at_the_start_of_the_day_a_time_falls_in() {
        let at = |text: &str| DateTime::parse_from_rfc3339(text).unwrap().to_utc();
        assert_eq!(day_start(at("2026-12-05T18:01:02.5Z")), at("2026-12-05T00:00:00Z"));
        assert_eq!(day_start(at("2026-12-05T00:00:00Z")), at("2026-12-05T00:00:00Z"));
    }

    #[test]
    fn a_day_expires_when_all_of_it_is_before_the_horizon() {
        let partition =
            Partition::parse("deliveries", "deliveries_p20261205".into(), Attachment::Detached).unwrap();
        let at = |text: &str| DateTime::parse_from_rfc3339(text).unwrap().to_utc();
        assert!(!partition.expired(at("2026-12-05T23:59:59.999999Z")));
        assert!(partition.expired(at("2026-12-06T00:00:00Z")));
        assert!(partition.expired(at("2027-01-01T00:00:00Z")));
    }
}
