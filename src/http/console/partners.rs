//! `/console/partners` and `/console/refusals`: the partners with their identities, policies and
//! credentials (ids and kinds; a secret is never stored in a readable form, let alone shown), the
//! Suspend and Activate buttons (the registry's own use case), and who was refused, why and how often.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use chrono::{Duration, Utc};
use maud::html;
use serde::Deserialize;

use super::session::Session;
use super::{Confirmed, Done, Failure, Notice, Tab, action, done, page, when};
use crate::http::ApiContext;
use crate::operate::partners;
use crate::partners::PartnerStatus;

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    Suspend,
    Activate,
}

pub async fn list(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
) -> Result<Response, Failure> {
    let partners = ctx.store.partners().await?;
    let content = html! {
        h1 { "Partners" }
        table #partners {
            thead { tr { th { "Partner" } th { "Status" } th { "Identities" } th { "Policies" } th { "Credentials" } th { "" } } }
            tbody {
                @for partner in &partners {
                    tr {
                        td { strong { (partner.id) } br; (partner.name) }
                        td class={ "status-" (partner.status.as_str()) } { (partner.status.as_str()) }
                        td.mono {
                            @for (role, identities) in [("sender", &partner.senders), ("receiver", &partner.receivers),
                                ("AS2", &partner.as2_ids), ("Pub/Sub", &partner.pubsub_accounts), ("SNS topic", &partner.sns_topics)] {
                                @for identity in identities { span.muted { (role) " " } (identity) br; }
                            }
                        }
                        td {
                            "validation " (partner.validation.as_str()) br;
                            "conflicts " (partner.conflict_policy.as_str()) br;
                            "mismatches " (partner.on_mismatch.as_str()) br;
                            "AS2 " (partner.as2_security.as_str())
                            @if let Some(rate) = partner.requests_per_minute { br; (rate) " requests/min" }
                        }
                        td {
                            @for credential in &partner.credentials {
                                span.mono { (credential.kind.as_str()) } " " span.muted { (when(credential.created_at)) }
                                @if credential.revoked_at.is_some() { " (revoked)" }
                                br;
                            }
                        }
                        td {
                            @match partner.status {
                                PartnerStatus::Active => (action(&format!("/console/partners/{}/suspend", encode(partner.id.as_str())), "Suspend", &session, "danger")),
                                PartnerStatus::Suspended => (action(&format!("/console/partners/{}/activate", encode(partner.id.as_str())), "Activate", &session, "primary")),
                            }
                        }
                    }
                }
            }
        }
        @if partners.is_empty() { p.muted { "No partner is registered (open mode, or none added yet)." } }
    };
    Ok(page("Partners", Tab::Partners, &session, &notice, content))
}

/// A partner id as one path segment.
fn encode(id: &str) -> String {
    form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>().replace('+', "%20")
}

pub async fn act(
    State(ctx): State<ApiContext>,
    Path((id, decision)): Path<(String, Decision)>,
    Confirmed(session): Confirmed,
) -> Result<Response, Failure> {
    session.may_act()?;
    let (status, what) = match decision {
        Decision::Suspend => (PartnerStatus::Suspended, Done::Suspended),
        Decision::Activate => (PartnerStatus::Active, Done::Activated),
    };
    partners::set_status(&ctx.store, &id, status, &session.actor()).await?;
    Ok(done("/console/partners", what))
}

/// Refused attempts of the last day (the `refusals` table: bad credentials and signatures, forged
/// senders, suspended partners, limits), the most frequent first.
pub async fn refusals(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
) -> Result<Response, Failure> {
    let groups = ctx.store.refusal_groups(Utc::now() - Duration::hours(24)).await?;
    let content = html! {
        h1 { "Refusals and security events, last 24 h" }
        table #refusals {
            thead { tr { th { "Partner" } th { "From" } th { "Why" } th.num { "Status" } th.num { "Attempts" } th { "Last seen" } th { "User agent" } } }
            tbody {
                @for group in &groups {
                    tr {
                        td { @if group.partner_id.is_empty() { span.muted { "(none proven)" } } @else { (group.partner_id) } }
                        td.mono { (group.remote_addr) }
                        td { (group.outcome) }
                        td.num { (group.status) }
                        td.num { (group.attempts) }
                        td { (when(group.last_minute)) }
                        td { (group.user_agent.as_deref().unwrap_or_default()) }
                    }
                }
            }
        }
        @if groups.is_empty() { p.muted { "No refusal in the last 24 hours." } }
    };
    Ok(page("Refusals", Tab::Refusals, &session, &notice, content))
}
