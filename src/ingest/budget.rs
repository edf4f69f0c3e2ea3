//! The memory budget of the deliveries in flight, shared by every door. A request reserves what
//! reading and parsing its body costs before the first byte is read (waiting while the budget is
//! spent); once parsed, its delivery tops the reservation up to what recording it costs
//! ([`crate::inbox::Delivery::recording_cost`]). A top-up never waits: a delivery that holds a
//! reservation and waits for more could wait on another that does the same.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why bytes could not be reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shortfall {
    /// More than the whole budget is needed: this never fits.
    Exceeds { needed: usize, budget: usize },
    /// The budget is spent by other deliveries for now.
    Spent,
}

/// Bytes of memory the deliveries in flight may hold together.
#[derive(Clone)]
pub struct Budget {
    bytes: Arc<Semaphore>,
    total: usize,
}

/// Bytes held for one delivery, returned when dropped.
#[derive(Debug)]
pub struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
}

impl Budget {
    pub fn new(total: usize) -> Budget {
        let total = total.min(Semaphore::MAX_PERMITS).min(u32::MAX as usize);
        Budget { bytes: Arc::new(Semaphore::new(total)), total }
    }

    /// Reserves `bytes`, waiting for other deliveries to return theirs when the budget is spent.
    pub async fn reserve(&self, bytes: usize) -> Result<Reservation, Shortfall> {
        let permits = self.permits(bytes)?;
        let permit =
            Arc::clone(&self.bytes).acquire_many_owned(permits).await.map_err(|_| Shortfall::Spent)?;
        Ok(Reservation { permit: Some(permit) })
    }

    /// An empty reservation, for a delivery whose bytes are only known once it is parsed.
    pub fn nothing(&self) -> Reservation {
        Reservation { permit: None }
    }

    /// Grows `reservation` to `bytes` in all if that much is free now.
    pub fn top_up(&self, reservation: &mut Reservation, bytes: usize) -> Result<(), Shortfall> {
        let held = reservation.permit.as_ref().map_or(0, OwnedSemaphorePermit::num_permits);
        let more = self.permits(bytes)?.saturating_sub(u32::try_from(held).unwrap_or(u32::MAX));
        if more == 0 {
            return Ok(());
        }
        let permit = Arc::clone(&self.bytes).try_acquire_many_owned(more).map_err(|_| Shortfall::Spent)?;
        match &mut reservation.permit {
            Some(held) => held.merge(permit),
            empty => *empty = Some(permit),
        }
        Ok(())
    }

    fn permits(&self, bytes: usize) -> Result<u32, Shortfall> {
        u32::try_from(bytes)
            .ok()
            .filter(|_| bytes <= self.total)
            .ok_or(Shortfall::Exceeds { needed: bytes, budget: self.total })
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
        assert_eq!(budget.top_up(&mut second, 31), Err(Shortfall::Spent));
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
}
