//! `GET /metrics` in the Prometheus text format: deliveries by outcome, security events by reason,
//! the relay's attempts by result, and the outbox backlog and the relay lag, read at scrape time.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::ApiContext;
use super::health::relay_lag_seconds;

#[derive(Default)]
pub struct Metrics {
    deliveries: Mutex<BTreeMap<&'static str, u64>>,
    security_events: Mutex<BTreeMap<&'static str, u64>>,
}

impl Metrics {
    pub fn delivery(&self, outcome: &'static str) {
        bump(&self.deliveries, outcome);
    }

    pub fn security_event(&self, reason: &'static str) {
        bump(&self.security_events, reason);
    }

    fn render(&self, out: &mut String) {
        let snapshot = |counters: &Mutex<BTreeMap<&'static str, u64>>| {
            counters.lock().map(|c| c.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()).unwrap_or_default()
        };
        family(
            out,
            "edi_inbox_deliveries_total",
            "counter",
            "Delivery attempts by outcome.",
            "outcome",
            snapshot(&self.deliveries),
        );
        family(
            out,
            "edi_inbox_security_events_total",
            "counter",
            "Refused deliveries by reason.",
            "reason",
            snapshot(&self.security_events),
        );
    }
}

fn bump(counters: &Mutex<BTreeMap<&'static str, u64>>, label: &'static str) {
    if let Ok(mut counters) = counters.lock() {
        *counters.entry(label).or_default() += 1;
    }
}

/// One metric family with one sample per label value.
fn family<V: std::fmt::Display>(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    label: &str,
    samples: impl IntoIterator<Item = (&'static str, V)>,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (value, sample) in samples {
        let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {sample}");
    }
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations", security((), ("admin_token" = [])), responses((status = 200, description = "Prometheus text format", body = String)))]
pub async fn metrics(State(ctx): State<ApiContext>) -> impl IntoResponse {
    let mut out = String::new();
    ctx.metrics.render(&mut out);
    if let Some(relay) = &ctx.relay {
        let count = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
        family(
            &mut out,
            "edi_inbox_relay_attempts_total",
            "counter",
            "Calls to the accounting API by how they were settled.",
            "result",
            [
                ("delivered", count(&relay.delivered)),
                ("retried", count(&relay.retried)),
                ("dead", count(&relay.dead)),
                ("lost_lease", count(&relay.lost_leases)),
            ],
        );
    }
    match ctx.store.outbox_stats().await {
        Ok(stats) => {
            family(
                &mut out,
                "edi_inbox_outbox_messages",
                "gauge",
                "Outbox messages not delivered, by status.",
                "status",
                [("pending", stats.pending), ("dead", stats.dead)],
            );
            let lag = relay_lag_seconds(&stats);
            let _ = writeln!(
                out,
                "# HELP edi_inbox_relay_lag_seconds Age of the oldest pending outbox message.\n\
                 # TYPE edi_inbox_relay_lag_seconds gauge\nedi_inbox_relay_lag_seconds {lag}"
            );
        }
        Err(error) => tracing::warn!(%error, "the outbox backlog could not be read for /metrics"),
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}
