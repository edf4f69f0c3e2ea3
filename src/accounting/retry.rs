//! When the relay tries again: what an answer of the accounting API means (booked, worth retrying,
//! refused for good) and the backoff between attempts. Pure, so that it is tested without a network.

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use std::time::Duration;

use super::Settlement;

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
pub fn shortened(error: String) -> String {
    match error.char_indices().nth(MAX_ERROR_CHARS) {
        Some((end, _)) => format!("{}…", &error[..end]),
        None => error,
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
