//! A delivery's documents. A small delivery's are mapped once and held, with the answer rendered
//! from them. A large one's ([`LARGE_DOCUMENTS`] or more) are walked again from its interchange
//! each time they are written, one document at a time: recording 20,000 invoices holds the body,
//! their ids and one mapped document, never every invoice at once.

use std::borrow::Cow;
use std::collections::HashMap;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Source;
use super::bookings::{Booking, BusinessKey, Checked, Ledger, Mark};
use crate::edi::{Document, EdiError, Interchange, Reading, Warning};
use crate::partners::InvoiceNumbers;

/// Documents from which an interchange is large: its documents are walked again whenever they are
/// written rather than held, its answer's documents and invoices are not stored as part of its
/// answer but listed from their own rows when it is read again, and PostgreSQL streams its rows
/// with `COPY`.
pub const LARGE_DOCUMENTS: usize = 64;

/// A document ready to be stored, with the ids it will be stored under.
#[derive(Clone, Debug)]
pub struct StoredDocument {
    pub id: Uuid,
    pub invoice_id: Option<Uuid>,
    pub document: Document,
    /// An invoice's business key and how it is booked under it.
    pub booking: Option<Booking>,
}

/// A delivery's document as it is taken: borrowed from the delivery, or mapped again. An error is
/// an interchange that maps differently from when it was first walked (it cannot, being the same
/// bytes read the same way).
pub type Taken<'a> = Result<Cow<'a, StoredDocument>, EdiError>;

/// What a walk counted.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub documents: usize,
    pub invoices: usize,
    pub lines: usize,
    pub warnings: usize,
    /// Invoices that arrived before (kept, not booked).
    pub duplicates: usize,
    /// Credit notes, debit notes and corrections naming an original invoice not known when they
    /// were checked.
    pub unknown_originals: usize,
}

#[derive(Clone, Debug)]
pub(super) enum Documents {
    /// A small delivery's, mapped once.
    Held(Vec<StoredDocument>),
    /// A large delivery's, mapped again on every walk.
    Walked(Walked),
}

#[derive(Clone, Debug)]
pub(super) struct Walked {
    /// The interchange as it was read: its payload, or a wrapped one's copy without line breaks.
    text: Bytes,
    reading: Reading,
    /// Each document's id and its invoice's, in order: the same on every walk.
    ids: Vec<(Uuid, Option<Uuid>)>,
    /// What its invoices' business keys are made of, made again on every walk.
    sender: Source,
    numbers: InvoiceNumbers,
    /// How the invoices that are not simply booked are (duplicates, revisions), by invoice id.
    marks: HashMap<Uuid, Mark>,
    /// Every document's warnings, which its stored answer lists.
    pub warnings: Vec<Warning>,
}

/// What the first walk of an interchange found.
pub(super) struct Found {
    pub documents: Documents,
    pub counts: Counts,
    /// Its kinds of document (`810`, `INVOIC`, …), each once.
    pub kinds: Vec<String>,
}

impl Documents {
    /// Walks `interchange` (read from `payload`) once, validating and mapping every document and
    /// checking its invoice against `ledger` (the delivery is `interchange_id`, received `at`):
    /// held while there are fewer than [`LARGE_DOCUMENTS`], from then on only their ids, warnings
    /// and the marks of invoices not simply booked kept.
    pub(super) fn find(
        interchange: &Interchange<'_>,
        payload: &Bytes,
        ledger: &Ledger,
        (interchange_id, at): (Uuid, DateTime<Utc>),
    ) -> Result<Found, EdiError> {
        let (mut held, mut ids, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
        let mut marks = HashMap::new();
        let mut large = false;
        let (mut counts, mut kinds) = (Counts::default(), Vec::<String>::new());
        let sender = Source::of(&interchange.envelope);
        let mut checker = ledger.checker(sender.clone());
        for document in interchange.walk()? {
            let mut document = document?;
            let invoice_id = document.invoice.as_ref().map(|_| Uuid::now_v7());
            let booking = match (&document.invoice, invoice_id) {
                (Some(invoice), Some(invoice_id)) => {
                    let checked = Checked {
                        invoice,
                        invoice_id,
                        interchange_id,
                        received_at: at,
                        document: &document.control_number,
                    };
                    let (booking, warning) = checker.check(checked)?;
                    document.warnings.extend(warning);
                    counts.duplicates += usize::from(booking.mark.duplicate_of.is_some());
                    counts.unknown_originals += usize::from(
                        !booking.originals.is_empty() && booking.mark.original_invoice_id.is_none(),
                    );
                    if booking.mark != Mark::default() {
                        marks.insert(invoice_id, booking.mark.clone());
                    }
                    Some(booking)
                }
                _ => None,
            };
            counts.documents += 1;
            counts.invoices += usize::from(invoice_id.is_some());
            counts.lines += document.invoice.as_ref().map_or(0, |invoice| invoice.lines.len());
            counts.warnings += document.warnings.len();
            if !kinds.contains(&document.kind) {
                kinds.push(document.kind.clone());
            }
            let id = Uuid::now_v7();
            if large {
                ids.push((id, invoice_id));
                warnings.extend(document.warnings);
            } else {
                held.push(StoredDocument { id, invoice_id, document, booking });
                if held.len() == LARGE_DOCUMENTS {
                    large = true;
                    for stored in held.drain(..) {
                        ids.push((stored.id, stored.invoice_id));
                        warnings.extend(stored.document.warnings);
                    }
                }
            }
        }
        let documents = if large {
            let text = match std::ptr::eq(interchange.input(), payload.as_ref()) {
                true => payload.clone(),
                false => Bytes::copy_from_slice(interchange.input()),
            };
            let numbers = ledger.numbers;
            Documents::Walked(Walked {
                text,
                reading: interchange.reading(),
                ids,
                sender,
                numbers,
                marks,
                warnings,
            })
        } else {
            Documents::Held(held)
        };
        Ok(Found { documents, counts, kinds })
    }

    /// The documents one at a time, in the order of the interchange; a large delivery's with their
    /// invoices mapped only when `invoices` asks for them.
    pub(super) fn take(&self, invoices: bool) -> Box<dyn Iterator<Item = Taken<'_>> + Send + '_> {
        match self {
            Documents::Held(held) => Box::new(held.iter().map(|stored| Ok(Cow::Borrowed(stored)))),
            Documents::Walked(walked) => Box::new(walked.walk(invoices)),
        }
    }
}

impl Walked {
    /// Reads the interchange again as it was read first and maps its documents one at a time (their
    /// invoices when `invoices` asks for them).
    fn walk(&self, invoices: bool) -> impl Iterator<Item = Taken<'_>> + Send + '_ {
        let walked = self.reading.read(&self.text).and_then(|ic| ic.walk());
        let walked = walked.map(|documents| if invoices { documents } else { documents.outlines() });
        let (documents, failed) = match walked {
            Ok(documents) => (Some(documents), None),
            Err(error) => (None, Some(error)),
        };
        let stored = documents.into_iter().flatten().zip(&self.ids).map(|(document, &(id, invoice_id))| {
            document.map(|document| {
                let booking =
                    document.invoice.as_ref().zip(invoice_id).map(|(invoice, invoice_id)| Booking {
                        key: BusinessKey::of(&self.sender, invoice, self.numbers),
                        mark: self.marks.get(&invoice_id).cloned().unwrap_or_default(),
                        originals: BusinessKey::originals(&self.sender, invoice, self.numbers),
                    });
                Cow::Owned(StoredDocument { id, invoice_id, document, booking })
            })
        });
        failed.map(Err).into_iter().chain(stored)
    }

    /// The bytes it holds besides the payload: a wrapped interchange's copy and the ids.
    pub fn held_bytes(&self, payload: &Bytes) -> usize {
        let copy = if self.text.as_ptr() == payload.as_ptr() { 0 } else { self.text.len() };
        copy + self.ids.len() * std::mem::size_of::<(Uuid, Option<Uuid>)>()
            + self.marks.len() * (std::mem::size_of::<(Uuid, Mark)>() + 16)
    }
}
