//! The NATS JetStream consumer (`async-nats`): a stream capturing `--subject` (created when
//! missing), a durable pull consumer with explicit acks, and `--prefetch` messages processed at once.
//! A message that can never succeed is terminated (`+TERM`: kept in the stream, never redelivered);
//! a transient failure is `NAK`ed with the backoff as its delay.

use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer::pull};
use futures_util::StreamExt;

use super::{Consumer, QueuedMessage, Settlement, backoff, dispatch, unsettled};
use crate::config::ConsumeConfig;
use crate::inbox::transport::{Door, Transport};

/// Creates the stream and the durable consumer when missing; consumes until `stop`.
pub async fn run(
    inbox: Consumer,
    url: &str,
    config: &ConsumeConfig,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = async_nats::connect(url).await?;
    let context = jetstream::new(client);
    let stream = context
        .get_or_create_stream(jetstream::stream::Config {
            name: config.queue.clone(),
            subjects: vec![config.subject.clone()],
            ..Default::default()
        })
        .await?;
    let consumer: pull::Stream = stream
        .get_or_create_consumer(
            &config.durable,
            pull::Config {
                durable_name: Some(config.durable.clone()),
                filter_subject: config.subject.clone(),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ack_wait: Duration::from_secs(config.ack_wait_secs),
                max_ack_pending: i64::from(config.prefetch),
                ..Default::default()
            },
        )
        .await?
        .messages()
        .await?;
    tracing::info!(stream = %config.queue, subject = %config.subject, durable = %config.durable,
        "consuming from NATS JetStream");
    let messages = consumer.filter_map(|message| async move {
        message.map_err(|error| tracing::warn!(%error, "JetStream pull failed; pulling again")).ok()
    });
    let settle = |message: jetstream::Message| {
        let inbox = inbox.clone();
        async move {
            let header =
                |name: &str| message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.to_string());
            let (transport, delivered) = match message.info() {
                Ok(info) => {
                    let id = header("Nats-Msg-Id")
                        .unwrap_or_else(|| format!("{}:{}", info.stream, info.stream_sequence));
                    let transport = Transport::new(Door::Nats, Some(&id))
                        .with("stream", Some(info.stream))
                        .with("consumer", Some(info.consumer))
                        .with("stream_sequence", Some(info.stream_sequence))
                        .with("delivered", Some(info.delivered));
                    (transport, info.delivered)
                }
                Err(_) => (Transport::new(Door::Nats, header("Nats-Msg-Id").as_deref()), 1),
            };
            let queued = QueuedMessage {
                body: message.payload.clone(),
                content_type: header("Content-Type"),
                transport: transport.with("subject", Some(message.subject.to_string())),
            };
            let kind = match inbox.handle(queued).await.settlement {
                Settlement::Ack => AckKind::Ack,
                Settlement::DeadLetter => AckKind::Term,
                Settlement::Retry => AckKind::Nak(Some(backoff(inbox.backoff, delivered))),
            };
            if let Err(error) = message.ack_with(kind).await {
                unsettled(error);
            }
        }
    };
    dispatch(Box::pin(messages), config.prefetch, stop, settle).await
}
