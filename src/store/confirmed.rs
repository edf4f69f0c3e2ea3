//! A commit the synchronous standby did not confirm. When a commit waiting for the standby is
//! cancelled (`pg_cancel_backend`, `statement_timeout`, an administrator), PostgreSQL keeps it
//! committed on the primary and returns success with a WARNING ("canceling wait for synchronous
//! replication …"): acknowledging it would promise what a failover can lose. sqlx reports a server's
//! notices only as tracing events, on the thread that polls the statement, so [`CommitNotices`]
//! (installed with the subscriber) notes them for the statement [`watched`] is polling there.

use std::cell::Cell;
use std::fmt;
use std::future::Future;

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// The target of the events by which sqlx reports a PostgreSQL server's notices.
const NOTICE_TARGET: &str = "sqlx::postgres::notice";

thread_local! {
    /// While a watched statement is polled on this thread: whether a notice said its commit is
    /// local only.
    static WATCHED: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Runs `statement`, telling whether a notice said that its commit is on the primary only.
pub async fn watched<F: Future>(statement: F) -> (F::Output, bool) {
    let mut statement = std::pin::pin!(statement);
    let mut local_only = false;
    let output = std::future::poll_fn(|cx| {
        let outer = WATCHED.replace(Some(false));
        let poll = statement.as_mut().poll(cx);
        local_only |= WATCHED.replace(outer) == Some(true);
        poll
    })
    .await;
    (output, local_only)
}

/// The tracing layer that notes, for the statement being watched, a notice that its commit did not
/// wait for the synchronous standby.
pub struct CommitNotices;

impl CommitNotices {
    /// The layer with a filter of its own: sqlx's warnings about notices reach it whatever the
    /// logs' filter (`RUST_LOG`) lets through.
    pub fn filtered<S>() -> impl tracing_subscriber::Layer<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use tracing_subscriber::Layer;
        CommitNotices.with_filter(
            tracing_subscriber::filter::Targets::new().with_target(NOTICE_TARGET, tracing::Level::WARN),
        )
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CommitNotices {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != NOTICE_TARGET || WATCHED.get().is_none() {
            return;
        }
        let mut notice = LocalOnly(false);
        event.record(&mut notice);
        if notice.0 {
            WATCHED.set(Some(true));
        }
    }
}

/// Whether a notice's message is PostgreSQL's about a cancelled wait for synchronous replication
/// (the transaction "has already committed locally, but might not have been replicated").
struct LocalOnly(bool);

impl LocalOnly {
    fn read(&mut self, field: &Field, message: &str) {
        if field.name() == "message" && message.contains("wait for synchronous replication") {
            self.0 = true;
        }
    }
}

impl Visit for LocalOnly {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.read(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.read(field, &format!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[tokio::test]
    async fn a_cancelled_wait_for_the_standby_is_told_to_the_statement_it_ended() {
        let subscriber = tracing_subscriber::registry().with(CommitNotices);
        let _guard = tracing::subscriber::set_default(subscriber);
        let cancelled = async {
            tracing::warn!(target: NOTICE_TARGET, message = "canceling wait for synchronous replication due to user request");
            1
        };
        assert_eq!(watched(cancelled).await, (1, true));
        let other = async {
            tracing::warn!(target: NOTICE_TARGET, message = "there is no transaction in progress");
            2
        };
        assert_eq!(watched(other).await, (2, false));
        // Outside a watched statement, the notice is nobody's.
        tracing::warn!(target: NOTICE_TARGET, message = "canceling wait for synchronous replication due to user request");
        assert_eq!(watched(async { 3 }).await, (3, false));
    }
}
