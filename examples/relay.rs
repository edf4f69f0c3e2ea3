//! Relay benchmark, one run, everything in this process: a local accounting API (the test suite's,
//! tests/common/accounting.rs, answering at once), edi-inbox on `DATABASE_URL`, and:
//!   1. ingest of INVOICES interchanges with the relay off (their outbox messages wait);
//!   2. the floor: the same number of POSTs straight to the accounting API from CONCURRENCY tasks
//!      (what relaying costs without any database work);
//!   3. the relay started with CONCURRENCY calls at once, timed until every message is booked;
//!   4. end-to-end latency: 500 more interchanges posted by 8 clients while the relay runs, from
//!      each 201 to the accounting API receiving its invoice (p50, p99; negative when the relay
//!      was faster than the 201's way back to the client).
//!
//! `cargo run --release --example relay -- DATABASE_URL [INVOICES] [CONCURRENCY]`; `bench/relay.sh`
//! runs it on fresh PostgreSQL and SQLite databases.

#[path = "../tests/common/accounting.rs"]
mod accounting;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use edi_inbox::app::{self, App};
use edi_inbox::config::Cli;

const SAMPLE: &str = include_str!("../tests/fixtures/x12/810-single.edi");

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let database_url = args.next().expect("DATABASE_URL");
    let invoices: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let concurrency: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let sink = accounting::Accounting::start().await;
    sink.set_delay(Duration::ZERO);
    let url = sink.url();
    let cli = Cli::parse_from([
        "edi-inbox",
        "--database-url",
        &database_url,
        "--bind",
        "127.0.0.1:0",
        "--accounting-url",
        &url,
        "--relay",
        "false",
        "--relay-concurrency",
        &concurrency.to_string(),
    ]);
    let store = app::open_store(&cli.database).await.expect("database");
    let app = App::bind(store.clone(), &cli.server, &cli.accounting).await.expect("bind");
    let endpoint = format!("http://{}/v1/interchanges", app.local_addr().expect("address"));
    tokio::spawn(app.serve(std::future::pending()));
    let client = reqwest::Client::new();
    let first =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64;
    let next = Arc::new(AtomicU64::new(first));

    // 1. Ingest with the relay off.
    let created = post_all(&client, &endpoint, &next, invoices, 16).await;
    assert_eq!(created.len() as u64, invoices);

    // 2. The floor: the same POSTs without the outbox.
    let payload = serde_json::to_string(&serde_json::json!({"id": "floor", "lines": []})).unwrap();
    let started = Instant::now();
    let sent = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url, sent, payload) =
                (client.clone(), url.clone(), Arc::clone(&sent), payload.clone());
            tokio::spawn(async move {
                while sent.fetch_add(1, Ordering::Relaxed) < invoices {
                    let key = format!("\"floor-{}\"", uuid::Uuid::now_v7());
                    let answer =
                        client.post(&url).header("idempotency-key", key).body(payload.clone()).send().await;
                    assert!(answer.expect("the accounting API answers").status().is_success());
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let floor = invoices as f64 / started.elapsed().as_secs_f64();

    // 3. The relay drains the backlog.
    let relay = app::relay(store.clone(), &cli.accounting).expect("relay").expect("configured");
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    tokio::spawn(relay.run(stopped));
    let booked = sink.wait_for_bookings(2 * invoices as usize, Duration::from_secs(600)).await;
    assert_eq!(booked.len() as u64, 2 * invoices, "every message booked");
    let relayed = invoices as f64 / started.elapsed().as_secs_f64();

    // 4. End-to-end latency while the relay runs.
    let sample = 500;
    let created = post_all(&client, &endpoint, &next, sample, 8).await;
    sink.wait_for_bookings((2 * invoices + sample) as usize, Duration::from_secs(120)).await;
    let received: HashMap<String, Instant> =
        sink.received().into_iter().map(|r| (r.invoice_id, r.at)).collect();
    let mut latencies: Vec<f64> = created
        .iter()
        .map(|(invoice, answered)| {
            let at = received[invoice];
            if at >= *answered {
                (at - *answered).as_secs_f64() * 1000.0
            } else {
                -((*answered - at).as_secs_f64() * 1000.0)
            }
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let percentile = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "{{\"backend\":\"{}\",\"invoices\":{invoices},\"concurrency\":{concurrency},\"floor_per_s\":{floor:.0},\
         \"relay_per_s\":{relayed:.0},\"ratio\":{:.2},\"latency_ms_p50\":{:.1},\"latency_ms_p99\":{:.1}}}",
        store.backend(),
        relayed / floor,
        percentile(0.50),
        percentile(0.99),
    );
}

/// Posts `count` new interchanges from `clients` tasks; each invoice id with the time of its 201.
async fn post_all(
    client: &reqwest::Client,
    endpoint: &str,
    next: &Arc<AtomicU64>,
    count: u64,
    clients: u64,
) -> Vec<(String, Instant)> {
    let left = Arc::new(AtomicU64::new(count));
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, endpoint, next, left) =
                (client.clone(), endpoint.to_owned(), Arc::clone(next), Arc::clone(&left));
            tokio::spawn(async move {
                let mut created = Vec::new();
                while left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok() {
                    let control = next.fetch_add(1, Ordering::Relaxed) % 1_000_000_000;
                    let body = SAMPLE.replace("000001142", &format!("{control:09}"));
                    let answer = client
                        .post(&endpoint)
                        .header("content-type", "application/edi-x12")
                        .body(body)
                        .send()
                        .await
                        .expect("edi-inbox answers");
                    assert_eq!(answer.status(), 201);
                    let answered = Instant::now();
                    let json: serde_json::Value = answer.json().await.expect("json");
                    let invoice = json["invoices"][0]["id"].as_str().expect("an invoice").to_owned();
                    created.push((invoice, answered));
                }
                created
            })
        })
        .collect();
    let mut created = Vec::new();
    for task in tasks {
        created.extend(task.await.unwrap());
    }
    created
}
