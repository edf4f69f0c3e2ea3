//! One invoice, booked once: the second layer of idempotency, after the interchange's key. Every
//! booked document has a [`BusinessKey`] (its sender, the seller it states, its kind, its number,
//! and for sellers that number per year its issue year). A delivery's invoices are checked against
//! the invoices booked before under their keys ([`Ledger`], read by the store when the key's unique
//! index refused a booking) and against each other: the same invoice again is a duplicate, kept but
//! never booked; a number booked before with other content is refused, or booked as the number's
//! next revision when the decision ([`Differing`]) says so.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Datelike, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::Source;
use crate::edi::invoice::DocumentKind;
use crate::edi::{EdiError, ErrorKind, Invoice, Warning};
use crate::partners::{DuplicateNumberPolicy, InvoiceNumbers};

/// The business key of a booked document: `{sender} {seller qualifier} {seller id} {kind} {number}
/// {year}`, each part with `%` and space written `%25` and `%20` (so that the parts can be told
/// apart), the number with its surrounding spaces trimmed, the seller's parts empty when the
/// document states no seller id (the sender is then the seller) and the year `*` unless its
/// partner's numbers restart every year. Migration 0023 writes the same for invoices booked before.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BusinessKey(String);

impl BusinessKey {
    pub fn of(sender: &Source, invoice: &Invoice, numbers: InvoiceNumbers) -> BusinessKey {
        let year = match numbers {
            InvoiceNumbers::Unique => None,
            InvoiceNumbers::PerYear => Some(invoice.issue_date.year()),
        };
        BusinessKey::compose(sender, invoice, invoice.kind, &invoice.number, year)
    }

    /// The keys the invoice that a credit note, debit note or correction names
    /// ([`Invoice::original_invoice`]) is booked under when it was: the same sender and seller,
    /// kind invoice, the number stated; for numbers restarting every year, of the document's year
    /// or the year before (in that order). None when it names none.
    pub fn originals(sender: &Source, invoice: &Invoice, numbers: InvoiceNumbers) -> Vec<BusinessKey> {
        let Some(number) = invoice.original_invoice.as_deref() else { return Vec::new() };
        let key = |year| BusinessKey::compose(sender, invoice, DocumentKind::Invoice, number, year);
        match numbers {
            InvoiceNumbers::Unique => vec![key(None)],
            InvoiceNumbers::PerYear => {
                let year = invoice.issue_date.year();
                vec![key(Some(year)), key(Some(year - 1))]
            }
        }
    }

    /// The key of a document of `kind` numbered `number` from `invoice`'s seller.
    fn compose(
        sender: &Source,
        invoice: &Invoice,
        kind: DocumentKind,
        number: &str,
        year: Option<i32>,
    ) -> BusinessKey {
        fn part(key: &mut String, value: &str) {
            if !key.is_empty() {
                key.push(' ');
            }
            if !value.contains(['%', ' ']) {
                key.push_str(value);
                return;
            }
            for c in value.chars() {
                match c {
                    '%' => key.push_str("%25"),
                    ' ' => key.push_str("%20"),
                    c => key.push(c),
                }
            }
        }
        let seller = invoice.seller.as_ref().filter(|seller| seller.id.is_some());
        let mut key = String::with_capacity(sender.as_str().len() + number.len() + 48);
        part(&mut key, sender.as_str());
        part(&mut key, seller.and_then(|s| s.qualifier.as_deref()).unwrap_or_default());
        part(&mut key, seller.and_then(|s| s.id.as_deref()).unwrap_or_default());
        part(&mut key, kind.as_str());
        part(&mut key, number.trim());
        match year {
            None => part(&mut key, "*"),
            Some(year) => part(&mut key, &year.to_string()),
        }
        BusinessKey(key)
    }

    /// A key as stored.
    pub fn stored(text: String) -> BusinessKey {
        BusinessKey(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The booked invoice another is a duplicate of: the API's `duplicate_of`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct DuplicateOf {
    pub invoice_id: Uuid,
    pub interchange_id: Uuid,
    /// When that interchange was received.
    pub received_at: DateTime<Utc>,
}

/// How an invoice is booked under its key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    /// 0, or the number's revision when it was booked again with other content.
    pub revision: i32,
    /// The same invoice was booked before: this one is kept, not booked.
    pub duplicate_of: Option<DuplicateOf>,
    /// The earlier invoice this one replaces (an operator's decision).
    pub replaces: Option<Uuid>,
    /// The booked invoice this credit note, debit note or correction names, when it was known.
    pub original_invoice_id: Option<Uuid>,
}

/// A document's key and how it is booked under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Booking {
    pub key: BusinessKey,
    pub mark: Mark,
    /// Where the invoice it names as its original would be booked ([`BusinessKey::originals`]).
    pub originals: Vec<BusinessKey>,
}

impl Booking {
    /// It books its invoice (it is not a duplicate).
    pub fn books(&self) -> bool {
        self.mark.duplicate_of.is_none()
    }

    /// The accounting API's `Idempotency-Key` for the invoice: derived from its business key and
    /// revision, so that whatever delivery, door or operator's action books it, accounting is
    /// asked once (a UUID built from the SHA-256 of `{key}#{revision}`).
    pub fn idempotency_key(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(format!("{}#{}", self.key.as_str(), self.mark.revision));
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        uuid::Builder::from_custom_bytes(bytes).into_uuid().to_string()
    }
}

/// An invoice booked before under a key.
#[derive(Clone, Debug)]
pub struct Earlier {
    pub invoice_id: Uuid,
    pub interchange_id: Uuid,
    pub received_at: DateTime<Utc>,
    pub revision: i32,
    pub invoice: Arc<Invoice>,
}

/// What becomes of an invoice whose number was booked before with other content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Differing {
    /// The interchange is refused (rejected or held: [`ErrorKind::DuplicateNumber`]).
    Refuse,
    /// Booked as the number's next revision, with a warning.
    BookAsNew,
    /// Booked as the next revision and the replacement of the latest one.
    Replace,
}

impl From<DuplicateNumberPolicy> for Differing {
    fn from(policy: DuplicateNumberPolicy) -> Differing {
        match policy {
            DuplicateNumberPolicy::Quarantine | DuplicateNumberPolicy::Reject => Differing::Refuse,
            DuplicateNumberPolicy::Book => Differing::BookAsNew,
        }
    }
}

/// What a delivery's invoices are checked against: its partner's settings and the invoices booked
/// before under their keys (none known until the store reports a key taken).
#[derive(Clone, Debug)]
pub struct Ledger {
    pub numbers: InvoiceNumbers,
    pub differing: Differing,
    earlier: HashMap<BusinessKey, Vec<Earlier>>,
}

impl Default for Ledger {
    fn default() -> Ledger {
        Ledger::new(InvoiceNumbers::Unique, Differing::Refuse)
    }
}

impl Ledger {
    pub fn new(numbers: InvoiceNumbers, differing: Differing) -> Ledger {
        Ledger { numbers, differing, earlier: HashMap::new() }
    }

    /// The ledger with what the store found booked under the keys asked about.
    pub fn with_earlier(self, earlier: HashMap<BusinessKey, Vec<Earlier>>) -> Ledger {
        Ledger { earlier, ..self }
    }

    /// A checker for one delivery's documents, in order.
    pub fn checker(&self, sender: Source) -> Checker<'_> {
        Checker { ledger: self, sender, booked: HashMap::default() }
    }
}

/// Checks one delivery's invoices in order, remembering what it booked (a 64-bit hash of each key,
/// ids and content digests, not the keys or the invoices: a 20,000-invoice interchange holds 2 MB
/// here) so that an invoice repeated within the interchange is a duplicate too. Two keys of one
/// interchange with one hash (about 1 in 10^11 for 20,000 invoices) would at worst make an invoice
/// look like a re-used number: refused or held, never lost or booked twice.
pub struct Checker<'a> {
    ledger: &'a Ledger,
    sender: Source,
    booked: HashMap<u64, Vec<(Found, u64)>, foldhash::fast::RandomState>,
}

/// Where an invoice of the same key was booked: its ids, when, and its revision.
#[derive(Clone, Copy)]
struct Found {
    invoice_id: Uuid,
    interchange_id: Uuid,
    received_at: DateTime<Utc>,
    revision: i32,
}

impl Found {
    fn of(earlier: &Earlier) -> Found {
        let Earlier { invoice_id, interchange_id, received_at, revision, .. } = *earlier;
        Found { invoice_id, interchange_id, received_at, revision }
    }

    fn named(&self) -> String {
        format!(
            "invoice {} (interchange {}, received {})",
            self.invoice_id,
            self.interchange_id,
            self.received_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
        )
    }
}

/// A document of the delivery being checked: its invoice, the ids it is stored under, when it came.
pub struct Checked<'a> {
    pub invoice: &'a Arc<Invoice>,
    pub invoice_id: Uuid,
    pub interchange_id: Uuid,
    pub received_at: DateTime<Utc>,
    /// ST02 / UNH 0062, for the warning.
    pub document: &'a str,
}

impl Checker<'_> {
    /// How `checked` is booked, with the warning to give; an [`ErrorKind::DuplicateNumber`] error
    /// when its number is taken by other content and the decision is to refuse.
    pub fn check(&mut self, checked: Checked<'_>) -> Result<(Booking, Option<Warning>), EdiError> {
        let invoice = checked.invoice;
        let key = BusinessKey::of(&self.sender, invoice, self.ledger.numbers);
        let before = self.ledger.earlier.get(&key).map_or(&[][..], Vec::as_slice);
        let hashed = hashed(&key);
        let within = self.booked.get(&hashed).map_or(&[][..], Vec::as_slice);
        let digest = invoice.content_digest();
        let same = before
            .iter()
            .find(|earlier| invoice.differences(&earlier.invoice).is_empty())
            .map(Found::of)
            .or_else(|| within.iter().find(|(_, d)| *d == digest).map(|(found, _)| *found));
        let latest = before.iter().max_by_key(|earlier| earlier.revision);
        let latest_within = within.iter().map(|(found, _)| *found).max_by_key(|found| found.revision);
        // The latest revision of the number, and how this invoice differs from it.
        let taken = || {
            let within = |found: Found| {
                (found, "it differs from that invoice, earlier in this interchange".to_owned())
            };
            match (latest, latest_within) {
                (Some(earlier), Some(found)) if found.revision > earlier.revision => Some(within(found)),
                (Some(earlier), _) => {
                    let differences = invoice.differences(&earlier.invoice);
                    let shown = differences.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                    Some((Found::of(earlier), format!("it differs in {shown}")))
                }
                (None, found) => found.map(within),
            }
        };
        let mut mark = Mark::default();
        let message = if let Some(same) = same {
            mark.duplicate_of = Some(DuplicateOf {
                invoice_id: same.invoice_id,
                interchange_id: same.interchange_id,
                received_at: same.received_at,
            });
            Some(format!(
                "invoice {} was booked before as {}: this copy is not booked again",
                invoice.number,
                same.named()
            ))
        } else if let Some((latest, how)) = taken() {
            let taken = format!(
                "invoice number {} was booked before with other content as {}; {how}",
                invoice.number,
                latest.named()
            );
            mark.revision = latest.revision.saturating_add(1);
            match self.ledger.differing {
                Differing::Refuse => {
                    return Err(EdiError {
                        kind: ErrorKind::DuplicateNumber,
                        message: taken,
                        segment_position: invoice.sources.number,
                        segment: None,
                        element: None,
                    });
                }
                Differing::BookAsNew => {
                    Some(format!("{taken}; booked as a new invoice (revision {})", mark.revision))
                }
                Differing::Replace => {
                    mark.replaces = Some(latest.invoice_id);
                    Some(format!("{taken}; booked as its replacement (revision {})", mark.revision))
                }
            }
        } else {
            None
        };
        let originals = BusinessKey::originals(&self.sender, invoice, self.ledger.numbers);
        mark.original_invoice_id = originals.iter().find_map(|original| self.booked_under(original));
        if mark.duplicate_of.is_none() {
            let found = Found {
                invoice_id: checked.invoice_id,
                interchange_id: checked.interchange_id,
                received_at: checked.received_at,
                revision: mark.revision,
            };
            self.booked.entry(hashed).or_default().push((found, digest));
        }
        let warning = message.map(|message| Warning {
            document: checked.document.to_owned(),
            segment_position: invoice.sources.number,
            message,
            mismatch: false,
        });
        Ok((Booking { key, mark, originals }, warning))
    }

    /// The latest revision booked under `key`, before this delivery or earlier in it.
    fn booked_under(&self, key: &BusinessKey) -> Option<Uuid> {
        let before = self.ledger.earlier.get(key).into_iter().flatten().map(Found::of);
        let within = self.booked.get(&hashed(key)).into_iter().flatten().map(|(found, _)| *found);
        before.chain(within).max_by_key(|found| found.revision).map(|found| found.invoice_id)
    }
}

/// A key's 64-bit hash, as [`Checker`] remembers it.
fn hashed(key: &BusinessKey) -> u64 {
    std::hash::BuildHasher::hash_one(&foldhash::fast::FixedState::default(), key)
}
