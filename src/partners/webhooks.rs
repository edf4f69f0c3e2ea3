//! Standard Webhooks signature verification (webhook-id, webhook-timestamp, webhook-signature; v1 =
//! HMAC-SHA256 over `{id}.{timestamp}.{body}` with the base64 secret after `whsec_`). Every secret of
//! the partner is tried, so secrets can be rotated with an overlap; comparison is constant-time.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far a signature's timestamp may be from our clock.
pub const TOLERANCE_SECONDS: i64 = 5 * 60;

/// The three headers of a signed request.
pub struct SignedRequest<'a> {
    pub id: &'a str,
    pub timestamp: &'a str,
    pub signatures: &'a str,
    pub body: &'a [u8],
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("webhook-timestamp is not a Unix time in seconds")]
    BadTimestamp,
    #[error("webhook-timestamp is more than five minutes away from the server's clock")]
    StaleTimestamp,
    #[error("no webhook-signature matches a signing secret of this partner")]
    NoMatch,
}

/// Verifies `request` against `secrets` at time `now`.
pub fn verify(
    request: &SignedRequest<'_>,
    secrets: &[String],
    now: DateTime<Utc>,
) -> Result<(), SignatureError> {
    let timestamp: i64 = request.timestamp.trim().parse().map_err(|_| SignatureError::BadTimestamp)?;
    if (now.timestamp() - timestamp).abs() > TOLERANCE_SECONDS {
        return Err(SignatureError::StaleTimestamp);
    }
    let signatures: Vec<Vec<u8>> = request
        .signatures
        .split_whitespace()
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .filter_map(|signature| STANDARD.decode(signature).ok())
        .collect();
    for secret in secrets {
        let Some(key) = secret.strip_prefix("whsec_").and_then(|key| STANDARD.decode(key).ok()) else {
            continue;
        };
        for signature in &signatures {
            let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key) else { continue };
            mac.update(request.id.as_bytes());
            mac.update(b".");
            mac.update(request.timestamp.trim().as_bytes());
            mac.update(b".");
            mac.update(request.body);
            if mac.verify_slice(signature).is_ok() {
                return Ok(());
            }
        }
    }
    Err(SignatureError::NoMatch)
}

/// Signs like a Standard Webhooks sender (for tests and tooling).
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = secret.strip_prefix("whsec_").and_then(|key| STANDARD.decode(key).ok()).unwrap_or_default();
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key) else { return String::new() };
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example from the Standard Webhooks specification.
    #[test]
    fn specification_example_verifies() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned();
        let body = br#"{"test": 2432232314}"#;
        let now = DateTime::from_timestamp(1614265330, 0).unwrap();
        let request = SignedRequest {
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
            timestamp: "1614265330",
            signatures: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            body,
        };
        assert_eq!(verify(&request, std::slice::from_ref(&secret), now), Ok(()));
        assert_eq!(sign(&secret, request.id, 1614265330, body), request.signatures);
        let tampered = SignedRequest { body: br#"{"test": 2432232315}"#, ..request };
        assert_eq!(verify(&tampered, std::slice::from_ref(&secret), now), Err(SignatureError::NoMatch));
        let later = now + chrono::Duration::seconds(TOLERANCE_SECONDS + 1);
        let request = SignedRequest { body, ..tampered };
        assert_eq!(verify(&request, &[secret], later), Err(SignatureError::StaleTimestamp));
    }
}
