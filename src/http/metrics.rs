//! Counters exposed at `GET /metrics` in the Prometheus text format: deliveries by outcome and
//! security events by reason.

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::ApiContext;

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

    fn render(&self) -> String {
        let mut out = String::new();
        render(
            &mut out,
            "edi_inbox_deliveries_total",
            "Delivery attempts by outcome.",
            "outcome",
            &self.deliveries,
        );
        render(
            &mut out,
            "edi_inbox_security_events_total",
            "Refused deliveries by reason.",
            "reason",
            &self.security_events,
        );
        out
    }
}

fn bump(counters: &Mutex<BTreeMap<&'static str, u64>>, label: &'static str) {
    if let Ok(mut counters) = counters.lock() {
        *counters.entry(label).or_default() += 1;
    }
}

fn render(
    out: &mut String,
    name: &str,
    help: &str,
    label: &str,
    counters: &Mutex<BTreeMap<&'static str, u64>>,
) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} counter\n"));
    if let Ok(counters) = counters.lock() {
        for (value, count) in counters.iter() {
            out.push_str(&format!("{name}{{{label}=\"{value}\"}} {count}\n"));
        }
    }
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", body = String)))]
pub async fn metrics(State(ctx): State<ApiContext>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], ctx.metrics.render())
}
