//! What a request that proves nothing costs the server and learns, tried as an attacker would (the
//! findings of the hostile-senders review, each of which failed on the code before its fix), on
//! SQLite and PostgreSQL: signature headers are bounded before any MAC, every read route needs the
//! admin token whatever the method, refused attempts take bounded room, silent connections are
//! closed, a stranger cannot spend a partner's rate budget or tell partners from non-partners, and
//! invoice pages are read in one snapshot.

mod common;

use std::time::Duration;

use chrono::Utc;
use common::partners::{acme, post_signed, post_with_key, register, secured};
use common::{Backend, Harness, count, fixture};
use edi_inbox::config::ServerConfig;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A request whose signature header lists 100,000 entries over a 1 MiB body is refused as soon as
/// the header is read: it used to compute one HMAC over the body per entry (minutes of CPU).
async fn signature_headers_are_bounded_before_any_mac(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    acme(&h).await;
    let request = h
        .app
        .client
        .post(h.app.url("/v1/interchanges?partner=acme"))
        .timeout(Duration::from_secs(10))
        .header("content-type", "application/edi-x12")
        .header("webhook-id", "msg_1")
        .header("webhook-timestamp", Utc::now().timestamp().to_string())
        .header("webhook-signature", "v1, ".repeat(100_000).trim_end())
        .body(vec![b'x'; 1024 * 1024]);
    let reply = common::Reply::send(request).await;
    let problem = reply.assert_problem(400, "invalid-request");
    assert!(problem["detail"].as_str().unwrap().contains("at most 8 signatures"), "{}", reply.text);
    h.finish().await;
}

/// Every read route answers 401 without the admin token, for GET, HEAD and OPTIONS alike, and the
/// same for an id that exists as for one that does not (HEAD used to pass the guard and tell them
/// apart by status and Content-Length).
async fn every_read_route_needs_the_admin_token_whatever_the_method(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let partner = acme(&h).await;
    let created = post_with_key(&h, &partner.api_key, fixture("x12/810-single.edi")).await.json();
    let (interchange, invoice) = (
        created["id"].as_str().unwrap().to_owned(),
        created["invoices"][0]["id"].as_str().unwrap().to_owned(),
    );
    let unknown = uuid::Uuid::now_v7().to_string();
    let mut routes =
        vec!["/metrics".to_owned(), "/v1/admin/partners".into(), "/v1/admin/partners/acme".into()];
    for id in [&interchange, &unknown] {
        routes.extend([
            format!("/v1/interchanges/{id}"),
            format!("/v1/interchanges/{id}/ack"),
            format!("/v1/interchanges/{id}/deliveries"),
        ]);
    }
    for id in [&invoice, &unknown] {
        routes.push(format!("/v1/invoices/{id}"));
    }
    routes.extend(["/v1/interchanges".into(), "/v1/invoices".into(), "/v1/invoices?number=INV-1042".into()]);
    let mut lengths = std::collections::BTreeSet::new();
    for route in &routes {
        for method in [reqwest::Method::GET, reqwest::Method::HEAD, reqwest::Method::OPTIONS] {
            let reply = common::Reply::send(h.app.client.request(method.clone(), h.app.url(route))).await;
            assert_eq!(reply.status, 401, "{method} {route}: {}", reply.text);
            lengths.insert(reply.header("content-length").map(str::to_owned));
        }
    }
    assert_eq!(lengths.len(), 1, "the same answer for every route: {lengths:?}");
    h.finish().await;
}

/// 500 anonymous POSTs with 60 KB `User-Agent` and `X-Request-Id` headers leave one counter row
/// with truncated values (they used to leave 500 rows storing the headers verbatim: 57 MB).
async fn refused_attempts_take_bounded_room(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let huge = "A".repeat(60_000);
    for _ in 0..500 {
        let request = h
            .app
            .client
            .post(h.app.url("/v1/interchanges"))
            .header("content-type", "application/edi-x12")
            .header("user-agent", &huge)
            .header("x-request-id", &huge)
            .body(fixture("x12/810-single.edi"));
        let reply = common::Reply::send(request).await;
        assert_eq!(reply.status, 401);
        let id = reply.header("x-request-id").unwrap();
        assert!(id.len() <= 64, "a long client request id is replaced by the server's own");
    }
    let url = &h.db.url;
    let attempts = common::eventually(
        async || count(url, "SELECT CAST(COALESCE(SUM(attempts), 0) AS BIGINT) FROM refusals").await,
        |&n| n == 500,
    )
    .await;
    assert_eq!(attempts, 500, "every refusal is counted");
    assert!(
        count(url, "SELECT COUNT(*) FROM refusals").await <= 2,
        "one row per address, outcome and minute"
    );
    assert_eq!(count(url, "SELECT CAST(MAX(LENGTH(user_agent)) AS BIGINT) FROM refusals").await, 256);
    assert!(count(url, "SELECT CAST(MAX(LENGTH(request_id)) AS BIGINT) FROM refusals").await <= 64);
    assert_eq!(count(url, "SELECT COUNT(*) FROM deliveries").await, 0);
    h.finish().await;
}

/// Someone who knows a partner id cannot spend that partner's requests per minute with signatures
/// they cannot make (the bucket used to be charged before the signature was checked).
async fn strangers_cannot_spend_a_partners_rate_budget(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let partner = register(
        &h,
        json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "requests_per_minute": 2}),
    )
    .await;
    let forged = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    for _ in 0..5 {
        let reply =
            post_signed(&h, "acme", forged, Utc::now().timestamp(), fixture("x12/810-single.edi")).await;
        reply.assert_problem(401, "unauthorized");
    }
    assert_eq!(post_with_key(&h, &partner.api_key, fixture("x12/810-single.edi")).await.status, 201);
    assert_eq!(post_with_key(&h, &partner.api_key, fixture("x12/810-single.edi")).await.status, 200);
    post_with_key(&h, &partner.api_key, fixture("x12/810-single.edi"))
        .await
        .assert_problem(429, "rate-limited");
    h.finish().await;
}

/// A wrong signature gets the same answer whether the named partner exists or not (an unknown id
/// used to get its own message, at its own speed, which enumerated partners).
async fn strangers_cannot_tell_partners_from_non_partners(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    acme(&h).await;
    let forged = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let now = Utc::now().timestamp();
    let known = post_signed(&h, "acme", forged, now, fixture("x12/810-single.edi")).await;
    let unknown = post_signed(&h, "nobody", forged, now, fixture("x12/810-single.edi")).await;
    known.assert_problem(401, "unauthorized");
    assert_eq!((known.status, &known.text), (unknown.status, &unknown.text));
    h.finish().await;
}

fn short_timeouts() -> ServerConfig {
    ServerConfig { header_timeout: 1, request_timeout: 2, idle_timeout: 3, max_connections: 3, ..secured() }
}

/// Reads until the server closes the connection; false when it is still open after `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buffer = [0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// A connection that sends nothing, an idle HTTP/1 keep-alive connection and an idle HTTP/2
/// connection are closed after their timeouts (a silent one used to stay open for good), and
/// connections beyond the cap are closed at once.
async fn silent_connections_are_closed(backend: Backend) {
    let h = Harness::with_server(backend, short_timeouts()).await;
    let mut silent = TcpStream::connect(h.app.address).await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(3)).await, "no first byte: closed after 1 s");

    let mut keep_alive = TcpStream::connect(h.app.address).await.unwrap();
    keep_alive.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
    let mut answer = [0u8; 512];
    let read = keep_alive.read(&mut answer).await.unwrap();
    assert!(answer[..read].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer[..read]));
    assert!(
        closed_within(&mut keep_alive, Duration::from_secs(6)).await,
        "idle keep-alive: closed after 3 s"
    );

    let mut http2 = TcpStream::connect(h.app.address).await.unwrap();
    http2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0").await.unwrap();
    assert!(closed_within(&mut http2, Duration::from_secs(6)).await, "idle HTTP/2: closed after 3 s");

    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(TcpStream::connect(h.app.address).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut beyond = TcpStream::connect(h.app.address).await.unwrap();
    assert!(closed_within(&mut beyond, Duration::from_millis(500)).await, "beyond the cap: closed at once");
    drop(open);
    h.finish().await;
}

/// Invoices listed while others are being booked always come with all their lines (the invoices
/// and their lines used to be read by two statements with two snapshots).
async fn invoice_pages_are_read_in_one_snapshot(backend: Backend) {
    let h = Harness::start(backend).await;
    let text = String::from_utf8(fixture("x12/810-single.edi")).unwrap();
    let poster = {
        let (client, url) = (h.app.client.clone(), h.app.url("/v1/interchanges"));
        tokio::spawn(async move {
            for n in 0..150 {
                let body = text.replace("000001142", &format!("{:09}", 500_000 + n));
                let sent = client.post(&url).header("content-type", "application/edi-x12").body(body).send();
                assert_eq!(sent.await.unwrap().status(), 201);
            }
        })
    };
    while !poster.is_finished() {
        let page = h.app.get("/v1/invoices?limit=5").await.json();
        for invoice in page["items"].as_array().unwrap() {
            assert_eq!(invoice["lines"].as_array().unwrap().len(), 2, "{invoice}");
        }
    }
    poster.await.unwrap();
    h.finish().await;
}

both_backends!(
    signature_headers_are_bounded_before_any_mac,
    every_read_route_needs_the_admin_token_whatever_the_method,
    refused_attempts_take_bounded_room,
    strangers_cannot_spend_a_partners_rate_budget,
    strangers_cannot_tell_partners_from_non_partners,
    silent_connections_are_closed,
    invoice_pages_are_read_in_one_snapshot,
);
