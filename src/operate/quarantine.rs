//! Resolving a held delivery (a quarantine-policy partner's delivery that would have been refused):
//! release it (recorded after all) or discard it.

use chrono::Utc;
use std::sync::Arc;
use uuid::Uuid;

use super::{Actor, Error, recorded};
use crate::inbox::Differing;
use crate::inbox::quarantine::{QuarantineStatus, Quarantined, ReleaseAs};
use crate::ingest::Ingest;
use crate::store::Store;

/// Releases a held delivery: parsed again under its partner's current settings and recorded; an
/// invoice number booked before with other content is booked `as` the operator decides (without a
/// decision it is refused again).
pub async fn release(
    ingest: &Ingest,
    id: Uuid,
    release_as: Option<ReleaseAs>,
    actor: &Actor,
) -> Result<Quarantined, Error> {
    let store = ingest.store();
    let held = store.held(id).await?.ok_or_else(|| no_entry(id))?;
    let partner = store.partner(held.entry.partner_id.as_str()).await?;
    let partner =
        partner.ok_or_else(|| Error::NotFound(format!("no partner {:?}", held.entry.partner_id)))?;
    let differing = release_as.map(|release_as| match release_as {
        ReleaseAs::New => Differing::BookAsNew,
        ReleaseAs::Replacement => Differing::Replace,
    });
    let released = ingest.release(held, Arc::new(partner), differing).await?;
    let action = match release_as {
        None => "quarantine.release",
        Some(ReleaseAs::New) => "quarantine.release-as-new",
        Some(ReleaseAs::Replacement) => "quarantine.release-as-replacement",
    };
    recorded(store, actor, action, &id, (Some("held"), released.status.as_str())).await;
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
