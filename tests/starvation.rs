//! Requests that prove nothing cannot starve the partners who prove themselves: slow bodies that
//! only declare a length hold no memory, a dribbling body is cut off at the minimum rate (408,
//! counted as a refusal of its address), one address holds only a few unproven requests and a
//! bounded number of connections, and guessing an operator token is throttled per address and
//! shown on the refusals. Each test fails on the code before issue 28, where a declared length was
//! reserved up front and nothing was capped per address.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::partners::{ADMIN, acme, post_with_key, secured};
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
