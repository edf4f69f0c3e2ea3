//! The Kafka consumer (`rdkafka`, librdkafka; Event Hubs, Redpanda and MSK speak the same protocol):
//! a member of the URL's consumer group reading its topics, up to `--prefetch` messages recorded at
//! once. A message's offset is stored for commit only once it and every message before it in its
//! partition are settled (`watermark`), and stored offsets are committed every second, when the
//! group takes partitions away and on shutdown: a crash between COMMIT and the offset commit
//! redelivers the message, which is then a replay. What can never succeed goes to `{topic}.dead`
//! with headers naming why, then the offset moves on; a transient failure is retried in place after
//! a backoff, so the partition's commit waits for it (never skipped, never committed past).

pub mod source;
mod watermark;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer as _, ConsumerContext, Rebalance, StreamConsumer,
};
use rdkafka::error::{KafkaError, KafkaResult, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use tokio::sync::watch;

use super::{Consumer, Handled, QueuedMessage, Settlement, backoff, dispatch};
use crate::config::ConsumeConfig;
use crate::inbox::transport::{Door, Transport};
use source::KafkaSource;
use watermark::{TopicPartition, Watermarks};

/// How long the brokers' metadata may take at start (unreachable brokers or refused credentials
/// end the process with its error), and a dead letter's delivery before it is tried again.
const BROKER_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest refusal reason put in a dead letter's header, in bytes.
const MAX_REASON: usize = 1024;

/// The consumer's side of the group: forgets the partitions taken away, and logs librdkafka's
/// messages through `tracing`.
struct Group {
    marks: Arc<Mutex<Watermarks>>,
}

impl ClientContext for Group {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(facility, "librdkafka: {message}")
            }
            RDKafkaLogLevel::Warning => tracing::warn!(facility, "librdkafka: {message}"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(facility, "librdkafka: {message}")
            }
            RDKafkaLogLevel::Debug => tracing::debug!(facility, "librdkafka: {message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(%error, "Kafka client: {reason}");
    }
}

impl ConsumerContext for Group {
    fn post_rebalance(&self, _: &BaseConsumer<Group>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(partitions) => {
                tracing::info!(partitions = %listed(partitions), "Kafka partitions assigned")
            }
            Rebalance::Revoke(partitions) => {
                let mut marks = self.marks.lock().unwrap_or_else(PoisonError::into_inner);
                for partition in partitions.elements() {
                    marks.forget(&(partition.topic().to_owned(), partition.partition()));
                }
                tracing::info!(partitions = %listed(partitions), "Kafka partitions revoked");
            }
            Rebalance::Error(error) => tracing::warn!(%error, "Kafka rebalance failed"),
        }
    }

    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        match result {
            Ok(()) => tracing::debug!(offsets = %listed(offsets), "Kafka offsets committed"),
            // Nothing was settled since the last commit.
            Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => {}
            Err(error) => tracing::warn!(%error, "Kafka offset commit failed; the next one carries it"),
        }
    }
}

/// `topic[partition]@offset, …` for a log line.
fn listed(partitions: &TopicPartitionList) -> String {
    let elements = partitions.elements();
    let shown = elements.iter().map(|p| match p.offset() {
        Offset::Offset(offset) => format!("{}[{}]@{offset}", p.topic(), p.partition()),
        _ => format!("{}[{}]", p.topic(), p.partition()),
    });
    shown.collect::<Vec<_>>().join(", ")
}

/// Joins the group and consumes until `stop`; then settles what is in flight and commits.
pub async fn run(
    inbox: Consumer,
    from: &str,
    config: &ConsumeConfig,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let source: KafkaSource = from.parse()?;
    let marks = Arc::new(Mutex::new(Watermarks::default()));
    let mut settings = source.client_config();
    settings
        .set("group.id", &source.group)
        .set("enable.auto.commit", "true")
        .set("auto.commit.interval.ms", "1000")
        .set("enable.auto.offset.store", "false")
        // A new group starts at the oldest message the topic keeps: none is skipped.
        .set("auto.offset.reset", "earliest");
    if let Some(timeout) = source.session_timeout {
        settings.set("session.timeout.ms", timeout.as_millis().to_string());
        settings.set("heartbeat.interval.ms", (timeout.as_millis() / 3).to_string());
    }
    let consumer: Arc<StreamConsumer<Group>> =
        Arc::new(settings.create_with_context(Group { marks: Arc::clone(&marks) })?);
    let dead_letters: FutureProducer = source
        .client_config()
        .set("acks", "all")
        .set("message.max.bytes", (config.consume_max_bytes + 64 * 1024).to_string())
        .create()?;
    prepare_topics(&consumer, &source).await?;
    let topics: Vec<&str> = source.topics.iter().map(String::as_str).collect();
    consumer.subscribe(&topics)?;
    tracing::info!(brokers = %source.brokers.join(","), topics = %source.topics.join(","),
        group = %source.group, "consuming from Kafka");

    let (stopping_tx, stopping) = watch::channel(false);
    let stop = async move {
        stop.await;
        let _ = stopping_tx.send(true);
    };
    let taken = Arc::clone(&marks);
    let messages = consumer.stream().filter_map(move |message| {
        let message = match message {
            Ok(message) => {
                let message = Taken::from(&message);
                tracing::debug!(topic = %message.partition.0, partition = message.partition.1,
                    offset = message.offset, "Kafka message taken");
                taken
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(message.partition.clone(), message.offset);
                Some(message)
            }
            Err(error) => {
                tracing::warn!(%error, "Kafka fetch failed; fetching again");
                None
            }
        };
        std::future::ready(message)
    });
    let settle = |message: Taken| {
        let settler = Settler {
            inbox: inbox.clone(),
            consumer: Arc::clone(&consumer),
            dead_letters: dead_letters.clone(),
            marks: Arc::clone(&marks),
            stopping: stopping.clone(),
        };
        settler.settle(message)
    };
    dispatch(Box::pin(messages), config.prefetch, stop, settle).await?;
    match consumer.commit_consumer_state(CommitMode::Sync) {
        Ok(()) | Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => Ok(()),
        Err(error) => {
            Err(format!("the last offset commit failed (the group reads those messages again): {error}")
                .into())
        }
    }
}

/// Refuses to start on a topic the brokers do not have, and creates a missing dead-letter topic.
async fn prepare_topics(consumer: &Arc<StreamConsumer<Group>>, source: &KafkaSource) -> Result<(), String> {
    let asking = Arc::clone(consumer);
    let metadata = tokio::task::spawn_blocking(move || asking.fetch_metadata(None, BROKER_TIMEOUT))
        .await
        .map_err(|error| error.to_string())?
        .map_err(|error| format!("cannot read the Kafka brokers' metadata: {error}"))?;
    let exists = |name: &str| metadata.topics().iter().any(|t| t.name() == name && t.error().is_none());
    if let Some(missing) = source.topics.iter().find(|topic| !exists(topic)) {
        return Err(format!(
            "Kafka topic {missing:?} does not exist (create it with the partitions you want)"
        ));
    }
    let dead: Vec<String> =
        source.topics.iter().map(|t| KafkaSource::dead_letters(t)).filter(|t| !exists(t)).collect();
    if dead.is_empty() {
        return Ok(());
    }
    let admin: AdminClient<_> = source.client_config().create().map_err(|error| error.to_string())?;
    let new: Vec<NewTopic> = dead.iter().map(|t| NewTopic::new(t, 1, TopicReplication::Fixed(-1))).collect();
    let created = admin.create_topics(&new, &AdminOptions::new()).await.map_err(|error| error.to_string())?;
    for result in created {
        match result {
            Ok(topic) => tracing::info!(topic, "Kafka dead-letter topic created"),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((topic, error)) => {
                return Err(format!("cannot create the dead-letter topic {topic:?} (create it): {error}"));
            }
        }
    }
    Ok(())
}

/// What settling one message needs.
struct Settler {
    inbox: Consumer,
    consumer: Arc<StreamConsumer<Group>>,
    dead_letters: FutureProducer,
    marks: Arc<Mutex<Watermarks>>,
    stopping: watch::Receiver<bool>,
}

impl Settler {
    /// Records the message (retrying a transient failure until it passes or the consumer stops),
    /// dead-letters a refusal, and then stores the partition's committable offset.
    async fn settle(mut self, message: Taken) {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let handled = self.inbox.handle(message.queued.clone()).await;
            match handled.settlement {
                Settlement::Ack => break,
                Settlement::DeadLetter if self.dead_letter(&message, &handled).await => break,
                // Not settled: a later consumer of the partition reads it again.
                Settlement::DeadLetter => return,
                Settlement::Retry if self.wait(backoff(self.inbox.backoff, attempts)).await => {}
                Settlement::Retry => return,
            }
        }
        let partition = &message.partition;
        let committable =
            self.marks.lock().unwrap_or_else(PoisonError::into_inner).settle(partition, message.offset);
        tracing::debug!(topic = %partition.0, partition = partition.1, offset = message.offset,
            committable = ?committable, "Kafka message settled");
        if let Some(next) = committable {
            let mut offsets = TopicPartitionList::new();
            let stored = offsets
                .add_partition_offset(&partition.0, partition.1, Offset::Offset(next))
                .and_then(|()| self.consumer.store_offsets(&offsets));
            if let Err(error) = stored {
                // The partition was taken away meanwhile: its next holder reads from the last commit.
                tracing::debug!(%error, topic = %partition.0, partition = partition.1, "offset not stored");
            }
        }
    }

    /// Waits `delay`; false when the consumer stops meanwhile.
    async fn wait(&mut self, delay: Duration) -> bool {
        if *self.stopping.borrow() {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => true,
            _ = self.stopping.changed() => false,
        }
    }

    /// Sends `message` to its topic's dead letters with headers naming why, retrying until the
    /// broker has it; false when the consumer stops first.
    async fn dead_letter(&mut self, message: &Taken, handled: &Handled) -> bool {
        let (source, partition) = &message.partition;
        let topic = KafkaSource::dead_letters(source);
        let (partition, offset) = (partition.to_string(), message.offset.to_string());
        let status = handled.status.to_string();
        let reason = handled.reason.as_deref().map(|reason| crate::inbox::truncated(reason, MAX_REASON));
        let mut headers = OwnedHeaders::new();
        for (key, value) in [
            ("edi-inbox-outcome", Some(handled.outcome)),
            ("edi-inbox-status", Some(status.as_str())),
            ("edi-inbox-reason", reason.as_deref()),
            ("edi-inbox-topic", Some(source.as_str())),
            ("edi-inbox-partition", Some(partition.as_str())),
            ("edi-inbox-offset", Some(offset.as_str())),
        ] {
            headers = headers.insert(Header { key, value });
        }
        // The original's headers follow ours, less any in our namespace: a producer cannot plant
        // a copy of ours that a reader would take for the service's word.
        for original in message.headers.iter().flat_map(OwnedHeaders::iter) {
            if !is_ours(original.key) {
                headers = headers.insert(original);
            }
        }
        let mut attempts = 0;
        let mut body = (!message.null_payload).then_some(&message.queued.body[..]);
        loop {
            attempts += 1;
            let mut record = FutureRecord::<[u8], [u8]>::to(&topic).headers(headers.clone());
            if let Some(key) = &message.key {
                record = record.key(key);
            }
            if let Some(body) = body {
                record = record.payload(body);
            }
            match self.dead_letters.send(record, BROKER_TIMEOUT).await {
                Ok(_) => {
                    tracing::info!(topic, outcome = handled.outcome, %source, partition, offset = message.offset,
                        "Kafka message dead-lettered");
                    return true;
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge), _))
                    if body.is_some() =>
                {
                    // Too large for the dead-letter topic: its headers still say where it is.
                    let bytes = body.map_or(0, <[u8]>::len).to_string();
                    headers = headers.insert(Header { key: "edi-inbox-body-omitted", value: Some(&bytes) });
                    body = None;
                }
                Err((error, _)) => {
                    tracing::warn!(%error, topic, "Kafka dead letter not delivered; retrying");
                    if !self.wait(backoff(self.inbox.backoff, attempts)).await {
                        return false;
                    }
                }
            }
        }
    }
}

/// Whether a header name is in the namespace of the headers this service writes.
fn is_ours(key: &str) -> bool {
    key.get(..OUR_HEADERS.len()).is_some_and(|prefix| prefix.eq_ignore_ascii_case(OUR_HEADERS))
}

/// The prefix of the headers a dead letter carries from this service.
const OUR_HEADERS: &str = "edi-inbox-";

/// A message taken from a partition: the inbox's view of it (its body, its `content-type` header,
/// and where it was read), and what its dead letter repeats. The body is copied once, out of
/// librdkafka's buffer.
struct Taken {
    queued: QueuedMessage,
    partition: TopicPartition,
    offset: i64,
    key: Option<Vec<u8>>,
    headers: Option<OwnedHeaders>,
    /// A message without a value (a tombstone), as opposed to an empty one.
    null_payload: bool,
}

impl From<&BorrowedMessage<'_>> for Taken {
    fn from(message: &BorrowedMessage<'_>) -> Taken {
        let headers = message.headers().map(|headers| headers.detach());
        let content_type = headers.as_ref().and_then(|headers| {
            let found = headers.iter().find(|h| h.key.eq_ignore_ascii_case("content-type"))?;
            found.value.map(|value| String::from_utf8_lossy(value).into_owned())
        });
        let id = format!("{}/{}/{}", message.topic(), message.partition(), message.offset());
        let transport = Transport::new(Door::Kafka, Some(&id))
            .with("topic", Some(message.topic()))
            .with("partition", Some(message.partition()))
            .with("offset", Some(message.offset()))
            .with("key", message.key().map(|key| crate::inbox::truncated(&String::from_utf8_lossy(key), 256)))
            .with("timestamp_ms", message.timestamp().to_millis());
        Taken {
            queued: QueuedMessage {
                body: message.payload().map(bytes::Bytes::copy_from_slice).unwrap_or_default(),
                content_type,
                transport,
            },
            partition: (message.topic().to_owned(), message.partition()),
            offset: message.offset(),
            key: message.key().map(<[u8]>::to_vec),
            headers,
            null_payload: message.payload().is_none(),
        }
    }
}
