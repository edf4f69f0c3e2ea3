//! `/console/audit`: who did what, newest first: every operator action from the console, the admin
//! API and the command line, with its subject and the state before and after; filtered to one actor
//! when asked.

use axum::extract::{Query, State};
use axum::response::Response;
use maud::html;
use serde::Deserialize;
use uuid::Uuid;

use super::session::Session;
use super::{Failure, Filters, Notice, Tab, optional, page, when};
use crate::http::ApiContext;

const PAGE: u32 = 100;

#[derive(Deserialize)]
pub struct Shown {
    #[serde(default, deserialize_with = "optional")]
    actor: Option<String>,
    #[serde(default, deserialize_with = "optional")]
    cursor: Option<Uuid>,
}

pub async fn list(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
    Filters(shown): Filters<Shown>,
) -> Result<Response, Failure> {
    let found = ctx.store.operator_actions(shown.actor.as_deref(), shown.cursor, PAGE).await?;
    let actor = shown.actor.as_deref().unwrap_or_default();
    let content = html! {
        h1 { "Audit" }
        form.filters method="get" action="/console/audit" {
            label for="actor" { "Actor" }
            input id="actor" name="actor" type="text" value=(actor) placeholder="console:olga";
            button type="submit" { "Filter" }
        }
        table #actions data-refresh {
            thead { tr { th { "When" } th { "Actor" } th { "Action" } th { "Subject" } th { "Before" } th { "After" } } }
            tbody {
                @for each in &found.items {
                    tr {
                        td { (when(each.at)) }
                        td { a href={ "/console/audit?actor=" (encoded(&each.actor)) } { (each.actor) } }
                        td.mono { (each.action) }
                        td.mono { (each.subject) }
                        td { (each.before.as_deref().unwrap_or("—")) }
                        td { (each.after) }
                    }
                }
            }
        }
        @if found.items.is_empty() { p.muted { "Nothing recorded." } }
        @if let Some(cursor) = found.next_cursor {
            p.pager { a href={ "/console/audit?actor=" (encoded(actor)) "&cursor=" (cursor) } { "Older →" } }
        }
    };
    Ok(page("Audit", Tab::Audit, &session, &notice, content))
}

fn encoded(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
