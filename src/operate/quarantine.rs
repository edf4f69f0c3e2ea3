//! Resolving a held delivery (a quarantine-policy partner's delivery that would have been refused):
//! release it (recorded after all) or discard it.

use chrono::Utc;
use std::sync::Arc;
use uuid::Uuid;

use super::{Actor, Error, recorded};
use crate::inbox::quarantine::{QuarantineStatus, Quarantined};
use crate::ingest::Ingest;
use crate::store::Store;

/// Releases a held delivery: parsed again under its partner's current settings and recorded.
pub async fn release(ingest: &Ingest, id: Uuid, actor: &Actor) -> Result<Quarantined, Error> {
    let store = ingest.store();
    let held = store.held(id).await?.ok_or_else(|| no_entry(id))?;
    let partner = store.partner(held.entry.partner_id.as_str()).await?;
    let partner =
        partner.ok_or_else(|| Error::NotFound(format!("no partner {:?}", held.entry.partner_id)))?;
    let released = ingest.release(held, Arc::new(partner)).await?;
    recorded(store, actor, "quarantine.release", &id, (Some("held"), released.status.as_str())).await;
    Ok(released)
}

/// Discards a held delivery: it is never booked.
pub async fn discard(store: &Store, id: Uuid, actor: &Actor) -> Result<Quarantined, Error> {
    let held = store.held(id).await?.ok_or_else(|| no_entry(id))?;
    if held.entry.status != QuarantineStatus::Held {
        return Err(Error::WrongState(format!(
            "the delivery is {}; only held ones are resolved",
            held.entry.status.as_str()
        )));
    }
    let discarded = store.resolve_hold(id, QuarantineStatus::Discarded, None, Utc::now()).await?;
    let discarded =
        discarded.ok_or_else(|| Error::WrongState("it was resolved by someone else meanwhile".into()))?;
    recorded(store, actor, "quarantine.discard", &id, (Some("held"), discarded.status.as_str())).await;
    Ok(discarded)
}

fn no_entry(id: Uuid) -> Error {
    Error::NotFound(format!("no quarantine entry {id}"))
}
