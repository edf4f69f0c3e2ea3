//! A bounded in-process cache of processed outcomes. A processed interchange is final (a resend is
//! either its replay or a conflict), so any replica may answer a resend from memory without asking
//! the database; rejected outcomes are never cached, since a corrected resend must still replace them.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use uuid::Uuid;

use crate::edi::Fingerprint;
use crate::inbox::resource::IdempotencyKey;

/// A processed interchange as a resend needs it.
#[derive(Clone, Debug)]
pub struct Processed {
    pub id: Uuid,
    pub fingerprint: Fingerprint,
    pub response: String,
}

/// Oldest entries are evicted first once the cached responses exceed `max_bytes`.
pub struct ReplayCache {
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<IdempotencyKey, Processed>,
    order: VecDeque<IdempotencyKey>,
    bytes: usize,
}

/// What an entry costs: its response, fingerprint and key.
fn size(key: &IdempotencyKey, fingerprint: &Fingerprint, response: &str) -> usize {
    key.source.as_str().len() + key.message_id.len() + fingerprint.as_str().len() + response.len()
}

impl ReplayCache {
    pub fn new(max_bytes: usize) -> ReplayCache {
        ReplayCache { max_bytes, inner: Mutex::default() }
    }

    /// Forgets every outcome (after a failover: the new primary is the truth).
    pub fn clear(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            *inner = Entries::default();
        }
    }

    pub fn get(&self, key: &IdempotencyKey) -> Option<Processed> {
        self.inner.lock().ok()?.by_key.get(key).cloned()
    }

    /// Keeps interchange `id`'s outcome; copies its response only when it fits (a 13 MB answer of
    /// a 20,000-invoice interchange is never copied to be refused).
    pub fn insert(&self, key: &IdempotencyKey, id: Uuid, fingerprint: &Fingerprint, response: &str) {
        let cost = size(key, fingerprint, response);
        if cost > self.max_bytes {
            return;
        }
        let Ok(mut entries) = self.inner.lock() else { return };
        if entries.by_key.contains_key(key) {
            return;
        }
        while entries.bytes + cost > self.max_bytes {
            let Some(oldest) = entries.order.pop_front() else { break };
            if let Some(evicted) = entries.by_key.remove(&oldest) {
                entries.bytes -= size(&oldest, &evicted.fingerprint, &evicted.response);
            }
        }
        entries.bytes += cost;
        entries.order.push_back(key.clone());
        let processed = Processed { id, fingerprint: fingerprint.clone(), response: response.to_owned() };
        entries.by_key.insert(key.clone(), processed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbox::Source;

    fn key(n: u32) -> IdempotencyKey {
        IdempotencyKey {
            source: Source::try_from("x12:ZZ:A".to_owned()).unwrap(),
            message_id: format!("{n:09}"),
        }
    }

    #[test]
    fn evicts_the_oldest_beyond_the_byte_bound() {
        let fingerprint = Fingerprint::try_from("f".repeat(64)).unwrap();
        let insert = |cache: &ReplayCache, n: u32, response: &str| {
            cache.insert(&key(n), Uuid::now_v7(), &fingerprint, response);
        };
        let entry = size(&key(1), &fingerprint, &"r".repeat(100));
        let cache = ReplayCache::new(entry * 3);
        for n in 1..=4 {
            insert(&cache, n, &"r".repeat(100));
        }
        assert!(cache.get(&key(1)).is_none());
        assert!((2..=4).all(|n| cache.get(&key(n)).is_some()));
        insert(&cache, 5, &"r".repeat(entry * 4));
        assert!(cache.get(&key(5)).is_none(), "an entry larger than the cache is not kept");
        let zero = ReplayCache::new(0);
        insert(&zero, 1, "r");
        assert!(zero.get(&key(1)).is_none());
    }
}
