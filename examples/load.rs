//! Load driver: posts distinct 810 interchanges (one invoice, two lines, a new ISA13 each) to a
//! running edi-inbox from CONCURRENCY connections for SECONDS, then prints requests per second and
//! latency percentiles. `cargo run --release --example load -- URL [CONCURRENCY] [SECONDS]`;
//! `bench/load.sh` runs it against PostgreSQL next to pgbench on the same statement.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const SAMPLE: &str = include_str!("../tests/fixtures/x12/810-single.edi");

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let concurrency: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let endpoint = format!("{url}/v1/interchanges");
    let client =
        reqwest::Client::builder().pool_max_idle_per_host(concurrency as usize).build().expect("client");
    let next = Arc::new(AtomicU64::new(1));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, endpoint, next) = (client.clone(), endpoint.clone(), Arc::clone(&next));
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut failures = 0u64;
                while Instant::now() < deadline {
                    let control = format!("{:09}", next.fetch_add(1, Ordering::Relaxed));
                    let body = SAMPLE.replace("000001142", &control);
                    let sent = Instant::now();
                    let response = client
                        .post(&endpoint)
                        .header("content-type", "application/edi-x12")
                        .body(body)
                        .send()
                        .await;
                    match response {
                        Ok(response) if response.status() == reqwest::StatusCode::CREATED => {
                            let _ = response.bytes().await;
                            latencies.push(sent.elapsed());
                        }
                        _ => failures += 1,
                    }
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut failures = 0;
    for worker in workers {
        let (mut own, failed) = worker.await.expect("worker");
        latencies.append(&mut own);
        failures += failed;
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let percentile = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "requests {} failures {failures} rps {:.0} p50_ms {:.2} p99_ms {:.2}",
        latencies.len(),
        latencies.len() as f64 / elapsed,
        percentile(0.50).as_secs_f64() * 1e3,
        percentile(0.99).as_secs_f64() * 1e3
    );
}
