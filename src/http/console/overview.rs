//! `/console/`: what arrived in the last hour and day, per partner and outcome, with an hourly
//! chart (inline SVG, no script), the relay's backlog and lag, the dead letters, what waits in
//! quarantine, how far the retention purge is behind, and the latest interchanges (refreshed by
//! `console.js`).

use axum::extract::{Query, State};
use axum::response::Response;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use maud::{Markup, html};

use super::interchanges;
use super::session::Session;
use super::{Failure, Notice, Tab, age, page};
use crate::http::ApiContext;
use crate::inbox::quarantine::QuarantineStatus;
use crate::store::{ActivityCount, InterchangeFilter, QuarantineFilter};

const HOURS: i64 = 24;
/// Held entries counted exactly; more show as `100+`.
const HELD_COUNTED: u32 = 100;

/// The chart's series an outcome belongs to, with its legend.
fn series(outcome: &str) -> usize {
    match outcome {
        "recorded" => 0,
        "replayed" => 1,
        "conflict" | "rejected" | "quarantined" => 2,
        "bypassed" => 4,
        _ => 3,
    }
}
const SERIES: [(&str, &str); 5] = [
    ("o-recorded", "created"),
    ("o-replayed", "replayed"),
    ("o-trouble", "conflict, rejected, quarantined"),
    ("o-refused", "refused"),
    ("o-other", "bypassed"),
];

pub async fn show(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
) -> Result<Response, Failure> {
    let now = Utc::now();
    let store = &ctx.store;
    let held = QuarantineFilter { status: Some(QuarantineStatus::Held), cursor: None, limit: HELD_COUNTED };
    let latest = InterchangeFilter { limit: 10, ..InterchangeFilter::default() };
    let (activity, outbox, storage, held, latest) = tokio::try_join!(
        store.activity(now),
        store.outbox_stats(),
        store.storage_stats(),
        store.quarantined(&held),
        store.interchanges(&latest),
    )?;
    // (partner, outcome) -> (last hour, last 24 h), in that order.
    let mut per_partner: BTreeMap<(&str, &str), (i64, i64)> = BTreeMap::new();
    for row in &activity.last_hour {
        per_partner.entry((&row.partner_id, &row.outcome)).or_default().0 += row.count;
    }
    for row in &activity.hours {
        per_partner.entry((&row.partner_id, &row.outcome)).or_default().1 += row.count;
    }
    let total = |pick: fn(&(i64, i64)) -> i64| {
        per_partner
            .iter()
            .filter(|((_, outcome), _)| !outcome.starts_with("refused"))
            .map(|(_, c)| pick(c))
            .sum::<i64>()
    };
    let of = |wanted: &str| {
        per_partner.iter().filter(|((_, outcome), _)| *outcome == wanted).map(|(_, c)| c.1).sum::<i64>()
    };
    let (recorded, replayed) = (of("recorded"), of("replayed"));
    let replay_ratio = if recorded + replayed == 0 {
        "–".to_owned()
    } else {
        format!("{:.1} %", 100.0 * replayed as f64 / (recorded + replayed) as f64)
    };
    let held =
        if held.next_cursor.is_some() { format!("{HELD_COUNTED}+") } else { held.items.len().to_string() };
    let lag = outbox.oldest_pending.map_or("none".to_owned(), |oldest| age((now - oldest).num_seconds()));
    let oldest_payload =
        storage.oldest_payload.map_or("none".to_owned(), |oldest| age((now - oldest).num_seconds()));
    let content = html! {
        h1 { "Overview" }
        div.cards {
            (card(&total(|counts| counts.0).to_string(), "deliveries, last hour"))
            (card(&total(|counts| counts.1).to_string(), "deliveries, last 24 h"))
            (card(&replay_ratio, "replay ratio, 24 h"))
            (card(&outbox.pending.to_string(), &format!("waiting for the accounting API (oldest {lag})")))
            a href="/console/accounting?status=dead" { (card(&outbox.dead.to_string(), "dead letters")) }
            a href="/console/quarantine" { (card(&held, "held in quarantine")) }
            (card(&storage.interchanges.to_string(), &format!("interchanges stored (oldest payload {oldest_payload})")))
        }
        h2 { "Deliveries per hour, last 24 h" }
        (chart(&activity.hours, now))
        section #latest data-refresh {
            h2 { "Latest interchanges" }
            (interchanges::table(&latest.items))
        }
        h2 { "Per partner and outcome" }
        table {
            thead { tr { th { "Partner" } th { "Outcome" } th.num { "Last hour" } th.num { "Last 24 h" } } }
            tbody {
                @for ((partner, outcome), (last_hour, last_day)) in &per_partner {
                    tr {
                        td { @if partner.is_empty() { span.muted { "(none proven)" } } @else { (partner) } }
                        td { (outcome) }
                        td.num { (last_hour) }
                        td.num { (last_day) }
                    }
                }
            }
        }
    };
    Ok(page("Overview", Tab::Overview, &session, &notice, content))
}

fn card(figure: &str, label: &str) -> Markup {
    html! { div.card { div.figure { (figure) } div.label { (label) } } }
}

/// Stacked bars of the deliveries (refusals are not), one per clock hour, oldest left, the
/// current hour (so far) right.
fn chart(hours: &[ActivityCount], now: DateTime<Utc>) -> Markup {
    const WIDTH: i64 = 960;
    const HEIGHT: i64 = 160;
    let mut stacks = vec![[0i64; SERIES.len()]; HOURS as usize];
    for count in hours.iter().filter(|count| !count.outcome.starts_with("refused: ")) {
        let hours_ago = (now - count.at).num_hours();
        if let Ok(ago) = usize::try_from(hours_ago.max(0))
            && let Some(stack) = stacks.get_mut(ago)
        {
            stack[series(&count.outcome)] += count.count;
        }
    }
    let highest = stacks.iter().map(|stack| stack.iter().sum::<i64>()).max().unwrap_or(0).max(1);
    let slot = WIDTH / HOURS;
    // (series, x, y, height, count, hours ago) of every bar segment.
    let mut bars = Vec::new();
    for (ago, stack) in (0i64..).zip(&stacks) {
        let mut top = HEIGHT;
        for (index, &count) in stack.iter().enumerate().filter(|(_, count)| **count > 0) {
            let height = (count * HEIGHT / highest).max(1);
            top -= height;
            bars.push((index, WIDTH - (ago + 1) * slot + 2, top, height, count, ago));
        }
    }
    html! {
        div.chart {
            svg viewBox={ "0 0 " (WIDTH) " " (HEIGHT + 16) } role="img" aria-label="Deliveries per hour over the last 24 hours" {
                @for (index, x, y, height, count, ago) in bars {
                    rect class=(SERIES[index].0) x=(x) y=(y) width=(slot - 4) height=(height) {
                        title { (count) " " (SERIES[index].1) ", the hour from "
                            ((now - chrono::Duration::hours(ago)).format("%H:00")) " UTC" }
                    }
                }
                text x="2" y="10" { (highest) }
                @for ago in [24, 18, 12, 6] {
                    text x=(WIDTH - ago * slot + 2) y=(HEIGHT + 13) { "−" (ago) " h" }
                }
                text x=(WIDTH - 24) y=(HEIGHT + 13) { "now" }
            }
            div.legend { @for (class, label) in SERIES { span class=(class) { (label) } } }
        }
    }
}
