//! The RabbitMQ consumer (AMQP 0-9-1 with `lapin`): a durable queue with a dead-letter queue beside
//! it (`{queue}.dead`, through the default exchange), manual acknowledgements, and a prefetch of
//! `--prefetch` messages processed at once (the store commits them in groups).

use std::sync::Arc;

use futures_util::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions, BasicRejectOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{Connection, ConnectionProperties};
use tokio::sync::Semaphore;

use super::{Ingest, QueuedMessage};
use crate::config::ConsumeConfig;
use crate::http::interchanges::Settlement;
use crate::inbox::transport::{Door, Transport};

/// Declares the queue and its dead-letter queue; consumes until `stop`.
pub async fn run(
    ingest: Ingest,
    url: &str,
    config: &ConsumeConfig,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let connection = Connection::connect(url, ConnectionProperties::default()).await?;
    let channel = connection.create_channel().await?;
    let dead = format!("{}.dead", config.queue);
    channel
        .queue_declare(dead.as_str().into(), QueueDeclareOptions::durable(), FieldTable::default())
        .await?;
    let mut arguments = FieldTable::default();
    arguments.insert("x-dead-letter-exchange".into(), AMQPValue::LongString("".into()));
    arguments.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString(dead.as_str().into()));
    channel.queue_declare(config.queue.as_str().into(), QueueDeclareOptions::durable(), arguments).await?;
    channel.basic_qos(config.prefetch, BasicQosOptions::default()).await?;
    let mut deliveries = channel
        .basic_consume(
            config.queue.as_str().into(),
            config.durable.as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    tracing::info!(queue = %config.queue, dead_letters = %dead, "consuming from RabbitMQ");
    let slots = Arc::new(Semaphore::new(usize::from(config.prefetch)));
    let mut stop = std::pin::pin!(stop);
    loop {
        let delivery = tokio::select! {
            _ = &mut stop => break,
            delivery = deliveries.next() => delivery,
        };
        let Some(delivery) = delivery else { return Err("the RabbitMQ consumer was cancelled".into()) };
        let delivery = delivery?;
        let slot = Arc::clone(&slots).acquire_owned().await?;
        let ingest = ingest.clone();
        tokio::spawn(async move {
            let message = QueuedMessage {
                body: delivery.data.into(),
                content_type: delivery.properties.content_type().as_ref().map(ShortString::to_string),
                transport: Transport::new(
                    Door::Amqp,
                    delivery.properties.message_id().as_ref().map(ShortString::as_str),
                )
                .with("queue", Some(delivery.routing_key.to_string()))
                .with("exchange", Some(delivery.exchange.to_string()).filter(|e| !e.is_empty()))
                .with("redelivered", Some(delivery.redelivered))
                .with("app_id", delivery.properties.app_id().as_ref().map(ShortString::to_string)),
            };
            let settlement = ingest.handle(message).await;
            let acker = delivery.acker;
            let settled = match settlement {
                Settlement::Ack => acker.ack(BasicAckOptions::default()).await,
                Settlement::DeadLetter => acker.reject(BasicRejectOptions { requeue: false }).await,
                Settlement::Retry => {
                    tokio::time::sleep(ingest.backoff).await;
                    acker.nack(BasicNackOptions { multiple: false, requeue: true }).await
                }
            };
            if let Err(error) = settled {
                tracing::warn!(%error, "the broker did not take the acknowledgement; it will redeliver");
            }
            drop(slot);
        });
    }
    // Settle what is in flight before closing the channel.
    let _all = slots.acquire_many(u32::from(config.prefetch)).await?;
    connection.close(200, "edi-inbox stopping".into()).await?;
    Ok(())
}
