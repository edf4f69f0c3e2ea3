//! Abuse limits of this instance, all answering 429 with Retry-After: a token bucket per proven
//! partner (requests per minute), a cap on deliveries in flight, a smaller pool of slots for signed
//! requests whose signature is not verified yet (in all, and per remote address; the slowest holder
//! yields its slot to a newcomer: [`Unproven`]), a bucket of refusals per
//! remote address (an address that keeps failing is refused before any work). [`PerAddress`] also
//! caps the connections one address holds. With the memory budget (`ingest::Budget`) they are
//! per instance, so N replicas admit up to N times the configured rates.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use super::unproven::{Unproven, UnprovenSlot};

/// Distinct keys a bucket map keeps before it forgets the full (idle) buckets.
const MAX_BUCKETS: usize = 100_000;

/// The settings of a [`Limiter`].
#[derive(Clone, Copy, Debug)]
pub struct Capacities {
    pub in_flight: usize,
    pub unproven_in_flight: usize,
    pub unproven_per_address: usize,
    pub refusals_per_minute: u32,
}

pub struct Limiter {
    partners: Buckets<String>,
    refusals: Buckets<IpAddr>,
    refusals_per_minute: u32,
    in_flight: Arc<Semaphore>,
    unproven: Arc<Unproven>,
}

impl Limiter {
    pub fn new(capacities: Capacities) -> Limiter {
        Limiter {
            partners: Buckets::default(),
            refusals: Buckets::default(),
            refusals_per_minute: capacities.refusals_per_minute,
            in_flight: Arc::new(Semaphore::new(capacities.in_flight)),
            unproven: Unproven::new(capacities.unproven_in_flight, capacities.unproven_per_address),
        }
    }

    /// A slot for one proven delivery, or how long to wait before retrying.
    pub fn admit(&self) -> Result<OwnedSemaphorePermit, Duration> {
        Arc::clone(&self.in_flight).try_acquire_owned().map_err(|_| Duration::from_secs(1))
    }

    /// A slot for a signed request from `address` until its signature is checked, taken from the
    /// slowest holder when every one is held.
    pub fn admit_unproven(&self, address: Option<IpAddr>) -> Result<UnprovenSlot, Duration> {
        self.unproven.admit(address).ok_or(Duration::from_secs(1))
    }

    /// Overtakes the slowest unproven request for its memory; resolves once it has let go.
    pub fn overtake_slowest_unproven(&self) -> Option<oneshot::Receiver<()>> {
        self.unproven.overtake_slowest()
    }

    /// Takes one request from a proven partner's bucket of `per_minute`.
    pub fn take(&self, partner: &str, per_minute: u32) -> Result<(), Duration> {
        self.partners.take(partner.to_owned(), per_minute)
    }

    /// Counts a refusal of `address`; once its bucket is empty, [`Limiter::refusing`] says so.
    pub fn refused(&self, address: IpAddr) {
        let _ = self.refusals.take(address, self.refusals_per_minute);
    }

    /// Whether `address` has been refused too often lately: its unproven requests are refused at once.
    pub fn refusing(&self, address: IpAddr) -> Result<(), Duration> {
        self.refusals.check(&address, self.refusals_per_minute)
    }
}

/// How many of something (connections, unproven requests) each remote address holds at once, at
/// most `max` (0: no cap). An address's entry lives only while it holds one, so the map is never
/// larger than what is held.
pub struct PerAddress {
    held: Mutex<HashMap<IpAddr, usize>>,
    max: usize,
}

/// One held by an address, given back when dropped.
pub struct Held {
    owner: Arc<PerAddress>,
    address: IpAddr,
}

impl PerAddress {
    pub fn new(max: usize) -> Arc<PerAddress> {
        Arc::new(PerAddress { held: Mutex::new(HashMap::new()), max })
    }

    /// One more for `address`, unless it holds its most already.
    pub fn hold(self: &Arc<Self>, address: IpAddr) -> Option<Held> {
        let mut held = self.held.lock().ok()?;
        let count = held.entry(address).or_insert(0);
        if self.max > 0 && *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Held { owner: Arc::clone(self), address })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Ok(mut held) = self.owner.held.lock() else { return };
        if let Some(count) = held.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.address);
            }
        }
    }
}

/// Token buckets of `per_minute` tokens, refilled continuously, one per key.
struct Buckets<K> {
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K> Default for Buckets<K> {
    fn default() -> Self {
        Buckets { buckets: Mutex::new(HashMap::new()) }
    }
}

struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl Bucket {
    fn refill(&mut self, capacity: f64, now: Instant) {
        let refill_per_second = capacity / 60.0;
        self.tokens =
            (self.tokens + now.duration_since(self.updated).as_secs_f64() * refill_per_second).min(capacity);
        self.updated = now;
    }

    fn wait(&self, capacity: f64) -> Duration {
        Duration::from_secs_f64((1.0 - self.tokens) / (capacity / 60.0))
    }
}

impl<K: Hash + Eq> Buckets<K> {
    fn take(&self, key: K, per_minute: u32) -> Result<(), Duration> {
        let capacity = f64::from(per_minute.max(1));
        let now = Instant::now();
        let Ok(mut buckets) = self.buckets.lock() else { return Ok(()) };
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(&key) {
            buckets.retain(|_, bucket| {
                bucket.refill(capacity, now);
                bucket.tokens < capacity
            });
        }
        let bucket = buckets.entry(key).or_insert(Bucket { tokens: capacity, updated: now });
        bucket.refill(capacity, now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(bucket.wait(capacity))
        }
    }

    fn check(&self, key: &K, per_minute: u32) -> Result<(), Duration> {
        let capacity = f64::from(per_minute.max(1));
        let Ok(mut buckets) = self.buckets.lock() else { return Ok(()) };
        match buckets.get_mut(key) {
            Some(bucket) => {
                bucket.refill(capacity, Instant::now());
                if bucket.tokens >= 1.0 { Ok(()) } else { Err(bucket.wait(capacity)) }
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter() -> Limiter {
        Limiter::new(Capacities {
            in_flight: 1,
            unproven_in_flight: 3,
            unproven_per_address: 2,
            refusals_per_minute: 2,
        })
    }

    #[test]
    fn an_address_holds_at_most_its_share() {
        let addresses = PerAddress::new(1);
        let held = addresses.hold("192.0.2.9".parse().unwrap()).unwrap();
        assert!(addresses.hold("192.0.2.9".parse().unwrap()).is_none());
        assert!(addresses.hold("192.0.2.10".parse().unwrap()).is_some());
        drop(held);
        assert!(addresses.held.lock().unwrap().is_empty(), "no entry outlives what it held");
    }

    #[test]
    fn buckets_refuse_beyond_the_rate_and_are_per_partner() {
        let limiter = limiter();
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

    #[test]
    fn an_address_is_refused_after_repeated_refusals() {
        let limiter = limiter();
        let address = "192.0.2.7".parse().unwrap();
        assert!(limiter.refusing(address).is_ok());
        limiter.refused(address);
        limiter.refused(address);
        assert!(limiter.refusing(address).is_err());
        assert!(limiter.refusing("192.0.2.8".parse().unwrap()).is_ok());
    }
}
