//! Resolving a held delivery (a quarantine-policy partner's delivery that would have been refused):
//! release it (recorded after all) or discard it.

use chrono::Utc;
use std::sync::Arc;
use uuid::Uuid;

use super::{Actor, Error, recorded};
use crate::edi::invoice::Difference;
use crate::edi::{Limits, parse};
use crate::inbox::quarantine::{QuarantineReason, QuarantineStatus, Quarantined, ReleaseAs};
use crate::inbox::{BusinessKey, Differing, Earlier, Source};
use crate::ingest::Ingest;
use crate::partners::Validation;
use crate::store::{HeldPayload, Store};

/// Invoices of a held delivery compared at most, the first in it: a page an operator reads.
const COMPARED: usize = 100;

/// An invoice of a held delivery beside the latest invoice booked before under its number.
pub struct Compared {
    pub number: String,
    pub earlier: Earlier,
    /// Field by field, as [`crate::edi::Invoice::differences`] names them.
    pub differences: Vec<Difference>,
}

/// How each invoice of a delivery held for a re-used number (reason `duplicate-number`, or a
/// `conflict` whose invoices re-use theirs) differs from the latest booked under its number, read now: its first [`COMPARED`] invoices, under its
/// partner's current settings. None for another reason, a payload that no longer reads, or once
/// the earlier invoices are gone.
pub async fn compared(store: &Store, held: &HeldPayload) -> Result<Vec<Compared>, Error> {
    if !matches!(held.entry.reason, QuarantineReason::DuplicateNumber | QuarantineReason::Conflict) {
        return Ok(Vec::new());
    }
    let Some(partner) = store.partner(held.entry.partner_id.as_str()).await? else { return Ok(Vec::new()) };
    let mut scratch = Vec::new();
    let Ok(interchange) = parse(&held.payload, &mut scratch, Limits::default()) else {
        return Ok(Vec::new());
    };
    let interchange = match partner.validation {
        Validation::Lenient => interchange.lenient(),
        Validation::Strict => interchange,
    };
    let sender = Source::of(&interchange.envelope);
    let Ok(documents) = interchange.walk() else { return Ok(Vec::new()) };
    let invoices: Vec<_> = documents
        .filter_map(|document| document.ok()?.invoice)
        .take(COMPARED)
        .map(|invoice| (BusinessKey::of(&sender, &invoice, partner.invoice_numbers), invoice))
        .collect();
    let keys: Vec<BusinessKey> = invoices.iter().map(|(key, _)| key.clone()).collect();
    let booked = store.booked_invoices(&keys).await?;
    Ok(invoices
        .into_iter()
        .filter_map(|(key, invoice)| {
            let earlier = booked.get(&key)?.iter().max_by_key(|earlier| earlier.revision)?.clone();
            let differences = invoice.differences(&earlier.invoice);
            (!differences.is_empty()).then(|| Compared {
                number: invoice.number.clone(),
                earlier,
                differences,
            })
        })
        .collect())
}

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
