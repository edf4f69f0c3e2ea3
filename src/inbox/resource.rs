//! The JSON resources of the API. The interchange resource is built once, when a delivery is
//! recorded, and stored as the response body, so every replay and `GET` returns the same bytes; a
//! large interchange's is stored without its documents and invoices, which [`with_lists`] writes
//! back in from their rows.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::outbox::AccountingState;
use super::{Source, Status};
use crate::edi::{Invoice, PartyId, Standard, Warning};

/// The idempotency key under which an interchange is recorded.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub struct IdempotencyKey {
    /// `{standard}:{sender qualifier}:{sender id}`.
    #[schema(value_type = String, example = "x12:ZZ:ACMESUPPLY")]
    pub source: Source,
    /// The interchange control number as sent (ISA13 / UNB 0020).
    #[schema(example = "000001142")]
    pub message_id: String,
}

/// One transaction set (ST..SE) or message (UNH..UNT) of an interchange.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct DocumentResource {
    /// Transaction set or message type: `810`, `INVOIC`, …
    #[serde(rename = "type")]
    #[schema(example = "810")]
    pub kind: String,
    #[schema(example = "0001")]
    pub control_number: String,
    /// Segment position of its ST or UNH in the interchange.
    pub position: usize,
    /// The invoice booked from this document, when it is an invoice.
    pub invoice_id: Option<Uuid>,
}

/// An invoice booked from an interchange.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct InvoiceResource {
    pub id: Uuid,
    pub interchange_id: Uuid,
    // Shared with the document it was booked from, so that rendering a large interchange copies
    // no invoice.
    #[serde(flatten)]
    #[schema(value_type = Invoice)]
    pub invoice: std::sync::Arc<Invoice>,
    /// The invoice this one repeats (the same seller, kind, number and content, booked before):
    /// kept with its interchange, never booked again or sent to accounting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<super::DuplicateOf>,
    /// The earlier invoice of the same number this one replaces (an operator's decision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<Uuid>,
    /// The booked invoice its `original_invoice` names (a credit note's, debit note's or
    /// correction's), when it was booked from the same sender and seller before this arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_invoice_id: Option<Uuid>,
    /// Where the invoice stands with the accounting API (invoice endpoints only, when an accounting
    /// API was configured as it was recorded; never part of an interchange response, which stays
    /// the same bytes on every replay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accounting: Option<AccountingState>,
}

/// A received interchange: the body of `201`, of every replay, and of `GET /v1/interchanges/{id}`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct InterchangeResource {
    pub id: Uuid,
    pub status: Status,
    pub standard: Standard,
    pub sender: PartyId,
    pub receiver: PartyId,
    #[schema(example = "000001142")]
    pub control_number: String,
    pub idempotency_key: IdempotencyKey,
    /// SHA-256 of the canonical interchange (line breaks and envelope dates/times ignored).
    pub payload_sha256: String,
    pub received_at: DateTime<Utc>,
    pub processed_at: DateTime<Utc>,
    pub documents: Vec<DocumentResource>,
    pub invoices: Vec<InvoiceResource>,
    /// Findings that did not reject the interchange, e.g. a total that disagrees with its lines.
    pub warnings: Vec<Warning>,
    /// For a rejected interchange: the problem it was rejected with.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub error: Option<serde_json::Value>,
}

/// Where the stored answer of a large interchange leaves its lists out, as serde_json writes the
/// resource's empty `documents` and `invoices`. A `,"` cannot occur inside a JSON string (every
/// quote in one is escaped), and no field before them is a list, so it is found once, in place.
const LISTS_LEFT_OUT: &str = r#","documents":[],"invoices":[],"#;

/// The whole answer of a large interchange: its stored answer (`lists_left_out`, rendered with
/// empty lists) with its documents and invoices, read from their rows, written in place; the same
/// bytes as the resource rendered whole. `None` when the stored answer has no empty lists.
pub fn with_lists(
    lists_left_out: &str,
    documents: &[DocumentResource],
    invoices: &[InvoiceResource],
) -> Option<String> {
    let at = lists_left_out.find(LISTS_LEFT_OUT)?;
    let mut whole = Vec::with_capacity(lists_left_out.len() + invoices.len() * 2048);
    whole.extend_from_slice(&lists_left_out.as_bytes()[..at]);
    whole.extend_from_slice(br#","documents":"#);
    serde_json::to_writer(&mut whole, documents).ok()?;
    whole.extend_from_slice(br#","invoices":"#);
    serde_json::to_writer(&mut whole, invoices).ok()?;
    whole.push(b',');
    whole.extend_from_slice(&lists_left_out.as_bytes()[at + LISTS_LEFT_OUT.len()..]);
    String::from_utf8(whole).ok()
}

/// A received interchange as `Prefer: return=minimal` answers it: the envelope, how many
/// documents, invoices and warnings it holds, and links to them. Its size does not grow with the
/// interchange. It is read (`from_resource`) from the full resource, whose lists are counted as
/// they are read, never held.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct MinimalInterchange {
    pub id: Uuid,
    pub status: Status,
    pub standard: Standard,
    pub sender: PartyId,
    pub receiver: PartyId,
    #[schema(example = "000001142")]
    pub control_number: String,
    pub idempotency_key: IdempotencyKey,
    pub payload_sha256: String,
    pub received_at: DateTime<Utc>,
    pub processed_at: DateTime<Utc>,
    /// How many documents (ST or UNH) the interchange holds.
    #[serde(rename(deserialize = "documents"), deserialize_with = "count")]
    pub document_count: u64,
    /// How many invoices were booked from it.
    #[serde(rename(deserialize = "invoices"), deserialize_with = "count")]
    pub invoice_count: u64,
    /// How many findings did not reject it (e.g. a total that disagrees with its lines).
    #[serde(rename(deserialize = "warnings"), deserialize_with = "count")]
    pub warning_count: u64,
    /// The whole interchange: documents, invoices with their lines, warnings.
    #[serde(default)]
    #[schema(required = true, example = "/v1/interchanges/0193…")]
    pub href: String,
    /// Its invoices, a page at a time.
    #[serde(default)]
    #[schema(required = true, example = "/v1/invoices?interchange_id=0193…")]
    pub invoices_href: String,
}

impl MinimalInterchange {
    /// The minimal form of a stored interchange resource (the body its first delivery was answered
    /// with).
    pub fn from_resource(body: &str) -> Result<MinimalInterchange, serde_json::Error> {
        Ok(serde_json::from_str::<MinimalInterchange>(body)?.linked())
    }

    /// With its links, which name its id.
    fn linked(mut self) -> MinimalInterchange {
        self.href = format!("/v1/interchanges/{}", self.id);
        self.invoices_href = format!("/v1/invoices?interchange_id={}", self.id);
        self
    }
}

/// The number of items of a JSON array, each skipped as it is read.
fn count<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    struct Counter;
    impl<'de> serde::de::Visitor<'de> for Counter {
        type Value = u64;
        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            formatter.write_str("an array")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<u64, A::Error> {
            let mut counted = 0;
            while items.next_element::<serde::de::IgnoredAny>()?.is_some() {
                counted += 1;
            }
            Ok(counted)
        }
    }
    deserializer.deserialize_seq(Counter)
}

/// What `POST /v1/interchanges` and `GET /v1/interchanges/{id}` answer in JSON: the whole
/// interchange, or its minimal form when `Prefer: return=minimal` (or the partner's default) asks
/// for it (`Preference-Applied: return=minimal` then says so).
// Described to OpenAPI only: the answer itself is written from the stored resource.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum InterchangeAnswer {
    Full(InterchangeResource),
    Minimal(MinimalInterchange),
}

/// An interchange in a list.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct InterchangeSummary {
    pub id: Uuid,
    pub status: Status,
    pub standard: Standard,
    #[schema(example = "ACMESUPPLY")]
    pub sender_id: String,
    #[schema(example = "000001142")]
    pub control_number: String,
    pub received_at: DateTime<Utc>,
    /// How many times this key was delivered (first delivery, replays, conflicting resends) within
    /// the retention period, from the audit trail (replays are audited within a second).
    pub deliveries: i64,
    /// The latest of those deliveries.
    pub last_delivery_at: Option<DateTime<Utc>>,
    /// The partner whose sender identity it came from (none in open mode for an unregistered
    /// sender).
    pub partner_id: Option<String>,
    /// How many invoices were booked from it.
    pub invoice_count: i64,
    /// Its first invoice (by id): number, total as stated and currency.
    #[schema(example = "INV-1042")]
    pub first_invoice_number: Option<String>,
    #[schema(example = "8000.00")]
    pub first_invoice_total: Option<String>,
    #[schema(example = "USD")]
    pub first_invoice_currency: Option<String>,
}

/// One page of a list; pass `next_cursor` as `cursor` to get the next one.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<Uuid>,
}

impl<T> Page<T> {
    /// The page of `items` asked for with `limit`: it has a next one when it is full, which starts
    /// after the last item's id.
    pub fn new(items: Vec<T>, limit: u32, id: impl Fn(&T) -> Uuid) -> Page<T> {
        let full = items.len() == usize::try_from(limit).unwrap_or(usize::MAX);
        let next_cursor = if full { items.last().map(id) } else { None };
        Page { items, next_cursor }
    }
}

/// Which way a list runs over its time-ordered ids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The newest first (the default).
    #[default]
    Newest,
    /// The oldest first.
    Oldest,
}

impl Order {
    /// The other way: a page before a cursor is read this way, then turned round.
    pub fn reversed(self) -> Order {
        match self {
            Order::Newest => Order::Oldest,
            Order::Oldest => Order::Newest,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Order::Newest => "newest",
            Order::Oldest => "oldest",
        }
    }
}

/// The answer to an interchange whose every document is of a type its partner declared naturally
/// idempotent: read and checked, audited, but not claimed in the inbox and not stored.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct BypassedResource {
    /// Always `bypassed`.
    #[schema(example = "bypassed")]
    pub status: &'static str,
    pub standard: Standard,
    pub sender: PartyId,
    pub receiver: PartyId,
    pub control_number: String,
    /// The key it would have had; a resend is not recognised as one.
    pub idempotency_key: IdempotencyKey,
    pub payload_sha256: String,
    pub documents: Vec<DocumentResource>,
}

impl BypassedResource {
    /// The answer to `delivery`, not to be recorded.
    pub fn new(delivery: &super::Delivery) -> Result<BypassedResource, crate::edi::EdiError> {
        let envelope = delivery.envelope();
        let documents = delivery.documents().map(|taken| {
            taken.map(|stored| DocumentResource {
                kind: stored.document.kind.clone(),
                control_number: stored.document.control_number.clone(),
                position: stored.document.position,
                invoice_id: None,
            })
        });
        Ok(BypassedResource {
            status: "bypassed",
            standard: envelope.standard,
            sender: envelope.sender.clone(),
            receiver: envelope.receiver.clone(),
            control_number: envelope.control_number.clone(),
            idempotency_key: delivery.key().clone(),
            payload_sha256: delivery.fingerprint().to_string(),
            documents: documents.collect::<Result<_, _>>()?,
        })
    }
}
