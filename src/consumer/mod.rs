//! Queue consumers, the Inbox pattern's original case: `edi-inbox consume` reads interchanges from
//! RabbitMQ (AMQP 0-9-1, manual acknowledgements), NATS JetStream (a durable pull consumer,
//! explicit acks) or Kafka (a consumer group, offsets committed) and runs each through the same inbox
//! transaction as an HTTP delivery. The broker is acknowledged only after COMMIT: a crash in between
//! redelivers the message, which is then a replay (acked, no second effect). What can never succeed is dead-lettered, never requeued
//! forever; a database outage sends the message back after a backoff.

pub mod amqp;
pub mod kafka;
pub mod nats;

use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;

use crate::config::ConsumeConfig;
use crate::inbox::transport::Transport;
use crate::ingest::{self, Inbound, Ingest, Ingested, PartnerOf};
use crate::partners::PartnerId;
use crate::store::{AttemptFacts, StoreError};

/// One message taken from a queue.
#[derive(Clone)]
pub struct QueuedMessage {
    pub body: Bytes,
    pub content_type: Option<String>,
    pub transport: Transport,
}

/// What a queue consumer tells its broker once a message was handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settlement {
    /// Done: recorded, replayed, held, bypassed, or rejected and stored.
    Ack,
    /// It can never succeed as it is (malformed, forbidden, conflicting): out of the queue, into
    /// its dead letters.
    DeadLetter,
    /// The database could not take it now: redeliver after a backoff.
    Retry,
}

/// What became of one message: how the broker is to settle it and, for a dead letter, why.
#[derive(Debug)]
pub struct Handled {
    pub settlement: Settlement,
    /// The audit trail's name for the outcome (`recorded`, `replayed`, `malformed`, `conflict`, …).
    pub outcome: &'static str,
    /// The status an HTTP delivery of the same message would have been answered with.
    pub status: u16,
    /// Why the message was refused, when it was.
    pub reason: Option<String>,
}

/// How the broker settles a message the inbox ingested or refused.
fn settlement(result: &Result<Ingested, ingest::Error>) -> Settlement {
    match result {
        Ok(Ingested::Conflict { .. }) => Settlement::DeadLetter,
        Ok(_) => Settlement::Ack,
        Err(
            ingest::Error::Malformed(_)
            | ingest::Error::Forbidden(_)
            | ingest::Error::WrongState(_)
            | ingest::Error::TooLarge(_)
            | ingest::Error::TooLargeToRecord { .. }
            | ingest::Error::Store(StoreError::Refused(_)),
        ) => Settlement::DeadLetter,
        Err(ingest::Error::Store(_) | ingest::Error::Internal | ingest::Error::Busy { .. }) => {
            Settlement::Retry
        }
    }
}

/// Runs messages through the inbox.
#[derive(Clone)]
pub struct Consumer {
    ingest: Ingest,
    /// How long a message waits before it is redelivered after a transient failure.
    pub backoff: Duration,
    /// The largest message read.
    max_bytes: usize,
    /// The one partner whose messages this queue carries, when bound.
    bound: Option<PartnerId>,
}

impl Consumer {
    pub fn new(ingest: Ingest, config: &ConsumeConfig) -> Consumer {
        Consumer {
            ingest,
            backoff: Duration::from_millis(config.retry_backoff_ms),
            max_bytes: config.consume_max_bytes,
            bound: config.consume_partner.clone(),
        }
    }

    /// Records one message exactly once (audited and logged as an HTTP delivery is) and says what
    /// the broker is to be told. The partner is the one whose sender identity the envelope names.
    pub async fn handle(&self, message: QueuedMessage) -> Handled {
        let (received_at, started) = (Utc::now(), Instant::now());
        let mut facts = AttemptFacts {
            content_type: message.content_type.clone(),
            body_bytes: i64::try_from(message.body.len()).unwrap_or(i64::MAX),
            transport: message.transport,
            ..AttemptFacts::default()
        };
        let result = if message.body.len() > self.max_bytes {
            Err(ingest::Error::TooLarge(self.max_bytes))
        } else {
            match self.ingest.store().directory().await {
                Ok(directory) => {
                    let inbound = Inbound {
                        body: message.body,
                        content_type: message.content_type,
                        partner: PartnerOf::Sender { directory, bound: self.bound.clone() },
                    };
                    // The message is already read: recording it tops up an empty reservation.
                    let mut reservation = self.ingest.budget().nothing();
                    self.ingest.deliver(inbound, &mut reservation, &mut facts, received_at).await
                }
                Err(error) => Err(ingest::Error::Store(error)),
            }
        };
        let (report, reason) = match &result {
            Ok(ingested) => {
                let reason = match ingested {
                    Ingested::Conflict { original_id, .. } => Some(format!(
                        "interchange {original_id} was recorded under the same key with other content"
                    )),
                    _ => None,
                };
                (self.ingest.report(ingested, &facts, received_at), reason)
            }
            Err(error) => (self.ingest.report_refusal(error), Some(error.to_string())),
        };
        let (outcome, status) = (report.outcome, report.status);
        self.ingest.conclude(report, &facts, received_at, started);
        let handled = Handled { settlement: settlement(&result), outcome, status, reason };
        // A crash here, after COMMIT and before the broker hears of it, makes the broker redeliver.
        crate::crash_point("consume-before-ack");
        handled
    }
}

/// Settles each message of `messages` on a task of its own, at most `prefetch` at once, until
/// `stop` resolves (then waits for those in flight) or the broker ends the stream (an error: the
/// process exits and its supervisor restarts it; unacknowledged messages are redelivered).
async fn dispatch<M, S, F, Fut>(
    mut messages: S,
    prefetch: u16,
    stop: impl Future<Output = ()>,
    settle: F,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    S: futures_util::Stream<Item = M> + Unpin,
    F: Fn(M) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    use futures_util::StreamExt;
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(usize::from(prefetch)));
    let mut stop = std::pin::pin!(stop);
    loop {
        let message = tokio::select! {
            _ = &mut stop => break,
            message = messages.next() => message,
        };
        let Some(message) = message else { return Err("the broker ended the subscription".into()) };
        let slot = std::sync::Arc::clone(&slots).acquire_owned().await?;
        let settling = settle(message);
        tokio::spawn(async move {
            settling.await;
            drop(slot);
        });
    }
    let _all = slots.acquire_many(u32::from(prefetch)).await?;
    Ok(())
}

/// The redelivery delay after `attempts`: doubling from `base`, at most 64 times it.
fn backoff(base: Duration, attempts: i64) -> Duration {
    base.saturating_mul(1 << attempts.clamp(1, 7).saturating_sub(1))
}

/// Logs an acknowledgement the broker did not take: it will redeliver the message (a replay).
fn unsettled(error: impl std::fmt::Display) {
    tracing::warn!(%error, "the broker did not take the acknowledgement; it will redeliver");
}

/// Consumes from the broker `--from` names until `stop` resolves, then settles what is in flight.
pub async fn run(
    consumer: Consumer,
    config: &ConsumeConfig,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let from =
        config.from.as_deref().ok_or("`consume` needs a broker: --from amqp://…, nats://… or kafka://…")?;
    if from.starts_with("amqp://") || from.starts_with("amqps://") {
        amqp::run(consumer, from, config, stop).await
    } else if from.starts_with("nats://") || from.starts_with("tls://") {
        nats::run(consumer, from, config, stop).await
    } else if from.starts_with("kafka://") || from.starts_with("kafkas://") {
        kafka::run(consumer, from, config, stop).await
    } else {
        // Not quoted: the URL may hold a password.
        Err("unsupported broker URL: use amqp://…, nats://… or kafka://…".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_retries_only_what_may_succeed_later() {
        let unavailable = || StoreError::Unavailable(sqlx::Error::PoolTimedOut);
        let edi = crate::edi::EdiError::unlocated("no ISA");
        for (result, expected) in [
            (Err(ingest::Error::Malformed(edi)), Settlement::DeadLetter),
            (Err(ingest::Error::Forbidden("suspended".into())), Settlement::DeadLetter),
            (Err(ingest::Error::TooLarge(10)), Settlement::DeadLetter),
            (
                Err(ingest::Error::TooLargeToRecord { documents: 9, needed: 20, budget: 10 }),
                Settlement::DeadLetter,
            ),
            (Err(ingest::Error::Busy { needed: 2, budget: 1 }), Settlement::Retry),
            (Err(ingest::Error::Store(unavailable())), Settlement::Retry),
            (Err(ingest::Error::Store(StoreError::Corrupt("x".into()))), Settlement::Retry),
            (
                Err(ingest::Error::Store(StoreError::Refused(sqlx::Error::Protocol("22021".into())))),
                Settlement::DeadLetter,
            ),
            (Err(ingest::Error::Internal), Settlement::Retry),
        ] {
            assert_eq!(settlement(&result), expected, "{result:?}");
        }
    }

    #[test]
    fn redelivery_delays_double_up_to_a_bound() {
        let base = Duration::from_millis(100);
        let delays: Vec<u64> =
            [0, 1, 2, 3, 7, 50].iter().map(|n| backoff(base, *n).as_millis() as u64).collect();
        assert_eq!(delays, [100, 100, 200, 400, 6400, 6400]);
    }
}
