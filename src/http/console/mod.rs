//! The operator console at `/console/`: server-rendered HTML (maud escapes every value) over the
//! same store functions and use cases as the admin API. Signed in with the admin token
//! ([`session`]); every page is sent with a strict Content-Security-Policy (scripts and styles only
//! from `/console/assets/`, no inline script), `X-Frame-Options: DENY`, `nosniff` and `no-store`.

mod accounting;
mod audit;
mod bulk;
mod device;
mod interchanges;
mod invoices;
mod overview;
mod partners;
mod quarantine;
pub mod session;
mod sign_in;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Query, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;

use super::ApiContext;
use super::extract::Id;
use super::problem::ApiError;
use crate::ingest;
use crate::operate;
use crate::store::StoreError;
use session::{Refusal, Session};

/// The console's routes.
pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/console", get(|| async { Redirect::permanent("/console/") }))
        .route("/console/", get(overview::show))
        .route("/console/sign-in", get(sign_in::form).post(sign_in::sign_in))
        .route("/console/sign-out", post(sign_in::sign_out))
        .route("/console/interchanges", get(interchanges::list))
        .route("/console/interchanges/{id}", get(interchanges::detail))
        .route("/console/interchanges/{id}/payload", get(interchanges::payload))
        .route("/console/invoices/{id}", get(invoices::detail))
        .route("/console/quarantine", get(quarantine::list))
        .route("/console/quarantine/{id}", get(quarantine::detail))
        .route("/console/quarantine/{id}/payload", get(quarantine::payload))
        .route("/console/quarantine/{id}/{action}", post(quarantine::act))
        .route("/console/accounting", get(accounting::list))
        .route("/console/accounting/{id}/{action}", post(accounting::act))
        .route("/console/partners", get(partners::list))
        .route("/console/partners/{id}/{action}", post(partners::act))
        .route("/console/refusals", get(partners::refusals))
        .route("/console/audit", get(audit::list))
        .route("/console/bulk/{many}/{act}", post(bulk::act))
        .route("/console/assets/console.css", get(|| asset("text/css", include_str!("console.css"))))
        .route("/console/assets/console.js", get(|| asset("text/javascript", include_str!("console.js"))))
        .route("/console/assets/favicon.svg", get(|| asset("image/svg+xml", include_str!("favicon.svg"))))
        .route("/console/{*unknown}", get(not_found).post(not_found))
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
        .layer(middleware::from_fn(secure_headers))
}

/// The largest form the console reads: a token or a CSRF token, never an upload.
const FORM_LIMIT: usize = 8 * 1024;

const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    super::page_headers(&mut response, CONTENT_SECURITY_POLICY);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// Why a console request failed, rendered as a page (or, signed out, a redirect to sign in).
pub enum Failure {
    Api(ApiError),
    Refused(Refusal),
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Failure {
        Failure::Api(error)
    }
}

impl From<operate::Error> for Failure {
    fn from(error: operate::Error) -> Failure {
        Failure::Api(ApiError::from(error))
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Failure {
        Failure::Api(ApiError::Store(error))
    }
}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Failure {
        Failure::Refused(refusal)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        Failure::Refused(self).into_response()
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            Failure::Refused(Refusal::SignedOut { back, lost }) => {
                return sign_in::to_sign_in(back.as_deref(), lost);
            }
            Failure::Refused(Refusal::Unavailable(error)) => {
                return Failure::Api(ApiError::Store(error)).into_response();
            }
            Failure::Refused(Refusal::ReadOnly) => (
                StatusCode::FORBIDDEN,
                "This session is read only: sign in with the admin token to act.".to_owned(),
            ),
            Failure::Refused(Refusal::Forged) => {
                ingest::security_event("console-forged-request");
                tracing::warn!(target: "edi_inbox::security", "console request without its session's CSRF token refused");
                (
                    StatusCode::FORBIDDEN,
                    "This form was not sent from a console page of this session.".to_owned(),
                )
            }
            Failure::Api(error) => {
                let status = error.status();
                let message = if status.is_server_error() {
                    tracing::error!(error = %error, "console request failed");
                    "The service could not answer; try again shortly.".to_owned()
                } else {
                    error.to_string()
                };
                (status, message)
            }
        };
        let body = bare(
            "Error",
            html! {
                h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or_default()) }
                p.problem { (message) }
                p { a href="/console/" { "Back to the console" } }
            },
        );
        (status, body).into_response()
    }
}

/// The console's sections, as the navigation names them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Overview,
    Interchanges,
    Quarantine,
    Accounting,
    Partners,
    Refusals,
    Audit,
}

const TABS: [(Tab, &str, &str); 7] = [
    (Tab::Overview, "/console/", "Overview"),
    (Tab::Interchanges, "/console/interchanges", "Interchanges"),
    (Tab::Quarantine, "/console/quarantine", "Quarantine"),
    (Tab::Accounting, "/console/accounting", "Accounting"),
    (Tab::Partners, "/console/partners", "Partners"),
    (Tab::Refusals, "/console/refusals", "Refusals"),
    (Tab::Audit, "/console/audit", "Audit"),
];

/// What an action did, shown once on the page it leads back to (`?done=…`: a fixed word, never
/// text from the request).
#[derive(Clone, Copy)]
pub enum Done {
    Released,
    Discarded,
    Retried,
    Suspended,
    Activated,
}

#[derive(Deserialize, Default)]
pub struct Notice {
    #[serde(default, deserialize_with = "known_word")]
    done: Option<Done>,
}

/// `?done=` as one of the words the console writes; anything else shows no notice, never an error
/// page repeating what was typed.
fn known_word<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Done>, D::Error> {
    let word = Option::<String>::deserialize(deserializer)?;
    Ok(word.and_then(|word| Done::ALL.into_iter().find(|done| done.word() == word)))
}

/// A console path that is not a page: the console's own 404, with its headers.
async fn not_found() -> Response {
    let body = bare(
        "Not found",
        html! {
            main {
                h1 { "Not found" }
                p { "No console page is here. " a href="/console/" { "Go to the overview" } "." }
            }
        },
    );
    (axum::http::StatusCode::NOT_FOUND, body).into_response()
}

impl Done {
    const ALL: [Done; 5] = [Done::Released, Done::Discarded, Done::Retried, Done::Suspended, Done::Activated];

    fn message(self) -> &'static str {
        match self {
            Done::Released => "Released: the delivery was processed.",
            Done::Discarded => "Discarded.",
            Done::Retried => "Queued again: the relay sends it now.",
            Done::Suspended => "Suspended: its deliveries get 403 until it is activated.",
            Done::Activated => "Activated.",
        }
    }

    fn word(self) -> &'static str {
        match self {
            Done::Released => "released",
            Done::Discarded => "discarded",
            Done::Retried => "retried",
            Done::Suspended => "suspended",
            Done::Activated => "activated",
        }
    }
}

/// Where an action leads back to, saying what it did.
pub fn done(path: &str, what: Done) -> Response {
    Redirect::to(&format!("{path}?done={}", what.word())).into_response()
}

/// A page of a signed-in session: navigation, the notice of the last action, the content.
pub fn page(title: &str, tab: Tab, session: &Session, notice: &Notice, content: Markup) -> Response {
    bare(
        title,
        html! {
            header {
                nav {
                    span.brand { "edi-inbox" }
                    @for (each, href, label) in TABS {
                        a href=(href) class=[(each == tab).then_some("current")] { (label) }
                    }
                }
                form.sign-out method="post" action="/console/sign-out" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button type="submit" { "Sign out" }
                }
            }
            main {
                @if let Some(done) = notice.done {
                    p.notice role="status" { (done.message()) }
                }
                (content)
            }
        },
    )
    .into_response()
}

fn bare(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · edi-inbox console" }
                link rel="stylesheet" href="/console/assets/console.css";
                link rel="icon" type="image/svg+xml" href="/console/assets/favicon.svg";
                script src="/console/assets/console.js" defer {}
            }
            body { (body) }
        }
    }
}

/// A one-button form posting an action with the session's CSRF token (a `danger` one asks to be
/// confirmed first); nothing for a viewer.
pub fn action(path: &str, label: &str, session: &Session, class: &str) -> Markup {
    if session.may_act().is_err() {
        return html! {};
    }
    // What cannot be taken back at once (a discard, a suspension) is confirmed first.
    let confirm = (class == "danger").then(|| format!("{label}: are you sure?"));
    html! {
        form.action method="post" action=(path) data-confirm=[confirm] {
            input type="hidden" name="csrf" value=(session.csrf);
            button type="submit" class=(class) { (label) }
        }
    }
}

/// The body of every action form.
#[derive(Deserialize)]
struct ActionForm {
    csrf: String,
}

/// A state-changing request of a signed-in session, its CSRF token checked: the extractor of every
/// console action (actions then ask [`Session::may_act`]). A body that is no such form counts as
/// forged.
pub struct Confirmed(pub Session);

impl FromRequest<ApiContext> for Confirmed {
    type Rejection = Failure;

    async fn from_request(request: Request, ctx: &ApiContext) -> Result<Confirmed, Failure> {
        let (mut parts, body) = request.into_parts();
        let session = Session::from_request_parts(&mut parts, ctx).await?;
        let headers = parts.headers.clone();
        let axum::Form(form) = axum::Form::<ActionForm>::from_request(Request::from_parts(parts, body), ctx)
            .await
            .map_err(|_| Refusal::Forged)?;
        session.check(&headers, &form.csrf)?;
        Ok(Confirmed(session))
    }
}

/// A page's filters, from its query string; a value that does not parse is a 400 page.
pub struct Filters<T>(pub T);

impl<T: serde::de::DeserializeOwned + Send> FromRequestParts<ApiContext> for Filters<T> {
    type Rejection = Failure;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        ctx: &ApiContext,
    ) -> Result<Self, Failure> {
        Query::<T>::from_request_parts(parts, ctx)
            .await
            .map(|Query(filters)| Filters(filters))
            .map_err(|rejection| Failure::Api(ApiError::BadRequest(rejection.body_text())))
    }
}

/// A page's one path parameter, a UUID; one that does not parse is a 400 page (the API's `Id`
/// answers problem+json).
pub struct PageId(pub uuid::Uuid);

impl FromRequestParts<ApiContext> for PageId {
    type Rejection = Failure;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        ctx: &ApiContext,
    ) -> Result<Self, Failure> {
        let Id(id) = Id::from_request_parts(parts, ctx).await?;
        Ok(PageId(id))
    }
}

/// Reads a form field that a browser sends empty when nothing was chosen: empty is `None`,
/// anything else must parse as `T`.
pub fn optional<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::IntoDeserializer;
    match Option::<String>::deserialize(deserializer)? {
        Some(text) if !text.trim().is_empty() => {
            T::deserialize(IntoDeserializer::<D::Error>::into_deserializer(text.trim().to_owned())).map(Some)
        }
        _ => Ok(None),
    }
}

/// A time as the console shows it.
pub fn when(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A duration as the console shows it: `42 s`, `17 min`, `5 h`, `3 d`.
pub fn age(seconds: i64) -> String {
    match seconds {
        ..120 => format!("{} s", seconds.max(0)),
        120..7_200 => format!("{} min", seconds / 60),
        7_200..172_800 => format!("{} h", seconds / 3_600),
        _ => format!("{} d", seconds / 86_400),
    }
}
