//! `/v1/interchanges`: the inbox endpoint that receives interchanges, and reading them back.

use std::net::{IpAddr, SocketAddr};

use axum::Json;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use super::body::{READ_COPIES, charged_for, drain, read_body};
use super::extract::{Id, Params};
use super::limits::UnprovenSlot;
use super::problem::{self, ApiError, PROBLEM_JSON, Problem};
use super::representation::{Representation, ack_media_type};
use super::{ApiContext, PageQuery, as2, auth, doors, non_empty, page_limit};
use crate::edi::{PartyId, ack};
use crate::inbox::quarantine::Quarantined;
use crate::inbox::resource::{IdempotencyKey, InterchangeResource, InterchangeSummary, Page};
use crate::inbox::transport::{Door, Transport};
use crate::inbox::{Logged, Status};
use crate::ingest::{self, Inbound, Ingested, PartnerOf, Report, Reservation, Shortfall};
use crate::partners::{Partner, ResponseForm};
use crate::store::{AttemptFacts, DeliveryAttempt, InterchangeFilter, SnsSubscription, StoredInterchange};

/// Set on every response that repeats the outcome of an earlier delivery.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Receive an X12 or EDIFACT interchange (exactly once), through any front door.
///
/// The idempotency key is read from the envelope: sender qualifier and id plus the interchange
/// control number (ISA05/ISA06 + ISA13, or UNB S002 + 0020). The first delivery of a key is recorded
/// with its invoices in one transaction and answered 201 after COMMIT; every later delivery of the same
/// content (even re-wrapped or with re-stamped envelope dates) is answered 200 with the original body
/// and `Idempotent-Replayed: true`. A rejected (422) interchange replays its 422.
///
/// The doors, told apart by their headers; the key is always the EDI key, so the same interchange
/// through two doors is one interchange, and each attempt's transport id is audited:
/// - **raw**: the body is the interchange (`application/edi-x12`, `application/edifact`, …);
/// - **CloudEvents binary mode**: a raw body with `ce-specversion: 1.0`, `ce-id`, `ce-source`, `ce-type`;
/// - **CloudEvents structured mode**: `application/cloudevents+json`, the interchange in `data` (a
///   string) or `data_base64`;
/// - **Google Pub/Sub push**: `application/json`, the interchange base64 in `message.data`;
/// - **AWS SNS**: `x-amz-sns-message-type` (the body is SNS's JSON whatever its `Content-Type`):
///   a `Notification` carries the interchange in `Message`; `SubscriptionConfirmation` and
///   `UnsubscribeConfirmation` are answered 200 and kept for an operator (`/v1/admin/sns-subscriptions`);
/// - **AS2 gateway** (RFC 4130): `AS2-From` (one of the partner's AS2 names, 403 otherwise), `AS2-To`,
///   `Message-ID`; the body is the EDI, or S/MIME around it (`application/pkcs7-mime` enveloped or
///   compressed data, `multipart/signed`, nested in any order, binary or base64). A signature with
///   the partner's registered certificate proves the partner without an API key. With
///   `Disposition-Notification-To` the answer is an MDN (`multipart/report`, signed as
///   `multipart/signed` when `Disposition-Notification-Options` asks): HTTP 200 with disposition
///   `processed` on first delivery and every resend, `processed/error` with a modifier for a refusal
///   (`decryption-failed`, `authentication-failed`, `integrity-check-failed`,
///   `insufficient-message-security`, `unexpected-processing-error` with the problem's detail); or,
///   with `Receipt-Delivery-Option` on one of the partner's registered MDN URLs, an empty 200 and
///   the MDN POSTed there. A 429 or 503 stays HTTP, for the gateway to retry;
/// - **Standard Webhooks**: a raw body with `webhook-id`, `webhook-timestamp`, `webhook-signature`.
///
/// Partners whose conflict policy is `quarantine` get 202 (held) instead of 409 or 422; partners'
/// naturally idempotent document types get 200 `bypassed`.
#[utoipa::path(
    post,
    path = "/v1/interchanges",
    tag = "interchanges",
    params(
        ("partner" = Option<String>, Query, min_length = 1,
            description = "The partner of a Standard Webhooks signed request (`webhook-id`, `webhook-timestamp`, `webhook-signature`)"),
        ("x-amz-sns-message-type" = Option<String>, Header,
            description = "SNS: `Notification`, `SubscriptionConfirmation` or `UnsubscribeConfirmation`"),
        ("ce-id" = Option<String>, Header, description = "CloudEvents binary mode (with `ce-specversion`, `ce-source`, `ce-type`)"),
        ("AS2-From" = Option<String>, Header, description = "AS2 gateway: the partner's AS2 name (with `AS2-To`, `Message-ID`)"),
        ("AS2-To" = Option<String>, Header, description = "AS2: this service's AS2 name"),
        ("Message-ID" = Option<String>, Header, description = "AS2: the message's id, quoted in its MDN as `Original-Message-ID`"),
        ("Disposition-Notification-To" = Option<String>, Header, description = "AS2: asks for an MDN (any value)"),
        ("Disposition-Notification-Options" = Option<String>, Header, description = "AS2: a signed MDN and its MIC algorithm, e.g. `signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256`"),
        ("Receipt-Delivery-Option" = Option<String>, Header, description = "AS2: where to POST the MDN instead of answering with it; must start with one of the partner's `as2_mdn_urls`"),
        ("Prefer" = Option<String>, Header, description = "`return=minimal` (RFC 7240): answer with the `MinimalInterchange` (each invoice's id, number, total and link, no lines), marked `Preference-Applied: return=minimal`"),
    ),
    security((), ("api_key" = []), ("pubsub_oidc" = []), ("sns_signature" = []), ("as2_signature" = []), ("standard_webhooks" = [])),
    request_body(
        description = "The interchange, raw or in a push broker's wrapping (see the doors above). The standard is detected from ISA / UNA / UNB.",
        content(
            (String = "application/edi-x12", example = json!(doors::example_x12(1144))),
            (String = "application/edifact", example = json!(doors::EXAMPLE_EDIFACT)),
            (String = "application/edi-consent", example = json!(doors::example_x12(1149))),
            (String = "text/plain", example = json!(doors::example_x12(1145))),
            (String = "application/octet-stream", example = json!(doors::example_x12(1150))),
            (doors::CloudEvent = "application/cloudevents+json", example = json!(doors::example_cloud_event())),
            (doors::PushRequest = "application/json", example = json!(doors::example_pubsub_push())),
            (String = "application/pkcs7-mime"),
            (String = "multipart/signed"),
        )
    ),
    responses(
        (status = 201, description = "First delivery: recorded and booked. With `Accept: application/edi-x12` or `application/edifact` the body is the acknowledgement (997/999/TA1 or CONTRL) instead",
            content((InterchangeResource = "application/json"), ("application/edi-x12"), ("application/edifact")),
            headers(("Location" = String, description = "URL of the interchange resource"))),
        (status = 200, description = "Replay of a recorded interchange: the original body (or the original acknowledgement). Also: a bypassed interchange (`BypassedResource`), a kept SNS confirmation message (`SnsSubscription`), and every AS2 MDN (`multipart/report`, or `multipart/signed` around it; empty when the MDN is sent asynchronously)",
            content((InterchangeResource = "application/json"), ("application/edi-x12"), ("application/edifact"), ("multipart/report"), ("multipart/signed")),
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
        (status = 408, description = "`request-timeout`: the body arrived slower than the minimum rate (`EDI_INBOX_MIN_BODY_RATE`, after five seconds); nothing was recorded, and the connection is closed",
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
    let received_at = Utc::now();
    let remote = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip());
    let started = std::time::Instant::now();
    let mut facts = attempt_facts(&request, remote);
    let asked = Representation::asked(request.headers());
    let exchange = as2::Exchange::read(request.headers());
    let mut checked = None;
    let arrived =
        deliver(&ctx, request, remote, &mut facts, received_at, exchange.as_ref(), &mut checked).await;
    let exchange = exchange.filter(|_| facts.transport.door == Door::As2);
    let receipt = |facts: &mut AttemptFacts, outcome| {
        exchange.as_ref().and_then(|exchange| as2::receipt(&ctx, exchange, checked.as_ref(), outcome, facts))
    };
    let arrived = match arrived {
        Ok(arrived) => arrived,
        Err(error) => {
            let answer = receipt(&mut facts, Err(&error));
            return refused(&ctx, error, answer, &facts, remote, received_at, started);
        }
    };
    let (response, report) = match &arrived {
        Arrived::Interchange(ingested, form) => {
            let answer = match receipt(&mut facts, Ok(ingested)) {
                Some(mdn) => Ok(mdn),
                None => respond(&ctx, asked.unwrap_or(Representation::of(*form)), ingested).await,
            };
            match answer {
                Ok(response) => (response, ctx.ingest.report(ingested, &facts, received_at)),
                Err(error) => return refused(&ctx, error, None, &facts, remote, received_at, started),
            }
        }
        Arrived::SnsKept(kept) => {
            let report = Report::without_interchange("sns-subscription", StatusCode::OK.as_u16(), false);
            (Json(kept).into_response(), report)
        }
    };
    ctx.ingest.conclude(report, &facts, received_at, started);
    response
}

/// Answers (with `answer`, an MDN, when given), counts and logs a refused delivery; a refusal of
/// an unproven caller also counts against its address.
fn refused(
    ctx: &ApiContext,
    error: ApiError,
    answer: Option<Response>,
    facts: &AttemptFacts,
    remote: Option<IpAddr>,
    received_at: chrono::DateTime<Utc>,
    started: std::time::Instant,
) -> Response {
    let status = error.status();
    if let (false, Some(remote), None) = (status.is_server_error(), remote, &facts.partner_id) {
        ctx.limiter.refused(remote);
    }
    let report = Report::without_interchange(error.outcome(), status.as_u16(), true);
    ctx.ingest.conclude(report, facts, received_at, started);
    answer.unwrap_or_else(|| error.into_response())
}

/// What the request's headers tell the audit trail before anything is known about its content.
fn attempt_facts(request: &Request, remote: Option<IpAddr>) -> AttemptFacts {
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
    AttemptFacts::new(
        header("x-request-id"),
        remote.map(|ip| ip.to_string()),
        header(header::USER_AGENT.as_str()),
        header(header::CONTENT_TYPE.as_str()),
    )
}

/// How long an SNS sender with too many pending confirmations is asked to wait (SNS retries).
const SNS_BACKLOG_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What an admitted, proven request came to.
enum Arrived {
    /// An interchange, through the inbox, with how its partner is answered by default.
    Interchange(Ingested, ResponseForm),
    /// An SNS subscription message, kept for an operator.
    SnsKept(SnsSubscription),
}

/// What a request is allowed before its body is read.
struct Admitted {
    caller: auth::Caller,
    recognised: doors::Recognised,
    reservation: Reservation,
    _unproven: Option<UnprovenSlot>,
}

/// Checks everything the headers can tell, cheapest first, before a byte of the body is read: the
/// door and media type, the credential (an API key is proven here and charged to its partner, and
/// its AS2 names checked; a signature only gets a slot of the smaller unproven budget, of which
/// its address may hold a few), the declared size, and the byte budget: a proven partner reserves
/// what its body costs (waiting for room), any other request is charged as its bytes arrive and
/// is refused here only when its declared length cannot fit now.
async fn admit(
    ctx: &ApiContext,
    parts: &Parts,
    remote: Option<IpAddr>,
    facts: &mut AttemptFacts,
) -> Result<Admitted, ApiError> {
    let recognised = doors::recognise(&parts.headers)?;
    facts.transport = recognised.transport.clone();
    let caller = auth::identify(ctx, parts).await?;
    let mut unproven = None;
    let budget = ctx.ingest.budget();
    let mut reservation = budget.nothing();
    match &caller {
        auth::Caller::Partner(partner) => {
            charge(ctx, partner, facts)?;
            check_as2(ctx, partner, &facts.transport)?;
        }
        auth::Caller::Signed { .. } | auth::Caller::SnsSigned(_) | auth::Caller::As2Signed => {
            if let Some(remote) = remote {
                ctx.limiter.refusing(remote).map_err(ApiError::RateLimited)?;
            }
            unproven = Some(ctx.limiter.admit_unproven(remote).map_err(ApiError::RateLimited)?);
            reservation = budget.unproven();
        }
        auth::Caller::Open => {}
    }
    let limit = body_limit(ctx, &caller);
    let declared =
        parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(ApiError::PayloadTooLarge(limit));
    }
    let bytes = declared.unwrap_or(limit).saturating_mul(READ_COPIES);
    match &caller {
        auth::Caller::Partner(_) => reservation = budget.reserve(bytes).await.map_err(short_of_reading)?,
        _ => budget
            .fits(&reservation, declared.unwrap_or(0).saturating_mul(READ_COPIES))
            .map_err(short_of_reading)?,
    }
    Ok(Admitted { caller, recognised, reservation, _unproven: unproven })
}

/// The refusal of a body whose reading the memory budget cannot take.
fn short_of_reading(shortfall: Shortfall) -> ApiError {
    match shortfall {
        Shortfall::Exceeds { needed, budget } => ApiError::OverBudget(format!(
            "reading a body of up to {} bytes needs {needed} bytes of memory, more than the {budget} bytes \
             this server lets such a request hold (EDI_INBOX_BUFFER_BYTES); nothing was read",
            needed / READ_COPIES
        )),
        Shortfall::Spent { needed, budget } => ApiError::Busy { needed, budget },
    }
}

/// The largest body the caller may send: a proven partner's own limit, else the server's.
fn body_limit(ctx: &ApiContext, caller: &auth::Caller) -> usize {
    caller
        .partner()
        .and_then(|p| p.max_body_bytes)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(ctx.body_limit)
}

/// Takes one request from a proven partner's rate budget.
fn charge(ctx: &ApiContext, partner: &Partner, facts: &mut AttemptFacts) -> Result<(), ApiError> {
    facts.partner_id = Some(partner.id.clone());
    let per_minute =
        partner.requests_per_minute.and_then(|n| u32::try_from(n).ok()).unwrap_or(ctx.rate_limit);
    ctx.limiter.take(&partner.id, per_minute).map_err(ApiError::RateLimited)
}

/// An AS2 delivery's names must be the partner's and ours.
fn check_as2(ctx: &ApiContext, partner: &Partner, transport: &Transport) -> Result<(), ApiError> {
    Ok(ingest::check_as2(&ctx.ingest.options().as2_receiver_ids, partner, transport)?)
}

/// Authenticates, reads and unwraps one delivery, and hands its interchange to the inbox.
async fn deliver(
    ctx: &ApiContext,
    request: Request,
    remote: Option<IpAddr>,
    facts: &mut AttemptFacts,
    received_at: chrono::DateTime<Utc>,
    exchange: Option<&as2::Exchange>,
    checked: &mut Option<as2::Checked>,
) -> Result<Arrived, ApiError> {
    let (parts, body) = request.into_parts();
    let mut admitted = match admit(ctx, &parts, remote, facts).await {
        Ok(admitted) => admitted,
        Err(error) => {
            drain(&parts, body).await;
            return Err(error);
        }
    };
    let budget = ctx.ingest.budget();
    let reservation = &mut admitted.reservation;
    let charge_read = |read: usize| budget.top_up(reservation, charged_for(read)).map_err(short_of_reading);
    let body = read_body(body, ctx.body_limit, ctx.min_body_rate, charge_read).await?;
    facts.body_bytes = i64::try_from(body.len()).unwrap_or(i64::MAX);
    let signed = admitted.caller.unproven();
    let caller = auth::verify_signature(&parts, admitted.caller, &body)?;
    let (caller, sns) = auth::verify_sns(ctx, caller, &body).await?;
    let as2 = exchange.filter(|_| admitted.recognised.transport.door == Door::As2);
    let (caller, body) = match as2 {
        Some(exchange) => {
            let (caller, opened, receipt) =
                as2::open(ctx, caller, exchange, &parts.headers, body, facts, &mut admitted.reservation)
                    .await?;
            *checked = Some(receipt);
            admitted.recognised.content_type = opened.content_type;
            admitted.recognised.transport = facts.transport.clone();
            (caller, Bytes::from(opened.payload))
        }
        None => (caller, body),
    };
    let partner = caller.partner().cloned();
    if partner.is_some() {
        admitted.reservation.proven();
    }
    if let (true, Some(partner)) = (signed, &partner) {
        charge(ctx, partner, facts)?;
        check_as2(ctx, partner, &facts.transport)?;
    }
    let limit = body_limit(ctx, &caller);
    if body.len() > limit {
        return Err(ApiError::PayloadTooLarge(limit));
    }
    let _slot = ctx.limiter.admit().map_err(ApiError::RateLimited)?;
    match doors::unwrap(admitted.recognised, body, sns)? {
        doors::Arrival::SnsControl(control) => {
            let kept = ctx
                .store
                .keep_sns_control(&control, facts.partner_id.as_deref(), received_at)
                .await?
                .ok_or(ApiError::RateLimited(SNS_BACKLOG_WAIT))?;
            tracing::info!(target: "edi_inbox::security", kind = control.kind.as_str(), topic_arn = %Logged(&control.topic_arn),
                "SNS subscription message kept for an operator to confirm");
            Ok(Arrived::SnsKept(kept))
        }
        doors::Arrival::Interchange { body, content_type, transport } => {
            facts.transport = transport;
            let form = partner.as_ref().map_or(ResponseForm::Full, |p| p.response);
            let inbound = Inbound { body, content_type, partner: PartnerOf::Caller(partner) };
            Ok(Arrived::Interchange(
                ctx.ingest.deliver(inbound, &mut admitted.reservation, facts, received_at).await?,
                form,
            ))
        }
    }
}

/// The HTTP answer to an ingested delivery: the stored body (or acknowledgement) with its status
/// and headers.
async fn respond(
    ctx: &ApiContext,
    representation: Representation,
    ingested: &Ingested,
) -> Result<Response, ApiError> {
    let ack_wanted = representation == Representation::Ack;
    let (delivery, status, body, replayed, id) = match ingested {
        Ingested::Recorded { delivery, ack_control_number } => {
            let body = if ack_wanted {
                ack::with_control_number(&delivery.ack, *ack_control_number)
            } else {
                delivery.response.clone()
            };
            (delivery, delivery.status, body, false, delivery.id)
        }
        Ingested::Replayed { delivery, id, status, body } => {
            let body =
                if ack_wanted { ctx.store.ack(*id).await?.ok_or(ApiError::NotFound)? } else { body.clone() };
            (delivery, *status, body, true, *id)
        }
        Ingested::Conflict { delivery, original_id } => {
            return Ok(problem::conflict(*original_id, &delivery.key).into_response());
        }
        Ingested::Quarantined { entry, fresh, .. } => {
            let mut response = (StatusCode::ACCEPTED, Json(entry)).into_response();
            if !fresh {
                response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
            }
            return Ok(response);
        }
        Ingested::Bypassed(resource) => return Ok((StatusCode::OK, Json(resource)).into_response()),
    };
    let code = problem::reply_status(ingested.reply());
    let content_type = match (ack_wanted, status) {
        (true, _) => ack_media_type(delivery.envelope.standard),
        (false, Status::Processed) => "application/json",
        (false, Status::Rejected) => PROBLEM_JSON,
    };
    let (body, applied) = match status {
        Status::Processed => representation.interchange(body)?,
        Status::Rejected => (body, None),
    };
    let mut response = (code, [(header::CONTENT_TYPE, content_type)], body).into_response();
    let headers = response.headers_mut();
    headers.extend(applied);
    if replayed {
        headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    if status == Status::Processed {
        let location = format!("/v1/interchanges/{id}");
        let name = if replayed { header::CONTENT_LOCATION } else { header::LOCATION };
        headers.insert(name, HeaderValue::from_str(&location).map_err(|_| ApiError::Internal)?);
    }
    Ok(response)
}

/// Read one interchange.
///
/// The same JSON as the POST response; a rejected interchange has `status: "rejected"` and its problem
/// under `error`.
#[utoipa::path(
    get,
    path = "/v1/interchanges/{id}",
    tag = "interchanges",
    security((), ("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Interchange id"),
        ("Prefer" = Option<String>, Header, description = "`return=minimal` (RFC 7240): the `MinimalInterchange` of a processed interchange")),
    responses(
        (status = 200, description = "The interchange", body = InterchangeResource),
    )
)]
pub async fn get_interchange(
    State(ctx): State<ApiContext>,
    Id(id): Id,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let row = ctx.store.interchange(id).await?.ok_or(ApiError::NotFound)?;
    let (body, applied) = match row.status {
        Status::Processed => match Representation::asked(&headers) {
            Some(Representation::Minimal) => Representation::Minimal.interchange(row.response_body)?,
            _ => (row.response_body, None),
        },
        Status::Rejected => {
            (serde_json::to_string(&rejected_resource(row)?).map_err(|_| ApiError::Internal)?, None)
        }
    };
    let mut response =
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response();
    response.headers_mut().extend(applied);
    Ok(response)
}

/// Read the acknowledgement sent for an interchange.
///
/// X12: TA1 and/or 997 (versions before 00501) or 999; EDIFACT: CONTRL. Generated once, when the
/// interchange was recorded, with its own control number from the partner's counter; this returns the
/// newest (a corrected resend of a rejected interchange gets a new one).
#[utoipa::path(
    get,
    path = "/v1/interchanges/{id}/ack",
    tag = "interchanges",
    security((), ("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Interchange id")),
    responses(
        (status = 200, description = "The acknowledgement", content(("application/edi-x12"), ("application/edifact"))),
    )
)]
pub async fn get_ack(State(ctx): State<ApiContext>, Id(id): Id) -> Result<Response, ApiError> {
    let row = ctx.store.interchange(id).await?.ok_or(ApiError::NotFound)?;
    let ack = ctx.store.ack(id).await?.ok_or(ApiError::NotFound)?;
    Ok(([(header::CONTENT_TYPE, ack_media_type(row.standard))], ack).into_response())
}

/// List the delivery attempts of an interchange.
///
/// Every attempt is audited — first delivery, replays, conflicting resends — with its partner,
/// transport metadata, outcome and time; never credentials.
#[utoipa::path(
    get,
    path = "/v1/interchanges/{id}/deliveries",
    tag = "interchanges",
    security((), ("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Interchange id"), PageQuery),
    responses(
        (status = 200, description = "One page of the attempts, oldest first", body = Page<DeliveryAttempt>),
    )
)]
pub async fn list_deliveries(
    State(ctx): State<ApiContext>,
    Id(id): Id,
    Params(page): Params<PageQuery>,
) -> Result<Json<Page<DeliveryAttempt>>, ApiError> {
    ctx.store.interchange(id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(ctx.store.delivery_attempts(id, page.cursor, page_limit(page.limit)?).await?))
}

/// A rejected interchange as a resource: envelope facts from its row, the stored problem as `error`.
fn rejected_resource(row: StoredInterchange) -> Result<InterchangeResource, ApiError> {
    Ok(InterchangeResource {
        id: row.id,
        status: Status::Rejected,
        standard: row.standard,
        sender: PartyId { qualifier: row.sender_qualifier, id: row.sender_id },
        receiver: PartyId { qualifier: row.receiver_qualifier, id: row.receiver_id },
        control_number: row.control_number,
        idempotency_key: IdempotencyKey { source: row.source, message_id: row.message_id },
        payload_sha256: row.payload_sha256,
        received_at: row.received_at,
        processed_at: row.processed_at,
        documents: Vec::new(),
        invoices: Vec::new(),
        warnings: Vec::new(),
        error: Some(serde_json::from_str(&row.response_body).map_err(|_| ApiError::Internal)?),
    })
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InterchangeQuery {
    /// Sender id (ISA06 / UNB S002 id), without qualifier.
    #[param(min_length = 1)]
    sender: Option<String>,
    /// Interchange control number as sent.
    #[param(min_length = 1)]
    control_number: Option<String>,
    status: Option<Status>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<Uuid>,
}

/// List interchanges, newest first.
#[utoipa::path(
    get,
    path = "/v1/interchanges",
    tag = "interchanges",
    security((), ("admin_token" = [])),
    params(InterchangeQuery),
    responses(
        (status = 200, description = "One page of interchanges", body = Page<InterchangeSummary>),
    )
)]
pub async fn list_interchanges(
    State(ctx): State<ApiContext>,
    Params(query): Params<InterchangeQuery>,
) -> Result<Json<Page<InterchangeSummary>>, ApiError> {
    let filter = InterchangeFilter {
        sender: non_empty("sender", query.sender)?,
        control_number: non_empty("control_number", query.control_number)?,
        status: query.status,
        cursor: query.cursor,
        limit: page_limit(query.limit)?,
        ..InterchangeFilter::default()
    };
    Ok(Json(ctx.store.interchanges(&filter).await?))
}
