//! The memory budget of the deliveries in flight, shared by every door. A request proven by its
//! headers (an API key) reserves what reading and parsing its body costs before the first byte is
//! read, waiting while the budget is spent; any other request is charged as its bytes arrive and
//! never waits, and until it proves a partner it draws from a smaller pool within the budget, so
//! that requests that proved nothing cannot hold what proven partners need. Once parsed, a
//! delivery tops its reservation up to what recording it costs
//! ([`crate::inbox::Delivery::recording_cost`]). A top-up never waits: a delivery that holds a
//! reservation and waits for more could wait on another that does the same.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The share of the budget that requests which proved nothing may hold together.
const UNPROVEN_SHARE: usize = 4;

/// Why bytes could not be reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shortfall {
    /// More than the whole budget (or, unproven, than its pool) is needed: this never fits.
    Exceeds { needed: usize, budget: usize },
    /// Held by other deliveries for now: `needed` bytes in all would be held, of `budget`.
    Spent { needed: usize, budget: usize },
}

/// Bytes of memory the deliveries in flight may hold together.
#[derive(Clone)]
pub struct Budget {
    bytes: Arc<Semaphore>,
    total: usize,
    unproven: Arc<Semaphore>,
    unproven_total: usize,
}

/// Bytes held for one delivery, returned when dropped.
#[derive(Debug)]
pub struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
    /// Until its caller is proven: the same bytes, held in the unproven pool too.
    unproven: Option<Option<OwnedSemaphorePermit>>,
}

impl Reservation {
    fn held(&self) -> usize {
        self.permit.as_ref().map_or(0, OwnedSemaphorePermit::num_permits)
    }

    /// Its caller proved a partner: what it holds no longer counts against the unproven pool.
    pub fn proven(&mut self) {
        self.unproven = None;
    }
}

impl Budget {
    pub fn new(total: usize) -> Budget {
        let total = total.min(Semaphore::MAX_PERMITS).min(u32::MAX as usize);
        let unproven_total = total / UNPROVEN_SHARE;
        Budget {
            bytes: Arc::new(Semaphore::new(total)),
            total,
            unproven: Arc::new(Semaphore::new(unproven_total)),
            unproven_total,
        }
    }

    /// The whole budget, in bytes.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Reserves `bytes`, waiting for other deliveries to return theirs when the budget is spent.
    pub async fn reserve(&self, bytes: usize) -> Result<Reservation, Shortfall> {
        let permits = self.permits(bytes, self.total)?;
        let permit = Arc::clone(&self.bytes)
            .acquire_many_owned(permits)
            .await
            .map_err(|_| Shortfall::Spent { needed: bytes, budget: self.total })?;
        Ok(Reservation { permit: Some(permit), unproven: None })
    }

    /// An empty reservation, for a delivery whose bytes are only known once it is parsed.
    pub fn nothing(&self) -> Reservation {
        Reservation { permit: None, unproven: None }
    }

    /// An empty reservation of a request that has proven nothing yet: it grows within the
    /// unproven pool as well as the budget, until [`Reservation::proven`].
    pub fn unproven(&self) -> Reservation {
        Reservation { permit: None, unproven: Some(None) }
    }

    /// Whether `reservation` could grow to `bytes` in all now, without taking them (a request
    /// charged as its bytes arrive whose declared length cannot fit is refused before it is read).
    pub fn fits(&self, reservation: &Reservation, bytes: usize) -> Result<(), Shortfall> {
        let more = bytes.saturating_sub(reservation.held());
        let mut pools = vec![(&self.bytes, self.total)];
        if reservation.unproven.is_some() {
            pools.push((&self.unproven, self.unproven_total));
        }
        for (pool, total) in pools {
            self.permits(bytes, total)?;
            if more > pool.available_permits() {
                return Err(Shortfall::Spent { needed: bytes, budget: total });
            }
        }
        Ok(())
    }

    /// Grows `reservation` to `bytes` in all if that much is free now.
    pub fn top_up(&self, reservation: &mut Reservation, bytes: usize) -> Result<(), Shortfall> {
        let more = self
            .permits(bytes, self.total)?
            .saturating_sub(u32::try_from(reservation.held()).unwrap_or(u32::MAX));
        if more == 0 {
            return Ok(());
        }
        let pooled = match &reservation.unproven {
            Some(_) => {
                self.permits(bytes, self.unproven_total)?;
                let taken = Arc::clone(&self.unproven).try_acquire_many_owned(more);
                Some(taken.map_err(|_| Shortfall::Spent { needed: bytes, budget: self.unproven_total })?)
            }
            None => None,
        };
        let permit = Arc::clone(&self.bytes)
            .try_acquire_many_owned(more)
            .map_err(|_| Shortfall::Spent { needed: bytes, budget: self.total })?;
        merge(&mut reservation.permit, permit);
        if let (Some(held), Some(pooled)) = (&mut reservation.unproven, pooled) {
            merge(held, pooled);
        }
        Ok(())
    }

    /// Grows `reservation` by `more` bytes if that much is free now.
    pub fn grow(&self, reservation: &mut Reservation, more: usize) -> Result<(), Shortfall> {
        let bytes = reservation.held().saturating_add(more);
        self.top_up(reservation, bytes)
    }

    fn permits(&self, bytes: usize, of: usize) -> Result<u32, Shortfall> {
        u32::try_from(bytes)
            .ok()
            .filter(|_| bytes <= of)
            .ok_or(Shortfall::Exceeds { needed: bytes, budget: of })
    }
}

fn merge(held: &mut Option<OwnedSemaphorePermit>, more: OwnedSemaphorePermit) {
    match held {
        Some(held) => held.merge(more),
        empty => *empty = Some(more),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_top_up_takes_only_what_is_free_and_never_more_than_the_whole() {
        let budget = Budget::new(100);
        let mut first = budget.reserve(40).await.unwrap();
        budget.top_up(&mut first, 30).unwrap();
        budget.top_up(&mut first, 70).unwrap();
        let mut second = budget.nothing();
        assert_eq!(budget.top_up(&mut second, 31), Err(Shortfall::Spent { needed: 31, budget: 100 }));
        budget.top_up(&mut second, 30).unwrap();
        assert_eq!(budget.top_up(&mut second, 101), Err(Shortfall::Exceeds { needed: 101, budget: 100 }));
        assert_eq!(budget.reserve(101).await.unwrap_err(), Shortfall::Exceeds { needed: 101, budget: 100 });
        drop(first);
        budget.top_up(&mut second, 100).unwrap();
    }

    #[tokio::test]
    async fn a_reservation_waits_while_the_budget_is_spent() {
        let budget = Budget::new(100);
        let first = budget.reserve(60).await.unwrap();
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), budget.reserve(60)).await;
        assert!(waiting.is_err(), "the second reservation waits while the first holds the budget");
        drop(first);
        assert!(budget.reserve(60).await.is_ok());
    }

    #[tokio::test]
    async fn the_unproven_hold_at_most_their_pool_and_release_it_once_proven() {
        let budget = Budget::new(400);
        let mut unproven = budget.unproven();
        budget.grow(&mut unproven, 60).unwrap();
        budget.grow(&mut unproven, 40).unwrap();
        let mut other = budget.unproven();
        assert_eq!(budget.grow(&mut other, 1), Err(Shortfall::Spent { needed: 1, budget: 100 }));
        assert_eq!(budget.fits(&other, 1), Err(Shortfall::Spent { needed: 1, budget: 100 }));
        assert_eq!(budget.fits(&other, 101), Err(Shortfall::Exceeds { needed: 101, budget: 100 }));
        budget.fits(&budget.nothing(), 101).unwrap();
        let proven = budget.reserve(300).await.unwrap();
        unproven.proven();
        assert_eq!(budget.fits(&other, 100), Err(Shortfall::Spent { needed: 100, budget: 400 }));
        budget.grow(&mut other, 0).unwrap();
        assert_eq!(
            budget.grow(&mut other, 1),
            Err(Shortfall::Spent { needed: 1, budget: 400 }),
            "the pool is free again, the budget is not"
        );
        drop((proven, unproven));
        budget.grow(&mut other, 100).unwrap();
    }
}
