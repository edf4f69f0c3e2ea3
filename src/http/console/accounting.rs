//! `/console/accounting`: the outbox to the accounting API by state — the dead letters first, with
//! their last error — and the Retry and Discard buttons, the admin API's own use cases.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::html;
use serde::Deserialize;
use uuid::Uuid;

use super::bulk::{self, Act, Many};
use super::session::Session;
use super::{Confirmed, Done, Failure, Filters, Notice, Tab, action, done, optional, page, when};
use crate::http::ApiContext;
use crate::inbox::outbox::AccountingStatus;
use crate::operate::outbox;
use crate::store::OutboxFilter;

const PAGE: u32 = 100;
const STATES: [AccountingStatus; 4] = [
    AccountingStatus::Dead,
    AccountingStatus::Pending,
    AccountingStatus::Delivered,
    AccountingStatus::Discarded,
];

#[derive(Deserialize)]
pub struct Shown {
    /// `dead` unless another state is asked for.
    #[serde(default, deserialize_with = "optional")]
    status: Option<AccountingStatus>,
    #[serde(default, deserialize_with = "optional")]
    cursor: Option<Uuid>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    Retry,
    Discard,
}

pub async fn list(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
    Filters(filters): Filters<Shown>,
) -> Result<Response, Failure> {
    let status = filters.status.unwrap_or(AccountingStatus::Dead);
    let filter = OutboxFilter { status: Some(status), cursor: filters.cursor, limit: PAGE };
    let (found, stats, groups) = tokio::try_join!(
        ctx.store.outbox(&filter),
        ctx.store.outbox_stats(),
        ctx.store.dead_letter_groups()
    )?;
    let dead = status == AccountingStatus::Dead;
    const ACTS: [Act; 2] = [Act::Retry, Act::Discard];
    let content = html! {
        h1 { "Accounting" }
        p { (stats.pending) " waiting, " (stats.dead) " dead"
            @if let Some(oldest) = stats.oldest_pending { "; the oldest waiting since " (when(oldest)) } "." }
        p {
            @for each in STATES {
                @if each == status { strong { (each.as_str()) } } @else { a href={ "/console/accounting?status=" (each.as_str()) } { (each.as_str()) } }
                " "
            }
        }
        @if dead && !groups.is_empty() {
            h2 { "Dead letters by error" }
            table #groups {
                thead { tr { th { "Last error" } th.num { "Dead letters" } th { "" } } }
                tbody { @for group in &groups { tr {
                    td { @if group.key.is_empty() { "(none kept)" } @else { (group.key) } }
                    td.num { (group.count) }
                    td { (bulk::group_actions(Many::DeadLetters, &ACTS, &group.key, &session)) }
                } } }
            }
            (bulk::controls(Many::DeadLetters, &ACTS, &session))
        }
        table #outbox data-refresh[!dead] {
            thead { tr { @if dead { th { "" } } th { "Written" } th { "Invoice" } th { "Destination" } th.num { "Attempts" } th { "Next attempt" } th { "Last error" } th { "Reference" } th { "" } } }
            tbody {
                @for entry in &found.items {
                    tr {
                        @if dead { td { (bulk::checkbox(entry.id, &session)) } }
                        td { (when(entry.created_at)) }
                        td.mono { a href={ "/console/invoices/" (entry.invoice_id) } { (entry.invoice_id) } }
                        td { (entry.destination) }
                        td.num { (entry.attempts) }
                        td { @match entry.status {
                            AccountingStatus::Pending => (when(entry.next_attempt_at)),
                            // Dead, delivered or discarded: nothing is attempted any more.
                            _ => "—",
                        } }
                        td { (entry.last_error.as_deref().unwrap_or_default()) }
                        td.mono { (entry.reference.as_deref().unwrap_or_default()) }
                        td {
                            @if entry.status == AccountingStatus::Dead {
                                (action(&format!("/console/accounting/{}/retry", entry.id), "Retry", &session, "primary"))
                                (action(&format!("/console/accounting/{}/discard", entry.id), "Discard", &session, "danger"))
                            }
                        }
                    }
                }
            }
        }
        @if found.items.is_empty() { p.muted { "Nothing here." } }
        @if let Some(cursor) = found.next_cursor {
            p.pager { a href={ "/console/accounting?status=" (status.as_str()) "&cursor=" (cursor) } { "Older →" } }
        }
    };
    Ok(page("Accounting", Tab::Accounting, &session, &notice, content))
}

pub async fn act(
    State(ctx): State<ApiContext>,
    Path((id, decision)): Path<(Uuid, Decision)>,
    Confirmed(session): Confirmed,
) -> Result<Response, Failure> {
    session.may_act()?;
    let what = match decision {
        Decision::Retry => {
            outbox::retry(&ctx.store, id, &session.actor()).await?;
            Done::Retried
        }
        Decision::Discard => {
            outbox::discard(&ctx.store, id, &session.actor()).await?;
            Done::Discarded
        }
    };
    Ok(done("/console/accounting", what))
}
