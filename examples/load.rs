//! Load driver: posts 810 interchanges (one invoice, two lines) to a running edi-inbox from
//! CONCURRENCY connections for SECONDS, then prints requests per second and latency percentiles.
//! `unique` gives every request a new ISA13 and invoice number (first deliveries of new invoices, 201); `replay` sends one interchange
//! again and again (after its first delivery every answer is a 200 replay). With
//! `EDI_INBOX_LOAD_API_KEY` set, requests carry it as `Authorization: Bearer`; with
//! `EDI_INBOX_LOAD_WEBHOOK=PARTNER:SECRET`, each is signed as a Standard Webhooks sender signs it
//! (its credential in its body: the server reads it before anything is proven); with
//! `EDI_INBOX_LOAD_SAMPLES=FILE`, every answered request is written to FILE as its send time (Unix
//! seconds) and latency (ms), for figures over a window of the run (`bench/purge.sh`).
//! `cargo run --release --example load -- URL [CONCURRENCY] [SECONDS] [unique|replay]`;
//! `bench/load.sh` runs it next to pgbench.

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
    let replay = match args.next().as_deref() {
        None | Some("unique") => false,
        Some("replay") => true,
        Some(other) => panic!("mode must be unique or replay, not {other:?}"),
    };
    let api_key = std::env::var("EDI_INBOX_LOAD_API_KEY").ok();
    let webhook = std::env::var("EDI_INBOX_LOAD_WEBHOOK").ok().map(|value| match value.split_once(':') {
        Some((partner, secret)) => (partner.to_owned(), secret.to_owned()),
        None => panic!("EDI_INBOX_LOAD_WEBHOOK is PARTNER:SECRET"),
    });
    let endpoint = match &webhook {
        Some((partner, _)) => format!("{url}/v1/interchanges?partner={partner}"),
        None => format!("{url}/v1/interchanges"),
    };
    let client =
        reqwest::Client::builder().pool_max_idle_per_host(concurrency as usize).build().expect("client");
    // Runs against one database must not collide: control numbers start at the clock (in µs, which
    // advances faster than any run consumes them).
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let first = since_epoch.as_micros() as u64 % 1_000_000_000;
    let next = Arc::new(AtomicU64::new(first));
    let post = {
        let (client, endpoint) = (client.clone(), endpoint.clone());
        move |control: u64| {
            let control = control % 1_000_000_000;
            let body = SAMPLE
                .replace("000001142", &format!("{control:09}"))
                .replace("INV-1042", &format!("INV-{control}"));
            let mut request = client.post(&endpoint).header("content-type", "application/edi-x12");
            if let Some(key) = &api_key {
                request = request.bearer_auth(key);
            }
            if let Some((_, secret)) = &webhook {
                let (id, now) = (format!("msg_{control}"), chrono::Utc::now().timestamp());
                let signature = edi_inbox::partners::webhooks::sign(secret, &id, now, body.as_bytes());
                request = request
                    .header("webhook-id", id)
                    .header("webhook-timestamp", now.to_string())
                    .header("webhook-signature", signature);
            }
            request.body(body).send()
        }
    };
    if replay {
        let created = post(first).await.expect("first delivery");
        assert!(created.status().is_success(), "first delivery: {}", created.status());
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (post, next) = (post.clone(), Arc::clone(&next));
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut sent_at = Vec::new();
                let mut failures = 0u64;
                while Instant::now() < deadline {
                    let control = if replay { first } else { next.fetch_add(1, Ordering::Relaxed) };
                    let sent = Instant::now();
                    let expected =
                        if replay { reqwest::StatusCode::OK } else { reqwest::StatusCode::CREATED };
                    match post(control).await {
                        Ok(response) if response.status() == expected => {
                            let _ = response.bytes().await;
                            latencies.push(sent.elapsed());
                            sent_at.push(std::time::SystemTime::now() - sent.elapsed());
                        }
                        _ => failures += 1,
                    }
                }
                (latencies, sent_at, failures)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut samples = String::new();
    let mut failures = 0;
    for worker in workers {
        let (mut own, sent_at, failed) = worker.await.expect("worker");
        for (sent, latency) in sent_at.iter().zip(&own) {
            let unix = sent.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
            samples.push_str(&format!("{unix:.6} {:.3}\n", latency.as_secs_f64() * 1e3));
        }
        latencies.append(&mut own);
        failures += failed;
    }
    if let Ok(path) = std::env::var("EDI_INBOX_LOAD_SAMPLES") {
        std::fs::write(&path, samples).expect("the samples file");
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
