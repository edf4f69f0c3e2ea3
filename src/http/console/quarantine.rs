//! `/console/quarantine`: the deliveries held for an operator, each with its problem, a re-used
//! invoice number's invoices field by field against those booked before, a segment-by-segment
//! comparison against the interchange it conflicts with (or the rejected one), and the Release and
//! Discard buttons — the admin API's own use cases.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use uuid::Uuid;

use super::bulk::{self, Act, Many};
use super::session::Session;
use super::{Confirmed, Done, Failure, Filters, Notice, PageId, Tab, action, done, optional, page, when};
use crate::edi::diff::{self, Change};
use crate::http::ApiContext;
use crate::http::problem::ApiError;
use crate::inbox::quarantine::{QuarantineReason, QuarantineStatus, Quarantined, ReleaseAs};
use crate::operate::quarantine;
use crate::store::QuarantineFilter;

const PAGE: u32 = 100;

#[derive(Deserialize)]
pub struct Shown {
    /// `held` unless another state is asked for; `all` is no filter.
    #[serde(default, deserialize_with = "optional")]
    status: Option<String>,
    #[serde(default, deserialize_with = "optional")]
    cursor: Option<Uuid>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    Release,
    /// A `duplicate-number` entry's invoice booked as a new invoice.
    ReleaseAsNew,
    /// … as the replacement of the earlier one.
    ReleaseAsReplacement,
    Discard,
}

pub async fn list(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
    Filters(filters): Filters<Shown>,
) -> Result<Response, Failure> {
    let status = match filters.status.as_deref() {
        None => Some(QuarantineStatus::Held),
        Some("all") => None,
        Some(other) => Some(
            QuarantineStatus::parse(other)
                .ok_or_else(|| ApiError::BadRequest(format!("no quarantine status {other:?}")))?,
        ),
    };
    let filter = QuarantineFilter { status, cursor: filters.cursor, limit: PAGE };
    let (found, groups) = tokio::try_join!(ctx.store.quarantined(&filter), ctx.store.held_groups())?;
    let shown = status.map_or("all", QuarantineStatus::as_str);
    let held = status == Some(QuarantineStatus::Held);
    const ACTS: [Act; 2] = [Act::Release, Act::Discard];
    let content = html! {
        h1 { "Quarantine" }
        p {
            @for choice in ["held", "released", "discarded", "all"] {
                @if choice == shown { strong { (choice) } } @else { a href={ "/console/quarantine?status=" (choice) } { (choice) } }
                " "
            }
        }
        @if held && !groups.is_empty() {
            h2 { "Held, by reason" }
            table #groups {
                thead { tr { th { "Reason" } th.num { "Held" } th { "" } } }
                tbody { @for group in &groups { tr {
                    td { (group.key) } td.num { (group.count) }
                    td { (bulk::group_actions(Many::Held, &ACTS, &group.key, &session)) }
                } } }
            }
            (bulk::controls(Many::Held, &ACTS, &session))
        }
        table #quarantine {
            thead { tr { @if held { th { "" } } th { "Received" } th { "Partner" } th { "Reason" } th { "Control number" } th { "Problem" } th { "Status" } th { "" } } }
            tbody {
                @for entry in &found.items {
                    tr {
                        @if held { td { (bulk::checkbox(entry.id, &session)) } }
                        td { (when(entry.received_at)) }
                        td { (entry.partner_id) }
                        td { (entry.reason.as_str()) }
                        td.mono { (entry.message_id) }
                        td { (problem_text(entry)) }
                        td class={ "status-" (entry.status.as_str()) } { (entry.status.as_str()) }
                        td { a href={ "/console/quarantine/" (entry.id) } { "Compare and decide" } }
                    }
                }
            }
        }
        @if found.items.is_empty() { p.muted { "Nothing here." } }
        @if let Some(cursor) = found.next_cursor {
            p.pager { a href={ "/console/quarantine?status=" (shown) "&cursor=" (cursor) } { "Older →" } }
        }
    };
    Ok(page("Quarantine", Tab::Quarantine, &session, &notice, content))
}

fn problem_text(entry: &Quarantined) -> String {
    let field = |name| entry.problem.0.get(name).and_then(|value| value.as_str()).unwrap_or_default();
    match (field("title"), field("detail")) {
        (title, "") => title.to_owned(),
        (title, detail) => format!("{title}: {detail}"),
    }
}

pub async fn detail(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
    PageId(id): PageId,
) -> Result<Response, Failure> {
    let held = ctx.store.held(id).await?.ok_or(ApiError::NotFound)?;
    let entry = &held.entry;
    let original = ctx.store.payload(entry.interchange_id).await?;
    let compared = quarantine::compared(&ctx.store, &held).await?;
    let content = html! {
        h1 { "Held delivery " span.mono { (entry.message_id) } }
        table {
            tbody {
                tr { th { "Partner" } td { (entry.partner_id) } }
                tr { th { "Reason" } td { (entry.reason.as_str()) } }
                tr { th { "Problem" } td { (problem_text(entry)) } }
                tr { th { "Status" } td class={ "status-" (entry.status.as_str()) } { (entry.status.as_str()) } }
                tr { th { "Received" } td { (when(entry.received_at)) } }
                tr { th { "Against" } td { a.mono href={ "/console/interchanges/" (entry.interchange_id) } { (entry.interchange_id) } } }
                @if let Some(released) = entry.released_as {
                    tr { th { "Released as" } td { a.mono href={ "/console/interchanges/" (released) } { (released) } } }
                }
            }
        }
        @if entry.status == QuarantineStatus::Held {
            div #decide {
                // A conflicting resend may re-use an invoice number with other content too: its
                // release then needs the same decision.
                @if entry.reason != QuarantineReason::DuplicateNumber {
                    (action(&format!("/console/quarantine/{id}/release"), "Release", &session, "primary"))
                }
                @if matches!(entry.reason, QuarantineReason::DuplicateNumber | QuarantineReason::Conflict) {
                    (action(&format!("/console/quarantine/{id}/release-as-new"), "Book as a new invoice", &session, "primary"))
                    (action(&format!("/console/quarantine/{id}/release-as-replacement"), "Book as the replacement", &session, "primary"))
                }
                (action(&format!("/console/quarantine/{id}/discard"), "Discard", &session, "danger"))
            }
        }
        p {
            a href={ "/console/quarantine/" (id) "/payload" } download { "Download the held payload" }
            " · "
            a href={ "/console/interchanges/" (entry.interchange_id) "/payload" } download { "Download the stored one" }
        }
        @if !compared.is_empty() {
            h2 { "Against the invoices booked before" }
            @for invoice in &compared {
                (booked_before(invoice))
            }
        }
        h2 { "Against the stored interchange" }
        (comparison(original.as_ref().map(|(payload, _)| payload.as_slice()), &held.payload))
    };
    Ok(page("Held delivery", Tab::Quarantine, &session, &notice, content))
}

/// One invoice of a held delivery against the one booked before under its number, field by field.
fn booked_before(compared: &quarantine::Compared) -> Markup {
    let earlier = &compared.earlier;
    html! {
        p.compared {
            "Invoice " span.mono { (compared.number) } " was booked as "
            a.mono href={ "/console/invoices/" (earlier.invoice_id) } { (earlier.invoice_id) }
            " (revision " (earlier.revision) ", received " (when(earlier.received_at)) ")."
        }
        table.compared {
            thead { tr { th { "Field" } th { "Booked" } th { "Held" } } }
            tbody {
                @for difference in &compared.differences {
                    tr {
                        th { (difference.field) }
                        @match &difference.values {
                            Some((booked, held)) => { td { (booked) } td { (held) } }
                            None => td colspan="2" { "differs (compare the payloads below)" },
                        }
                    }
                }
            }
        }
    }
}

/// A held delivery's payload, as it arrived.
pub async fn payload(
    State(ctx): State<ApiContext>,
    _session: Session,
    PageId(id): PageId,
) -> Result<Response, Failure> {
    let held = ctx.store.held(id).await?.ok_or(ApiError::NotFound)?;
    Ok(super::interchanges::attachment(id, held.payload)?)
}

/// The held payload against the stored one, segment by segment.
fn comparison(original: Option<&[u8]>, held: &[u8]) -> Markup {
    let Some(original) = original else {
        return html! { p.muted { "The stored interchange's payload was purged; the held one:" } pre { (String::from_utf8_lossy(held)) } };
    };
    let (old, new) = (diff::segments(original), diff::segments(held));
    let Some(changes) = diff::compare(&old, &new) else {
        return html! { p.muted { "Too different to compare segment by segment; download both (above)." } };
    };
    html! {
        div.diff #diff {
            @for change in &changes {
                @match change {
                    Change::Same(segment) => div.same { (segment) },
                    Change::Removed(segment) => div.removed { (segment) },
                    Change::Added(segment) => div.added { (segment) },
                }
            }
        }
    }
}

pub async fn act(
    State(ctx): State<ApiContext>,
    Path((id, decision)): Path<(Uuid, Decision)>,
    Confirmed(session): Confirmed,
) -> Result<Response, Failure> {
    session.may_act()?;
    let what = match decision {
        Decision::Release | Decision::ReleaseAsNew | Decision::ReleaseAsReplacement => {
            let release_as = match decision {
                Decision::ReleaseAsNew => Some(ReleaseAs::New),
                Decision::ReleaseAsReplacement => Some(ReleaseAs::Replacement),
                Decision::Release | Decision::Discard => None,
            };
            quarantine::release(&ctx.ingest, id, release_as, &session.actor()).await?;
            Done::Released
        }
        Decision::Discard => {
            quarantine::discard(&ctx.store, id, &session.actor()).await?;
            Done::Discarded
        }
    };
    Ok(done("/console/quarantine", what))
}
