//! Several PostgreSQL hosts in one `DATABASE_URL`, as libpq writes them
//! (`postgres://h1:5432,h2:5433/db?target_session_attrs=read-write`), which sqlx does not read
//! (its issues 2290 and 3333). Each host becomes connect options of its own; the pool connects to
//! the first host, in order, that suits the target (a writable primary unless `any` is asked), and
//! every new connection is checked again. A watcher asks every host once a second; when the
//! current one is gone or has become read-only, it finds the new primary and replaces the pool, so
//! that no connection to the old one is used again (its in-flight statements fail: 503, retried).
//!
//! Never a stale primary: an old primary that comes back writable after its standby was promoted
//! (a zombie, without an HA manager to fence it) is on an older timeline of the same cluster. Of
//! several writable hosts the one on the highest timeline is written to; a host on a timeline older
//! than one written to (by this process, or before a restart with `--timeline-file`: `written`) is
//! never chosen again; and when which is the primary cannot be told (equal or unknown timelines,
//! different clusters) writes are refused (503, not ready) rather than split between two databases.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

use super::written::{Written, WrittenMemory};
use super::{StoreError, StoreOptions};

text_enum! {
    /// Which server a connection may be kept on (libpq's `target_session_attrs`).
    TargetSession {
        /// Whichever answers first.
        Any = "any",
        /// One whose sessions accept writes (`transaction_read_only` off).
        ReadWrite = "read-write",
        /// One that is not in recovery.
        Primary = "primary",
    }
}

/// How often every host is asked whether it is (still) the primary.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);
/// How long asking one host may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The hosts of a URL, the target, which host the pool is on, and the timeline last written to.
pub struct Hosts {
    candidates: Vec<(String, PgConnectOptions)>,
    target: TargetSession,
    current: AtomicUsize,
    written: WrittenMemory,
    /// The last split brain reported (the writable hosts and their standings), so that it is
    /// logged once when it starts, not every second.
    reported: Mutex<String>,
}

/// What a host that suits the target says of itself: its cluster (`pg_control_system()`, unknown
/// where its use is not granted) and, when it is a primary, its current timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Standing {
    system: Option<i64>,
    timeline: Option<u32>,
}

/// The host to write to, from what each host said.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    Host(usize),
    /// No host suits the target (or only stale ones).
    NoneSuits,
    /// Several suit and which one is the primary cannot be told: refuse writes rather than choose.
    Ambiguous(Vec<usize>),
    /// Only hosts on a timeline older than one written to suit: old primaries.
    OnlyOlder(Vec<usize>),
}

/// Of the hosts that suit (`Some`), the one to write to: the only one; else the one on the highest
/// timeline, when every timeline is known and all are one cluster. A host that `written` (the
/// cluster and timeline last written to) outdates is an old primary and never chosen.
fn choose(standings: &[Option<Standing>], written: Option<Written>) -> Choice {
    type Asked = Vec<(usize, Standing)>;
    let (older, fresh): (Asked, Asked) =
        standings.iter().enumerate().filter_map(|(index, standing)| Some((index, (*standing)?))).partition(
            |(_, standing)| {
                written.is_some_and(|written| written.outdates(standing.system, standing.timeline))
            },
        );
    let [(first, first_standing), rest @ ..] = fresh.as_slice() else {
        return match older.is_empty() {
            true => Choice::NoneSuits,
            false => Choice::OnlyOlder(older.iter().map(|(index, _)| *index).collect()),
        };
    };
    if rest.is_empty() {
        return Choice::Host(*first);
    }
    let one_cluster = rest.iter().all(
        |(_, standing)| matches!((standing.system, first_standing.system), (Some(a), Some(b)) if a == b),
    );
    let highest = fresh.iter().map(|(_, standing)| standing.timeline).max().flatten();
    let on_highest: Vec<usize> =
        fresh.iter().filter(|(_, standing)| standing.timeline == highest).map(|(index, _)| *index).collect();
    match (one_cluster, highest, on_highest.as_slice()) {
        (true, Some(_), [only]) if fresh.iter().all(|(_, standing)| standing.timeline.is_some()) => {
            Choice::Host(*only)
        }
        _ => Choice::Ambiguous(fresh.iter().map(|(index, _)| *index).collect()),
    }
}

impl Hosts {
    /// Reads a `postgres://` URL with one host or several (`h1:p1,h2:p2`); `target_session_attrs`
    /// is `read-write` by default when there are several, `any` for one.
    pub fn parse(url: &str, timeline_file: Option<PathBuf>) -> Result<Hosts, StoreError> {
        let unsupported = || StoreError::UnsupportedUrl(super::redacted(url));
        let (scheme, rest) = url.split_once("://").ok_or_else(unsupported)?;
        let (authority, tail) = rest.find(['/', '?']).map_or((rest, ""), |at| rest.split_at(at));
        let (user, hosts) = authority.rfind('@').map_or(("", authority), |at| authority.split_at(at + 1));
        let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
        let mut target = None;
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| match pair.split_once('=') {
                Some(("target_session_attrs", value)) => {
                    target = Some(value);
                    false
                }
                _ => !pair.is_empty(),
            })
            .collect();
        let query = if kept.is_empty() { String::new() } else { format!("?{}", kept.join("&")) };
        let hosts: Vec<&str> = hosts.split(',').collect();
        let target = match target {
            Some(value) => TargetSession::parse(value).ok_or_else(|| {
                StoreError::UnsupportedUrl(format!(
                    "target_session_attrs={value:?}: use any, read-write or primary ({})",
                    super::redacted(url)
                ))
            })?,
            None if hosts.len() > 1 => TargetSession::ReadWrite,
            None => TargetSession::Any,
        };
        let candidates = hosts
            .iter()
            .map(|host| {
                let options = PgConnectOptions::from_str(&format!("{scheme}://{user}{host}{path}{query}"))
                    .map_err(|_| unsupported())?;
                Ok((format!("{}:{}", options.get_host(), options.get_port()), options))
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Hosts {
            candidates,
            target,
            current: AtomicUsize::new(0),
            written: WrittenMemory::load(timeline_file)?,
            reported: Mutex::default(),
        })
    }

    /// `host:port` of the host the pool is on.
    pub fn current(&self) -> &str {
        &self.candidates[self.current.load(Ordering::Relaxed)].0
    }

    /// What each host says of itself when it answers and suits the target, all asked at once.
    async fn probe_all(&self) -> Vec<Option<Standing>> {
        let asked: Vec<_> = self
            .candidates
            .iter()
            .map(|(_, options)| tokio::spawn(probe(options.clone(), self.target)))
            .collect();
        let mut standings = Vec::with_capacity(asked.len());
        for probe in asked {
            standings.push(probe.await.ok().flatten());
        }
        standings
    }

    /// The host to write to now (the first that suits for target `any`). Reports a split brain
    /// (several writable hosts) by the `edi_inbox_db_writable_hosts` gauge and an error naming
    /// them and their timelines, once when it starts.
    async fn find(&self) -> Choice {
        let standings = self.probe_all().await;
        if self.target == TargetSession::Any {
            return standings.iter().position(Option::is_some).map_or(Choice::NoneSuits, Choice::Host);
        }
        let written = self.written.get();
        let choice = choose(&standings, written);
        self.report(&standings, written, &choice);
        if let Choice::Host(index) = choice
            && let Some(Some(Standing { system, timeline: Some(timeline) })) = standings.get(index)
        {
            self.written.remember(Written { system: *system, timeline: *timeline });
        }
        choice
    }

    /// Why no host of `url` is written to, naming them.
    fn refusal(&self, choice: &Choice) -> String {
        let named = |indexes: &[usize]| {
            indexes.iter().map(|index| self.candidates[*index].0.as_str()).collect::<Vec<_>>().join(" and ")
        };
        match choice {
            Choice::Host(index) => format!("{} is written to", self.candidates[*index].0),
            Choice::NoneSuits => {
                let all: Vec<usize> = (0..self.candidates.len()).collect();
                format!("none of the hosts {} is {}", named(&all), self.target.as_str())
            }
            Choice::Ambiguous(several) => format!(
                "{} are all writable and which one is the primary cannot be told (equal or unknown \
                 timelines, or different clusters): fence the old primary",
                named(several)
            ),
            Choice::OnlyOlder(older) => format!(
                "{} is on a timeline older than the one last written to ({}): an old primary; \
                 fence it and make the new primary reachable",
                named(older),
                self.written.get().map_or(0, |written| written.timeline)
            ),
        }
    }

    fn report(&self, standings: &[Option<Standing>], written: Option<Written>, choice: &Choice) {
        let writable: Vec<String> = standings
            .iter()
            .zip(&self.candidates)
            .filter_map(|(standing, (host, _))| {
                let Standing { system, timeline } = (*standing)?;
                let system = system.map_or("unknown".to_owned(), |s| s.to_string());
                let timeline = timeline.map_or("unknown".to_owned(), |t| t.to_string());
                Some(format!("{host} (system {system}, timeline {timeline})"))
            })
            .collect();
        metrics::gauge!("edi_inbox_db_writable_hosts").set(writable.len() as f64);
        let description = if writable.len() > 1 { writable.join(", ") } else { String::new() };
        let mut reported = self.reported.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if *reported == description {
            return;
        }
        if !description.is_empty() {
            let hosts = description.as_str();
            match choice {
                Choice::Host(index) => tracing::error!(
                    hosts,
                    written_to = self.candidates[*index].0,
                    "split brain: several PostgreSQL hosts are writable; only the one on the highest \
                     timeline is written to (fence the others)"
                ),
                _ => tracing::error!(
                    hosts,
                    timeline_written_to = written.map(|written| written.timeline),
                    "split brain: several PostgreSQL hosts are writable and which one is the primary \
                     cannot be told; writes are refused until only one is"
                ),
            }
        }
        *reported = description;
    }
}

/// What the host at `options` says of itself, when it answers in time and suits `target`.
async fn probe(options: PgConnectOptions, target: TargetSession) -> Option<Standing> {
    let ask = async {
        let mut connection = PgConnection::connect_with(&options).await?;
        let standing = standing(target, &mut connection).await;
        let _ = connection.close().await;
        standing
    };
    tokio::time::timeout(PROBE_TIMEOUT, ask).await.ok()?.ok()?
}

/// A host's standing when it suits `target`: three round trips (none for `any`): whether it suits,
/// its timeline, and its cluster (asked apart, so that a role not granted `pg_control_system()`
/// still gets the other two). The timeline is the first eight hex digits of the current WAL file's
/// name, which a promotion changes at once.
async fn standing(
    target: TargetSession,
    connection: &mut PgConnection,
) -> Result<Option<Standing>, sqlx::Error> {
    if target == TargetSession::Any {
        return Ok(Some(Standing { system: None, timeline: None }));
    }
    if !suits(target, connection).await? {
        return Ok(None);
    }
    let timeline: Option<String> = sqlx::query_scalar(
        "SELECT CASE WHEN pg_is_in_recovery() THEN NULL \
         ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END",
    )
    .fetch_one(&mut *connection)
    .await?;
    let system = sqlx::query_scalar("SELECT system_identifier FROM pg_control_system()")
        .fetch_one(&mut *connection)
        .await
        .ok();
    let timeline = timeline.and_then(|hex| u32::from_str_radix(&hex, 16).ok());
    Ok(Some(Standing { system, timeline }))
}

/// The pool on the current primary, replaced after a failover.
pub struct Primary {
    hosts: Hosts,
    pool: RwLock<PgPool>,
    options: StoreOptions,
    /// Set when the store is closed: unlike a pool closed by a failover, for good.
    closed: AtomicBool,
}

impl Primary {
    /// Connects to the first suitable host of `url`.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Arc<Primary>, StoreError> {
        let hosts = Hosts::parse(url, options.timeline_file.clone())?;
        let index = match hosts.candidates.len() {
            1 => 0,
            _ => {
                if options.timeline_file.is_none() {
                    tracing::warn!(
                        "the timeline written to is remembered only while this process runs: set \
                         --timeline-file so that a restart that finds only an old primary refuses it"
                    );
                }
                match hosts.find().await {
                    Choice::Host(index) => index,
                    refused => {
                        let why = hosts.refusal(&refused);
                        return Err(StoreError::Unavailable(sqlx::Error::Protocol(why)));
                    }
                }
            }
        };
        hosts.current.store(index, Ordering::Relaxed);
        let pool = pool_on(&hosts, index, options).await?;
        Ok(Arc::new(Primary {
            hosts,
            pool: RwLock::new(pool),
            options: options.clone(),
            closed: AtomicBool::new(false),
        }))
    }

    /// Closes the pool for good (the store is shut down).
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.pool().close().await;
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// The pool to use now.
    pub fn pool(&self) -> PgPool {
        // A poisoned lock still holds a valid pool.
        self.pool.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub fn hosts(&self) -> &Hosts {
        &self.hosts
    }

    /// Watches the hosts while the store lives, when there is more than one: when another host is
    /// to be written to (the current one stopped suiting the target, or is on an older timeline),
    /// closes the pool and opens one on it (the same host again after a blip); when none is, or
    /// which one cannot be told, closes the pool (writes get 503) until one is. Calls `failed_over`
    /// with the new host when it is another.
    pub fn watch(self: &Arc<Self>, failed_over: impl Fn(&str) + Send + Sync + 'static) {
        if self.hosts.candidates.len() < 2 {
            return;
        }
        let primary: Weak<Primary> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_INTERVAL).await;
                let Some(primary) = primary.upgrade().filter(|primary| !primary.is_closed()) else { return };
                let current = primary.hosts.current.load(Ordering::Relaxed);
                let choice = primary.hosts.find().await;
                if choice == Choice::Host(current) && !primary.pool().is_closed() {
                    continue;
                }
                // Requests waiting for a connection to the lost host fail now (503, retried) instead
                // of when their acquire timeout ends; a new pool replaces this one once a host suits.
                let lost = primary.pool();
                if !lost.is_closed() {
                    tokio::spawn(async move { lost.close().await });
                }
                let Choice::Host(found) = choice else {
                    tracing::warn!(
                        host = primary.hosts.current(),
                        why = primary.hosts.refusal(&choice),
                        "no PostgreSQL host is to be written to now"
                    );
                    continue;
                };
                if primary.move_to(found).await && found != current {
                    failed_over(primary.hosts.current());
                }
            }
        });
    }

    /// Replaces the pool with one on host `index`; the old pool closes once its connections are
    /// returned.
    async fn move_to(&self, index: usize) -> bool {
        let pool = match pool_on(&self.hosts, index, &self.options).await {
            Ok(pool) => pool,
            Err(error) => {
                tracing::warn!(%error, "the new PostgreSQL primary could not be connected to yet");
                return false;
            }
        };
        self.hosts.current.store(index, Ordering::Relaxed);
        let old =
            std::mem::replace(&mut *self.pool.write().unwrap_or_else(|poisoned| poisoned.into_inner()), pool);
        tokio::spawn(async move { old.close().await });
        true
    }
}

/// Whether a connection suits `target`; costs one round trip (none for `any`).
async fn suits(target: TargetSession, connection: &mut PgConnection) -> Result<bool, sqlx::Error> {
    if target == TargetSession::Any {
        return Ok(true);
    }
    let (in_recovery, read_only): (bool, String) =
        sqlx::query_as("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')")
            .fetch_one(&mut *connection)
            .await?;
    Ok(match target {
        TargetSession::Any => true,
        TargetSession::ReadWrite => read_only == "off",
        TargetSession::Primary => !in_recovery,
    })
}

/// A pool on host `index` whose every new connection is checked against the target.
async fn pool_on(hosts: &Hosts, index: usize, options: &StoreOptions) -> Result<PgPool, StoreError> {
    let target = hosts.target;
    let pool = PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .after_connect(move |connection, _| {
            Box::pin(async move {
                match suits(target, connection).await? {
                    true => Ok(()),
                    false => Err(sqlx::Error::Protocol(format!("the server is not {}", target.as_str()))),
                }
            })
        })
        // sqlx keeps a connection's buffers at the largest size they ever grew to: shrink them as it
        // returns to the pool, or each connection that once carried a large interchange holds that
        // much memory for good (8 of 20,000 invoices at once left 250 MiB resident).
        .after_release(|connection, _| {
            Box::pin(async move {
                sqlx::Connection::shrink_buffers(connection);
                Ok(true)
            })
        })
        .connect_with(hosts.candidates[index].1.clone())
        .await?;
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(system: i64, timeline: u32) -> Option<Standing> {
        Some(Standing { system: Some(system), timeline: Some(timeline) })
    }

    #[test]
    fn of_several_writable_hosts_only_the_newest_timeline_of_one_cluster_is_written_to() {
        // The zombie first in URL order: the promoted standby (timeline 2) is chosen.
        assert_eq!(choose(&[on(7, 1), on(7, 2)], None), Choice::Host(1));
        assert_eq!(choose(&[None, on(7, 2)], None), Choice::Host(1));
        // Once timeline 2 was written to, the zombie alone is an old primary: nothing is written.
        let two = Some(Written { system: Some(7), timeline: 2 });
        assert_eq!(choose(&[on(7, 1), None], two), Choice::OnlyOlder(vec![0]));
        assert_eq!(choose(&[on(7, 2), None], two), Choice::Host(0));
        // Another cluster is not outdated by this one's timeline.
        assert_eq!(choose(&[on(8, 1), None], two), Choice::Host(0));
        // Which is the primary cannot be told: refuse rather than choose.
        assert_eq!(choose(&[on(7, 2), on(7, 2)], None), Choice::Ambiguous(vec![0, 1]));
        assert_eq!(choose(&[on(7, 1), on(8, 2)], None), Choice::Ambiguous(vec![0, 1]));
        let unknown = Some(Standing { system: Some(7), timeline: None });
        assert_eq!(choose(&[on(7, 1), unknown], None), Choice::Ambiguous(vec![0, 1]));
        assert_eq!(choose(&[None, None], None), Choice::NoneSuits);
    }

    #[test]
    fn libpq_multi_host_urls_are_read() {
        let hosts = Hosts::parse(
            "postgres://edi:secret@db1:5432,db2:5433/inbox?sslmode=disable&target_session_attrs=primary",
            None,
        )
        .unwrap();
        let names: Vec<&str> = hosts.candidates.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["db1:5432", "db2:5433"]);
        assert_eq!(hosts.target, TargetSession::Primary);
        assert_eq!(hosts.candidates[1].1.get_database(), Some("inbox"));
        assert_eq!(hosts.candidates[1].1.get_username(), "edi");
        assert_eq!(Hosts::parse("postgres://a,b/db", None).unwrap().target, TargetSession::ReadWrite);
        assert_eq!(
            Hosts::parse("postgres://postgres@127.0.0.1/db", None).unwrap().target,
            TargetSession::Any
        );
        assert_eq!(
            hosts.refusal(&Choice::NoneSuits),
            "none of the hosts db1:5432 and db2:5433 is primary",
            "each host named, never the URL's password"
        );
        let refused =
            Hosts::parse("postgres://u:pw@a,b/db?target_session_attrs=prefer-standby", None).err().unwrap();
        assert!(
            refused.to_string().contains("prefer-standby") && !refused.to_string().contains("pw"),
            "{refused}"
        );
    }
}
