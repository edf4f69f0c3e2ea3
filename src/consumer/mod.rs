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
use crate::http::ApiContext;
use crate::http::interchanges::{self, Inbound, PartnerOf, Settlement};
use crate::inbox::transport::Transport;
use crate::store::AttemptFacts;

/// One message taken from a queue.
pub struct QueuedMessage {
    pub body: Bytes,
    pub content_type: Option<String>,
    pub transport: Transport,
}

/// Runs messages through the inbox.
#[derive(Clone)]
pub struct Ingest {
    ctx: ApiContext,
    /// How long a message waits before it is redelivered after a transient failure.
    pub backoff: Duration,
}

impl Ingest {
    pub fn new(ctx: ApiContext, config: &ConsumeConfig) -> Ingest {
        Ingest { ctx, backoff: Duration::from_millis(config.retry_backoff_ms) }
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
        let result = match self.ctx.store.directory().await {
            Ok(directory) => {
                let inbound = Inbound {
                    body: message.body,
                    content_type: message.content_type,
                    partner: PartnerOf::Sender(directory),
                    wants_ack: false,
                };
                interchanges::ingest(&self.ctx, inbound, &mut facts, received_at).await
            }
            Err(error) => Err(error.into()),
        };
        let response = interchanges::conclude(&self.ctx, result, &facts, None, received_at, started);
        let settlement = interchanges::settlement(response.status());
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
    ingest: Ingest,
    config: &ConsumeConfig,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let from = config.from.as_deref().ok_or("`consume` needs a broker: --from amqp://… or nats://…")?;
    if from.starts_with("amqp://") || from.starts_with("amqps://") {
        amqp::run(ingest, from, config, stop).await
    } else if from.starts_with("nats://") || from.starts_with("tls://") {
        nats::run(ingest, from, config, stop).await
    } else {
        Err(format!("unsupported broker URL {from:?}: use amqp://… or nats://…").into())
    }
}
