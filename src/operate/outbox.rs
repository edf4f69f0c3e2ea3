//! The dead-letter re-drive of the outbox: a dead message sent again, or given up for good.

use chrono::Utc;
use uuid::Uuid;

use super::Error;
use crate::accounting::OutboxEntry;
use crate::store::{Store, Transition};

/// Sends a dead message again, with a fresh budget of attempts.
pub async fn retry(store: &Store, id: Uuid) -> Result<OutboxEntry, Error> {
    settled(id, store.redrive(id, Utc::now()).await?)
}

/// Gives up on a dead message: it is never sent.
pub async fn discard(store: &Store, id: Uuid) -> Result<OutboxEntry, Error> {
    settled(id, store.discard(id).await?)
}

fn settled(id: Uuid, transition: Transition) -> Result<OutboxEntry, Error> {
    match transition {
        Transition::Done(entry) => Ok(entry),
        Transition::NotFound => Err(Error::NotFound(format!("no outbox message {id}"))),
        Transition::NotDead(status) => Err(Error::WrongState(format!(
            "the message is {}; only dead messages are retried or discarded",
            status.as_str()
        ))),
    }
}
