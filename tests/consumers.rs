//! `edi-inbox consume` against the real brokers on this machine (RabbitMQ at 127.0.0.1:5672,
//! NATS JetStream at 127.0.0.1:4222), publishing with their official Rust clients (`lapin`,
//! `async-nats`): each interchange is booked once however often it is published or redelivered,
//! what can never succeed is dead-lettered, and a consumer killed between COMMIT and the broker's
//! acknowledgement leaves one invoice after the redelivery; the same invoice through HTTP and a
//! queue is booked once. On SQLite and PostgreSQL.

mod common;

use std::time::Duration;

use async_nats::jetstream;
use common::process::{self, Process};
use common::relay::Relay;
use common::{Backend, TestDb, count, fixture, invoices, migrated, numbered, settles};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};

const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
const NATS: &str = "nats://127.0.0.1:4222";

/// What each test publishes first: an interchange twice, another one and a malformed one (then,
/// once those are settled, a conflicting resend: published together, it could win the key's race).
/// Two invoices are booked; the malformed message and the conflict are dead-lettered.
fn messages() -> Vec<Vec<u8>> {
    vec![
        fixture("x12/810-single.edi"),
        fixture("x12/810-single.edi"),
        numbered(2),
        fixture("x12/malformed-truncated-isa.edi"),
    ]
}

async fn amqp() -> Connection {
    Connection::connect(AMQP, ConnectionProperties::default()).await.unwrap_or_else(|e| {
        panic!("RabbitMQ is required at {AMQP} for these tests (scripts/brokers-up starts it): {e}")
    })
}

/// Publishes `bodies` to `queue` (declared as the consumer declares it) with publisher confirms.
async fn publish_amqp(queue: &str, bodies: &[Vec<u8>]) {
    let connection = amqp().await;
    let channel = connection.create_channel().await.unwrap();
    channel.confirm_select(ConfirmSelectOptions::default()).await.unwrap();
    for (n, body) in bodies.iter().enumerate() {
        let properties = BasicProperties::default()
            .with_content_type("application/edi-x12".into())
            .with_message_id(format!("amqp-{n}").into());
        let confirm = channel
            .basic_publish("".into(), queue.into(), BasicPublishOptions::default(), body, properties)
            .await
            .unwrap();
        confirm.await.unwrap();
    }
    connection.close(200, "published".into()).await.unwrap();
}

/// Messages waiting in `queue` (a passive declare; the queue must exist).
async fn waiting(queue: &str) -> u32 {
    let connection = amqp().await;
    let channel = connection.create_channel().await.unwrap();
    let options = QueueDeclareOptions { passive: true, ..QueueDeclareOptions::default() };
    let declared = channel.queue_declare(queue.into(), options, FieldTable::default()).await.unwrap();
    let _ = connection.close(200, "counted".into()).await;
    declared.message_count()
}

fn consume(db: &TestDb, from: &str, queue: &str, crash: bool) -> Process {
    let args = [
        "consume",
        "--consume-auth",
        "open",
        "--from",
        from,
        "--queue",
        queue,
        "--subject",
        &format!("{queue}.in"),
        "--durable",
        "edi-test",
        "--ack-wait-secs",
        "2",
    ];
    let mut command = process::command(&db.url, &args);
    if crash {
        command.env("EDI_INBOX_CRASH_AT", "consume-before-ack");
    }
    Process::start(command, false)
}

/// Declares the queue the way the consumer does, so that messages can be published first.
async fn declare_amqp(queue: &str) {
    let connection = amqp().await;
    let channel = connection.create_channel().await.unwrap();
    edi_inbox::consumer::amqp::declare(&channel, queue).await.unwrap();
    let _ = connection.close(200, "declared".into()).await;
}

async fn rabbitmq_books_each_interchange_once_and_dead_letters_the_rest(backend: Backend) {
    let db = migrated(backend).await;
    let queue = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    declare_amqp(&queue).await;
    publish_amqp(&queue, &messages()).await;
    let consumer = consume(&db, AMQP, &queue, false);
    settles("two invoices", 2, async || invoices(&db).await).await;
    publish_amqp(&queue, &[fixture("x12/810-single-conflict.edi")]).await;
    settles("the queue is drained", 0, async || waiting(&queue).await).await;
    settles("malformed and conflicting messages are dead letters", 2, async || {
        waiting(&format!("{queue}.dead")).await
    })
    .await;
    settles("two invoices", 2, async || invoices(&db).await).await;
    let audited = async || count(&db.url, "SELECT COUNT(*) FROM deliveries WHERE door = 'amqp'").await;
    settles("two recorded, a replay and a conflict audited", 4, audited).await;
    assert_eq!(count(&db.url, "SELECT COUNT(*) FROM refusals WHERE outcome = 'malformed'").await, 1);
    drop(consumer);
    db.remove().await;
}

/// A NUL in a message is a permanent refusal on both engines, never a retry: in the key, the
/// message is a dead letter; in an invoice, it is recorded as rejected (before issue 28, PostgreSQL
/// refused the write and the message was requeued forever). So is a value longer than its standard
/// allows, which PostgreSQL could not index (before issue 49, requeued forever).
async fn a_nul_in_a_message_is_settled_not_requeued(backend: Backend) {
    let db = migrated(backend).await;
    let queue = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    declare_amqp(&queue).await;
    let text = String::from_utf8(fixture("x12/810-single.edi")).unwrap();
    let keyless = text.replace("000001142*0*P", "00000\u{0}142*0*P").into_bytes();
    let in_invoice = text.replace("INV-1042", "INV-1042\u{0}").into_bytes();
    // Letters that do not compress: PostgreSQL compresses an index row before it measures it.
    let long: String =
        (0..3000u32).map(|n| char::from(b'A' + (n.wrapping_mul(2_654_435_761) >> 7) as u8 % 26)).collect();
    let long_number = text.replace("INV-1042", &long).replace("000001142", "000004911").into_bytes();
    publish_amqp(&queue, &[keyless, in_invoice, long_number]).await;
    let consumer = consume(&db, AMQP, &queue, false);
    settles("the queue is drained", 0, async || waiting(&queue).await).await;
    settles("the keyless message is a dead letter", 1, async || waiting(&format!("{queue}.dead")).await)
        .await;
    let rejected = async || count(&db.url, "SELECT COUNT(*) FROM inbox WHERE status = 'rejected'").await;
    settles("the invoice's NUL and its long number are rejections", 2, rejected).await;
    assert_eq!(invoices(&db).await, 0, "{}", consumer.log());
    drop(consumer);
    db.remove().await;
}

async fn a_rabbitmq_consumer_killed_between_commit_and_ack_books_once(backend: Backend) {
    let db = migrated(backend).await;
    let queue = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    declare_amqp(&queue).await;
    publish_amqp(&queue, &[fixture("x12/810-single.edi")]).await;
    let crashing = consume(&db, AMQP, &queue, true);
    assert!(
        crashing.wait(Duration::from_secs(30)).is_some_and(|status| !status.success()),
        "{}",
        crashing.log()
    );
    assert_eq!(invoices(&db).await, 1, "committed before the crash");
    drop(crashing);
    settles("the unacknowledged message is back", 1, async || waiting(&queue).await).await;
    let consumer = consume(&db, AMQP, &queue, false);
    settles("the redelivery is acknowledged", 0, async || waiting(&queue).await).await;
    settles("the replay is audited", 2, async || count(&db.url, "SELECT COUNT(*) FROM deliveries").await)
        .await;
    assert_eq!(invoices(&db).await, 1, "{}", consumer.log());
    assert_eq!(count(&db.url, "SELECT COUNT(*) FROM deliveries WHERE outcome = 'replayed'").await, 1);
    drop(consumer);
    db.remove().await;
}

/// A suspended partner's messages are dead letters, not booked; its policies apply to the messages
/// whose envelope names its sender identity.
async fn a_suspended_partners_messages_are_dead_letters(backend: Backend) {
    let db = migrated(backend).await;
    for args in [
        &["partner", "add", "acme", "--name", "ACME", "--sender", "x12:ZZ:ACMESUPPLY"][..],
        &["partner", "suspend", "acme"][..],
    ] {
        let output = process::command(&db.url, args).output().expect("edi-inbox partner");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let queue = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    declare_amqp(&queue).await;
    publish_amqp(&queue, &[fixture("x12/810-single.edi")]).await;
    let consumer = consume(&db, AMQP, &queue, false);
    settles("the message is a dead letter", 1, async || waiting(&format!("{queue}.dead")).await).await;
    assert_eq!(invoices(&db).await, 0, "{}", consumer.log());
    drop(consumer);
    db.remove().await;
}

/// A consumer books only what it is told to: it does not start without `--consume-auth`; with
/// `partners` an unknown sender's message is a dead letter, and bound to a partner so is another
/// partner's; a message over `--consume-max-bytes` is dead-lettered unread.
async fn a_consumer_books_only_what_it_is_told_to(backend: Backend) {
    let db = migrated(backend).await;
    for args in [
        &["partner", "add", "acme", "--name", "ACME", "--sender", "x12:ZZ:ACMESUPPLY"][..],
        &["partner", "add", "globex", "--name", "Globex", "--sender", "x12:ZZ:GLOBEX"][..],
    ] {
        let output = process::command(&db.url, args).output().expect("edi-inbox partner");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let queue = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    let unnamed =
        process::command(&db.url, &["consume", "--from", AMQP, "--queue", &queue]).output().unwrap();
    let stderr = String::from_utf8_lossy(&unnamed.stderr);
    assert!(!unnamed.status.success() && stderr.contains("--consume-auth"), "{stderr}");

    declare_amqp(&queue).await;
    let sent_by = |control: u32, sender: &str| {
        String::from_utf8(numbered(control))
            .unwrap()
            .replace("ZZ*ACMESUPPLY     *", &format!("ZZ*{sender:<15}*"))
            .into_bytes()
    };
    let oversized = [numbered(4), vec![b' '; 2_000]].concat();
    publish_amqp(&queue, &[numbered(1), sent_by(2, "GLOBEX"), sent_by(3, "STRANGER"), oversized]).await;
    let args = [
        "consume",
        "--consume-auth",
        "partners",
        "--consume-partner",
        "acme",
        "--consume-max-bytes",
        "1500",
        "--from",
        AMQP,
        "--queue",
        &queue,
    ];
    let consumer = Process::start(process::command(&db.url, &args), false);
    settles("three dead letters", 3, async || waiting(&format!("{queue}.dead")).await).await;
    // Messages are settled concurrently: acme's may commit after the others are dead letters.
    settles("acme's message is booked", 1, async || invoices(&db).await).await;
    assert_eq!(waiting(&queue).await, 0, "every message is settled: {}", consumer.log());
    let refused = async |outcome: &str| {
        count(
            &db.url,
            &format!(
                "SELECT CAST(COALESCE(SUM(attempts), 0) AS BIGINT) FROM refusals WHERE outcome = '{outcome}'"
            ),
        )
        .await
    };
    settles("two forbidden senders counted", 2, async || refused("forbidden").await).await;
    assert_eq!(refused("too-large").await, 1);
    drop(consumer);
    db.remove().await;
}

/// PostgreSQL unreachable while messages arrive: they are sent back to the queue (nack with
/// requeue after the backoff) rather than acked or dead-lettered, and once the database is back
/// each is booked once.
async fn a_database_outage_sends_messages_back_until_it_ends(backend: Backend) {
    let db = migrated(backend).await;
    let relay = Relay::start("127.0.0.1:5432".parse().unwrap()).await;
    let relayed = db.url.replace("127.0.0.1:5432", &format!("127.0.0.1:{}", relay.port));
    assert_ne!(relayed, db.url, "the test database is on 127.0.0.1:5432");
    let queue = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    declare_amqp(&queue).await;
    let args = [
        "consume",
        "--consume-auth",
        "open",
        "--from",
        AMQP,
        "--queue",
        &queue,
        "--retry-backoff-ms",
        "200",
        "--db-timeout",
        "1",
    ];
    let consumer = Process::start(process::command(&relayed, &args), false);
    publish_amqp(&queue, &[numbered(1)]).await;
    settles("booked while the database is up", 1, async || invoices(&db).await).await;
    relay.cut();
    publish_amqp(&queue, &[numbered(2), numbered(3)]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(invoices(&db).await, 1, "nothing booked during the outage");
    assert_eq!(waiting(&format!("{queue}.dead")).await, 0, "nothing dead-lettered during the outage");
    relay.restore();
    settles("booked once the database is back", 3, async || invoices(&db).await).await;
    settles("the queue is drained", 0, async || waiting(&queue).await).await;
    let redelivered = "SELECT COUNT(*) FROM deliveries WHERE transport LIKE '%\"redelivered\":true%'";
    assert_eq!(count(&db.url, redelivered).await, 2, "{}", consumer.log());
    assert_eq!(waiting(&format!("{queue}.dead")).await, 0);
    drop(consumer);
    db.remove().await;
}

async fn jetstream(stream: &str) -> (jetstream::Context, jetstream::stream::Stream) {
    let client = async_nats::connect(NATS).await.unwrap_or_else(|e| {
        panic!(
            "NATS with JetStream is required at {NATS} for these tests (scripts/brokers-up starts it): {e}"
        )
    });
    let context = jetstream::new(client);
    let config = jetstream::stream::Config {
        name: stream.to_owned(),
        subjects: vec![format!("{stream}.in")],
        ..Default::default()
    };
    let created = context.get_or_create_stream(config).await.unwrap();
    (context, created)
}

async fn publish_nats(stream: &str, bodies: &[Vec<u8>]) {
    let (context, _) = jetstream(stream).await;
    for body in bodies {
        context.publish(format!("{stream}.in"), body.clone().into()).await.unwrap().await.unwrap();
    }
}

/// Messages of `stream` the durable consumer has not acknowledged (pending and in flight).
async fn unacknowledged(stream: &str) -> u64 {
    let (_, created) = jetstream(stream).await;
    match created.consumer_info("edi-test").await {
        Ok(info) => info.num_pending + u64::try_from(info.num_ack_pending).unwrap_or(u64::MAX),
        Err(_) => u64::MAX,
    }
}

async fn remove_stream(stream: &str) {
    let (context, _) = jetstream(stream).await;
    let _ = context.delete_stream(stream).await;
}

async fn jetstream_books_each_interchange_once_and_terminates_the_rest(backend: Backend) {
    let db = migrated(backend).await;
    let stream = format!("EDI_TEST_{}", uuid::Uuid::now_v7().simple());
    publish_nats(&stream, &messages()).await;
    let consumer = consume(&db, NATS, &stream, false);
    settles("two invoices", 2, async || invoices(&db).await).await;
    publish_nats(&stream, &[fixture("x12/810-single-conflict.edi")]).await;
    settles("every message is settled", 0, async || unacknowledged(&stream).await).await;
    settles("still two invoices", 2, async || invoices(&db).await).await;
    let audited = async || count(&db.url, "SELECT COUNT(*) FROM deliveries WHERE door = 'nats'").await;
    settles("two recorded, a replay and a conflict audited", 4, audited).await;
    drop(consumer);
    remove_stream(&stream).await;
    db.remove().await;
}

async fn a_jetstream_consumer_killed_between_commit_and_ack_books_once(backend: Backend) {
    let db = migrated(backend).await;
    let stream = format!("EDI_TEST_{}", uuid::Uuid::now_v7().simple());
    publish_nats(&stream, &[fixture("x12/810-single.edi")]).await;
    let crashing = consume(&db, NATS, &stream, true);
    assert!(
        crashing.wait(Duration::from_secs(30)).is_some_and(|status| !status.success()),
        "{}",
        crashing.log()
    );
    assert_eq!(invoices(&db).await, 1, "committed before the crash");
    assert_eq!(unacknowledged(&stream).await, 1, "not acknowledged");
    drop(crashing);
    let consumer = consume(&db, NATS, &stream, false);
    settles("the redelivery is acknowledged", 0, async || unacknowledged(&stream).await).await;
    settles("the replay is audited", 2, async || count(&db.url, "SELECT COUNT(*) FROM deliveries").await)
        .await;
    assert_eq!(invoices(&db).await, 1, "{}", consumer.log());
    assert_eq!(count(&db.url, "SELECT COUNT(*) FROM deliveries WHERE outcome = 'replayed'").await, 1);
    drop(consumer);
    remove_stream(&stream).await;
    db.remove().await;
}

/// A queue of that name declared without the dead-letter arguments stops the consumer at start
/// (exit 1) with RabbitMQ's refusal and what it expects, instead of consuming without dead letters.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_queue_declared_otherwise_stops_the_rabbitmq_consumer() {
    let db = migrated(Backend::Sqlite).await;
    let queue = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    let connection = amqp().await;
    let channel = connection.create_channel().await.unwrap();
    channel
        .queue_declare(queue.as_str().into(), QueueDeclareOptions::durable(), FieldTable::default())
        .await
        .unwrap();
    let output =
        process::command(&db.url, &["consume", "--consume-auth", "open", "--from", AMQP, "--queue", &queue])
            .output()
            .expect("edi-inbox consume runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("PRECONDITION_FAILED"), "{stderr}");
    assert!(stderr.contains("must be declared the same way"), "{stderr}");
    for name in [queue.clone(), format!("{queue}.dead")] {
        channel.queue_delete(name.as_str().into(), Default::default()).await.unwrap();
    }
    let _ = connection.close(200, "checked".into()).await;
    db.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_outage_sends_messages_back_until_it_ends_on_postgres() {
    a_database_outage_sends_messages_back_until_it_ends(Backend::Postgres).await;
}

/// The same invoice through two doors: posted over HTTP, then taken from a RabbitMQ queue in
/// another envelope (a partner's gateway and its queue both delivering it): two interchanges
/// recorded, one invoice booked, the queued copy its duplicate.
async fn the_same_invoice_through_http_and_a_queue_is_booked_once(backend: Backend) {
    let h = common::Harness::start(backend).await;
    let posted = h.app.post_fixture("x12/810-single.edi").await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    let queue = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    declare_amqp(&queue).await;
    publish_amqp(&queue, &[common::resent(700_100)]).await;
    let consumer = consume(&h.db, AMQP, &queue, false);
    let recorded = async || count(&h.db.url, "SELECT COUNT(*) FROM inbox").await;
    settles("the queued interchange recorded too", 2, recorded).await;
    settles("the queue is drained", 0, async || waiting(&queue).await).await;
    let booked = count(&h.db.url, "SELECT COUNT(*) FROM invoices WHERE duplicate_of IS NULL").await;
    let copies = count(&h.db.url, "SELECT COUNT(*) FROM invoices WHERE duplicate_of IS NOT NULL").await;
    assert_eq!((booked, copies), (1, 1), "booked once, the queued copy its duplicate");
    let invoice = posted.json()["invoices"][0]["id"].as_str().unwrap().to_owned();
    let copy = h.app.all_invoices().await.into_iter().find(|i| i.get("duplicate_of").is_some()).unwrap();
    assert_eq!(copy["duplicate_of"]["invoice_id"], invoice.as_str(), "{copy}");
    drop(consumer);
    h.finish().await;
}

both_backends!(
    the_same_invoice_through_http_and_a_queue_is_booked_once,
    rabbitmq_books_each_interchange_once_and_dead_letters_the_rest,
    a_suspended_partners_messages_are_dead_letters,
    a_consumer_books_only_what_it_is_told_to,
    a_rabbitmq_consumer_killed_between_commit_and_ack_books_once,
    a_nul_in_a_message_is_settled_not_requeued,
    jetstream_books_each_interchange_once_and_terminates_the_rest,
    a_jetstream_consumer_killed_between_commit_and_ack_books_once,
);
