//! Standard Webhooks signature verification (webhook-id, webhook-timestamp, webhook-signature; v1 =
//! HMAC-SHA256 over `{id}.{timestamp}.{body}` with the base64 secret after `whsec_`). Every secret of
//! the partner is tried, so secrets can be rotated with an overlap; comparison is constant-time. The
//! signature header is bounded, and the body is MACed once per secret, not once per listed signature.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::directory::signing_key;

/// How far a signature's timestamp may be from our clock.
pub const TOLERANCE_SECONDS: i64 = 5 * 60;
/// Most signatures one `webhook-signature` header may carry (senders list one per active secret).
pub const MAX_SIGNATURES: usize = 8;
/// Longest `webhook-signature` header accepted, in bytes.
pub const MAX_SIGNATURE_HEADER_BYTES: usize = 1024;

/// The three headers of a signed request.
pub struct SignedRequest<'a> {
    pub id: &'a str,
    pub timestamp: &'a str,
    pub signatures: &'a Signatures,
    pub body: &'a [u8],
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error(
        "webhook-signature may list at most {MAX_SIGNATURES} signatures in {MAX_SIGNATURE_HEADER_BYTES} bytes"
    )]
    TooLarge,
    #[error("webhook-timestamp is not a Unix time in seconds")]
    BadTimestamp,
    #[error("webhook-timestamp is more than five minutes away from the server's clock")]
    StaleTimestamp,
    #[error("no webhook-signature matches a signing secret of this partner")]
    NoMatch,
}

/// The decoded `v1,` signatures of a `webhook-signature` header, read before anything else so that
/// the work a request can cause is bounded before its body is read.
#[derive(Debug, PartialEq, Eq)]
pub struct Signatures(Vec<Vec<u8>>);

impl Signatures {
    pub fn parse(header: &str) -> Result<Signatures, SignatureError> {
        if header.len() > MAX_SIGNATURE_HEADER_BYTES {
            return Err(SignatureError::TooLarge);
        }
        let entries: Vec<&str> = header.split_whitespace().collect();
        if entries.len() > MAX_SIGNATURES {
            return Err(SignatureError::TooLarge);
        }
        Ok(Signatures(
            entries
                .into_iter()
                .filter_map(|entry| entry.strip_prefix("v1,"))
                .filter_map(|signature| STANDARD.decode(signature).ok())
                .collect(),
        ))
    }
}

/// Verifies `request` against the partner's signing `keys` at time `now`: one MAC over the body per
/// key, whatever the number of signatures listed.
pub fn verify(
    request: &SignedRequest<'_>,
    keys: &[Vec<u8>],
    now: DateTime<Utc>,
) -> Result<(), SignatureError> {
    let timestamp: i64 = request.timestamp.trim().parse().map_err(|_| SignatureError::BadTimestamp)?;
    let skew = now.timestamp().checked_sub(timestamp).map(i64::unsigned_abs);
    if skew.is_none_or(|skew| skew > TOLERANCE_SECONDS.unsigned_abs()) {
        return Err(SignatureError::StaleTimestamp);
    }
    for key in keys {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { continue };
        mac.update(request.id.as_bytes());
        mac.update(b".");
        mac.update(request.timestamp.trim().as_bytes());
        mac.update(b".");
        mac.update(request.body);
        let expected = mac.finalize().into_bytes();
        if request.signatures.0.iter().any(|signature| constant_time_eq(&expected, signature)) {
            return Ok(());
        }
    }
    Err(SignatureError::NoMatch)
}

/// Equality whose time depends on the lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |differ, (x, y)| differ | (x ^ y)) == 0
}

/// Signs like a Standard Webhooks sender (for tests and tooling).
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = signing_key(secret).unwrap_or_default();
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
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let keys = vec![signing_key(secret).unwrap()];
        let body = br#"{"test": 2432232314}"#;
        let now = DateTime::from_timestamp(1614265330, 0).unwrap();
        let header = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
        let signatures = Signatures::parse(header).unwrap();
        let request = SignedRequest {
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
            timestamp: "1614265330",
            signatures: &signatures,
            body,
        };
        assert_eq!(verify(&request, &keys, now), Ok(()));
        assert_eq!(sign(secret, request.id, 1614265330, body), header);
        let tampered = SignedRequest { body: br#"{"test": 2432232315}"#, ..request };
        assert_eq!(verify(&tampered, &keys, now), Err(SignatureError::NoMatch));
        let later = now + chrono::Duration::seconds(TOLERANCE_SECONDS + 1);
        let request = SignedRequest { body, ..tampered };
        assert_eq!(verify(&request, &keys, later), Err(SignatureError::StaleTimestamp));
    }

    #[test]
    fn signature_headers_are_bounded_before_any_mac() {
        let entry = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
        assert!(Signatures::parse(&[entry; MAX_SIGNATURES].join(" ")).is_ok());
        assert_eq!(Signatures::parse(&["v1,"; MAX_SIGNATURES + 1].join(" ")), Err(SignatureError::TooLarge));
        assert_eq!(Signatures::parse(&"v1, ".repeat(100_000)), Err(SignatureError::TooLarge));
    }

    #[test]
    fn extreme_timestamps_are_stale_not_a_panic() {
        let signatures = Signatures::parse("v1,AAAA").unwrap();
        let now = Utc::now();
        for timestamp in [i64::MIN.to_string(), i64::MAX.to_string(), "-9223372036854775808".into()] {
            let request =
                SignedRequest { id: "m", timestamp: &timestamp, signatures: &signatures, body: b"" };
            assert_eq!(verify(&request, &[vec![1; 32]], now), Err(SignatureError::StaleTimestamp));
        }
    }
}
