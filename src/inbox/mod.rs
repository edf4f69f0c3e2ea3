//! The Inbox pattern: what one delivery means (its key, fingerprint and effects), and how the
//! outcome of claiming its key is decided. The store writes a [`Delivery`] in one transaction and
//! reports back what it found; [`decide`] turns that into an [`Outcome`] the same way on every backend.

mod bookings;
mod documents;
mod logged;
pub mod outbox;
pub mod problem;
pub mod quarantine;
pub mod resource;
mod source;
pub mod transport;

use bytes::Bytes;
use chrono::{DateTime, SubsecRound, Utc};
use uuid::Uuid;

use crate::edi::{EdiError, Envelope, ErrorKind, Fingerprint, Interchange, ack};
pub use bookings::{Booking, BusinessKey, Differing, DuplicateOf, Earlier, Ledger};
use documents::{Counts, Documents, Found};
pub use documents::{LARGE_DOCUMENTS, StoredDocument, Taken};
pub use logged::{Logged, truncated};
use outbox::OutboxMessage;
use resource::{DocumentResource, IdempotencyKey, InterchangeResource, InvoiceResource, MinimalInterchange};
pub use source::Source;

/// Whether an interchange's documents were booked or the interchange was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Processed,
    Rejected,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Processed => "processed",
            Status::Rejected => "rejected",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        match text {
            "processed" => Some(Status::Processed),
            "rejected" => Some(Status::Rejected),
            _ => None,
        }
    }
}

impl TryFrom<String> for Status {
    type Error = String;

    fn try_from(text: String) -> Result<Status, String> {
        Status::parse(&text).ok_or_else(|| format!("{text:?} is not an interchange status"))
    }
}

/// The idempotency key: `{standard}:{qualifier}:{sender id}` plus the interchange control number.
pub fn key(envelope: &Envelope) -> IdempotencyKey {
    IdempotencyKey { source: Source::of(envelope), message_id: envelope.control_number.clone() }
}

/// What arrived: the interchange's bytes as received, their media type, and when.
#[derive(Clone, Debug)]
pub struct Received {
    pub payload: Bytes,
    pub content_type: Option<String>,
    pub received_at: DateTime<Utc>,
}

/// Everything one POST wants written, decided before the transaction so that the store only writes.
#[derive(Clone, Debug)]
pub struct Delivery {
    id: Uuid,
    key: IdempotencyKey,
    envelope: Envelope,
    fingerprint: Fingerprint,
    payload: Bytes,
    content_type: Option<String>,
    received_at: DateTime<Utc>,
    status: Status,
    documents: Documents,
    counts: Counts,
    /// Its kinds of document, each once.
    kinds: Vec<String>,
    /// The response body of this delivery, stored so that every replay returns it byte for byte;
    /// its lists left empty when they are read from their rows ([`Delivery::lists_from_rows`]).
    response: String,
    /// The acknowledgement (TA1/997/999 or CONTRL) with [`ack::CONTROL_NUMBER`] where the store puts
    /// the number it allocates.
    ack: String,
    /// Its invoices are booked with the accounting API: an outbox message each, written in its
    /// transaction.
    books: bool,
    /// A small delivery's outbox messages (a large one's are made as its documents are walked).
    outbox: Vec<OutboxMessage>,
    /// Rejected for a reason its partner may hold it for instead.
    refused: Option<Refused>,
}

/// Why a valid interchange was rejected: a partner's setting refuses (or holds) such invoices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its stated figures do not reconcile.
    Mismatch,
    /// An invoice number its seller had booked before with other content.
    DuplicateNumber,
}

impl Delivery {
    /// An interchange whose documents are all valid, walked once: its documents and invoices get
    /// ids, its invoices are checked against `ledger` (what was booked before under their business
    /// keys), and the resource becomes the response. The first invalid document's error otherwise
    /// (an invoice number booked before with other content, when the ledger refuses it).
    pub fn processed(
        interchange: &Interchange<'_>,
        received: Received,
        ledger: &Ledger,
    ) -> Result<Delivery, EdiError> {
        let mut delivery = Delivery::new(interchange, received, Status::Processed);
        let at = (delivery.id, delivery.received_at);
        let Found { documents, counts, kinds } = Documents::find(interchange, &delivery.payload, ledger, at)?;
        delivery.ack = ack::acknowledge(interchange, None, delivery.received_at);
        delivery.documents = documents;
        delivery.counts = counts;
        delivery.kinds = kinds;
        delivery.render_response();
        Ok(delivery)
    }

    /// An interchange whose key is readable but whose content is invalid: nothing is booked, and
    /// `problem(id)` (the HTTP layer's problem+json body naming this interchange) is what this and
    /// every replay answers.
    pub fn rejected(
        interchange: &Interchange<'_>,
        error: &EdiError,
        received: Received,
        problem: impl FnOnce(Uuid) -> String,
    ) -> Delivery {
        let mut delivery = Delivery::new(interchange, received, Status::Rejected);
        delivery.ack = ack::acknowledge(interchange, Some(error), delivery.received_at);
        delivery.response = problem(delivery.id);
        delivery.refused = match error.kind {
            ErrorKind::Mismatch => Some(Refused::Mismatch),
            ErrorKind::DuplicateNumber => Some(Refused::DuplicateNumber),
            _ => None,
        };
        delivery
    }

    fn new(interchange: &Interchange<'_>, received: Received, status: Status) -> Delivery {
        let Received { payload, content_type, received_at } = received;
        Delivery {
            id: Uuid::now_v7(),
            key: key(&interchange.envelope),
            envelope: interchange.envelope.clone(),
            fingerprint: interchange.fingerprint(),
            payload,
            content_type,
            // Stored timestamps have microsecond precision; keep the response equal to what is stored.
            received_at: received_at.trunc_subsecs(6),
            status,
            documents: Documents::Held(Vec::new()),
            counts: Counts::default(),
            kinds: Vec::new(),
            response: String::new(),
            ack: String::new(),
            books: false,
            outbox: Vec::new(),
            refused: None,
        }
    }

    pub fn id(&self) -> Uuid {
        self.id
    }

    pub fn key(&self) -> &IdempotencyKey {
        &self.key
    }

    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    pub fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    pub fn received_at(&self) -> DateTime<Utc> {
        self.received_at
    }

    pub fn status(&self) -> Status {
        self.status
    }

    /// Its documents one at a time, in the order of the interchange: held, or a large delivery's
    /// mapped again.
    pub fn documents(&self) -> Box<dyn Iterator<Item = Taken<'_>> + Send + '_> {
        self.documents.take(true)
    }

    /// Its documents like [`Delivery::documents`], a large delivery's without their invoices
    /// mapped again: each one's ids, kind, control number and position.
    pub fn outlines(&self) -> Box<dyn Iterator<Item = Taken<'_>> + Send + '_> {
        self.documents.take(false)
    }

    /// The business keys its invoices are checked against, each once: their own, and those of the
    /// invoices its credit notes, debit notes and corrections name.
    pub fn business_keys(&self) -> Vec<BusinessKey> {
        let mut keys = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for stored in self.documents().flatten() {
            let Some(booking) = &stored.booking else { continue };
            for key in std::iter::once(&booking.key).chain(&booking.originals) {
                if seen.insert(key.clone()) {
                    keys.push(key.clone());
                }
            }
        }
        keys
    }

    /// Whether one of its documents names an original invoice that was not known when it was
    /// checked (booked before this delivery was prepared, or earlier in it): counted on the first
    /// walk, so that asking never walks a large delivery again.
    pub fn names_unknown_originals(&self) -> bool {
        self.counts.unknown_originals > 0
    }

    /// A small delivery's documents, held since it was parsed (none for a large one: see
    /// [`Delivery::documents`]).
    pub fn held_documents(&self) -> &[StoredDocument] {
        match &self.documents {
            Documents::Held(held) => held,
            Documents::Walked(_) => &[],
        }
    }

    /// How many of its invoices are duplicates (arrived before; kept, not booked).
    pub fn duplicate_count(&self) -> usize {
        self.counts.duplicates
    }

    /// How many documents it has.
    pub fn document_count(&self) -> usize {
        self.counts.documents
    }

    /// Its kinds of document (`810`, `INVOIC`, …), each once.
    pub fn kinds(&self) -> &[String] {
        &self.kinds
    }

    /// The response body of this delivery, stored so that every replay returns it byte for byte.
    pub fn response(&self) -> &str {
        &self.response
    }

    /// The acknowledgement, with [`ack::CONTROL_NUMBER`] where the store puts the number it
    /// allocates.
    pub fn ack(&self) -> &str {
        &self.ack
    }

    /// A small delivery's outbox messages (a large one's are made by [`Delivery::booking`]).
    pub fn outbox(&self) -> &[OutboxMessage] {
        &self.outbox
    }

    /// Its invoices are booked with the accounting API.
    pub fn books_with_accounting(&self) -> bool {
        self.books && self.counts.invoices > 0
    }

    /// The outbox message booking the invoice of `stored`, one of its documents, when it books one
    /// (a duplicate books none).
    pub fn booking(&self, stored: &StoredDocument) -> Option<OutboxMessage> {
        let booking = stored.booking.as_ref().filter(|booking| booking.books())?;
        let invoice = invoice_resource(self.id, stored)?;
        self.books.then(|| OutboxMessage::booking(&invoice, booking))
    }

    /// Why it was rejected, when its partner may hold it for that instead.
    pub fn refused(&self) -> Option<Refused> {
        self.refused
    }

    /// The interchange resource of this delivery (`error` is set for rejected ones by the caller); a
    /// large one's with its documents and invoices left to their rows.
    pub fn resource(&self, error: Option<serde_json::Value>) -> InterchangeResource {
        let held = self.held_documents();
        let warnings = match &self.documents {
            Documents::Held(held) => held.iter().flat_map(|d| d.document.warnings.iter().cloned()).collect(),
            Documents::Walked(walked) => walked.warnings.clone(),
        };
        InterchangeResource {
            id: self.id,
            status: self.status,
            standard: self.envelope.standard,
            sender: self.envelope.sender.clone(),
            receiver: self.envelope.receiver.clone(),
            control_number: self.envelope.control_number.clone(),
            idempotency_key: self.key.clone(),
            payload_sha256: self.fingerprint.to_string(),
            received_at: self.received_at,
            processed_at: self.received_at,
            documents: held
                .iter()
                .map(|d| DocumentResource {
                    kind: d.document.kind.clone(),
                    control_number: d.document.control_number.clone(),
                    position: d.document.position,
                    invoice_id: d.invoice_id,
                })
                .collect(),
            invoices: held.iter().filter_map(|d| invoice_resource(self.id, d)).collect(),
            warnings,
            error,
        }
    }

    /// Records the delivery under `{control number}#{fingerprint prefix}` instead of the control
    /// number alone: for partners whose policy is to process a reused control number with other
    /// content. Resends of that content then replay under the same distinguished key.
    pub fn distinguish_by_content(&mut self) {
        self.key.message_id = format!("{}#{}", self.envelope.control_number, self.fingerprint.prefix(16));
        if self.status == Status::Processed {
            self.render_response();
        }
    }

    /// Renders the answer stored with a processed delivery: the whole resource, or for a large one
    /// the resource with its documents and invoices left out, which are stored in their own rows
    /// anyway (for 20,000 invoices, 40 MB not held, bound or stored a second time).
    fn render_response(&mut self) {
        self.response = rendered(&self.resource(None));
    }

    /// A processed large interchange ([`LARGE_DOCUMENTS`]): its stored answer leaves its documents
    /// and invoices to be listed from their rows when it is replayed or read.
    pub fn lists_from_rows(&self) -> bool {
        matches!(self.documents, Documents::Walked(_))
    }

    /// Its minimal answer (`Prefer: return=minimal`): the envelope as its stored answer has it,
    /// with the documents, invoices and warnings counted from the delivery itself (a large one's
    /// stored answer leaves its lists to their rows).
    pub fn minimal(&self) -> Result<MinimalInterchange, serde_json::Error> {
        let mut minimal = MinimalInterchange::from_resource(&self.response)?;
        minimal.document_count = self.counts.documents as u64;
        minimal.invoice_count = self.counts.invoices as u64;
        minimal.warning_count = self.counts.warnings as u64;
        Ok(minimal)
    }

    /// Queues the booking of each of this delivery's invoices with the accounting API, to be written
    /// with the delivery itself (the transactional outbox): a small delivery's messages made now,
    /// a large one's as its documents are walked.
    pub fn book_with_accounting(&mut self) {
        self.books = true;
        self.outbox = self.held_documents().iter().filter_map(|stored| self.booking(stored)).collect();
    }

    /// The bytes the store writes for this delivery as its statement's parameters encode them,
    /// estimated from above so that their buffer is sized once.
    pub fn written_bytes(&self) -> usize {
        /// A document and its invoice, as their column arrays encode them.
        const PER_DOCUMENT: usize = 512;
        /// An invoice line, likewise.
        const PER_LINE: usize = 128;
        self.payload.len()
            + self.response.len()
            + self.ack.len()
            + self.outbox_bytes()
            + self.counts.documents * PER_DOCUMENT
            + self.counts.lines * PER_LINE
    }

    /// The bytes the claim statement binds for this delivery when its payload, documents,
    /// invoices, lines and outbox messages are streamed after it instead.
    pub fn claimed_bytes(&self) -> usize {
        /// The inbox and audit rows.
        const PER_DELIVERY: usize = 1024;
        self.response.len() + self.ack.len() + PER_DELIVERY
    }

    /// The bytes of memory recording this delivery holds at its peak, for the memory budget. A
    /// small delivery: the delivery itself, and what is written three times over (PostgreSQL's one
    /// statement is encoded into its parameters, then into the wire message, a buffer that grows
    /// by doubling); calibrated with heaptrack (on a build without jemalloc), 1.05 to 1.09 times
    /// the heap's measured peak. A large one: its body, what it holds besides (ids, the answer and the
    /// acknowledgement, bound once and sent once), and [`WALKED_BYTES`] for the documents mapped
    /// at a time and their rows on their way.
    pub fn recording_cost(&self) -> usize {
        /// A parsed document with its invoice, as held in memory.
        const HELD_PER_DOCUMENT: usize = 1024;
        /// A parsed invoice line.
        const HELD_PER_LINE: usize = 128;
        match &self.documents {
            Documents::Held(_) => {
                self.written_bytes() * 3
                    + self.payload.len()
                    + self.response.len()
                    + self.outbox_bytes()
                    + self.counts.documents * HELD_PER_DOCUMENT
                    + self.counts.lines * HELD_PER_LINE
            }
            Documents::Walked(walked) => {
                self.payload.len()
                    + walked.held_bytes(&self.payload)
                    + (self.response.len() + self.ack.len()) * 3
                    + WALKED_BYTES
            }
        }
    }

    /// What recording a delivery of `body_bytes` shaped like `shape` is expected to cost, known
    /// once the body is parsed and before its documents are mapped and rendered: for a small one,
    /// [`Delivery::recording_cost`] measured per body byte, document and line, rounded up (about
    /// 1.06 times it); for a large one, twice its body (the body and, while it is walked, the
    /// acknowledgement being written, each segment of which is a document's), [`WALKED_BYTES`],
    /// and what each document leaves held (its ids, its part of the acknowledgement).
    pub fn expected_cost(body_bytes: usize, shape: crate::edi::Shape) -> usize {
        const PER_BODY_BYTE: usize = 4;
        const PER_DOCUMENT: usize = 2560;
        const PER_LINE: usize = 768;
        /// Held per document of a large delivery.
        const PER_WALKED_DOCUMENT: usize = 256;
        if shape.documents >= LARGE_DOCUMENTS {
            return body_bytes * 2 + shape.documents * PER_WALKED_DOCUMENT + WALKED_BYTES;
        }
        body_bytes * PER_BODY_BYTE + shape.documents * PER_DOCUMENT + shape.lines * PER_LINE
    }

    fn outbox_bytes(&self) -> usize {
        self.outbox.iter().map(|m| m.payload.len()).sum()
    }
}

/// The invoice resource of `stored`, one of the documents of interchange `interchange_id`, when
/// it is an invoice.
fn invoice_resource(interchange_id: Uuid, stored: &StoredDocument) -> Option<InvoiceResource> {
    let mark = stored.booking.as_ref().map(|booking| &booking.mark);
    Some(InvoiceResource {
        id: stored.invoice_id?,
        interchange_id,
        invoice: stored.document.invoice.clone()?,
        duplicate_of: mark.and_then(|mark| mark.duplicate_of.clone()),
        replaces: mark.and_then(|mark| mark.replaces),
        original_invoice_id: mark.and_then(|mark| mark.original_invoice_id),
        accounting: None,
    })
}

/// What recording a large delivery holds at once besides what it keeps: the documents mapped at a
/// time and their rows on their way to the database (PostgreSQL: one document and 256 KiB of
/// `COPY` text; SQLite: 64 documents and their rows).
const WALKED_BYTES: usize = 1024 * 1024;

/// A response body as stored and answered, written into a buffer of its exact size, measured by a
/// first pass that writes nothing: grown by doubling instead, the buffer of a large interchange's
/// answer held up to twice its size, and its copy when shrunk (for 30,000 invoices, 27 MB).
fn rendered(resource: &InterchangeResource) -> String {
    /// Counts the bytes written to it.
    struct Measure(usize);
    impl std::io::Write for Measure {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut measure = Measure(0);
    if serde_json::to_writer(&mut measure, resource).is_err() {
        return String::new();
    }
    let mut body = Vec::with_capacity(measure.0);
    if serde_json::to_writer(&mut body, resource).is_err() {
        return String::new();
    }
    // serde_json writes UTF-8 only.
    String::from_utf8(body).unwrap_or_default()
}

/// What the store found when it claimed a delivery's key (in the same transaction that wrote it).
#[derive(Debug)]
pub struct Claim {
    /// Id of the row holding the key now.
    pub id: Uuid,
    /// True when this delivery's row was written (first delivery, or replacing a rejected one).
    pub fresh: bool,
    pub status: Status,
    pub payload_sha256: Fingerprint,
    /// The stored response; only read back when the row is not fresh.
    pub response_body: Option<String>,
    /// The stored response leaves its documents and invoices to be listed from their rows.
    pub lists_from_rows: bool,
    /// The control number allocated to this delivery's acknowledgement, when the row is fresh.
    pub ack_control_number: Option<i64>,
    /// The fresh row's transport id was seen before with another key (PostgreSQL reports it here).
    pub transport_reused: bool,
}

/// The result of recording a delivery.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// First delivery of this key (or a corrected resend of a rejected one): its response is the
    /// answer, and its acknowledgement got this control number.
    Recorded { ack_control_number: i64 },
    /// The same content was recorded before: answer with what was answered then (its documents and
    /// invoices still to be listed from their rows while `lists_from_rows`; the store's `record`
    /// returns it whole).
    Replayed { id: Uuid, status: Status, body: String, lists_from_rows: bool },
    /// The key was used before for different content; nothing was written.
    Conflict { original_id: Uuid },
}

/// What the store must do after claiming.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Done(Outcome),
    /// The key is held by a rejected attempt with other content: overwrite it with this delivery,
    /// provided it still holds that fingerprint.
    ReplaceRejected {
        previous_fingerprint: Fingerprint,
    },
}

/// Decides the outcome of a claim: a pure function so both backends behave the same.
pub fn decide(claim: Claim, delivery: &Delivery) -> Next {
    if claim.fresh {
        return Next::Done(Outcome::Recorded {
            ack_control_number: claim.ack_control_number.unwrap_or_default(),
        });
    }
    let status = claim.status;
    if claim.payload_sha256 == delivery.fingerprint {
        return Next::Done(Outcome::Replayed {
            id: claim.id,
            status,
            body: claim.response_body.unwrap_or_default(),
            lists_from_rows: claim.lists_from_rows,
        });
    }
    match status {
        Status::Rejected => Next::ReplaceRejected { previous_fingerprint: claim.payload_sha256 },
        Status::Processed => Next::Done(Outcome::Conflict { original_id: claim.id }),
    }
}
