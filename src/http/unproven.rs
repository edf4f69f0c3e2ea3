//! The slots of requests whose credential is in their body (a Standard Webhooks, SNS or AS2
//! signature): they must be read before anything is proven, so a stranger can open them too. A
//! slot is held by paying for it: when every slot is taken, a newcomer takes the slot of the
//! slowest holder that is still reading its body after [`GRACE`], which is answered 408 and
//! counted as a refusal of its address. Sixteen bodies dribbled from a few addresses therefore
//! hold their slots only until a real sender arrives, whose body is read at the speed of its
//! network; to keep a signed partner out, a stranger has to send faster than the partner does.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, oneshot};

use super::limits::{Held, PerAddress};

/// How long a newcomer leaves a holder alone: a real sender's body is read in less.
pub const GRACE: Duration = Duration::from_millis(500);

/// The unproven requests of this instance, at most `capacity` at once.
pub struct Unproven {
    holders: Mutex<Vec<Holder>>,
    capacity: usize,
    per_address: Arc<PerAddress>,
}

struct Holder {
    progress: Arc<Progress>,
    /// Resolves once the holder's slot is dropped (its request answered, its memory given back).
    gone: oneshot::Receiver<()>,
}

/// How far one unproven request has read its body, shared by its slot and the pool.
pub struct Progress {
    since: Instant,
    read: AtomicUsize,
    finished: AtomicBool,
    overtaken: Notify,
}

/// A slot of an unproven request: one of the instance's, one of its address's.
pub struct UnprovenSlot {
    pool: Arc<Unproven>,
    progress: Arc<Progress>,
    _address: Option<Held>,
    _gone: oneshot::Sender<()>,
}

impl Unproven {
    pub fn new(capacity: usize, per_address: usize) -> Arc<Unproven> {
        Arc::new(Unproven {
            holders: Mutex::new(Vec::new()),
            capacity,
            per_address: PerAddress::new(per_address),
        })
    }

    /// A slot for a request from `address`, overtaking the slowest holder when every slot is
    /// taken; `None` when its address holds its share already or no holder can be overtaken.
    pub fn admit(self: &Arc<Self>, address: Option<IpAddr>) -> Option<UnprovenSlot> {
        let held = match address {
            Some(address) => Some(self.per_address.hold(address)?),
            None => None,
        };
        let mut holders = self.holders.lock().ok()?;
        if holders.len() >= self.capacity {
            overtake(&mut holders)?;
        }
        let progress = Arc::new(Progress {
            since: Instant::now(),
            read: AtomicUsize::new(0),
            finished: AtomicBool::new(false),
            overtaken: Notify::new(),
        });
        let (gone_tx, gone) = oneshot::channel();
        holders.push(Holder { progress: Arc::clone(&progress), gone });
        Some(UnprovenSlot { pool: Arc::clone(self), progress, _address: held, _gone: gone_tx })
    }

    /// Overtakes the slowest holder past its grace, to give its memory to a newcomer; resolves
    /// once it has let go. `None` when no holder can be overtaken.
    pub fn overtake_slowest(&self) -> Option<oneshot::Receiver<()>> {
        overtake(&mut *self.holders.lock().ok()?)
    }
}

/// Takes the slowest holder still reading its body after [`GRACE`] out of `holders` and tells it
/// so; its release, once it has let go.
fn overtake(holders: &mut Vec<Holder>) -> Option<oneshot::Receiver<()>> {
    let now = Instant::now();
    let slowest = holders
        .iter()
        .enumerate()
        .filter(|(_, holder)| holder.progress.overtakable(now))
        .min_by(|(_, a), (_, b)| a.progress.rate(now).total_cmp(&b.progress.rate(now)))
        .map(|(at, _)| at)?;
    let holder = holders.swap_remove(slowest);
    holder.progress.overtaken.notify_one();
    Some(holder.gone)
}

impl Progress {
    /// Bytes per second since its slot was taken.
    fn rate(&self, now: Instant) -> f64 {
        self.read.load(Ordering::Relaxed) as f64 / now.duration_since(self.since).as_secs_f64().max(1e-3)
    }

    fn overtakable(&self, now: Instant) -> bool {
        !self.finished.load(Ordering::Relaxed) && now.duration_since(self.since) >= GRACE
    }

    /// `bytes` of its body are read so far.
    pub fn read(&self, bytes: usize) {
        self.read.store(bytes, Ordering::Relaxed);
    }

    /// Its whole body is read: it is no longer overtaken.
    pub fn finished(&self) {
        self.finished.store(true, Ordering::Relaxed);
    }

    /// Resolves when a newcomer took its slot, with the rate it was reading at (bytes per second).
    pub async fn overtaken(&self) -> u64 {
        self.overtaken.notified().await;
        self.rate(Instant::now()) as u64
    }
}

impl UnprovenSlot {
    pub fn progress(&self) -> &Progress {
        &self.progress
    }
}

impl Drop for UnprovenSlot {
    fn drop(&mut self) {
        let Ok(mut holders) = self.pool.holders.lock() else { return };
        if let Some(at) = holders.iter().position(|holder| Arc::ptr_eq(&holder.progress, &self.progress)) {
            holders.swap_remove(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_newcomer_overtakes_the_slowest_holder_past_its_grace() {
        let pool = Unproven::new(3, 2);
        let (one, other) = ("192.0.2.7".parse().ok(), "192.0.2.8".parse().ok());
        let slow = pool.admit(one).unwrap();
        let fast = pool.admit(one).unwrap();
        assert!(pool.admit(one).is_none(), "its address holds two");
        let finished = pool.admit(other).unwrap();
        assert!(pool.admit(None).is_none(), "within their grace, none is overtaken");
        std::thread::sleep(GRACE);
        slow.progress().read(1_000);
        fast.progress().read(1_000_000);
        finished.progress().read(10);
        finished.progress().finished();
        let first = pool.admit(None).expect("the slowest one reading is overtaken");
        let wait = Duration::from_secs(1);
        assert!(tokio::time::timeout(wait, slow.progress().overtaken()).await.is_ok());
        let second = pool.admit(None).expect("then the next slowest");
        assert!(tokio::time::timeout(wait, fast.progress().overtaken()).await.is_ok());
        assert!(pool.admit(None).is_none(), "a finished body and the newcomers are not overtaken");
        drop((slow, fast, finished, first, second));
        assert!(pool.holders.lock().unwrap().is_empty(), "every slot given back");
    }

    #[tokio::test]
    async fn an_overtaken_holder_is_gone_once_its_slot_is_dropped() {
        let pool = Unproven::new(1, 0);
        let held = pool.admit(None).unwrap();
        std::thread::sleep(GRACE);
        let gone = pool.overtake_slowest().expect("past its grace");
        assert!(pool.overtake_slowest().is_none(), "taken out of the pool");
        drop(held);
        assert!(gone.await.is_err(), "resolved by the slot's drop");
        assert!(pool.holders.lock().unwrap().is_empty());
    }
}
