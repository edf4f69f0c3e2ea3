//! A delivery's documents. A small delivery's are mapped once and held, with the answer rendered
//! from them. A large one's ([`LARGE_DOCUMENTS`] or more) are walked again from its interchange
//! each time they are written, one document at a time: recording 20,000 invoices holds the body,
//! their ids and one mapped document, never every invoice at once.

use std::borrow::Cow;

use bytes::Bytes;
use uuid::Uuid;

use crate::edi::{Document, EdiError, Interchange, Reading, Warning};

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
    /// Walks `interchange` (read from `payload`) once, validating and mapping every document: held
    /// while there are fewer than [`LARGE_DOCUMENTS`], from then on only their ids and warnings kept.
    pub(super) fn find(interchange: &Interchange<'_>, payload: &Bytes) -> Result<Found, EdiError> {
        let (mut held, mut ids, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
        let mut large = false;
        let (mut counts, mut kinds) = (Counts::default(), Vec::<String>::new());
        for document in interchange.walk()? {
            let document = document?;
            let invoice_id = document.invoice.as_ref().map(|_| Uuid::now_v7());
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
                held.push(StoredDocument { id, invoice_id, document });
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
            Documents::Walked(Walked { text, reading: interchange.reading(), ids, warnings })
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
            document.map(|document| Cow::Owned(StoredDocument { id, invoice_id, document }))
        });
        failed.map(Err).into_iter().chain(stored)
    }

    /// The bytes it holds besides the payload: a wrapped interchange's copy and the ids.
    pub fn held_bytes(&self, payload: &Bytes) -> usize {
        let copy = if self.text.as_ptr() == payload.as_ptr() { 0 } else { self.text.len() };
        copy + self.ids.len() * std::mem::size_of::<(Uuid, Option<Uuid>)>()
    }
}
