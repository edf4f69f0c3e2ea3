//! Abuse limits of this instance: a token bucket per partner (requests per minute) and a cap on
//! deliveries in flight. Both answer 429 with Retry-After; they are per instance, so N replicas
//! admit up to N times the configured rates.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct Limiter {
    buckets: Mutex<HashMap<String, Bucket>>,
    in_flight: Arc<Semaphore>,
}

struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl Limiter {
    pub fn new(max_in_flight: usize) -> Limiter {
        Limiter { buckets: Mutex::new(HashMap::new()), in_flight: Arc::new(Semaphore::new(max_in_flight)) }
    }

    /// A slot for one delivery, or how long to wait before retrying.
    pub fn admit(&self) -> Result<OwnedSemaphorePermit, Duration> {
        Arc::clone(&self.in_flight).try_acquire_owned().map_err(|_| Duration::from_secs(1))
    }

    /// Takes one request from `key`'s bucket of `per_minute`, or says how long until one is there.
    pub fn take(&self, key: &str, per_minute: u32) -> Result<(), Duration> {
        let capacity = f64::from(per_minute.max(1));
        let refill_per_second = capacity / 60.0;
        let now = Instant::now();
        let Ok(mut buckets) = self.buckets.lock() else { return Ok(()) };
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket { tokens: capacity, updated: now });
        bucket.tokens = (bucket.tokens
            + now.duration_since(bucket.updated).as_secs_f64() * refill_per_second)
            .min(capacity);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / refill_per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_refuse_beyond_the_rate_and_are_per_partner() {
        let limiter = Limiter::new(1);
        for _ in 0..3 {
            assert!(limiter.take("a", 3).is_ok());
        }
        let wait = limiter.take("a", 3).unwrap_err();
        assert!(wait > Duration::from_secs(15) && wait <= Duration::from_secs(20), "{wait:?}");
        assert!(limiter.take("b", 3).is_ok());
        let permit = limiter.admit().unwrap();
        assert!(limiter.admit().is_err());
        drop(permit);
        assert!(limiter.admit().is_ok());
    }
}
