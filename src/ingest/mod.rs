//! The delivery use case, whatever the door or queue: prepare (parse and map the interchange) →
//! authenticate (the envelope's sender and AS2 names against the proven partner) → policies (bypass,
//! quarantine, conflict) → record (one transaction) → outcome, then audit, count and log it.
//!
//! HTTP (`http::receive`, once a request is admitted, read and unwrapped) and the queue
//! consumers (`consumer`) call it and turn what it returns — an [`Ingested`] or an [`Error`] — into a
//! status code or a broker acknowledgement; it knows neither. What the HTTP contract stores with an
//! interchange (the problem document of a rejection, the status each reply is audited with) it is
//! handed as [`Answers`] by whoever builds it.

mod authenticate;
mod budget;
mod policies;
mod prepare;
mod report;

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use authenticate::{active, check_as2, security_event};
pub use budget::{Budget, Reservation, Shortfall};
pub use report::Report;

use prepare::Known;

use crate::edi::{self, EdiError};
use crate::inbox::quarantine::{QuarantineStatus, Quarantined};
use crate::inbox::resource::{BypassedResource, IdempotencyKey};
use crate::inbox::transport::{Door, Transport};
use crate::inbox::{Delivery, Differing, Logged, Outcome, Status};
use crate::partners::directory::Directory;
use crate::partners::{ConflictPolicy, MismatchPolicy, Partner, PartnerId};
use crate::store::{AttemptFacts, FirstAttempt, HeldPayload, Store, StoreError};

/// How deliveries are read and booked.
#[derive(Clone, Debug)]
pub struct IngestOptions {
    /// Bounds of the parser.
    pub parse_limits: edi::Limits,
    /// Deliveries must come from a registered partner (queues: the sender must be one).
    pub partner_auth: bool,
    /// Every recorded invoice gets an outbox message for the accounting API.
    pub book_with_accounting: bool,
    /// The AS2 names an AS2 delivery's `AS2-To` must be one of (none: not checked).
    pub as2_receiver_ids: Arc<[String]>,
    /// Bytes of memory the deliveries in flight may hold together (see [`Budget`]).
    pub buffer_bytes: usize,
}

/// The kind of reply a sender gets, as the audit trail records its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// First delivery, booked.
    Created,
    /// A later delivery of booked content, or a bypassed interchange.
    Replayed,
    /// Invalid content, stored as rejected (first delivery or replay).
    Rejected,
    /// The key was used for other content; nothing written.
    Conflict,
    /// Held for an operator.
    Held,
}

/// What the HTTP contract says where it is stored with an interchange: the problem documents of
/// refusals kept and replayed, and the status each reply and refusal is audited with. Built in
/// `http/` (the only place that knows status codes) and handed down.
#[derive(Clone, Copy)]
pub struct Answers {
    /// The problem document a rejected interchange is stored and replayed with.
    pub invalid: fn(&EdiError, Uuid) -> String,
    /// The problem document of a conflict, kept with a held delivery.
    pub conflict: fn(Uuid, &IdempotencyKey) -> String,
    pub status: fn(Reply) -> u16,
    pub refusal: fn(&Error) -> u16,
    /// The disposition an AS2 receipt (MDN) gives each reply, audited with an attempt that asked for one.
    pub receipt: fn(Reply) -> &'static str,
}

/// Why a delivery was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No idempotency key can be read: nothing stored.
    #[error("{0}")]
    Malformed(EdiError),
    /// The partner may not send this (sender, receiver, AS2 name, suspended): nothing stored.
    #[error("{0}")]
    Forbidden(String),
    /// An operator's action that the entry's state does not allow.
    #[error("{0}")]
    WrongState(String),
    /// A queued message over the consumer's limit of this many bytes: not read.
    #[error("the message exceeds the limit of {0} bytes")]
    TooLarge(usize),
    /// Recording the interchange's documents needs more memory than the whole budget: it never fits.
    #[error(
        "recording its {documents} documents needs about {needed} bytes of memory, more than this \
         server's budget of {budget} bytes (EDI_INBOX_BUFFER_BYTES); nothing was recorded: split the \
         interchange or raise the budget"
    )]
    TooLargeToRecord { documents: usize, needed: usize, budget: usize },
    /// The memory budget is spent by other deliveries for now: nothing recorded, retry.
    #[error(
        "this delivery needs about {needed} bytes of memory and this server's budget of {budget} bytes \
         (EDI_INBOX_BUFFER_BYTES) is held by other deliveries now; nothing was recorded, retry"
    )]
    Busy { needed: usize, budget: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error")]
    Internal,
}

impl Error {
    /// The refusal of an interchange of `documents` whose memory `shortfall` could not reserve.
    fn short_of(shortfall: Shortfall, documents: usize) -> Error {
        match shortfall {
            Shortfall::Exceeds { needed, budget } => Error::TooLargeToRecord { documents, needed, budget },
            Shortfall::Spent { needed, budget } => Error::Busy { needed, budget },
        }
    }

    /// The audit trail's name for a delivery refused with this error.
    pub fn outcome(&self) -> &'static str {
        match self {
            Error::Malformed(_) => "malformed",
            Error::Forbidden(_) => "forbidden",
            Error::WrongState(_) => "bad-request",
            Error::TooLarge(_) | Error::TooLargeToRecord { .. } => "too-large",
            Error::Busy { .. } => "rate-limited",
            Error::Store(StoreError::Unavailable(_) | StoreError::Unconfirmed) => "unavailable",
            Error::Store(StoreError::Refused(_)) => "bad-request",
            Error::Store(_) | Error::Internal => "error",
        }
    }
}

/// Whose settings apply to an interchange.
pub enum PartnerOf {
    /// The proven caller's (none in open mode).
    Caller(Option<Arc<Partner>>),
    /// The partner whose sender identity the envelope names: messages from a queue, which the
    /// broker authenticated. With partner authentication an unknown sender is refused; a queue
    /// `bound` to a partner refuses every other sender.
    Sender { directory: Arc<Directory>, bound: Option<PartnerId> },
}

/// An unwrapped interchange, from any door or queue.
pub struct Inbound {
    pub body: Bytes,
    pub content_type: Option<String>,
    pub partner: PartnerOf,
}

/// What became of a delivery that was not refused.
#[derive(Debug)]
pub enum Ingested {
    /// First delivery of its key, recorded: booked (`Processed`) or stored as rejected.
    Recorded { delivery: Arc<Delivery>, ack_control_number: i64 },
    /// A later delivery of recorded content: the interchange `id` and its stored answer.
    Replayed { delivery: Arc<Delivery>, id: Uuid, status: Status, body: String },
    /// The key is held by `original_id`, recorded with other content; nothing written.
    Conflict { delivery: Arc<Delivery>, original_id: Uuid },
    /// Held for an operator (quarantine policy); `fresh` the first time this content is held,
    /// `audited` when the delivery was recorded (as rejected) and so wrote its own audit row.
    Quarantined { delivery: Arc<Delivery>, entry: Quarantined, fresh: bool, audited: bool },
    /// Every document is of a type its partner declared naturally idempotent: not claimed.
    Bypassed(BypassedResource),
}

impl Ingested {
    /// The reply its sender gets.
    pub fn reply(&self) -> Reply {
        match self {
            Ingested::Recorded { delivery, .. } => match delivery.status() {
                Status::Processed => Reply::Created,
                Status::Rejected => Reply::Rejected,
            },
            Ingested::Replayed { status: Status::Processed, .. } | Ingested::Bypassed(_) => Reply::Replayed,
            Ingested::Replayed { status: Status::Rejected, .. } => Reply::Rejected,
            Ingested::Conflict { .. } => Reply::Conflict,
            Ingested::Quarantined { .. } => Reply::Held,
        }
    }

    /// The audit trail's name for it.
    pub fn outcome(&self) -> &'static str {
        match self {
            Ingested::Recorded { delivery, .. } => first_outcome(delivery.status()),
            Ingested::Replayed { .. } => "replayed",
            Ingested::Conflict { .. } => "conflict",
            Ingested::Quarantined { .. } => crate::inbox::quarantine::QUARANTINED,
            Ingested::Bypassed(_) => "bypassed",
        }
    }

    /// The key it was recorded or looked up under, with its standard.
    pub fn key(&self) -> (&IdempotencyKey, edi::Standard) {
        match self {
            Ingested::Recorded { delivery, .. }
            | Ingested::Replayed { delivery, .. }
            | Ingested::Conflict { delivery, .. }
            | Ingested::Quarantined { delivery, .. } => (delivery.key(), delivery.envelope().standard),
            Ingested::Bypassed(resource) => (&resource.idempotency_key, resource.standard),
        }
    }
}

/// The `detail` of a stored problem document.
fn problem_detail(problem: &str) -> String {
    serde_json::from_str::<serde_json::Value>(problem)
        .ok()
        .and_then(|problem| problem["detail"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// How a delivery is recorded: whose it is, what its attempt is audited with, what an invoice
/// number booked before with other content becomes (an operator's decision, else its partner's
/// policy), whether its key is distinguished by its content (`{control number}#{fingerprint}`), and
/// whether it is an operator's release (which books or fails, never records a rejection).
struct Recording<'a> {
    partner: Option<&'a Arc<Partner>>,
    facts: &'a AttemptFacts,
    differing: Option<Differing>,
    distinguished: bool,
    releases: bool,
}

/// The audit trail's name for a first delivery.
fn first_outcome(status: Status) -> &'static str {
    match status {
        Status::Processed => "recorded",
        Status::Rejected => "rejected",
    }
}

/// The delivery use case, shared by every door and queue.
#[derive(Clone)]
pub struct Ingest {
    store: Store,
    options: Arc<IngestOptions>,
    answers: Answers,
    budget: Budget,
}

impl Ingest {
    pub fn new(store: Store, options: IngestOptions, answers: Answers) -> Ingest {
        let budget = Budget::new(options.buffer_bytes);
        Ingest { store, options: Arc::new(options), answers, budget }
    }

    /// The memory budget every delivery reserves from before its body is read.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Tops `reservation` up to what recording `delivery` costs, if that much is free now.
    fn afford(&self, reservation: &mut Reservation, delivery: &Delivery) -> Result<(), Error> {
        self.budget
            .top_up(reservation, delivery.recording_cost())
            .map_err(|shortfall| Error::short_of(shortfall, delivery.document_count()))
    }

    pub fn options(&self) -> &IngestOptions {
        &self.options
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Parses and records one interchange exactly once, applying its partner's policies. The
    /// partner proven (or found by its sender) is noted in `facts`.
    pub async fn deliver(
        &self,
        inbound: Inbound,
        reservation: &mut Reservation,
        facts: &mut AttemptFacts,
        received_at: DateTime<Utc>,
    ) -> Result<Ingested, Error> {
        let prepared = prepare::prepare(self, inbound, reservation, received_at, Known::default()).await?;
        let (delivery, partner) = match prepared {
            prepare::Prepared::Delivery(delivery, partner) => {
                self.afford(reservation, &delivery)?;
                (delivery, partner)
            }
            prepare::Prepared::Bypassed(resource, partner) => {
                facts.partner_id = partner.map(|p| p.id.clone());
                return Ok(Ingested::Bypassed(*resource));
            }
        };
        if let Some(partner) = &partner {
            facts.partner_id = Some(partner.id.clone());
        }
        let policy = partner.as_ref().map_or(ConflictPolicy::Reject, |p| p.conflict_policy);
        let mut recording = Recording {
            partner: partner.as_ref(),
            facts,
            differing: None,
            distinguished: false,
            releases: false,
        };
        let (mut delivery, mut outcome) = self.record(*delivery, &recording, reservation).await?;
        if matches!(outcome, Outcome::Conflict { .. }) && policy == ConflictPolicy::Process {
            let mut distinguished = Arc::unwrap_or_clone(delivery);
            distinguished.distinguish_by_content();
            recording.distinguished = true;
            (delivery, outcome) = self.record(distinguished, &recording, reservation).await?;
        }
        if let Some(partner) = &partner
            && let Some((entry, fresh)) = self.held(partner, &delivery, &outcome).await?
        {
            if fresh {
                tracing::warn!(target: "edi_inbox::quarantine", id = %entry.id, partner = %entry.partner_id,
                    reason = entry.reason.as_str(), source = %Logged(&entry.source),
                    message_id = %Logged(&entry.message_id),
                    "delivery quarantined for an operator");
            }
            let audited = matches!(outcome, Outcome::Recorded { .. });
            return Ok(Ingested::Quarantined { delivery, entry, fresh, audited });
        }
        Ok(match outcome {
            Outcome::Recorded { ack_control_number } => Ingested::Recorded { delivery, ack_control_number },
            Outcome::Replayed { id, status, body, .. } => Ingested::Replayed { delivery, id, status, body },
            Outcome::Conflict { original_id } => Ingested::Conflict { delivery, original_id },
        })
    }

    /// The quarantine entry holding `delivery` (true: held just now), when its partner holds what
    /// it would be refused with. A replayed rejection whose reason depended on what was booked then
    /// (a re-used invoice number, which a delivery prepared now may no longer meet) is answered with
    /// the entry it was held as, if it was.
    async fn held(
        &self,
        partner: &Partner,
        delivery: &Delivery,
        outcome: &Outcome,
    ) -> Result<Option<(Quarantined, bool)>, Error> {
        if let Some(hold) = policies::quarantine(self, partner, delivery, outcome) {
            return Ok(Some(self.store.hold(&hold).await?));
        }
        if !matches!(outcome, Outcome::Replayed { status: Status::Rejected, .. }) {
            return Ok(None);
        }
        let key = delivery.key();
        let entry =
            self.store.held_entry(key.source.as_str(), &key.message_id, delivery.fingerprint()).await?;
        Ok(entry.map(|entry| (entry, false)))
    }

    /// Records `delivery` in one transaction. When the store finds a business key of one of its
    /// invoices booked already (its unique index refused the booking, nothing was written), what
    /// was booked under its keys is read, the delivery is prepared again against it (duplicates
    /// marked, a re-used number refused or booked as `recording` decides) and recorded: the common
    /// path never reads before it writes. A delivery naming original invoices (its credit notes,
    /// debit notes or corrections) reads where those are booked first, to link them.
    async fn record(
        &self,
        delivery: Delivery,
        recording: &Recording<'_>,
        reservation: &mut Reservation,
    ) -> Result<(Arc<Delivery>, Outcome), Error> {
        /// Rounds of a delivery whose invoices' keys keep being taken by concurrent bookings.
        const MAX_ROUNDS: usize = 4;
        let mut delivery = Arc::new(delivery);
        // A credit note or correction is linked to the invoice it names, when that was booked.
        if delivery.names_unknown_originals() {
            delivery = self.checked_again(&delivery, recording, reservation).await?;
        }
        for _ in 0..MAX_ROUNDS {
            let held = policies::holds_rejection(recording.partner.map(|p| &**p), &delivery);
            let first = self.first_attempt(&delivery, recording.facts, held);
            match self.store.record(&delivery, &first).await {
                Err(StoreError::InvoiceNumberTaken) => {
                    delivery = self.checked_again(&delivery, recording, reservation).await?;
                }
                recorded => return Ok((delivery, recorded?)),
            }
        }
        Err(Error::Store(StoreError::Unavailable(sqlx::Error::Protocol(
            "its invoices' business keys kept being taken while it was recorded".into(),
        ))))
    }

    /// `delivery` prepared again against what is booked now under its business keys.
    async fn checked_again(
        &self,
        delivery: &Delivery,
        recording: &Recording<'_>,
        reservation: &mut Reservation,
    ) -> Result<Arc<Delivery>, Error> {
        let earlier = self.store.booked_invoices(&delivery.business_keys()).await?;
        let known = Known { earlier, differing: recording.differing };
        let inbound = Inbound {
            body: delivery.payload().clone(),
            content_type: delivery.content_type().map(str::to_owned),
            partner: PartnerOf::Caller(recording.partner.cloned()),
        };
        let prepared = prepare::prepare(self, inbound, reservation, delivery.received_at(), known).await?;
        let prepare::Prepared::Delivery(mut again, _) = prepared else {
            return Err(Error::Internal);
        };
        if again.status() == Status::Rejected && recording.releases {
            return Err(Error::WrongState(format!(
                "its invoice number was booked before with other content: {}; say what it is \
                 booked as (a new invoice, or the replacement of the earlier one)",
                problem_detail(again.response())
            )));
        }
        if recording.distinguished {
            again.distinguish_by_content();
        }
        self.afford(reservation, &again)?;
        Ok(Arc::new(*again))
    }

    /// The audit row a first delivery writes with itself (`held`: a rejection is held, not answered).
    fn first_attempt(&self, delivery: &Delivery, facts: &AttemptFacts, held: bool) -> FirstAttempt {
        // A held rejection is audited as what it is to the sender: quarantined (202), not rejected.
        let (reply, outcome) = match (delivery.status(), held) {
            (Status::Processed, _) => (Reply::Created, first_outcome(Status::Processed)),
            (Status::Rejected, true) => (Reply::Held, crate::inbox::quarantine::QUARANTINED),
            (Status::Rejected, false) => (Reply::Rejected, first_outcome(Status::Rejected)),
        };
        let mut facts = facts.clone();
        if facts.transport.asks_receipt() {
            facts.transport = facts.transport.with("mdn", Some((self.answers.receipt)(reply)));
        }
        FirstAttempt { facts, outcome, status: (self.answers.status)(reply) }
    }

    /// Processes a held delivery after all, under its partner's current settings: recorded under its
    /// content-distinguished key (`{control number}#{fingerprint prefix}`), so that it neither
    /// replaces the interchange it conflicts with nor replays the rejection it got. The entry is
    /// claimed before the recording (a discard racing it then finds it resolved, and a discarded
    /// entry is never booked) and given back when the recording fails. Still invalid, or resolved
    /// by someone else: [`Error::WrongState`].
    pub async fn release(
        &self,
        held: HeldPayload,
        partner: Arc<Partner>,
        differing: Option<Differing>,
    ) -> Result<Quarantined, Error> {
        // An operator's release is the decision a partner holding mismatches asks for: booked as
        // stated, with its warnings.
        let partner = match partner.on_mismatch {
            MismatchPolicy::Quarantine => {
                Arc::new(Partner { on_mismatch: MismatchPolicy::Warn, ..(*partner).clone() })
            }
            MismatchPolicy::Warn | MismatchPolicy::Reject => partner,
        };
        let unfinished = held.entry.status == QuarantineStatus::Released && held.entry.released_as.is_none();
        if held.entry.status != QuarantineStatus::Held && !unfinished {
            return Err(Error::WrongState(format!(
                "the delivery is {}; only held ones are resolved",
                held.entry.status.as_str()
            )));
        }
        let received_at = Utc::now();
        let entry_id = held.entry.id;
        let facts = AttemptFacts {
            partner_id: Some(partner.id.clone()),
            body_bytes: i64::try_from(held.payload.len()).unwrap_or(i64::MAX),
            transport: Transport::new(Door::Direct, None).with("released_from", Some(entry_id.to_string())),
            ..AttemptFacts::default()
        };
        let inbound = Inbound {
            body: held.payload,
            content_type: held.content_type,
            partner: PartnerOf::Caller(Some(Arc::clone(&partner))),
        };
        let mut reservation = self.budget.nothing();
        let known = Known { differing, ..Known::default() };
        let prepare::Prepared::Delivery(mut delivery, _) =
            prepare::prepare(self, inbound, &mut reservation, received_at, known).await?
        else {
            return Err(Error::WrongState("its documents now bypass the inbox; discard it".into()));
        };
        self.afford(&mut reservation, &delivery)?;
        if delivery.status() == Status::Rejected {
            return Err(Error::WrongState(format!(
                "it is still invalid under the partner's current settings: {}",
                problem_detail(delivery.response())
            )));
        }
        delivery.distinguish_by_content();
        if self.store.claim_release(entry_id, received_at).await?.is_none() {
            return Err(Error::WrongState("it was resolved by someone else meanwhile".into()));
        }
        let recording = Recording {
            partner: Some(&partner),
            facts: &facts,
            differing,
            distinguished: true,
            releases: true,
        };
        let recorded = match self.record(*delivery, &recording, &mut reservation).await {
            Ok((delivery, Outcome::Recorded { .. })) => Ok(delivery.id()),
            Ok((_, Outcome::Replayed { id, .. })) => Ok(id),
            Ok((_, Outcome::Conflict { original_id })) => {
                Err(Error::WrongState(format!("its distinguished key is held by interchange {original_id}")))
            }
            Err(error) => Err(error),
        };
        let interchange_id = match recorded {
            Ok(id) => id,
            Err(error) => {
                self.store.unclaim_release(entry_id).await?;
                return Err(error);
            }
        };
        self.store
            .finish_release(entry_id, interchange_id)
            .await?
            .ok_or_else(|| Error::WrongState("it was resolved by someone else meanwhile".into()))
    }
}
