//! The end of every delivery attempt, from any door or queue, refused or not: its audit row (a first
//! delivery's was written with it; replays, conflicts, holds and bypasses are queued here; refusals
//! are counted), its metrics and its one log line.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Error, Ingest, Ingested};
use crate::edi::Standard;
use crate::inbox::Logged;
use crate::inbox::resource::IdempotencyKey;
use crate::partners::PartnerId;
use crate::store::{Attempt, AttemptFacts};

/// What to report of an attempt: its audit name and status, and what it was about.
pub struct Report<'a> {
    pub outcome: &'static str,
    pub status: u16,
    /// The interchange's key and standard, when it was read.
    pub key: Option<(&'a IdempotencyKey, Standard)>,
    /// The audit row this attempt still has to write (none for a first delivery, which wrote its own,
    /// and for a refusal, which is counted instead).
    pub attempt: Option<Attempt>,
    /// A refusal before anything was recorded (counted per address, partner and minute).
    pub refused: bool,
}

impl Report<'static> {
    /// An attempt that read no interchange: `refused` before anything was recorded (counted per
    /// address, partner and minute), or answered without one (an SNS confirmation kept).
    pub fn without_interchange(outcome: &'static str, status: u16, refused: bool) -> Report<'static> {
        Report { outcome, status, key: None, attempt: None, refused }
    }
}

impl Ingest {
    /// The report of an ingested delivery, `status` being what its reply says.
    pub fn report<'a>(&self, ingested: &'a Ingested, facts: &AttemptFacts, at: DateTime<Utc>) -> Report<'a> {
        let status = (self.answers.status)(ingested.reply());
        let (key, standard) = ingested.key();
        let inbox_id = match ingested {
            Ingested::Recorded { .. } => None,
            Ingested::Replayed { id, .. } => Some(Some(*id)),
            Ingested::Conflict { original_id, .. } => Some(Some(*original_id)),
            Ingested::Quarantined { entry, audited, .. } => (!audited).then_some(Some(entry.interchange_id)),
            Ingested::Bypassed(_) => Some(None),
        };
        if let Ingested::Recorded { delivery, .. } = ingested
            && delivery.duplicate_count() > 0
        {
            let partner = facts.partner_id.as_ref().map_or("-", PartnerId::as_str).to_owned();
            metrics::counter!("edi_inbox_duplicate_invoices_total", "partner" => partner)
                .increment(delivery.duplicate_count() as u64);
        }
        let attempt = inbox_id.map(|inbox_id| Attempt {
            inbox_id,
            key: key.clone(),
            outcome: ingested.outcome(),
            status,
            facts: facts.clone(),
            at,
        });
        Report { outcome: ingested.outcome(), status, key: Some((key, standard)), attempt, refused: false }
    }

    /// The report of a refused delivery.
    pub fn report_refusal(&self, error: &Error) -> Report<'static> {
        let status = (self.answers.refusal)(error);
        Report::without_interchange(error.outcome(), status, true)
    }

    /// Audits, counts and logs what became of a delivery.
    pub fn conclude(
        &self,
        report: Report<'_>,
        facts: &AttemptFacts,
        received_at: DateTime<Utc>,
        started: Instant,
    ) {
        let Report { outcome, status, key, attempt, refused } = report;
        if let Some(attempt) = attempt {
            if let (Some(id), "replayed") = (attempt.inbox_id, attempt.outcome) {
                replay_delay(id);
            }
            self.store.audit(attempt);
        }
        if refused && status < 500 {
            self.store.refused(outcome, status, facts, received_at);
        }
        metrics::counter!("edi_inbox_deliveries_total", "outcome" => outcome).increment(1);
        interchange_counted(
            facts.partner_id.as_ref().map(PartnerId::as_str),
            key.map(|(_, standard)| standard),
            outcome,
        );
        // One line per delivery, with what an operator searches by; never the payload or a credential.
        tracing::info!(
            target: "edi_inbox::delivery",
            request_id = facts.request_id.as_deref().unwrap_or("-"),
            partner = facts.partner_id.as_ref().map_or("-", PartnerId::as_str),
            door = facts.transport.door.as_str(),
            transport_id = %Logged(facts.transport.id.as_deref().unwrap_or("-")),
            source = %Logged(key.map_or("-", |(k, _)| k.source.as_str())),
            message_id = %Logged(key.map_or("-", |(k, _)| k.message_id.as_str())),
            outcome,
            status,
            duration_ms = started.elapsed().as_secs_f64() * 1000.0,
            "delivery"
        );
    }
}

/// What became of an interchange delivery, for `edi_inbox_interchanges_total`: the partner (proven,
/// else `-`), the standard (`x12`, `edifact`, or `-` when unreadable) and the outcome in the
/// metric's words.
fn interchange_counted(partner: Option<&str>, standard: Option<Standard>, outcome: &'static str) {
    let outcome = match outcome {
        "unauthenticated" => "unauthorized",
        "rate-limited" => "rate_limited",
        "too-large" => "too_large",
        "unsupported-media-type" => "unsupported_media_type",
        "bad-request" => "bad_request",
        "invalid-transport" => "invalid_transport",
        "sns-subscription" => "sns_subscription",
        other => other,
    };
    let standard = standard.map_or("-", Standard::as_str);
    let partner = partner.unwrap_or("-").to_owned();
    metrics::counter!("edi_inbox_interchanges_total", "partner" => partner, "standard" => standard, "outcome" => outcome)
        .increment(1);
}

/// A replay of interchange `first` (a UUIDv7, minted at its first delivery): how long after it.
fn replay_delay(first: Uuid) {
    if let Some((seconds, nanos)) = first.get_timestamp().map(|t| t.to_unix()) {
        let first = Duration::new(seconds, nanos);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        metrics::histogram!("edi_inbox_replay_delay_seconds").record(now.saturating_sub(first).as_secs_f64());
    }
}
