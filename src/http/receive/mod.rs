//! `POST /v1/interchanges`, the receive path, in the order a request goes through it: [`admit`]
//! checks what the headers tell before a byte of the body is read; [`deliver`] reads the body,
//! proves the caller, opens AS2 ([`as2`]), unwraps the door's envelope ([`doors`]) and hands the
//! interchange to the inbox; [`respond`] answers with the stored outcome (or an MDN). One
//! [`Attempt`] carries what is known about the request from the first step to the audit record.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiContext;
use super::problem::{ApiError, Problem};
use super::representation::Representation;
use crate::inbox::quarantine::Quarantined;
use crate::inbox::resource::InterchangeAnswer;
use crate::inbox::transport::SnsType;
use crate::ingest::{Report, Reservation};
use crate::store::AttemptFacts;
use deliver::Arrived;

mod admit;
pub(super) mod as2;
mod body;
mod deliver;
pub mod doors;
mod examples;
mod respond;

pub use respond::IDEMPOTENT_REPLAYED;

/// One request on its way through the receive path: when and from where it came, what the audit
/// trail records of it, and its AS2 exchange with what opening it established.
struct Attempt {
    received_at: DateTime<Utc>,
    started: Instant,
    remote: Option<IpAddr>,
    facts: AttemptFacts,
    /// The AS2 exchange its headers describe, once the door is known to be AS2.
    exchange: Option<as2::Exchange>,
    /// What opening its AS2 message established for the receipt.
    checked: Option<as2::Checked>,
    /// The memory it holds: reserved before its body is read, topped up as it is recorded.
    reservation: Reservation,
}

impl Attempt {
    /// What the request's headers tell before anything is known about its content.
    fn begin(ctx: &ApiContext, request: &Request) -> Attempt {
        let remote = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip());
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        Attempt {
            received_at: Utc::now(),
            started: Instant::now(),
            remote,
            facts: AttemptFacts::new(
                header("x-request-id"),
                remote.map(|ip| ip.to_string()),
                header(header::USER_AGENT.as_str()),
                header(header::CONTENT_TYPE.as_str()),
            ),
            exchange: as2::Exchange::read(request.headers()),
            checked: None,
            reservation: ctx.ingest.budget().nothing(),
        }
    }

    /// Counts, audits and logs the attempt's outcome.
    fn conclude(&self, ctx: &ApiContext, report: Report) {
        ctx.ingest.conclude(report, &self.facts, self.received_at, self.started);
    }
}

#[utoipa::path(
    post,
    path = "/v1/interchanges",
    tag = "interchanges",
    summary = "Receive an X12 or EDIFACT interchange (exactly once), through any front door.",
    description = super::openapi::RECEIVE,
    params(
        ("partner" = Option<String>, Query, min_length = 1,
            description = "The partner of a Standard Webhooks signed request (`webhook-id`, `webhook-timestamp`, `webhook-signature`)"),
        ("x-amz-sns-message-type" = Option<SnsType>, Header,
            description = "SNS: what the message is (the body is SNS's JSON message around the interchange)"),
        ("ce-id" = Option<String>, Header, description = "CloudEvents binary mode (with `ce-specversion`, `ce-source`, `ce-type`)"),
        ("AS2-From" = Option<String>, Header, description = "AS2 gateway: the partner's AS2 name (with `AS2-To`, `Message-ID`)"),
        ("AS2-To" = Option<String>, Header, description = "AS2: this service's AS2 name"),
        ("Message-ID" = Option<String>, Header, description = "AS2: the message's id, quoted in its MDN as `Original-Message-ID`"),
        ("Disposition-Notification-To" = Option<String>, Header, description = "AS2: asks for an MDN (any value)"),
        ("Disposition-Notification-Options" = Option<String>, Header, description = "AS2: a signed MDN and its MIC algorithm, e.g. `signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256`"),
        ("Receipt-Delivery-Option" = Option<String>, Header, description = "AS2: where to POST the MDN instead of answering with it; must start with one of the partner's `as2_mdn_urls`"),
        ("Prefer" = Option<String>, Header, description = "`return=minimal` (RFC 7240): answer with the `MinimalInterchange` (the envelope, counts and links; its size does not grow with the interchange), marked `Preference-Applied: return=minimal`; `return=representation`: the whole interchange, whatever the partner's default"),
    ),
    security((), ("api_key" = []), ("pubsub_oidc" = [])),
    request_body(
        description = "The interchange, raw or in a push broker's wrapping (see the doors above). The standard is detected from ISA / UNA / UNB.",
        content(
            (String = "application/edi-x12", example = json!(examples::example_x12(9144))),
            (String = "application/edifact", example = json!(examples::EXAMPLE_EDIFACT)),
            (String = "application/edi-consent", example = json!(examples::example_x12(9149))),
            (String = "text/plain", example = json!(examples::example_x12(9145))),
            (String = "application/octet-stream", example = json!(examples::example_x12(9150))),
            (doors::CloudEvent = "application/cloudevents+json", example = json!(examples::example_cloud_event())),
            (doors::PushRequest = "application/json", example = json!(examples::example_pubsub_push())),
            (String = "application/pkcs7-mime"),
            (String = "multipart/signed"),
        )
    ),
    responses(
        (status = 201, description = "First delivery: recorded and booked. With `Accept: application/edi-x12` or `application/edifact` the body is the acknowledgement (997/999/TA1 or CONTRL) instead",
            content((InterchangeAnswer = "application/json"), (String = "application/edi-x12"), (String = "application/edifact")),
            headers(("Location" = String, description = "URL of the interchange resource"))),
        (status = 200, description = "Replay of a recorded interchange: the original body (or the original acknowledgement). Also: a bypassed interchange (`BypassedResource`), a kept SNS confirmation message (`SnsSubscription`), and every AS2 MDN (`multipart/report`, or `multipart/signed` around it; empty when the MDN is sent asynchronously)",
            content((InterchangeAnswer = "application/json"), (String = "application/edi-x12"), (String = "application/edifact"), (String = "multipart/report"), (String = "multipart/signed")),
            headers(("Idempotent-Replayed" = String, description = "`true`"),
                ("Content-Location" = String, description = "URL of the interchange resource"))),
        (status = 202, description = "Quarantined (partners with `conflict_policy: quarantine`): a conflict or invalid interchange held for an operator; the same entry, with `Idempotent-Replayed: true`, on every redelivery",
            body = Quarantined),
        (status = 400, description = "`malformed-interchange`: no idempotency key can be read; `invalid-transport`: the push message or event around it is not valid; nothing stored",
            body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`: no valid API key (Bearer, or Basic with the partner id as user and the key as password) or signature (partner authentication)",
            body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`forbidden-sender`: the interchange's sender or receiver or the AS2 name is not the partner's, or the partner is suspended; nothing stored",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`control-number-conflict`: the key was used for different content; nothing stored",
            body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload-too-large`: the body exceeds the body limit, or recording its interchange would need more memory than this instance's whole budget (the detail says how much); nothing was recorded", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "`request-timeout`: the body arrived slower than the minimum rate (`EDI_INBOX_MIN_BODY_RATE`, after five seconds), or, not yet authenticated (its signature in its body), it was the slowest such body when another request needed its place; nothing was recorded, and the connection is closed",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported-media-type`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`invalid-interchange`: stored as rejected, replayed with `Idempotent-Replayed: true`; a corrected resend with the same key replaces it",
            body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`rate-limited`: the partner's rate or this instance's capacity (deliveries in flight, unproven requests of this address, memory budget: the detail then says how much was needed of how much) is exhausted; nothing was recorded, retry after `Retry-After`",
            body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = String, description = "Seconds to wait"))),
        (status = 503, description = "`unavailable`: the database cannot be reached; nothing was recorded, retry after `Retry-After` seconds",
            body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = String, description = "Seconds to wait"))),
    )
)]
pub async fn receive(State(ctx): State<ApiContext>, request: Request) -> Response {
    let mut attempt = Attempt::begin(&ctx, &request);
    let asked = Representation::asked(request.headers());
    let arrived = match deliver::deliver(&ctx, request, &mut attempt).await {
        Ok(arrived) => arrived,
        Err(error) => {
            let answer = as2::receipt(&ctx, &mut attempt, Err(&error));
            return refused(&ctx, error, answer, &attempt);
        }
    };
    let (response, report) = match &arrived {
        Arrived::Interchange(ingested, form) => {
            let answer = match as2::receipt(&ctx, &mut attempt, Ok(ingested)) {
                Some(mdn) => Ok(mdn),
                None => respond::respond(&ctx, asked.unwrap_or(Representation::of(*form)), ingested).await,
            };
            match answer {
                Ok(response) => (response, ctx.ingest.report(ingested, &attempt.facts, attempt.received_at)),
                Err(error) => return refused(&ctx, error, None, &attempt),
            }
        }
        Arrived::SnsKept(kept) => {
            let report = Report::without_interchange("sns-subscription", StatusCode::OK.as_u16(), false);
            (Json(kept).into_response(), report)
        }
    };
    attempt.conclude(&ctx, report);
    response
}

/// Answers (with `answer`, an MDN, when given), counts and logs a refused delivery; a refusal of
/// an unproven caller also counts against its address.
fn refused(ctx: &ApiContext, error: ApiError, answer: Option<Response>, attempt: &Attempt) -> Response {
    let status = error.status();
    if let (false, Some(remote), None) = (status.is_server_error(), attempt.remote, &attempt.facts.partner_id)
    {
        ctx.limiter.refused(remote);
    }
    attempt.conclude(ctx, Report::without_interchange(error.outcome(), status.as_u16(), true));
    answer.unwrap_or_else(|| error.into_response())
}

/// `POST /v1/interchanges` and the CloudEvents webhook handshake on the same path.
pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new().routes(routes!(receive, doors::validate_webhook))
}
