//! The dead-letter re-drive of the outbox: a dead message sent again, or given up for good.

use chrono::Utc;
use uuid::Uuid;

use super::{Actor, Error, recorded};
use crate::accounting::OutboxEntry;
use crate::store::{Store, Transition};

/// Sends a dead message again, with a fresh budget of attempts.
pub async fn retry(store: &Store, id: Uuid, actor: &Actor) -> Result<OutboxEntry, Error> {
    let entry = settled(id, store.redrive(id, Utc::now()).await?)?;
    recorded(store, actor, "outbox.retry", &id, (Some("dead"), entry.status.as_str())).await;
    Ok(entry)
}

/// Gives up on a dead message: it is never sent.
pub async fn discard(store: &Store, id: Uuid, actor: &Actor) -> Result<OutboxEntry, Error> {
    let entry = settled(id, store.discard(id).await?)?;
    recorded(store, actor, "outbox.discard", &id, (Some("dead"), entry.status.as_str())).await;
    Ok(entry)
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
