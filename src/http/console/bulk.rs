//! Acting on many at once: dead letters retried or discarded, held deliveries released or
//! discarded, chosen one by one (checkboxes) or a whole group (every dead letter with one error,
//! every held delivery of one reason). A discard is confirmed on a page of its own listing what it
//! will drop; then each item goes through the admin API's own use case, and the result page says
//! what happened to each.

use axum::body::to_bytes;
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use uuid::Uuid;

use super::session::Session;
use super::{Failure, Notice, Tab, page};
use crate::http::ApiContext;
use crate::http::problem::ApiError;
use crate::inbox::quarantine::QuarantineReason;
use crate::operate::{outbox, quarantine};

/// At most this many items per action (a form of that many ids stays under [`FORM_LIMIT`]).
pub const MOST: u32 = 500;
/// The largest bulk form read: [`MOST`] ids and a CSRF token.
pub const FORM_LIMIT: usize = 64 * 1024;

/// What is acted on.
#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Many {
    DeadLetters,
    Held,
}

/// What is done to each.
#[derive(Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Act {
    Retry,
    Release,
    Discard,
}

impl Many {
    fn path(self) -> &'static str {
        match self {
            Many::DeadLetters => "dead-letters",
            Many::Held => "held",
        }
    }

    /// The page its items are listed on.
    fn back(self) -> &'static str {
        match self {
            Many::DeadLetters => "/console/accounting",
            Many::Held => "/console/quarantine",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Many::DeadLetters => "dead letters",
            Many::Held => "held deliveries",
        }
    }

    fn tab(self) -> Tab {
        match self {
            Many::DeadLetters => Tab::Accounting,
            Many::Held => Tab::Quarantine,
        }
    }
}

impl Act {
    fn path(self) -> &'static str {
        match self {
            Act::Retry => "retry",
            Act::Release => "release",
            Act::Discard => "discard",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Act::Retry => "Retry",
            Act::Release => "Release",
            Act::Discard => "Discard",
        }
    }
}

/// The bulk form: `csrf`, any number of `id` (as sent: read once the form is known to be this
/// session's), or a `group`, and `confirmed` once a discard is.
struct BulkForm {
    csrf: String,
    ids: Vec<String>,
    group: Option<String>,
    confirmed: bool,
}

impl BulkForm {
    fn parse(body: &[u8]) -> BulkForm {
        let mut form = BulkForm { csrf: String::new(), ids: Vec::new(), group: None, confirmed: false };
        for (name, value) in form_urlencoded::parse(body) {
            match &*name {
                "csrf" => form.csrf = value.into_owned(),
                "id" => form.ids.push(value.into_owned()),
                "group" => form.group = Some(value.into_owned()),
                "confirmed" => form.confirmed = value == "yes",
                _ => {}
            }
        }
        form
    }
}

fn bad(why: &str) -> Failure {
    Failure::Api(ApiError::BadRequest(why.to_owned()))
}

pub async fn act(
    State(ctx): State<ApiContext>,
    Path((many, act)): Path<(Many, Act)>,
    request: Request,
) -> Result<Response, Failure> {
    let (mut parts, body) = request.into_parts();
    let session = Session::from_request_parts(&mut parts, &ctx).await?;
    let body =
        to_bytes(body, FORM_LIMIT).await.map_err(|_| Failure::Api(ApiError::PayloadTooLarge(FORM_LIMIT)))?;
    let form = BulkForm::parse(&body);
    session.check(&parts.headers, &form.csrf)?;
    session.may_act()?;
    let allowed = matches!(
        (many, act),
        (Many::DeadLetters, Act::Retry | Act::Discard) | (Many::Held, Act::Release | Act::Discard)
    );
    if !allowed {
        return Err(Failure::Api(ApiError::NotFound));
    }
    let mut ids: Vec<Uuid> = form
        .ids
        .iter()
        .map(|id| id.parse())
        .collect::<Result<_, _>>()
        .map_err(|_| bad("an id is not a UUID"))?;
    if let Some(group) = &form.group {
        ids.extend(match many {
            Many::DeadLetters => ctx.store.dead_letters_erring(group, MOST).await?,
            Many::Held => {
                let reason = QuarantineReason::parse(group).ok_or_else(|| bad("no such reason"))?;
                ctx.store.held_for(reason, MOST).await?
            }
        });
    }
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Err(bad("nothing was selected"));
    }
    if ids.len() > MOST as usize {
        return Err(bad(&format!("at most {MOST} at once")));
    }
    if act == Act::Discard && !form.confirmed {
        return Ok(confirmation(many, act, &ids, &session));
    }
    let actor = session.actor();
    let mut results = Vec::with_capacity(ids.len());
    for id in ids {
        let outcome = match (many, act) {
            (Many::DeadLetters, Act::Retry) => {
                outbox::retry(&ctx.store, id, &actor).await.map(|m| m.status.as_str())
            }
            (Many::DeadLetters, _) => {
                outbox::discard(&ctx.store, id, &actor).await.map(|m| m.status.as_str())
            }
            (Many::Held, Act::Release) => {
                quarantine::release(&ctx.ingest, id, None, &actor).await.map(|entry| entry.status.as_str())
            }
            (Many::Held, _) => {
                quarantine::discard(&ctx.store, id, &actor).await.map(|entry| entry.status.as_str())
            }
        };
        results.push((id, outcome.map_err(|error| error.to_string())));
    }
    let done = results.iter().filter(|(_, outcome)| outcome.is_ok()).count();
    let content = html! {
        h1 { (act.label()) ": " (done) " of " (results.len()) " " (many.noun()) }
        table #results {
            thead { tr { th { "Id" } th { "Result" } } }
            tbody { @for (id, outcome) in &results { tr {
                td.mono { (id) }
                @match outcome {
                    Ok(status) => td class={ "status-" (status) } { (status) },
                    Err(error) => td.problem { (error) },
                }
            } } }
        }
        p { a href=(many.back()) { "Back" } }
    };
    Ok(page(act.label(), many.tab(), &session, &Notice::default(), content))
}

/// The page a discard waits on: what it will drop, and the button that does it.
fn confirmation(many: Many, act: Act, ids: &[Uuid], session: &Session) -> Response {
    let content = html! {
        h1 { (act.label()) " " (ids.len()) " " (many.noun()) "?" }
        p { "They cannot be taken back. These are:" }
        ul.mono { @for id in ids { li { (id) } } }
        form method="post" action={ "/console/bulk/" (many.path()) "/" (act.path()) } {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="confirmed" value="yes";
            @for id in ids { input type="hidden" name="id" value=(id); }
            button.danger type="submit" { (act.label()) " " (ids.len()) }
            " " a href=(many.back()) { "Cancel" }
        }
    };
    page("Confirm", many.tab(), session, &Notice::default(), content).into_response()
}

/// The controls of a bulk action on a list page: a form (`id="bulk"`) the rows' checkboxes belong
/// to, with a button per action.
pub fn controls(many: Many, acts: &[Act], session: &Session) -> Markup {
    if session.may_act().is_err() {
        return html! {};
    }
    html! {
        form #bulk method="post" action={ "/console/bulk/" (many.path()) "/" (acts[0].path()) } {
            input type="hidden" name="csrf" value=(session.csrf);
            @for act in acts {
                button type="submit" formaction={ "/console/bulk/" (many.path()) "/" (act.path()) }
                    class=(if *act == Act::Discard { "danger" } else { "primary" }) { (act.label()) " selected" }
                " "
            }
        }
    }
}

/// A row's checkbox, in the [`controls`] form.
pub fn checkbox(id: Uuid, session: &Session) -> Markup {
    if session.may_act().is_err() {
        return html! {};
    }
    html! { input type="checkbox" name="id" value=(id) form="bulk" aria-label={ "Select " (id) }; }
}

/// A group's buttons: every item of the group, one action each.
pub fn group_actions(many: Many, acts: &[Act], group: &str, session: &Session) -> Markup {
    if session.may_act().is_err() {
        return html! {};
    }
    html! { @for act in acts {
        form.action method="post" action={ "/console/bulk/" (many.path()) "/" (act.path()) } {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="group" value=(group);
            button type="submit" class=(if *act == Act::Discard { "danger" } else { "primary" }) { (act.label()) " all" }
        }
    } }
}
