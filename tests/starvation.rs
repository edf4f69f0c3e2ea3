//! Requests that prove nothing cannot starve the partners who prove themselves: slow bodies that
//! only declare a length hold no memory, a dribbling body is cut off at the minimum rate (408,
//! counted as a refusal of its address), one address holds only a few unproven requests and a
//! bounded number of connections, and guessing an operator token is throttled per address and
//! shown on the refusals. Each test fails on the code before issue 28, where a declared length was
//! reserved up front and nothing was capped per address. Bodies dribbled just above the minimum
//! rate cannot hold the unproven slots or memory against a partner that proves itself by its
//! signature: it overtakes the slowest of them (issue 49).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::partners::{ADMIN, acme, post_signed, post_with_key, secured};
use common::{Backend, Harness, Reply, numbered};
use edi_inbox::config::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const MIB: usize = 1024 * 1024;

/// A connection to `server` from `from` (any address of 127.0.0.0/8).
async fn connect_from(from: &str, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(server).await.unwrap()
}

/// The head of an unproven AS2 POST (an `AS2-From`, no credential) declaring `length` bytes.
fn unproven_head(length: usize) -> String {
    format!(
        "POST /v1/interchanges HTTP/1.1\r\nHost: inbox\r\nAS2-From: ACME AS2\r\nAS2-To: BUYERCO\r\n\
         Content-Type: application/edi-x12\r\nContent-Length: {length}\r\n\r\nISA"
    )
}

/// An unproven AS2 POST declaring `length` bytes that sends `upfront` of them at once, then `chunk`
/// bytes every 100 ms.
#[derive(Clone, Copy)]
struct Dribble {
    length: usize,
    upfront: usize,
    chunk: usize,
}

impl Dribble {
    /// Sends it from `from` until it is answered (with what) or `stop` is set (`None`).
    fn start(
        self,
        from: String,
        server: SocketAddr,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> tokio::task::JoinHandle<Option<String>> {
        tokio::spawn(async move {
            let (mut reading, mut writing) = connect_from(&from, server).await.into_split();
            writing.write_all(unproven_head(self.length).as_bytes()).await.unwrap();
            let writes = async {
                writing.write_all(&vec![b' '; self.upfront]).await.ok()?;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    writing.write_all(&vec![b' '; self.chunk]).await.ok()?;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Some(())
            };
            let mut answered = vec![0; 4096];
            tokio::select! {
                read = reading.read(&mut answered) => Some(String::from_utf8_lossy(&answered[..read.unwrap_or(0)]).into_owned()),
                _ = writes => None,
            }
        })
    }
}

/// How many `dribblers` were answered 408 `request-timeout` (their connection closed), once stopped.
async fn overtaken(
    stop: &std::sync::atomic::AtomicBool,
    dribblers: Vec<tokio::task::JoinHandle<Option<String>>>,
) -> usize {
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut overtaken = 0;
    for dribbler in dribblers {
        if let Some(answer) = dribbler.await.unwrap() {
            assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
            assert!(answer.contains("/problems/request-timeout") && answer.contains("slowest"), "{answer}");
            overtaken += 1;
        }
    }
    overtaken
}

/// Sixteen bodies dribbled at 20 KiB/s from four addresses (four each: every unproven slot, above
/// the minimum rate, so never cut as slow), each overtaken one replaced, do not keep out a partner
/// that proves itself by its Standard Webhooks signature: each delivery takes the slot of the
/// slowest of them (408, counted as a refusal of its address) and is booked. Before, it got 429 as
/// long as the bodies dribbled.
async fn dribbled_bodies_cannot_lock_out_signed_partners(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let partner = acme(&h).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow = Dribble { length: 4 * MIB, upfront: 0, chunk: 2048 };
    let dribbling = |from: String| slow.start(from, h.app.address, stop.clone());
    let mut dribblers: Vec<_> = (0..16).map(|n| dribbling(format!("127.0.0.{}", 20 + n / 4))).collect();
    for n in 0..4 {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let now = chrono::Utc::now().timestamp();
        let booked = post_signed(&h, "acme", &partner.webhook_secret, now, numbered(49_001 + n)).await;
        assert_eq!(booked.status, 201, "delivery {n}: {}", booked.text);
        // The attacker fills the slot again, from another address.
        dribblers.push(dribbling(format!("127.0.0.{}", 24 + n)));
    }
    assert_eq!(overtaken(&stop, dribblers).await, 4, "one dribbler overtaken per delivery");
    let refused = refusals_settled(&h, "outcome = 'timeout' AND status = 408", 4).await;
    assert_eq!(refused, 4, "each overtaken body is a refusal of its address");
    h.finish().await;
}

/// Eight unproven bodies that sent 200 KiB at once and then dribble hold the whole unproven quarter
/// of a 16 MiB budget; a signed partner's body overtakes the slowest of them for its memory and is
/// booked (before: 429, the budget held by others).
async fn dribbled_bodies_cannot_hold_the_unproven_memory(backend: Backend) {
    let server = ServerConfig { buffer_bytes: 16 * MIB, ..secured() };
    let h = Harness::with_server(backend, server).await;
    let partner = acme(&h).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dribblers: Vec<_> = (0..8)
        .map(|n| {
            // Each declares what it then holds, so that each is admitted: 512 KiB of 4 MiB.
            let front_loaded = Dribble { length: 256 * 1024, upfront: 200 * 1024, chunk: 1024 };
            front_loaded.start(format!("127.0.0.{}", 30 + n / 4), h.app.address, stop.clone())
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let now = chrono::Utc::now().timestamp();
    let booked = post_signed(&h, "acme", &partner.webhook_secret, now, numbered(49_011)).await;
    assert_eq!(booked.status, 201, "{}", booked.text);
    assert!(overtaken(&stop, dribblers).await >= 1, "the memory came from a dribbler");
    h.finish().await;
}

/// The refusals counted under `condition`, once they reach `expected` (written in the background).
async fn refusals_settled(h: &Harness, condition: &str, expected: i64) -> i64 {
    let sql = format!("SELECT CAST(COALESCE(SUM(attempts), 0) AS BIGINT) FROM refusals WHERE {condition}");
    common::eventually(async || common::count(&h.db.url, &sql).await, |&n| n == expected).await
}

/// Reads what the server answered on `stream` until it closes or `wait` passes.
async fn answer(stream: &mut TcpStream, wait: Duration) -> String {
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// Sixteen unproven requests declaring the largest body, each sending a byte now and then, hold
/// nothing: a partner proven by its API key is booked at once (before, they reserved 4 × 10 MiB
/// each of a 64 MiB budget and the partner waited until the request timeout: 503).
async fn slow_unproven_bodies_hold_no_memory(backend: Backend) {
    let server = ServerConfig { buffer_bytes: 64 * MIB, request_timeout: 3, idle_timeout: 10, ..secured() };
    let h = Harness::with_server(backend, server).await;
    let key = acme(&h).await.api_key;
    let mut slow = Vec::new();
    for n in 0..16 {
        let mut stream = connect_from(&format!("127.0.0.{}", 10 + n / 4), h.app.address).await;
        stream.write_all(unproven_head(10 * MIB).as_bytes()).await.unwrap();
        slow.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let booked = post_with_key(&h, &key, numbered(28_001)).await;
    assert_eq!(booked.status, 201, "{}", booked.text);
    drop(slow);
    h.finish().await;
}

/// A body slower than the minimum rate is answered 408 `request-timeout` once its grace is past,
/// and counted as a refusal of its address (before, it held its slot until the request timeout).
async fn a_dribbling_body_is_cut_off_and_counted(backend: Backend) {
    let server = ServerConfig { min_body_rate: 1024 * 1024, ..secured() };
    let h = Harness::with_server(backend, server).await;
    let stream = connect_from("127.0.0.1", h.app.address).await;
    let (mut reading, mut writing) = stream.into_split();
    writing.write_all(unproven_head(MIB).as_bytes()).await.unwrap();
    let dribble = async move {
        while writing.write_all(b"*").await.is_ok() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    let mut answered = vec![0; 4096];
    let read = tokio::select! {
        read = tokio::time::timeout(Duration::from_secs(10), reading.read(&mut answered)) => read,
        () = dribble => panic!("the connection closed before an answer"),
    };
    let answered = String::from_utf8_lossy(&answered[..read.unwrap().unwrap()]).into_owned();
    assert!(answered.starts_with("HTTP/1.1 408"), "{answered}");
    assert!(answered.contains("/problems/request-timeout"), "{answered}");
    assert!(answered.to_ascii_lowercase().contains("connection: close"), "{answered}");
    let refused = refusals_settled(&h, "outcome = 'timeout' AND status = 408", 1).await;
    assert_eq!(refused, 1, "the timeout is a refusal of its address");
    h.finish().await;
}

/// One address holds at most its share of the unproven slots (429 beyond, counted as refusals),
/// another address is still read; and at most its share of connections (closed on accept).
async fn one_address_holds_a_bounded_share(backend: Backend) {
    let server = ServerConfig { max_unproven_per_address: 2, max_connections_per_address: 4, ..secured() };
    let h = Harness::with_server(backend, server).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = connect_from("127.0.0.3", h.app.address).await;
        stream.write_all(unproven_head(1000).as_bytes()).await.unwrap();
        held.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = connect_from("127.0.0.3", h.app.address).await;
    third.write_all(unproven_head(10).as_bytes()).await.unwrap();
    third.write_all(b"*******").await.unwrap();
    let refused = answer(&mut third, Duration::from_secs(2)).await;
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    let mut elsewhere = connect_from("127.0.0.4", h.app.address).await;
    elsewhere.write_all(unproven_head(10).as_bytes()).await.unwrap();
    elsewhere.write_all(b"*******").await.unwrap();
    let read = answer(&mut elsewhere, Duration::from_secs(2)).await;
    assert!(!read.starts_with("HTTP/1.1 429"), "another address is read: {read}");

    drop((held, third));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut open = Vec::new();
    for _ in 0..4 {
        open.push(connect_from("127.0.0.5", h.app.address).await);
    }
    let mut fifth = connect_from("127.0.0.5", h.app.address).await;
    let _ = fifth.write_all(b"GET /healthz HTTP/1.1\r\nHost: inbox\r\n\r\n").await;
    assert_eq!(answer(&mut fifth, Duration::from_secs(2)).await, "", "closed on accept");
    let mut other = connect_from("127.0.0.6", h.app.address).await;
    other.write_all(b"GET /healthz HTTP/1.1\r\nHost: inbox\r\nConnection: close\r\n\r\n").await.unwrap();
    assert!(answer(&mut other, Duration::from_secs(2)).await.starts_with("HTTP/1.1 200"));
    h.finish().await;
}

/// Wrong operator tokens count against their address: past the refusals per minute, the admin API
/// answers 429 without comparing, and so does the console's sign-in; the guesses are aggregated in
/// `refusals`. A missing token is no guess.
async fn operator_token_guesses_are_throttled(backend: Backend) {
    let server = ServerConfig { refusals_per_minute: 5, ..secured() };
    let h = Harness::with_server(backend, server).await;
    let guess = async |token: &str| {
        Reply::send(h.app.client.get(h.app.url("/v1/admin/partners")).bearer_auth(token)).await.status
    };
    for _ in 0..10 {
        assert_eq!(Reply::send(h.app.client.get(h.app.url("/v1/admin/partners"))).await.status, 401);
    }
    let mut seen = Vec::new();
    for _ in 0..7 {
        seen.push(guess("not-the-admin-token").await);
    }
    assert_eq!(seen, [401, 401, 401, 401, 401, 429, 429]);
    assert_eq!(guess(ADMIN).await, 429, "the address is refused for now, whatever it sends");
    let sign_in =
        Reply::send(h.app.client.post(h.app.url("/console/sign-in")).form(&[("token", "guess")])).await;
    assert_eq!(sign_in.status, 429, "{}", sign_in.text);
    let counted = refusals_settled(&h, "outcome = 'bad-admin-token'", 5).await;
    assert_eq!(counted, 5);
    h.finish().await;
}

both_backends!(
    dribbled_bodies_cannot_lock_out_signed_partners,
    dribbled_bodies_cannot_hold_the_unproven_memory,
    slow_unproven_bodies_hold_no_memory,
    a_dribbling_body_is_cut_off_and_counted,
    one_address_holds_a_bounded_share,
    operator_token_guesses_are_throttled,
);

/// An admin or viewer token shorter than 32 characters is refused on a network address.
#[tokio::test]
async fn short_operator_tokens_are_refused_off_loopback() {
    let db = common::TestDb::create(Backend::Sqlite).await;
    let store = edi_inbox::app::open_store(&common::database_config(&db.url)).await.unwrap();
    let accounting = common::accounting_config(&[]);
    let network =
        ServerConfig { bind: "0.0.0.0:0".parse().unwrap(), admin_token: Some("x".into()), ..secured() };
    let refused =
        edi_inbox::app::App::bind(store.clone(), &network, &accounting).await.err().expect("refused");
    assert!(refused.to_string().contains("at least 32"), "{refused}");
    let viewer = ServerConfig {
        admin_token: Some("a".repeat(32)),
        console_viewer_token: Some("short".into()),
        ..network.clone()
    };
    assert!(viewer.check_operator_tokens().unwrap_err().contains("viewer"));
    let long = ServerConfig { admin_token: Some("a".repeat(32)), ..network };
    assert_eq!(long.check_operator_tokens(), Ok(()));
    assert_eq!(secured().check_operator_tokens(), Ok(()), "any token on loopback");
    db.remove().await;
}
