//! `--require-synchronous-standby`: whether a commit on the primary waits for a synchronous
//! standby, as the promise "acknowledged only after COMMIT" needs to survive a failover. Three
//! things must hold on the primary written to: `synchronous_standby_names` names standbys,
//! `synchronous_commit` is `on`, `remote_write` or `remote_apply` for this service's sessions, and a
//! standby streams as synchronous (`pg_stat_replication.sync_state` `sync` or `quorum`, which needs
//! the `pg_monitor` role when edi-inbox does not connect as a superuser).

use sqlx::PgPool;

use super::StoreError;

/// What the primary says of its synchronous replication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Synchronous {
    pub standby_names: String,
    pub synchronous_commit: String,
    /// Standbys streaming as synchronous now.
    pub streaming: i64,
}

impl Synchronous {
    /// Why acknowledged commits could be lost by a failover, when they could: a setting (see
    /// [`Synchronous::misconfigured`]) or no synchronous standby streaming (commits wait for one).
    pub fn shortfall(&self) -> Option<String> {
        self.misconfigured().or_else(|| {
            (self.streaming == 0).then(|| {
                format!(
                    "no standby named by synchronous_standby_names ({:?}) streams as synchronous now: \
                     commits wait for one",
                    self.standby_names
                )
            })
        })
    }

    /// A setting an operator must change, when one is wrong (not merely the standby away).
    pub fn misconfigured(&self) -> Option<String> {
        if self.standby_names.trim().is_empty() {
            return Some("synchronous_standby_names is empty: commits do not wait for any standby".into());
        }
        (!matches!(self.synchronous_commit.as_str(), "on" | "remote_write" | "remote_apply")).then(|| {
            format!(
                "synchronous_commit is {:?}: a commit is acknowledged before the standby has it (use on, \
                 remote_write or remote_apply)",
                self.synchronous_commit
            )
        })
    }
}

/// Asks the primary of `pool`: one round trip.
pub(super) async fn synchronous(pool: &PgPool) -> Result<Synchronous, StoreError> {
    let (standby_names, synchronous_commit, streaming) = sqlx::query_as(
        "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit'), \
         (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))",
    )
    .fetch_one(pool)
    .await?;
    Ok(Synchronous { standby_names, synchronous_commit, streaming })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(names: &str, commit: &str, streaming: i64) -> Synchronous {
        Synchronous { standby_names: names.into(), synchronous_commit: commit.into(), streaming }
    }

    #[test]
    fn only_a_streaming_synchronous_standby_with_waiting_commits_is_enough() {
        assert_eq!(state("standby1", "on", 1).shortfall(), None);
        assert_eq!(state("ANY 1 (s1, s2)", "remote_apply", 2).shortfall(), None);
        for (misconfigured, why) in [
            (state("", "on", 0), "synchronous_standby_names is empty"),
            (state("standby1", "local", 1), "synchronous_commit is \"local\""),
            (state("standby1", "off", 0), "synchronous_commit is \"off\""),
        ] {
            assert!(misconfigured.shortfall().unwrap().starts_with(why), "{misconfigured:?}");
            assert!(misconfigured.misconfigured().is_some(), "{misconfigured:?}");
        }
        let away = state("standby1", "on", 0);
        assert!(away.shortfall().unwrap().starts_with("no standby named"));
        assert_eq!(away.misconfigured(), None, "a standby away is not a setting to change");
    }
}
