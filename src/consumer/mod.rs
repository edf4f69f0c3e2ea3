//! Queue consumers, the Inbox pattern's original case: `edi-inbox consume` reads interchanges from
//! RabbitMQ (AMQP 0-9-1, manual acknowledgements) or NATS JetStream (a durable pull consumer,
//! explicit acks) and runs each through the same inbox transaction as an HTTP delivery. The broker
//! is acknowledged only after COMMIT: a crash in between redelivers the message, which is then a
//! replay (acked, no second effect). What can never succeed is dead-lettered, never requeued
//! forever; a database outage sends the message back after a backoff.

pub mod amqp;
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
    pub async fn handle(&self, message: QueuedMessage) -> Settlement {
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
        let report = match &result {
            Ok(ingested) => self.ingest.report(ingested, &facts, received_at),
            Err(error) => self.ingest.report_refusal(error),
        };
        self.ingest.conclude(report, &facts, received_at, started);
        let settlement = settlement(&result);
        // A crash here, after COMMIT and before the broker hears of it, makes the broker redeliver.
        crate::crash_point("consume-before-ack");
        settlement
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
    let from = config.from.as_deref().ok_or("`consume` needs a broker: --from amqp://… or nats://…")?;
    if from.starts_with("amqp://") || from.starts_with("amqps://") {
        amqp::run(consumer, from, config, stop).await
    } else if from.starts_with("nats://") || from.starts_with("tls://") {
        nats::run(consumer, from, config, stop).await
    } else {
        Err(format!("unsupported broker URL {from:?}: use amqp://… or nats://…").into())
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
}
