//! Prepare: parse and map the body into a [`Delivery`] (or a bypassed interchange), finding its
//! partner and checking the envelope's sender against it. Large bodies are parsed on the blocking
//! pool so that the async workers keep serving.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::authenticate::{active, check_sender};
use super::{Error, Inbound, Ingest, PartnerOf, Reservation};
use crate::edi;
use crate::inbox::resource::BypassedResource;
use crate::inbox::{self, BusinessKey, Delivery, Differing, Earlier, Ledger, Received};
use crate::partners::{InvoiceNumbers, MismatchPolicy, Partner, Validation};

/// Bodies larger than this are parsed on the blocking pool, not on an async worker.
const INLINE_PARSE_BYTES: usize = 256 * 1024;

/// What a delivery's invoices are checked against besides its partner's settings: the invoices
/// booked before under their business keys (read once the store found one taken), and an
/// operator's decision about a re-used number, which overrides the partner's policy.
#[derive(Default)]
pub(super) struct Known {
    pub earlier: HashMap<BusinessKey, Vec<Earlier>>,
    pub differing: Option<Differing>,
}

/// What parsing made of an interchange.
pub(super) enum Prepared {
    /// It goes through the inbox.
    Delivery(Box<Delivery>, Option<Arc<Partner>>),
    /// Every document is of a type its partner declared naturally idempotent: answered without a claim.
    Bypassed(Box<BypassedResource>, Option<Arc<Partner>>),
}

/// Parses and maps `inbound` under its partner's settings. Once parsed, and before its documents are
/// mapped and rendered (most of what it costs), `reservation` is topped up to what recording it is
/// expected to cost.
pub(super) async fn prepare(
    ingest: &Ingest,
    inbound: Inbound,
    reservation: &mut Reservation,
    received_at: DateTime<Utc>,
    known: Known,
) -> Result<Prepared, Error> {
    let options = Arc::clone(&ingest.options);
    let invalid = ingest.answers.invalid;
    let budget = ingest.budget.clone();
    let mut held = std::mem::replace(reservation, budget.nothing());
    let Inbound { body, content_type, partner } = inbound;
    let inline = body.len() <= INLINE_PARSE_BYTES;
    let work = move || {
        let mut unwrapped = Vec::new();
        let prepare = || {
            let mut interchange =
                edi::parse(&body, &mut unwrapped, options.parse_limits).map_err(Error::Malformed)?;
            let partner = partner_of(partner, &interchange.envelope, options.partner_auth)?;
            check_sender(partner.as_deref(), &interchange.envelope)?;
            let shape = interchange.shape();
            budget
                .top_up(&mut held, Delivery::expected_cost(body.len(), shape))
                .map_err(|shortfall| Error::short_of(shortfall, shape.documents))?;
            if partner.as_ref().is_some_and(|p| p.validation == Validation::Lenient) {
                interchange = interchange.lenient();
            }
            if partner.as_ref().is_some_and(|p| p.on_mismatch != MismatchPolicy::Warn) {
                interchange = interchange.refusing_mismatches();
            }
            let received = Received { payload: body.clone(), content_type, received_at };
            let numbers = partner.as_ref().map_or(InvoiceNumbers::Unique, |p| p.invoice_numbers);
            let differing = known
                .differing
                .or(partner.as_ref().map(|p| p.on_duplicate_number.into()))
                .unwrap_or(Differing::Refuse);
            let ledger = Ledger::new(numbers, differing).with_earlier(known.earlier);
            Ok(match Delivery::processed(&interchange, received.clone(), &ledger) {
                Ok(delivery) if partner.as_ref().is_some_and(|p| p.bypasses(delivery.kinds())) => {
                    let resource = BypassedResource::new(&delivery).map_err(Error::Malformed)?;
                    Prepared::Bypassed(Box::new(resource), partner)
                }
                Ok(mut delivery) => {
                    if options.book_with_accounting {
                        delivery.book_with_accounting();
                    }
                    Prepared::Delivery(Box::new(delivery), partner)
                }
                Err(error) => {
                    let delivery =
                        Delivery::rejected(&interchange, &error, received, |id| invalid(&error, id));
                    Prepared::Delivery(Box::new(delivery), partner)
                }
            })
        };
        (prepare(), held)
    };
    let (prepared, held) =
        if inline { work() } else { tokio::task::spawn_blocking(work).await.map_err(|_| Error::Internal)? };
    *reservation = held;
    prepared
}

/// The partner whose settings apply: the proven caller, or the one the envelope's sender names
/// (a queue bound to a partner refuses every other sender).
fn partner_of(
    partner: PartnerOf,
    envelope: &edi::Envelope,
    partner_auth: bool,
) -> Result<Option<Arc<Partner>>, Error> {
    match partner {
        PartnerOf::Caller(partner) => Ok(partner),
        PartnerOf::Sender { directory, bound } => {
            let sender = inbox::key(envelope).source;
            let found = directory.by_sender(sender.as_str());
            if let Some(bound) = bound
                && found.is_none_or(|partner| partner.id != bound)
            {
                return Err(Error::Forbidden(format!(
                    "this queue is bound to partner {bound}, not {sender}'s"
                )));
            }
            match found {
                Some(partner) => Ok(Some(active(Arc::clone(partner))?)),
                None if partner_auth => Err(Error::Forbidden(format!("no partner sends as {sender}"))),
                None => Ok(None),
            }
        }
    }
}
