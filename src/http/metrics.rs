//! `GET /metrics` in the Prometheus text format. Counters and histograms are recorded where things
//! happen, through the `metrics` facade (one Prometheus recorder per process); gauges of shared
//! state — the outbox backlog, the relay lag, stored interchanges and the oldest stored payload,
//! the connection pool — are read when scraped. Labels only ever take values from a closed set or
//! from proven partners, never from what an unauthenticated request says.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::ApiContext;
use crate::store::OutboxStats;

/// Bounds of the latency histograms, in seconds.
const LATENCY_BUCKETS: [f64; 13] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// Bounds of the replay delay histogram: a second to a week.
const REPLAY_BUCKETS: [f64; 10] =
    [1.0, 10.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0, 259200.0, 604800.0];

/// The process's Prometheus recorder, installed on first use.
#[derive(Clone)]
pub struct Metrics {
    handle: PrometheusHandle,
}

impl Default for Metrics {
    fn default() -> Metrics {
        static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
        let handle = HANDLE.get_or_init(|| {
            let builder = PrometheusBuilder::new().set_buckets(&LATENCY_BUCKETS).and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full("edi_inbox_replay_delay_seconds".into()),
                    &REPLAY_BUCKETS,
                )
            });
            let recorder = builder.expect("the histogram buckets are valid").build_recorder();
            let handle = recorder.handle();
            // Another recorder may be installed already (an embedding program's): then that one counts.
            let _ = metrics::set_global_recorder(recorder);
            describe();
            handle
        });
        Metrics { handle: handle.clone() }
    }
}

/// The help text of every metric.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!("edi_inbox_deliveries_total", "Delivery attempts by outcome.");
    describe_counter!("edi_inbox_security_events_total", "Refused deliveries worth a look, by reason.");
    describe_counter!(
        "edi_inbox_interchanges_total",
        "Interchange deliveries by proven partner, standard and outcome."
    );
    describe_counter!(
        "edi_inbox_duplicate_invoices_total",
        "Invoices that arrived again in an interchange of their own (kept, never booked again), by partner."
    );
    describe_histogram!(
        "edi_inbox_replay_delay_seconds",
        "Time from a key's first delivery to each replay of it."
    );
    describe_counter!("edi_inbox_http_requests_total", "Requests by route, method and status.");
    describe_histogram!("edi_inbox_http_request_duration_seconds", "Request latency by route and method.");
    describe_histogram!("edi_inbox_db_batch_duration_seconds", "Time to record one group-commit batch.");
    describe_gauge!("edi_inbox_db_connections", "Connections of the pool, idle or in use.");
    describe_counter!(
        "edi_inbox_relay_attempts_total",
        "Calls to the accounting API by how they were settled."
    );
    describe_gauge!("edi_inbox_outbox_messages", "Outbox messages not delivered, by status.");
    describe_gauge!("edi_inbox_relay_lag_seconds", "Age of the oldest pending outbox message.");
    describe_gauge!("edi_inbox_interchanges_stored", "Stored interchanges (an estimate on PostgreSQL).");
    describe_gauge!("edi_inbox_oldest_payload_age_seconds", "Age of the oldest payload not purged yet.");
    describe_counter!("edi_inbox_purged_rows_total", "Rows the retention purge dropped, by kind.");
    describe_gauge!("edi_inbox_purge_last_success_timestamp_seconds", "When the last purge run finished.");
}

/// A request method as a label: the standard ones by name, any other (which anybody may make up,
/// as long as they like) as `other`, so that no request adds a series.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}

/// Counts and times every request to a matched route, by route template, method and status.
pub async fn track(request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let method = method_label(request.method());
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    let elapsed = started.elapsed().as_secs_f64();
    metrics::histogram!("edi_inbox_http_request_duration_seconds", "route" => route.clone(), "method" => method)
        .record(elapsed);
    metrics::counter!("edi_inbox_http_requests_total", "route" => route, "method" => method, "status" => status)
        .increment(1);
    response
}

/// Prometheus metrics.
///
/// Deliveries and requests by outcome, latencies, refused connections, security events, the
/// outbox and relay, the purge, failovers and writable hosts, in Prometheus' text format. Needs
/// the admin token with partner authentication.
#[utoipa::path(get, path = "/metrics", tag = "operations", security((), ("admin_token" = [])), responses((status = 200, description = "Prometheus text format", body = String)))]
pub async fn metrics(State(ctx): State<ApiContext>) -> impl IntoResponse {
    let (size, idle) = ctx.store.pool_connections();
    metrics::gauge!("edi_inbox_db_connections", "state" => "idle").set(f64::from(idle));
    metrics::gauge!("edi_inbox_db_connections", "state" => "in_use")
        .set(f64::from(size.saturating_sub(idle)));
    match ctx.store.outbox_stats().await {
        Ok(stats) => {
            metrics::gauge!("edi_inbox_outbox_messages", "status" => "pending").set(stats.pending as f64);
            metrics::gauge!("edi_inbox_outbox_messages", "status" => "dead").set(stats.dead as f64);
            metrics::gauge!("edi_inbox_relay_lag_seconds").set(relay_lag_seconds(&stats));
        }
        Err(error) => tracing::warn!(%error, "the outbox backlog could not be read for /metrics"),
    }
    match ctx.store.storage_stats().await {
        Ok(stats) => {
            metrics::gauge!("edi_inbox_interchanges_stored").set(stats.interchanges as f64);
            let age =
                stats.oldest_payload.map_or(0.0, |oldest| (Utc::now() - oldest).num_seconds().max(0) as f64);
            metrics::gauge!("edi_inbox_oldest_payload_age_seconds").set(age);
        }
        Err(error) => tracing::warn!(%error, "the stored interchanges could not be counted for /metrics"),
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], ctx.metrics.handle.render())
}

/// Seconds since the oldest pending message was written.
pub fn relay_lag_seconds(stats: &OutboxStats) -> f64 {
    stats
        .oldest_pending
        .map_or(0.0, |oldest| ((Utc::now() - oldest).num_milliseconds().max(0) as f64) / 1000.0)
}
