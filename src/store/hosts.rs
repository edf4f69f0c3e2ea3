//! Several PostgreSQL hosts in one `DATABASE_URL`, as libpq writes them
//! (`postgres://h1:5432,h2:5433/db?target_session_attrs=read-write`), which sqlx does not read
//! (its issues 2290 and 3333). Each host becomes connect options of its own; the pool connects to
//! the first host, in order, that suits the target (a writable primary unless `any` is asked), and
//! every new connection is checked again. A watcher asks the current host once a second; when it
//! is gone or has become read-only, it finds the new primary and replaces the pool, so that no
//! connection to the old one is used again (its in-flight statements fail: 503, retried).

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

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

/// How often the current host is asked whether it is still the primary.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);
/// How long asking one host may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The hosts of a URL, the target, and which host the pool is on.
pub struct Hosts {
    candidates: Vec<(String, PgConnectOptions)>,
    target: TargetSession,
    current: AtomicUsize,
}

impl Hosts {
    /// Reads a `postgres://` URL with one host or several (`h1:p1,h2:p2`); `target_session_attrs`
    /// is `read-write` by default when there are several, `any` for one.
    pub fn parse(url: &str) -> Result<Hosts, StoreError> {
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
        Ok(Hosts { candidates, target, current: AtomicUsize::new(0) })
    }

    /// `host:port` of the host the pool is on.
    pub fn current(&self) -> &str {
        &self.candidates[self.current.load(Ordering::Relaxed)].0
    }

    /// Whether host `index` answers and suits the target.
    async fn probe(&self, index: usize) -> bool {
        let ask = async {
            let mut connection = PgConnection::connect_with(&self.candidates[index].1).await?;
            let suits = suits(self.target, &mut connection).await;
            let _ = connection.close().await;
            suits
        };
        matches!(tokio::time::timeout(PROBE_TIMEOUT, ask).await, Ok(Ok(true)))
    }

    /// The first host, in order, that suits the target.
    async fn find(&self) -> Option<usize> {
        for index in 0..self.candidates.len() {
            if self.probe(index).await {
                return Some(index);
            }
        }
        None
    }
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
        let hosts = Hosts::parse(url)?;
        let index = match hosts.candidates.len() {
            1 => 0,
            _ => hosts.find().await.ok_or_else(|| {
                StoreError::Unavailable(sqlx::Error::Protocol(format!(
                    "none of the hosts of {} is {}",
                    super::redacted(url),
                    hosts.target.as_str()
                )))
            })?,
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

    /// Watches the current host while the store lives, when there is more than one host: when it
    /// stops suiting the target, closes its pool and opens one on the first host that suits (the
    /// same one again after a blip); calls `failed_over` with the new host when it is another.
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
                if primary.hosts.probe(current).await {
                    continue;
                }
                // Requests waiting for a connection to the lost host fail now (503, retried) instead
                // of when their acquire timeout ends; a new pool replaces this one once a host suits.
                let lost = primary.pool();
                tokio::spawn(async move { lost.close().await });
                let Some(found) = primary.hosts.find().await else {
                    tracing::warn!(host = primary.hosts.current(), "no PostgreSQL host is a primary now");
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

    #[test]
    fn libpq_multi_host_urls_are_read() {
        let hosts = Hosts::parse(
            "postgres://edi:secret@db1:5432,db2:5433/inbox?sslmode=disable&target_session_attrs=primary",
        )
        .unwrap();
        let names: Vec<&str> = hosts.candidates.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["db1:5432", "db2:5433"]);
        assert_eq!(hosts.target, TargetSession::Primary);
        assert_eq!(hosts.candidates[1].1.get_database(), Some("inbox"));
        assert_eq!(hosts.candidates[1].1.get_username(), "edi");
        assert_eq!(Hosts::parse("postgres://a,b/db").unwrap().target, TargetSession::ReadWrite);
        assert_eq!(Hosts::parse("postgres://postgres@127.0.0.1/db").unwrap().target, TargetSession::Any);
        let refused =
            Hosts::parse("postgres://u:pw@a,b/db?target_session_attrs=prefer-standby").err().unwrap();
        assert!(
            refused.to_string().contains("prefer-standby") && !refused.to_string().contains("pw"),
            "{refused}"
        );
    }
}
