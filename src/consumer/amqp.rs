//! The RabbitMQ consumer (AMQP 0-9-1 with `lapin`): a durable queue with a dead-letter queue beside
//! it (`{queue}.dead`, through the default exchange), manual acknowledgements, and a prefetch of
//! `--prefetch` messages processed at once (the store commits them in groups).

use futures_util::StreamExt;
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions, BasicRejectOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{Channel, Connection, ConnectionProperties};

use super::{Consumer, QueuedMessage, Settlement, dispatch, unsettled};
use crate::config::ConsumeConfig;
use crate::inbox::transport::{Door, Transport};

/// Declares `queue` durable with its dead-letter queue `{queue}.dead` (through the default
/// exchange), as the consumer expects them; returns the dead-letter queue's name. Publishers that
/// start first declare them the same way.
pub async fn declare(channel: &Channel, queue: &str) -> Result<String, lapin::Error> {
    let dead = format!("{queue}.dead");
    channel
        .queue_declare(dead.as_str().into(), QueueDeclareOptions::durable(), FieldTable::default())
        .await?;
    let mut arguments = FieldTable::default();
    arguments.insert("x-dead-letter-exchange".into(), AMQPValue::LongString("".into()));
    arguments.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString(dead.as_str().into()));
    channel.queue_declare(queue.into(), QueueDeclareOptions::durable(), arguments).await?;
    Ok(dead)
}

/// Declares the queue and its dead-letter queue; consumes until `stop`.
pub async fn run(
    inbox: Consumer,
    url: &str,
    config: &ConsumeConfig,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let connection = Connection::connect(url, ConnectionProperties::default()).await?;
    let channel = connection.create_channel().await?;
    let dead = declare(&channel, &config.queue).await.map_err(|error| {
        // Most often PRECONDITION_FAILED: the queue exists already, declared with other arguments.
        format!(
            "cannot declare queue {queue:?} (durable, dead-lettered to \"{queue}.dead\") and its \
             dead-letter queue; an existing queue of that name must be declared the same way: {error}",
            queue = config.queue
        )
    })?;
    channel.basic_qos(config.prefetch, BasicQosOptions::default()).await?;
    let deliveries = channel
        .basic_consume(
            config.queue.as_str().into(),
            config.durable.as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    tracing::info!(queue = %config.queue, dead_letters = %dead, "consuming from RabbitMQ");
    let deliveries = deliveries.filter_map(|delivery| async move {
        delivery.map_err(|error| tracing::warn!(%error, "RabbitMQ delivery failed")).ok()
    });
    let settle = |delivery: Delivery| {
        let inbox = inbox.clone();
        async move {
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
            let acker = delivery.acker;
            let settled = match inbox.handle(message).await.settlement {
                Settlement::Ack => acker.ack(BasicAckOptions::default()).await,
                Settlement::DeadLetter => acker.reject(BasicRejectOptions { requeue: false }).await,
                Settlement::Retry => {
                    tokio::time::sleep(inbox.backoff).await;
                    acker.nack(BasicNackOptions { multiple: false, requeue: true }).await
                }
            };
            if let Err(error) = settled {
                unsettled(error);
            }
        }
    };
    dispatch(Box::pin(deliveries), config.prefetch, stop, settle).await?;
    connection.close(200, "edi-inbox stopping".into()).await?;
    Ok(())
}
