//! The relay: leases due outbox messages, POSTs each to the accounting API with its
//! `Idempotency-Key`, and settles it by what came back: delivered (with the API's reference),
//! retried later (exponential backoff with jitter), or dead-lettered when the API refuses it for
//! good or the attempts run out. A lease outlives the call's timeout, so no two relays send one
//! message at the same time; a relay that dies mid-call leaves the lease to expire and the message
//! is sent again, which the `Idempotency-Key` makes harmless.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::config::AccountingConfig;
use crate::store::{Leased, Settled, Settlement, Store};

/// The most of an answer's body the relay reads (for the reference and the error).
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Attempts settled in one transaction at most.
const MAX_SETTLED: usize = 256;
/// The most of an error kept in `last_error`.
const MAX_ERROR_CHARS: usize = 300;

/// When to try again after a failed attempt.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// The settlement of the `attempts`-th failed attempt: a retry after
    /// `first_delay × 2^(attempts − 1)` (at most `max_delay`), of which a random half (`random`)
    /// is jitter, or dead once the attempts are spent.
    pub fn after_failure(&self, attempts: i32, error: String, now: DateTime<Utc>, random: u64) -> Settlement {
        let attempts = u32::try_from(attempts).unwrap_or(u32::MAX).max(1);
        if attempts >= self.max_attempts {
            return Settlement::Dead { error: format!("{error} (gave up after {attempts} attempts)") };
        }
        let doubled = self.first_delay.saturating_mul(1u32.checked_shl(attempts - 1).unwrap_or(u32::MAX));
        let delay = doubled.min(self.max_delay);
        let half = delay / 2;
        let jitter = half.mul_f64((random % 1_000_001) as f64 / 1_000_000.0);
        let wait = chrono::Duration::from_std(half + jitter).unwrap_or(chrono::Duration::MAX);
        Settlement::Retry { at: now.checked_add_signed(wait).unwrap_or(DateTime::<Utc>::MAX_UTC), error }
    }
}

/// What one call to the accounting API means.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: booked (now or by an earlier attempt with the same key); its `id`, when the body has one.
    Booked { reference: Option<String> },
    /// Worth retrying: no answer, a timeout, 5xx, 408, 409 (the same key still in progress), 425,
    /// 429, a redirect, or an authorization or routing problem an operator can fix (401, 403, 404).
    Transient(String),
    /// The API refuses this request as such and always will (400, 413, 415, 422 and other 4xx).
    Refused(String),
}

/// Reads an answer of the accounting API.
pub fn classify(status: StatusCode, body: &[u8]) -> Answer {
    if status.is_success() {
        let reference =
            serde_json::from_slice::<serde_json::Value>(body).ok().and_then(|json| match &json["id"] {
                serde_json::Value::String(id) => Some(id.clone()),
                serde_json::Value::Number(id) => Some(id.to_string()),
                _ => None,
            });
        return Answer::Booked { reference };
    }
    let text = String::from_utf8_lossy(body);
    let error = format!("HTTP {}: {}", status.as_u16(), text.trim());
    let retryable = status.is_server_error()
        || status.is_redirection()
        || matches!(status.as_u16(), 401 | 403 | 404 | 408 | 409 | 425 | 429);
    if retryable { Answer::Transient(error) } else { Answer::Refused(error) }
}

/// `error` cut to [`MAX_ERROR_CHARS`].
fn shortened(error: String) -> String {
    match error.char_indices().nth(MAX_ERROR_CHARS) {
        Some((end, _)) => format!("{}…", &error[..end]),
        None => error,
    }
}

/// A relay to one accounting API.
pub struct Relay {
    store: Store,
    client: reqwest::Client,
    url: reqwest::Url,
    authorization: Option<HeaderValue>,
    policy: RetryPolicy,
    concurrency: usize,
    poll: Duration,
    lease: Duration,
}

impl Relay {
    /// The relay `config` describes; `None` without an accounting URL.
    pub fn new(store: Store, config: &AccountingConfig) -> Result<Option<Relay>, String> {
        let Some(url) = config.accounting_url.clone() else { return Ok(None) };
        let timeout = Duration::from_secs(config.accounting_timeout);
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the accounting API client cannot be built: {e}"))?;
        let authorization = match &config.accounting_token {
            Some(token) => {
                let mut value = HeaderValue::try_from(format!("Bearer {token}"))
                    .map_err(|_| "the accounting token is not a valid header value".to_owned())?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(Some(Relay {
            store,
            client,
            url,
            authorization,
            policy: RetryPolicy {
                max_attempts: config.relay_max_attempts,
                first_delay: Duration::from_millis(config.relay_backoff_ms),
                max_delay: Duration::from_millis(config.relay_backoff_max_ms),
            },
            concurrency: usize::try_from(config.relay_concurrency).unwrap_or(1).max(1),
            poll: Duration::from_millis(config.relay_poll_ms),
            // Longer than any call can take, so that a lease never expires under a call in progress.
            lease: timeout * 2 + Duration::from_secs(1),
        }))
    }

    /// Relays until `stop` turns true, then waits for the calls in progress (each bounded by the
    /// timeout) and settles them. Leases are taken for half the calls at a time, and the attempts
    /// that ended meanwhile are settled together in one transaction, so that the database work per
    /// message stays a fraction of a commit.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let relay = Arc::new(self);
        let (ended, endings) = mpsc::unbounded_channel();
        let settler = tokio::spawn(Arc::clone(&relay).settle(endings));
        let mut calls = JoinSet::new();
        let refill = (relay.concurrency / 2).max(1);
        tracing::info!(url = %relay.url, concurrency = relay.concurrency, "relaying to the accounting API");
        while !*stop.borrow() {
            let free = relay.concurrency - calls.len();
            let mut leased = 0;
            if free >= refill {
                let now = Utc::now();
                let token = Uuid::now_v7();
                let until = now + chrono::Duration::from_std(relay.lease).unwrap_or(chrono::Duration::MAX);
                match relay.store.lease_outbox(free, now, until, token).await {
                    Ok(messages) => {
                        leased = messages.len();
                        for message in messages {
                            let (relay, ended) = (Arc::clone(&relay), ended.clone());
                            calls.spawn(async move {
                                let invoice_id = message.invoice_id;
                                let _ = ended.send((invoice_id, relay.attempt(message, token).await));
                            });
                        }
                    }
                    Err(error) => tracing::warn!(%error, "leasing outbox messages failed; retrying"),
                }
            }
            if free >= refill && leased == free {
                continue; // more may be due
            }
            tokio::select! {
                () = relay.store.outbox_written() => {}
                () = tokio::time::sleep(relay.poll) => {}
                Some(_) = calls.join_next(), if !calls.is_empty() => {}
                _ = stop.changed() => {}
            }
        }
        while calls.join_next().await.is_some() {}
        drop(ended);
        let _ = settler.await;
        tracing::info!("relay stopped");
    }

    /// Settles ended attempts as they come, whatever is waiting at once in one transaction.
    async fn settle(self: Arc<Relay>, mut endings: mpsc::UnboundedReceiver<(Uuid, Settled)>) {
        let mut batch = Vec::new();
        while endings.recv_many(&mut batch, MAX_SETTLED).await > 0 {
            let attempts: Vec<Settled> = batch.iter().map(|(_, settled)| settled.clone()).collect();
            match self.store.settle_outbox(&attempts).await {
                Ok(held) => {
                    for ((invoice_id, settled), held) in batch.iter().zip(held) {
                        self.record(*invoice_id, &settled.settlement, held);
                    }
                }
                // The leases expire and the messages are sent again; the Idempotency-Key makes that harmless.
                Err(error) => tracing::warn!(%error, attempts = attempts.len(), "settling attempts failed"),
            }
            batch.clear();
        }
    }

    /// Counts (`edi_inbox_relay_attempts_total`) and logs a settled attempt.
    fn record(&self, invoice_id: Uuid, settlement: &Settlement, held: bool) {
        let result = match (held, settlement) {
            (false, _) => {
                tracing::warn!(%invoice_id, "the lease expired during the attempt");
                "lost_lease"
            }
            (true, Settlement::Delivered { .. }) => {
                tracing::debug!(%invoice_id, "booked with the accounting API");
                "delivered"
            }
            (true, Settlement::Retry { at, error }) => {
                tracing::info!(%invoice_id, %at, error, "accounting API attempt failed");
                "retried"
            }
            (true, Settlement::Dead { error }) => {
                tracing::warn!(%invoice_id, error, "outbox message dead-lettered");
                "dead"
            }
        };
        metrics::counter!("edi_inbox_relay_attempts_total", "result" => result).increment(1);
    }

    /// One attempt to deliver `message`, and how it is to be settled under the lease `token`.
    async fn attempt(&self, message: Leased, token: Uuid) -> Settled {
        let answer = self.call(&message).await;
        let at = Utc::now();
        let settlement = match answer {
            Answer::Booked { reference } => Settlement::Delivered { reference },
            Answer::Refused(error) => Settlement::Dead { error: shortened(error) },
            Answer::Transient(error) => {
                let random = getrandom::u64().unwrap_or_default();
                self.policy.after_failure(message.attempts, shortened(error), at, random)
            }
        };
        Settled { id: message.id, token, settlement, at }
    }

    /// POSTs the message and reads the answer.
    async fn call(&self, message: &Leased) -> Answer {
        let mut request = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            // An RFC 8941 string, as the IETF Idempotency-Key draft has it.
            .header("idempotency-key", format!("\"{}\"", message.idempotency_key))
            .body(message.payload.clone());
        if let Some(authorization) = &self.authorization {
            request = request.header(reqwest::header::AUTHORIZATION, authorization.clone());
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Answer::Transient(error.without_url().to_string()),
        };
        let status = response.status();
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if body.len() < MAX_ANSWER_BYTES => body.extend_from_slice(&chunk),
                Ok(Some(_)) => {}
                Ok(None) => break,
                // The answer never arrived whole: whether it was booked is unknown, so ask again.
                Err(error) => return Answer::Transient(error.without_url().to_string()),
            }
        }
        body.truncate(MAX_ANSWER_BYTES);
        classify(status, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            first_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(10),
        }
    }

    fn wait(settlement: Settlement, now: DateTime<Utc>) -> chrono::Duration {
        match settlement {
            Settlement::Retry { at, .. } => at - now,
            other => panic!("a retry, not {other:?}"),
        }
    }

    #[test]
    fn backoff_doubles_with_half_of_it_jitter_and_stops_at_the_last_attempt() {
        let now = Utc::now();
        let p = policy();
        assert_eq!(wait(p.after_failure(1, "e".into(), now, 0), now), chrono::Duration::seconds(1));
        assert_eq!(wait(p.after_failure(1, "e".into(), now, 1_000_000), now), chrono::Duration::seconds(2));
        assert_eq!(wait(p.after_failure(2, "e".into(), now, 0), now), chrono::Duration::seconds(2));
        assert_eq!(wait(p.after_failure(3, "e".into(), now, 0), now), chrono::Duration::seconds(4));
        // 2 s × 2³ = 16 s, capped at 10 s.
        assert_eq!(wait(p.after_failure(4, "e".into(), now, 1_000_000), now), chrono::Duration::seconds(10));
        assert_eq!(
            p.after_failure(5, "HTTP 503".into(), now, 0),
            Settlement::Dead { error: "HTTP 503 (gave up after 5 attempts)".into() }
        );
        let huge = RetryPolicy { max_attempts: 1000, ..p };
        assert_eq!(wait(huge.after_failure(999, "e".into(), now, 0), now), chrono::Duration::seconds(5));
    }

    #[test]
    fn answers_are_booked_retried_or_refused() {
        assert_eq!(
            classify(StatusCode::CREATED, br#"{"id":"ACC-1"}"#),
            Answer::Booked { reference: Some("ACC-1".into()) }
        );
        assert_eq!(
            classify(StatusCode::OK, br#"{"id":42}"#),
            Answer::Booked { reference: Some("42".into()) }
        );
        assert_eq!(classify(StatusCode::NO_CONTENT, b""), Answer::Booked { reference: None });
        for status in [500, 502, 503, 408, 409, 425, 429, 401, 403, 404, 307] {
            let status = StatusCode::from_u16(status).unwrap();
            assert!(matches!(classify(status, b"busy"), Answer::Transient(_)), "{status}");
        }
        for status in [400, 413, 415, 422] {
            let status = StatusCode::from_u16(status).unwrap();
            assert!(matches!(classify(status, b"no"), Answer::Refused(_)), "{status}");
        }
        assert_eq!(
            classify(StatusCode::UNPROCESSABLE_ENTITY, b" bad total \n"),
            Answer::Refused("HTTP 422: bad total".into())
        );
    }

    #[test]
    fn errors_are_shortened() {
        assert_eq!(shortened("x".repeat(400)).chars().count(), MAX_ERROR_CHARS + 1);
        assert_eq!(shortened("é".repeat(10)), "é".repeat(10));
    }
}
