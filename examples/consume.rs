//! Consumer benchmark driver: publishes COUNT interchanges to RabbitMQ, NATS JetStream or Kafka
//! (`kafka://HOST:PORT`: a topic of 8 partitions is made) with the brokers' Rust clients, then starts `edi-inbox consume` (BINARY) on DATABASE_URL and times it
//! until every message is audited, and prints one JSON line. `unique` publishes COUNT distinct
//! interchanges (each a first delivery); `redelivered` publishes one interchange COUNT times (every
//! message after the first is a replay: acked, no effect).
//! `cargo run --release --example consume -- BINARY DATABASE_URL BROKER_URL COUNT unique|redelivered [PREFETCH]`;
//! `bench/consume.sh` runs it next to HTTP ingest.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::{BasicProperties, Connection, ConnectionProperties};

const SAMPLE: &str = include_str!("../tests/fixtures/x12/810-single.edi");

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let binary = args.next().expect("BINARY");
    let database_url = args.next().expect("DATABASE_URL");
    let broker = args.next().expect("BROKER_URL");
    let count: u32 = args.next().and_then(|a| a.parse().ok()).expect("COUNT");
    let redelivered = match args.next().as_deref() {
        Some("unique") => false,
        Some("redelivered") => true,
        other => panic!("mode must be unique or redelivered, not {other:?}"),
    };
    let prefetch = args.next().unwrap_or_else(|| "256".into());
    let queue = format!("edi_bench_{}", uuid::Uuid::now_v7().simple());
    let bodies = (0..count).map(|n| {
        let control = if redelivered { 1 } else { n + 1 };
        SAMPLE.replace("000001142", &format!("{control:09}")).into_bytes()
    });
    let status = Command::new(&binary)
        .args(["migrate"])
        .env("DATABASE_URL", &database_url)
        .env("RUST_LOG", "warn")
        .status()
        .expect("migrate");
    assert!(status.success(), "edi-inbox migrate");
    let from = if broker.starts_with("amqp") {
        publish_amqp(&broker, &queue, bodies).await;
        broker.clone()
    } else if let Some(address) = broker.strip_prefix("kafka://") {
        publish_kafka(address, &queue, bodies).await;
        format!("kafka://{address}/{queue}?group={queue}")
    } else {
        publish_nats(&broker, &queue, bodies).await;
        broker.clone()
    };
    let started = Instant::now();
    let mut consumer = Command::new(&binary)
        .args([
            "consume",
            "--consume-auth",
            "open",
            "--from",
            &from,
            "--queue",
            &queue,
            "--subject",
            &format!("{queue}.in"),
            "--prefetch",
            &prefetch,
        ])
        .env("DATABASE_URL", &database_url)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("edi-inbox consume");
    let audited = Audit::connect(&database_url).await;
    let audited = || audited.count();
    while audited().await < i64::from(count) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    let _ = consumer.kill();
    let _ = consumer.wait();
    let kind = match broker.split("://").next() {
        Some("amqp") => "rabbitmq",
        Some("kafka") => "kafka",
        _ => "jetstream",
    };
    let mode = if redelivered { "redelivered" } else { "unique" };
    println!(
        "{{\"consumer\":\"{kind}\",\"messages\":\"{mode}\",\"count\":{count},\"seconds\":{seconds:.2},\"per_second\":{:.0}}}",
        f64::from(count) / seconds
    );
}

async fn publish_amqp(url: &str, queue: &str, bodies: impl Iterator<Item = Vec<u8>>) {
    let connection = Connection::connect(url, ConnectionProperties::default()).await.expect("RabbitMQ");
    let channel = connection.create_channel().await.expect("channel");
    channel.confirm_select(ConfirmSelectOptions::default()).await.expect("confirms");
    edi_inbox::consumer::amqp::declare(&channel, queue).await.expect("queues");
    let mut confirms = Vec::new();
    for body in bodies {
        let properties = BasicProperties::default().with_content_type("application/edi-x12".into());
        confirms.push(
            channel
                .basic_publish("".into(), queue.into(), BasicPublishOptions::default(), &body, properties)
                .await
                .expect("publish"),
        );
    }
    for confirm in confirms {
        confirm.await.expect("confirmed");
    }
    connection.close(200, "published".into()).await.expect("close");
}

async fn publish_nats(url: &str, stream: &str, bodies: impl Iterator<Item = Vec<u8>>) {
    let context = async_nats::jetstream::new(async_nats::connect(url).await.expect("NATS"));
    let subject = format!("{stream}.in");
    let config = async_nats::jetstream::stream::Config {
        name: stream.to_owned(),
        subjects: vec![subject.clone()],
        ..Default::default()
    };
    context.get_or_create_stream(config).await.expect("stream");
    // The client bounds the acknowledgements in flight: wait for them a thousand at a time.
    let mut acks = Vec::new();
    for body in bodies {
        acks.push(context.publish(subject.clone(), body.into()).await.expect("publish"));
        if acks.len() == 1000 {
            for ack in acks.drain(..) {
                ack.await.expect("stored");
            }
        }
    }
    for ack in acks {
        ack.await.expect("stored");
    }
}

async fn publish_kafka(address: &str, topic: &str, bodies: impl Iterator<Item = Vec<u8>>) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::message::{Header, OwnedHeaders};
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let mut config = rdkafka::ClientConfig::new();
    config.set("bootstrap.servers", address).set("linger.ms", "5");
    let admin: AdminClient<_> = config.create().expect("Kafka admin client");
    let topics = [NewTopic::new(topic, 8, TopicReplication::Fixed(-1))];
    for created in admin.create_topics(&topics, &AdminOptions::new()).await.expect("create topic") {
        created.expect("topic created");
    }
    let producer: FutureProducer = config.create().expect("Kafka producer");
    let headers =
        OwnedHeaders::new().insert(Header { key: "content-type", value: Some("application/edi-x12") });
    // Queued at once (librdkafka holds up to 100,000), then each delivery report awaited.
    let bodies: Vec<Vec<u8>> = bodies.collect();
    let reports: Vec<_> = bodies
        .iter()
        .map(|body| {
            let record = FutureRecord::<(), _>::to(topic).payload(body).headers(headers.clone());
            producer.send_result(record).map_err(|(e, _)| e).expect("queued")
        })
        .collect();
    for report in reports {
        report.await.expect("delivery report").map_err(|(e, _)| e).expect("stored");
    }
}

/// Counts the audited deliveries, on either engine.
enum Audit {
    Postgres(sqlx::PgPool),
    Sqlite(sqlx::SqlitePool),
}

impl Audit {
    async fn connect(url: &str) -> Audit {
        if url.starts_with("sqlite:") {
            Audit::Sqlite(sqlx::SqlitePool::connect(url).await.expect("SQLite"))
        } else {
            Audit::Postgres(sqlx::PgPool::connect(url).await.expect("PostgreSQL"))
        }
    }

    async fn count(&self) -> i64 {
        const SQL: &str = "SELECT COUNT(*) FROM deliveries";
        match self {
            Audit::Postgres(pool) => sqlx::query_scalar(SQL).fetch_one(pool).await.unwrap_or(0),
            Audit::Sqlite(pool) => sqlx::query_scalar(SQL).fetch_one(pool).await.unwrap_or(0),
        }
    }
}
