//! `edi-inbox consume kafka://…` against a real Kafka-protocol broker (tansu at 127.0.0.1:9092,
//! started by scripts/brokers-up), producing and reading back with kafka-python
//! (`tests/peers/kafka_peer.py`, an implementation of the protocol independent of the consumer's
//! librdkafka): each interchange is booked once however often it is read, a refusal goes to the
//! dead-letter topic with headers naming why and the partition moves on, and no offset is committed
//! past a message whose transaction did not commit (a crash in between, a database outage, a
//! rebalance). On SQLite and PostgreSQL.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::process::{self, Process};
use common::relay::Relay;
use common::{Backend, count, fixture, invoices, migrated, numbered, settles};
use serde_json::Value;

const BROKER: &str = "127.0.0.1:9092";

/// The clients' virtualenv's Python, which has kafka-python.
fn python() -> PathBuf {
    std::env::var_os("EDI_INBOX_TEST_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/clients-venv/bin/python"),
        PathBuf::from,
    )
}

/// The kafka-python peer, run with the clients' virtualenv (tests/clients/run.sh makes it).
fn peer(args: &[&str]) -> String {
    let (root, python) = (PathBuf::from(env!("CARGO_MANIFEST_DIR")), python());
    let output =
        Command::new(&python).arg(root.join("tests/peers/kafka_peer.py")).args(args).output().unwrap_or_else(
            |e| panic!("{} (scripts/test, via tests/clients/run.sh, makes it): {e}", python.display()),
        );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "kafka_peer.py {args:?}: {stderr}\n(a Kafka-protocol broker is required at {BROKER}: scripts/brokers-up starts it)"
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// A new topic of `partitions`, named for one test.
fn topic(partitions: u32) -> String {
    topic_on(BROKER, partitions)
}

fn topic_on(broker: &str, partitions: u32) -> String {
    let name = format!("edi-test-{}", uuid::Uuid::now_v7().simple());
    peer(&["create", broker, &name, &partitions.to_string()]);
    name
}

/// Produces `bodies` in order (to `partition`, or spread by the producer), each in a file of its
/// own whose name is the message key.
fn produce(topic: &str, partition: Option<u32>, bodies: &[Vec<u8>]) {
    produce_on(BROKER, topic, partition, bodies);
}

fn produce_on(broker: &str, topic: &str, partition: Option<u32>, bodies: &[Vec<u8>]) {
    produce_with(broker, topic, partition, bodies, &[]);
}

/// [`produce_on`] with `headers` (`name=value`) on every message.
fn produce_with(broker: &str, topic: &str, partition: Option<u32>, bodies: &[Vec<u8>], headers: &[&str]) {
    let dir = std::env::temp_dir().join(format!("edi-kafka-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    for (n, body) in bodies.iter().enumerate() {
        std::fs::write(dir.join(format!("{n:06}.edi")), body).unwrap();
    }
    let partition = partition.map(|p| p.to_string());
    let mut args = vec!["produce", broker, topic];
    if let Some(partition) = &partition {
        args.extend(["--partition", partition]);
    }
    for header in headers {
        args.extend(["--header", header]);
    }
    let dir_arg = dir.display().to_string();
    args.push(&dir_arg);
    peer(&args);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every message of `topic`, from the start.
fn read(topic: &str) -> Vec<Value> {
    peer(&["read", BROKER, topic]).lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// The group's committed offset per partition (-1: none yet).
fn committed(group: &str, topic: &str) -> BTreeMap<String, i64> {
    committed_on(BROKER, group, topic)
}

fn committed_on(broker: &str, group: &str, topic: &str) -> BTreeMap<String, i64> {
    serde_json::from_str(&peer(&["committed", broker, group, topic])).unwrap()
}

fn all_committed(group: &str, topic: &str) -> i64 {
    all_committed_on(BROKER, group, topic)
}

/// The offsets a group committed, summed over the topic's partitions.
fn all_committed_on(broker: &str, group: &str, topic: &str) -> i64 {
    committed_on(broker, group, topic).values().map(|offset| offset.max(&0)).sum()
}

fn from(topic: &str, group: &str) -> String {
    format!("kafka://{BROKER}/{topic}?group={group}&session_timeout_ms=6000")
}

/// The tansu binary: `EDI_INBOX_TANSU`, or where scripts/brokers-up builds it.
fn tansu() -> PathBuf {
    std::env::var_os("EDI_INBOX_TANSU").map(PathBuf::from).unwrap_or_else(|| {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/brokers-up");
        let out = Command::new(script).arg("--tansu").output().expect("scripts/brokers-up --tansu");
        PathBuf::from(String::from_utf8(out.stdout).expect("a path").trim())
    })
}

/// A tansu broker of a test's own, keeping its data in SQLite in a directory of its own: it can be
/// killed and started again with what it held, or with authentication on.
struct Broker {
    address: String,
    /// The address it gives its clients in metadata: its own, or a TLS proxy's in front of it.
    advertised: String,
    dir: PathBuf,
    process: Option<std::process::Child>,
}

impl Broker {
    fn start() -> Broker {
        let dir = std::env::temp_dir().join(format!("edi-tansu-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let address = format!("127.0.0.1:{port}");
        let mut broker = Broker { advertised: address.clone(), address, dir, process: None };
        broker.run(false);
        broker
    }

    /// Starts it on its data; with `authentication`, SASL is required.
    fn run(&mut self, authentication: bool) {
        let tansu = tansu();
        let (listener, advertised) =
            (format!("tcp://{}", self.address), format!("tcp://{}", self.advertised));
        let mut command = Command::new(&tansu);
        command.current_dir(&self.dir).args([
            "broker",
            "--listener-url",
            &listener,
            "--advertised-listener-url",
            &advertised,
        ]);
        // Relative to the working directory: the broker's own directory.
        command.args(["--storage-engine", "sqlite://tansu.db"]);
        if authentication {
            command.arg("--authentication");
        }
        let log =
            std::fs::File::options().create(true).append(true).open(self.dir.join("tansu.log")).unwrap();
        command.stdout(log.try_clone().unwrap()).stderr(log).stdin(std::process::Stdio::null());
        self.process = Some(
            command
                .spawn()
                .unwrap_or_else(|e| panic!("{} (scripts/brokers-up builds it): {e}", tansu.display())),
        );
        for _ in 0..100 {
            if std::net::TcpStream::connect(&self.address).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("tansu did not listen on {}", self.address);
    }

    /// SIGKILL, as a crash.
    fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn consume(db_url: &str, from: &str, crash: bool) -> Process {
    let args = [
        "consume",
        "--consume-auth",
        "open",
        "--from",
        from,
        "--retry-backoff-ms",
        "200",
        "--db-timeout",
        "1",
    ];
    let mut command = process::command(db_url, &args);
    if crash {
        command.env("EDI_INBOX_CRASH_AT", "consume-before-ack");
    }
    Process::start(command, false)
}

/// A malformed message first in the partition, then an interchange twice and another: the malformed
/// one is a dead letter and the partition goes on; two invoices, one replay. A conflicting resend
/// (published once those are settled) is a dead letter too. Every offset is committed. A producer's
/// own `edi-inbox-*` headers are not copied into a dead letter: its `edi-inbox-*` are the service's.
async fn kafka_books_each_interchange_once_and_dead_letters_the_rest(backend: Backend) {
    let db = migrated(backend).await;
    let (topic, group) = (topic(2), format!("g-{}", uuid::Uuid::now_v7().simple()));
    let malformed = fixture("x12/malformed-truncated-isa.edi");
    produce_with(
        BROKER,
        &topic,
        Some(1),
        &[malformed.clone(), fixture("x12/810-single.edi"), fixture("x12/810-single.edi"), numbered(2)],
        &["edi-inbox-outcome=recorded", "EDI-Inbox-Status=201", "x-trace=kept"],
    );
    let consumer = consume(&db.url, &from(&topic, &group), false);
    settles("two invoices", 2, async || invoices(&db).await).await;
    produce(&topic, Some(0), &[fixture("x12/810-single-conflict.edi")]);
    let dead = format!("{topic}.dead");
    settles("the malformed and the conflicting message are dead letters", 2, async || read(&dead).len())
        .await;
    settles("every offset committed", 5, async || all_committed(&group, &topic)).await;
    assert_eq!(committed(&group, &topic), BTreeMap::from([("0".into(), 1), ("1".into(), 4)]));
    let letters = read(&dead);
    let headers = |n: usize| &letters[n]["headers"];
    let first =
        letters.iter().position(|l| l["headers"]["edi-inbox-outcome"] == "malformed").expect("malformed");
    let second = 1 - first;
    assert_eq!(headers(first)["edi-inbox-status"], "400", "{letters:?}");
    assert!(headers(first)["edi-inbox-reason"].as_str().unwrap().contains("ISA"), "{letters:?}");
    assert_eq!(headers(first)["edi-inbox-topic"], topic.as_str());
    assert_eq!(
        (headers(first)["edi-inbox-partition"].as_str(), headers(first)["edi-inbox-offset"].as_str()),
        (Some("1"), Some("0"))
    );
    assert_eq!(headers(first)["content-type"], "application/edi-x12", "the original headers are kept");
    assert_eq!(headers(first)["x-trace"], "kept");
    let ours: Vec<&Value> = letters[first]["header_list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|header| header[0].as_str().unwrap().to_ascii_lowercase().starts_with("edi-inbox-"))
        .collect();
    assert_eq!(ours.len(), 6, "one of each, none planted by the producer: {ours:?}");
    assert_eq!(ours[0], &serde_json::json!(["edi-inbox-outcome", "malformed"]));
    assert_eq!(
        (letters[first]["key"].as_str(), letters[first]["bytes"].as_u64()),
        (Some("000000.edi"), Some(malformed.len() as u64))
    );
    assert_eq!(headers(second)["edi-inbox-outcome"], "conflict");
    assert_eq!(headers(second)["edi-inbox-status"], "409");
    assert_eq!(
        (headers(second)["edi-inbox-partition"].as_str(), headers(second)["edi-inbox-offset"].as_str()),
        (Some("0"), Some("0"))
    );
    assert_eq!(invoices(&db).await, 2, "{}", consumer.log());
    let audited = async |outcome: &str| {
        count(
            &db.url,
            &format!("SELECT COUNT(*) FROM deliveries WHERE door = 'kafka' AND outcome = '{outcome}'"),
        )
        .await
    };
    assert_eq!((audited("recorded").await, audited("replayed").await, audited("conflict").await), (2, 1, 1));
    let ids = format!(
        "SELECT COUNT(*) FROM deliveries WHERE transport_id IN ('{topic}/1/1', '{topic}/1/2', '{topic}/1/3', '{topic}/0/0')"
    );
    assert_eq!(count(&db.url, &ids).await, 4, "the transport id is topic/partition/offset");
    assert_eq!(count(&db.url, "SELECT COUNT(*) FROM refusals WHERE outcome = 'malformed'").await, 1);
    drop(consumer);
    db.remove().await;
}

/// Killed after COMMIT and before the offset is committed: the group reads the message again, and
/// it is a replay.
async fn a_kafka_consumer_killed_between_commit_and_offset_commit_books_once(backend: Backend) {
    let db = migrated(backend).await;
    let (topic, group) = (topic(1), format!("g-{}", uuid::Uuid::now_v7().simple()));
    produce(&topic, Some(0), &[fixture("x12/810-single.edi")]);
    let crashing = consume(&db.url, &from(&topic, &group), true);
    let status = crashing.wait(Duration::from_secs(30));
    assert!(status.is_some_and(|status| !status.success()), "{}", crashing.log());
    assert_eq!(invoices(&db).await, 1, "committed before the crash");
    assert_eq!(all_committed(&group, &topic), 0, "no offset committed");
    drop(crashing);
    let consumer = consume(&db.url, &from(&topic, &group), false);
    settles("the message read again is committed", 1, async || all_committed(&group, &topic)).await;
    let replays = "SELECT COUNT(*) FROM deliveries WHERE door = 'kafka' AND outcome = 'replayed'";
    settles("the replay is audited", 1, async || count(&db.url, replays).await).await;
    assert_eq!(invoices(&db).await, 1, "{}", consumer.log());
    drop(consumer);
    db.remove().await;
}

/// Two members of one group under load: the second joins mid-way and the first is killed -9 later
/// (its partitions go to the second after the session timeout). Every interchange is booked once
/// and every offset ends committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_members_of_a_group_book_each_interchange_once_across_rebalances() {
    const MESSAGES: u32 = 400;
    let db = migrated(Backend::Postgres).await;
    let (topic, group) = (topic(4), format!("g-{}", uuid::Uuid::now_v7().simple()));
    let bodies: Vec<Vec<u8>> = (1..=MESSAGES).map(numbered).collect();
    produce(&topic, None, &bodies[..(MESSAGES / 2) as usize]);
    let first = consume(&db.url, &from(&topic, &group), false);
    common::eventually(async || invoices(&db).await, |booked| *booked >= 40).await;
    let second = consume(&db.url, &from(&topic, &group), false);
    produce(&topic, None, &bodies[(MESSAGES / 2) as usize..]);
    common::eventually(async || invoices(&db).await, |booked| *booked >= i64::from(MESSAGES) * 3 / 4).await;
    (first.killer())();
    settles_long("every interchange booked", i64::from(MESSAGES), async || invoices(&db).await).await;
    settles_long("every offset committed", i64::from(MESSAGES), async || all_committed(&group, &topic)).await;
    assert_eq!(count(&db.url, "SELECT COUNT(*) FROM inbox").await, i64::from(MESSAGES));
    assert!(second.log().contains("Kafka partitions assigned"), "{}", second.log());
    assert!(read(&format!("{topic}.dead")).is_empty(), "nothing dead-lettered");
    drop((first, second));
    db.remove().await;
}

/// [`settles`] with room for a session timeout and a rebalance.
async fn settles_long(what: &str, want: i64, probe: impl AsyncFn() -> i64) {
    settles_long_or(what, want, probe, String::new).await
}

async fn settles_long_or(what: &str, want: i64, probe: impl AsyncFn() -> i64, log: impl Fn() -> String) {
    for _ in 0..60 {
        if probe().await == want {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(probe().await, want, "{what}\n{}", log());
}

/// PostgreSQL unreachable while messages arrive: nothing booked, dead-lettered or committed past
/// the first message that could not be recorded; once it is back, each is booked once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_outage_commits_no_offset_until_it_ends() {
    let db = migrated(Backend::Postgres).await;
    let relay = Relay::start("127.0.0.1:5432".parse().unwrap()).await;
    let relayed = db.url.replace("127.0.0.1:5432", &format!("127.0.0.1:{}", relay.port));
    assert_ne!(relayed, db.url, "the test database is on 127.0.0.1:5432");
    let (topic, group) = (topic(1), format!("g-{}", uuid::Uuid::now_v7().simple()));
    let consumer = consume(&relayed, &from(&topic, &group), false);
    produce(&topic, Some(0), &[numbered(1)]);
    settles("booked while the database is up", 1, async || invoices(&db).await).await;
    settles("its offset committed", 1, async || all_committed(&group, &topic)).await;
    relay.cut();
    produce(&topic, Some(0), &[numbered(2), numbered(3)]);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(all_committed(&group, &topic), 1, "nothing committed during the outage");
    assert!(read(&format!("{topic}.dead")).is_empty(), "nothing dead-lettered during the outage");
    relay.restore();
    settles("booked once the database is back", 3, async || invoices(&db).await).await;
    settles("every offset committed", 3, async || all_committed(&group, &topic)).await;
    assert_eq!(count(&db.url, "SELECT COUNT(*) FROM inbox").await, 3, "{}", consumer.log());
    drop(consumer);
    db.remove().await;
}

/// The broker killed and started again while the consumer runs: the consumer waits for it, then
/// books what was produced before and after, each once, and commits every offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_broker_restart_loses_nothing_and_books_nothing_twice() {
    let db = migrated(Backend::Sqlite).await;
    let mut broker = Broker::start();
    let topic = topic_on(&broker.address, 2);
    let source = format!("kafka://{}/{topic}?group=g&session_timeout_ms=6000", broker.address);
    let consumer = consume(&db.url, &source, false);
    produce_on(&broker.address, &topic, None, &[numbered(1), numbered(2), numbered(3)]);
    settles("booked before the restart", 3, async || invoices(&db).await).await;
    let address = broker.address.clone();
    let committed = async || all_committed_on(&address, "g", &topic);
    settles_long("committed before the restart", 3, committed).await;
    broker.kill();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(consumer.wait(Duration::ZERO).is_none(), "the consumer waits for the broker: {}", consumer.log());
    broker.run(false);
    produce_on(&broker.address, &topic, None, &[numbered(3), numbered(4), numbered(5)]);
    settles_long("booked after the restart", 5, async || invoices(&db).await).await;
    settles_long("every offset committed", 6, committed).await;
    assert_eq!(count(&db.url, "SELECT COUNT(*) FROM inbox").await, 5, "{}", consumer.log());
    let replays = "SELECT COUNT(*) FROM deliveries WHERE door = 'kafka' AND outcome = 'replayed'";
    assert!(count(&db.url, replays).await >= 1, "the interchange produced twice is a replay");
    drop(consumer);
    db.remove().await;
}

/// SCRAM-SHA-512 over TLS against a broker that requires it (Amazon MSK's setting; the TLS ends at
/// a proxy in front of tansu, whose own TLS options cannot be given together): the right password
/// books, a wrong one stops the consumer, and neither reaches its log.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scram_over_tls_is_used_and_never_logged() {
    let db = migrated(Backend::Sqlite).await;
    let mut broker = Broker::start();
    let topic = topic_on(&broker.address, 1);
    let created = Command::new(tansu())
        .args(["user", "create", "edi-inbox", "pw-right-5813", "--mechanism", "scram512"])
        .args(["--broker", &format!("tcp://{}", broker.address)])
        .status()
        .expect("tansu user create");
    assert!(created.success());
    produce_on(&broker.address, &topic, Some(0), &[numbered(7)]);
    broker.kill();
    let proxy = TlsProxy::start(&broker);
    broker.advertised = proxy.address.clone();
    broker.run(true);
    let ca = proxy.certificate.display().to_string();
    let source = |password: &str| {
        format!("kafkas://edi-inbox:{password}@{}/{topic}?group=g&sasl=scram-sha-512&ca={ca}", proxy.address)
    };
    let refused = consume(&db.url, &source("pw-wrong-2291"), false);
    let consumer = consume(&db.url, &source("pw-right-5813"), false);
    let booked = async || invoices(&db).await;
    settles_long_or("booked with the right password", 1, booked, || consumer.log()).await;
    let status = refused.wait(Duration::from_secs(30));
    assert!(status.is_some_and(|status| !status.success()), "{}", refused.log());
    assert!(refused.log().contains("metadata"), "{}", refused.log());
    for log in [refused.log(), consumer.log()] {
        assert!(!log.contains("pw-right-5813") && !log.contains("pw-wrong-2291"), "{log}");
    }
    drop((consumer, refused, proxy));
    db.remove().await;
}

/// A TLS-terminating proxy (tests/peers/tls_proxy.py) in front of a broker, with a certificate for
/// 127.0.0.1 made by `openssl` for the occasion.
struct TlsProxy {
    address: String,
    certificate: PathBuf,
    process: std::process::Child,
}

impl TlsProxy {
    fn start(broker: &Broker) -> TlsProxy {
        let (certificate, key) = (broker.dir.join("proxy.crt"), broker.dir.join("proxy.key"));
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"])
            .args(["-addext", "subjectAltName=IP:127.0.0.1", "-keyout"])
            .args([&key, std::path::Path::new("-out"), &certificate])
            .output()
            .expect("openssl");
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let upstream = broker.address.rsplit(':').next().unwrap();
        let mut process = Command::new(python())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/tls_proxy.py"))
            .args([&certificate, &key])
            .args([&port.to_string(), upstream])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("tls_proxy.py");
        let mut ready = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(process.stdout.take().unwrap()), &mut ready)
            .unwrap();
        assert_eq!(ready.trim(), "ready");
        TlsProxy { address: format!("127.0.0.1:{port}"), certificate, process }
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A message over `--consume-max-bytes` is a dead letter, unread, its body kept for an operator;
/// the partition moves on to the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_oversized_message_is_a_dead_letter_and_the_partition_moves_on() {
    let db = migrated(Backend::Sqlite).await;
    let (topic, group) = (topic(1), format!("g-{}", uuid::Uuid::now_v7().simple()));
    let large = numbered(1).repeat(3);
    produce(&topic, Some(0), &[large.clone(), numbered(2)]);
    let args =
        ["consume", "--consume-auth", "open", "--from", &from(&topic, &group), "--consume-max-bytes", "1000"];
    let consumer = Process::start(process::command(&db.url, &args), false);
    settles("the next message booked", 1, async || invoices(&db).await).await;
    let dead = format!("{topic}.dead");
    settles("the large one is a dead letter", 1, async || read(&dead).len()).await;
    let letter = &read(&dead)[0];
    assert_eq!(letter["headers"]["edi-inbox-outcome"], "too-large", "{letter}");
    assert_eq!(letter["headers"]["edi-inbox-status"], "413", "{letter}");
    assert_eq!(letter["headers"]["edi-inbox-reason"], "the message exceeds the limit of 1000 bytes");
    assert_eq!(letter["bytes"].as_u64(), Some(large.len() as u64));
    let committed = async || all_committed(&group, &topic);
    settles_long_or("both offsets committed", 2, committed, || consumer.log()).await;
    drop(consumer);
    db.remove().await;
}

/// A topic the brokers do not have stops the consumer at start, saying so; a password in the URL
/// never reaches its log.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_missing_topic_stops_the_consumer_and_says_which() {
    let db = migrated(Backend::Sqlite).await;
    let missing = format!("edi-missing-{}", uuid::Uuid::now_v7().simple());
    let consumer = consume(&db.url, &from(&missing, "g"), false);
    let status = consumer.wait(Duration::from_secs(40));
    assert!(status.is_some_and(|status| !status.success()), "{}", consumer.log());
    let log = consumer.log();
    assert!(log.contains("does not exist") && log.contains(&missing), "{log}");
    let refused =
        consume(&db.url, &format!("kafka://edi:hunter2@{BROKER}/{missing}?group=g&sasl=plain"), false);
    assert!(refused.wait(Duration::from_secs(10)).is_some_and(|status| !status.success()));
    assert!(refused.log().contains("in clear") && !refused.log().contains("hunter2"), "{}", refused.log());
    drop((consumer, refused));
    db.remove().await;
}

both_backends!(
    kafka_books_each_interchange_once_and_dead_letters_the_rest,
    a_kafka_consumer_killed_between_commit_and_offset_commit_books_once,
);
