//! `/console/interchanges`: the interchanges, filtered by partner, standard, status, control number
//! and arrival date; one interchange with its envelope, documents, invoices, acknowledgement and
//! every delivery attempt; and its stored payload as a download (never rendered).

use axum::extract::{Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};
use maud::{Markup, html};
use serde::Deserialize;
use uuid::Uuid;

use super::session::Session;
use super::{Failure, Filters, Notice, PageId, Tab, optional, page, when};
use crate::edi::Standard;
use crate::edi::Warning;
use crate::http::ApiContext;
use crate::http::problem::ApiError;
use crate::inbox::Status;
use crate::inbox::resource::{DocumentResource, InterchangeSummary, Order};
use crate::store::{InterchangeFilter, InvoiceFilter};

const PAGE: u32 = 50;
/// Matches counted exactly; more show as "more than".
const COUNTED: u32 = 10_000;
const LISTED: u32 = 200;

#[derive(Deserialize, Default)]
pub struct Shown {
    /// The search box: see `InterchangeFilter::q`.
    #[serde(default, deserialize_with = "optional")]
    q: Option<String>,
    #[serde(default, deserialize_with = "optional")]
    partner: Option<String>,
    #[serde(default, deserialize_with = "optional")]
    standard: Option<Standard>,
    #[serde(default, deserialize_with = "optional")]
    status: Option<Status>,
    #[serde(default, deserialize_with = "optional")]
    control_number: Option<String>,
    /// Received at or after this moment (UTC; a day alone is its first moment).
    #[serde(default, deserialize_with = "optional")]
    from: Option<Moment>,
    /// Received at or before this moment (UTC; a day alone is all of it, a minute all of it).
    #[serde(default, deserialize_with = "optional")]
    to: Option<Moment>,
    /// Only the interchanges holding a duplicate invoice.
    #[serde(default, deserialize_with = "optional")]
    holding: Option<Holding>,
    /// Newest first (the default) or oldest first.
    #[serde(default, deserialize_with = "optional")]
    order: Option<Order>,
    /// The page after this interchange, the way the list runs.
    #[serde(default, deserialize_with = "optional")]
    cursor: Option<Uuid>,
    /// The page before this interchange (read the other way, then turned round).
    #[serde(default, deserialize_with = "optional")]
    before: Option<Uuid>,
}

/// What the listed interchanges must hold besides what the other filters ask.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Holding {
    /// An invoice booked before (a duplicate: kept, not booked again).
    Duplicates,
}

/// Where a link goes in the list.
#[derive(Clone, Copy)]
enum Place {
    First,
    After(Uuid),
    Before(Uuid),
}

impl Shown {
    /// The query string of these filters at another place of the list.
    fn at(&self, place: Place) -> String {
        let mut pairs = url_pairs();
        let text = |value: &Option<String>| value.clone().unwrap_or_default();
        pairs.append_pair("q", &text(&self.q));
        pairs.append_pair("partner", &text(&self.partner));
        pairs.append_pair("standard", self.standard.map_or("", Standard::as_str));
        pairs.append_pair("status", self.status.map_or("", Status::as_str));
        pairs.append_pair("control_number", &text(&self.control_number));
        pairs.append_pair("from", &self.from.map(|m| m.text()).unwrap_or_default());
        pairs.append_pair("to", &self.to.map(|m| m.text()).unwrap_or_default());
        if self.holding == Some(Holding::Duplicates) {
            pairs.append_pair("holding", "duplicates");
        }
        pairs.append_pair("order", self.order.unwrap_or_default().as_str());
        match place {
            Place::First => {}
            Place::After(id) => {
                pairs.append_pair("cursor", &id.to_string());
            }
            Place::Before(id) => {
                pairs.append_pair("before", &id.to_string());
            }
        }
        pairs.finish()
    }
}

/// A moment a person gives in a filter: a day (`2026-12-06`) or a minute of it
/// (`2026-12-06T07:30`, what a `datetime-local` input sends; seconds allowed), in UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    start: NaiveDateTime,
    /// Whether only the day was given.
    day: bool,
}

impl Moment {
    /// Its first instant.
    fn start(self) -> DateTime<Utc> {
        self.start.and_utc()
    }

    /// The first instant after it: the next day, or the next minute.
    fn end(self) -> Option<DateTime<Utc>> {
        let step = if self.day { chrono::Duration::days(1) } else { chrono::Duration::minutes(1) };
        self.start.checked_add_signed(step).map(|end| end.and_utc())
    }

    /// As the filter's input shows it.
    fn text(self) -> String {
        if self.day { self.start.date().to_string() } else { self.start.format("%Y-%m-%dT%H:%M").to_string() }
    }
}

impl<'de> Deserialize<'de> for Moment {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Moment, D::Error> {
        let text = String::deserialize(deserializer)?;
        if let Ok(day) = NaiveDate::parse_from_str(&text, "%Y-%m-%d") {
            return Ok(Moment { start: day.and_time(NaiveTime::MIN), day: true });
        }
        ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
            .iter()
            .find_map(|format| NaiveDateTime::parse_from_str(&text, format).ok())
            .map(|start| Moment { start: start.with_second(0).unwrap_or(start), day: false })
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "{text:?} is neither a day (YYYY-MM-DD) nor a minute (YYYY-MM-DDTHH:MM)"
                ))
            })
    }
}

fn url_pairs() -> form_urlencoded::Serializer<'static, String> {
    form_urlencoded::Serializer::new(String::new())
}

pub async fn list(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
    Filters(filters): Filters<Shown>,
) -> Result<Response, Failure> {
    let order = filters.order.unwrap_or_default();
    let filter = InterchangeFilter {
        q: filters.q.clone(),
        partner: filters.partner.clone(),
        standard: filters.standard,
        status: filters.status,
        control_number: filters.control_number.clone(),
        received_from: filters.from.map(Moment::start),
        received_before: filters.to.and_then(Moment::end),
        holding_duplicates: filters.holding == Some(Holding::Duplicates),
        order: if filters.before.is_some() { order.reversed() } else { order },
        cursor: filters.before.or(filters.cursor),
        // Back from a page: one more, to tell whether there is more before it.
        limit: if filters.before.is_some() { PAGE + 1 } else { PAGE },
        ..InterchangeFilter::default()
    };
    let (mut found, counted, partners) = tokio::try_join!(
        ctx.store.interchanges(&filter),
        ctx.store.interchanges_counted(&filter, COUNTED + 1),
        ctx.store.partners()
    )?;
    let mut back = filters.before.is_some();
    if back && found.items.len() < PAGE as usize {
        // Back at the start: the first page, full.
        back = false;
        found =
            ctx.store.interchanges(&InterchangeFilter { order, cursor: None, limit: PAGE, ..filter }).await?;
    }
    let mut items = found.items;
    let more_before = back && items.len() > PAGE as usize;
    items.truncate(PAGE as usize);
    let (first, last) = (items.first().map(|item| item.id), items.last().map(|item| item.id));
    // The places before and after this page, when there is more that way.
    let (previous, next) = if back {
        items.reverse();
        (last.filter(|_| more_before).map(Place::Before), first.map(Place::After))
    } else {
        // After a page, not back at the start from one.
        let cursor = filters.cursor.filter(|_| filters.before.is_none());
        (cursor.map(|cursor| Place::Before(first.unwrap_or(cursor))), found.next_cursor.map(Place::After))
    };
    let (to_first, to_previous, to_next) = match order {
        Order::Newest => ("← Newest", "← Newer", "Older →"),
        Order::Oldest => ("← Oldest", "← Older", "Newer →"),
    };
    let matching = match counted {
        1 => "1 interchange".to_owned(),
        counted if counted > COUNTED => format!("more than {COUNTED} interchanges"),
        counted => format!("{counted} interchanges"),
    };
    let selected = |value: &str, current: Option<&str>| current == Some(value);
    let content = html! {
        h1 { "Interchanges" }
        form.filters method="get" action="/console/interchanges" {
            label { "Search" input type="search" name="q" value=[filters.q.as_deref()]
                placeholder="invoice, PO, control number, sender, total"; }
            label { "Partner" select name="partner" {
                option value="" { "any" }
                @for partner in &partners {
                    option value=(partner.id) selected[selected(partner.id.as_str(), filters.partner.as_deref())] { (partner.id) }
                }
            } }
            label { "Standard" select name="standard" {
                option value="" { "any" }
                @for standard in [Standard::X12, Standard::Edifact] {
                    option value=(standard.as_str()) selected[filters.standard == Some(standard)] { (standard.as_str()) }
                }
            } }
            label { "Status" select name="status" {
                option value="" { "any" }
                @for status in [Status::Processed, Status::Rejected] {
                    option value=(status.as_str()) selected[filters.status == Some(status)] { (status.as_str()) }
                }
            } }
            label { "Control number" input name="control_number" value=[filters.control_number.as_deref()]; }
            label { "Received from" input type="datetime-local" name="from" value=[filters.from.map(Moment::text)]; }
            label { "to" input type="datetime-local" name="to" value=[filters.to.map(Moment::text)]; }
            label { "Invoices" select name="holding" {
                option value="" { "any" }
                option value="duplicates" selected[filters.holding == Some(Holding::Duplicates)] { "holding a duplicate" }
            } }
            label { "Order" select name="order" {
                @for (choice, label) in [(Order::Newest, "newest first"), (Order::Oldest, "oldest first")] {
                    option value=(choice.as_str()) selected[order == choice] { (label) }
                }
            } }
            button.primary type="submit" { "Filter" }
            a href="/console/interchanges" { "Clear" }
        }
        p #matching { (matching) }
        (table(&items))
        @if items.is_empty() { p.muted { "No interchange matches here." } }
        p.pager {
            @if previous.is_some() {
                a href={ "/console/interchanges?" (filters.at(Place::First)) } { (to_first) } " "
            }
            @if let Some(previous) = previous { a href={ "/console/interchanges?" (filters.at(previous)) } { (to_previous) } " " }
            @if let Some(next) = next { a href={ "/console/interchanges?" (filters.at(next)) } { (to_next) } }
        }
    };
    Ok(page("Interchanges", Tab::Interchanges, &session, &notice, content))
}

/// Interchanges as a table, each linked to its page.
pub fn table(items: &[InterchangeSummary]) -> Markup {
    html! {
        table #interchanges {
            thead { tr { th { "Received" } th { "Partner" } th { "Sender" } th { "Control number" } th { "Standard" } th { "Status" } th { "Invoices" } th.num { "Total" } th.num { "Deliveries" } th { "Last delivery" } } }
            tbody {
                @for item in items {
                    tr {
                        td { (when(item.received_at)) }
                        td { (item.partner_id.as_deref().unwrap_or("—")) }
                        td { (item.sender_id) }
                        td { a.mono href={ "/console/interchanges/" (item.id) } { (item.control_number) } }
                        td { (item.standard.as_str()) }
                        td class={ "status-" (item.status.as_str()) } { (item.status.as_str()) }
                        td.mono { (item.first_invoice_number.as_deref().unwrap_or("—"))
                            @if item.invoice_count > 1 { " +" (item.invoice_count - 1) " more" } }
                        td.num { @if item.invoice_count == 1 {
                            (item.first_invoice_total.as_deref().unwrap_or_default()) " " (item.first_invoice_currency.as_deref().unwrap_or_default())
                        } }
                        td.num { (item.deliveries) }
                        td { @if let Some(at) = item.last_delivery_at { (when(at)) } }
                    }
                }
            }
        }
    }
}

/// What the page shows of a processed interchange's stored resource (its invoices are listed from
/// their table).
#[derive(serde::Deserialize)]
struct Recorded {
    documents: Vec<DocumentResource>,
    warnings: Vec<Warning>,
}

pub async fn detail(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
    PageId(id): PageId,
) -> Result<Response, Failure> {
    let row = ctx.store.interchange(id).await?.ok_or(ApiError::NotFound)?;
    let invoices = InvoiceFilter { interchange_id: Some(id), limit: LISTED, ..InvoiceFilter::default() };
    let (invoices, ack, attempts) = tokio::try_join!(
        ctx.store.invoices(&invoices),
        ctx.store.ack(id),
        ctx.store.delivery_attempts(id, None, LISTED),
    )?;
    let recorded = match row.status {
        Status::Processed => serde_json::from_str::<Recorded>(&row.response_body).ok(),
        Status::Rejected => None,
    };
    let problem = match row.status {
        Status::Rejected => serde_json::from_str::<serde_json::Value>(&row.response_body)
            .and_then(|problem| serde_json::to_string_pretty(&problem))
            .ok(),
        Status::Processed => None,
    };
    let party = |party: &Option<crate::edi::invoice::Party>| {
        party.as_ref().and_then(|party| party.name.clone().or_else(|| party.id.clone())).unwrap_or_default()
    };
    let content = html! {
        h1 { "Interchange " span.mono { (row.control_number) } }
        p { a href={ "/console/interchanges/" (id) "/payload" } download { "Download the payload" } }
        table {
            tbody {
                tr { th { "Status" } td class={ "status-" (row.status.as_str()) } { (row.status.as_str()) } }
                tr { th { "Standard" } td { (row.standard.as_str()) } }
                tr { th { "Sender" } td.mono { (row.sender_qualifier) ":" (row.sender_id) } }
                tr { th { "Receiver" } td.mono { (row.receiver_qualifier) ":" (row.receiver_id) } }
                tr { th { "Control number" } td.mono { (row.control_number) } }
                tr { th { "Idempotency key" } td.mono { (row.source) " / " (row.message_id) } }
                tr { th { "Payload SHA-256" } td.mono { (row.payload_sha256) } }
                tr { th { "Received" } td { (when(row.received_at)) } }
                tr { th { "Processed" } td { (when(row.processed_at)) } }
                tr { th { "Id" } td.mono { (row.id) } }
            }
        }
        @if let Some(problem) = &problem {
            h2 { "Why it was rejected" }
            pre { (problem) }
        }
        @if let Some(recorded) = &recorded {
            h2 { "Documents" }
            table {
                thead { tr { th { "Type" } th { "Control number" } th.num { "Segment" } th { "Invoice" } } }
                tbody {
                    @for document in &recorded.documents {
                        tr {
                            td { (document.kind) }
                            td.mono { (document.control_number) }
                            td.num { (document.position) }
                            td.mono { @if let Some(invoice) = document.invoice_id { a href={ "/console/invoices/" (invoice) } { (invoice) } } }
                        }
                    }
                }
            }
            @if !recorded.warnings.is_empty() {
                h2 { "Warnings" }
                ul { @for warning in &recorded.warnings { li { (warning.document) ": " (warning.message) } } }
            }
        }
        h2 { "Invoices" }
        table #invoices {
            thead { tr { th { "Number" } th { "Date" } th { "Seller" } th { "Buyer" } th.num { "Total" } th { "Accounting" } } }
            tbody {
                @for invoice in &invoices.items {
                    tr {
                        td.mono { a href={ "/console/invoices/" (invoice.id) } { (invoice.invoice.number) } }
                        td { (invoice.invoice.issue_date) }
                        td { (party(&invoice.invoice.seller)) }
                        td { (party(&invoice.invoice.buyer)) }
                        td.num { (invoice.invoice.total) " " (invoice.invoice.currency.as_deref().unwrap_or("(currency unknown)")) }
                        td {
                            @if let Some(state) = &invoice.accounting {
                                span class={ "status-" (state.status.as_str()) } { (state.status.as_str()) }
                                @if let Some(error) = &state.last_error { " — " (error) }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Delivery attempts" }
        table #deliveries {
            thead { tr { th { "Received" } th { "Door" } th { "Transport id" } th { "Reused" } th { "Partner" } th { "Outcome" } th.num { "Status" } th { "From" } th { "Transport" } } }
            tbody {
                @for attempt in &attempts.items {
                    tr {
                        td { (when(attempt.received_at)) }
                        td { (attempt.door.as_str()) }
                        td.mono { (attempt.transport_id.as_deref().unwrap_or_default()) }
                        td { @if attempt.transport_reused { "yes" } @else { "no" } }
                        td { (attempt.partner_id.as_deref().unwrap_or_default()) }
                        td { (attempt.outcome) }
                        td.num { (attempt.status) }
                        td.mono { (attempt.remote_addr.as_deref().unwrap_or_default()) }
                        td.mono { (serde_json::to_string(&attempt.transport).ok().filter(|meta| meta != "null").unwrap_or_default()) }
                    }
                }
            }
        }
        h2 { "Acknowledgement" }
        @match &ack {
            Some(ack) => pre #ack { (ack) },
            None => p.muted { "None was generated." },
        }
    };
    Ok(page("Interchange", Tab::Interchanges, &session, &notice, content))
}

/// The stored payload as an attachment of an opaque type: a browser saves it, never renders it.
pub async fn payload(
    State(ctx): State<ApiContext>,
    _session: Session,
    PageId(id): PageId,
) -> Result<Response, Failure> {
    let (payload, _) = ctx.store.payload(id).await?.ok_or(ApiError::NotFound)?;
    Ok(attachment(id, payload)?)
}

/// Bytes a person downloads as `{id}.edi`, never shown by the browser.
pub fn attachment(id: Uuid, payload: impl Into<axum::body::Body>) -> Result<Response, ApiError> {
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{id}.edi\""))
        .map_err(|_| ApiError::Internal)?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream")),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        payload.into(),
    )
        .into_response())
}
