//! The front doors. Push brokers, AS2 gateways and plain clients deliver the same interchange in
//! different wrappings: raw (optionally with CloudEvents binary-mode `ce-*` headers, AS2 headers or
//! Standard Webhooks headers), a structured CloudEvent (`application/cloudevents+json`), a Google
//! Pub/Sub push message (`application/json`), or an AWS SNS message (`x-amz-sns-message-type`).
//! [`recognise`] reads the headers before the body (so a refusal costs no body), [`unwrap`] takes the
//! interchange out of the body once the caller is proven; both are pure. [`validate_webhook`] answers
//! the CloudEvents webhook validation handshake.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::edi::{self, Standard};
use crate::http::ApiContext;
use crate::http::problem::{ApiError, Problem};
use crate::inbox::transport::{Door, SnsControl, SnsType, Transport};
use crate::partners::sns::SnsMessage;

/// Media types an interchange may be posted as; parameters such as `charset` are ignored.
pub const EDI_MEDIA_TYPES: [&str; 5] = [
    "application/edi-x12",
    "application/edifact",
    "application/edi-consent",
    "text/plain",
    "application/octet-stream",
];

/// A structured CloudEvent.
pub const CLOUDEVENTS_JSON: &str = "application/cloudevents+json";

/// The header of the CloudEvents webhook validation handshake, and of its answer.
pub const WEBHOOK_REQUEST_ORIGIN: &str = "webhook-request-origin";
const WEBHOOK_ALLOWED_ORIGIN: &str = "webhook-allowed-origin";
const WEBHOOK_ALLOWED_RATE: &str = "webhook-allowed-rate";

/// CloudEvents webhook validation handshake.
///
/// A CloudEvents webhook sender (Azure Event Grid, Knative, …) asks whether it may push here before
/// its first delivery. Configured origins (`--webhook-allowed-origins`) get 200 with
/// `WebHook-Allowed-Origin` and `WebHook-Allowed-Rate` (requests per minute, `*` for no limit);
/// others get 403. Needs no credential in any mode; without `WebHook-Request-Origin` this is an
/// ordinary OPTIONS request (401 in partners mode without the admin token).
#[utoipa::path(
    options,
    path = "/v1/interchanges",
    tag = "interchanges",
    security(()),
    params(
        ("WebHook-Request-Origin" = String, Header, min_length = 1, description = "The sender's origin, e.g. `eventgrid.azure.net`"),
        ("WebHook-Request-Rate" = Option<String>, Header, description = "Requests per minute the sender would like"),
    ),
    responses(
        (status = 200, description = "The origin may push here",
            headers(("WebHook-Allowed-Origin" = String, description = "The origin, or `*`"),
                ("WebHook-Allowed-Rate" = String, description = "Requests per minute allowed"),
                ("Allow" = String, description = "`POST, OPTIONS`"))),
        (status = 400, description = "`invalid-request`: no `WebHook-Request-Origin`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`forbidden-sender`: the origin is not allowed", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn validate_webhook(
    State(ctx): State<ApiContext>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let origin = header(&headers, WEBHOOK_REQUEST_ORIGIN).ok_or_else(|| {
        ApiError::BadRequest(
            "OPTIONS here is the CloudEvents webhook handshake: send WebHook-Request-Origin".into(),
        )
    })?;
    let allowed = ctx.webhook_allowed_origins.iter().find(|o| *o == "*" || o.eq_ignore_ascii_case(origin));
    let Some(allowed) = allowed else {
        crate::ingest::security_event("webhook-origin-refused");
        return Err(ApiError::Forbidden(format!("origin {origin:?} may not push CloudEvents here")));
    };
    let rate = ctx.rate_limit.to_string();
    let mut response = StatusCode::OK.into_response();
    let answer = response.headers_mut();
    for (name, value) in [
        (WEBHOOK_ALLOWED_ORIGIN, allowed.as_str()),
        (WEBHOOK_ALLOWED_RATE, &rate),
        ("allow", "POST, OPTIONS"),
    ] {
        answer.insert(name, HeaderValue::from_str(value).map_err(|_| ApiError::Internal)?);
    }
    Ok(response)
}

/// How the interchange is wrapped, as the headers tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrapping {
    /// The body is the interchange.
    Raw,
    /// A structured CloudEvent with the interchange in `data` or `data_base64`.
    CloudEvent,
    /// A Pub/Sub push message with the interchange in `message.data`.
    PubSub,
    /// An SNS message of this type.
    Sns(SnsType),
}

/// What the headers of a delivery say: its wrapping, the media type of a raw body, and the
/// transport facts the headers carry.
#[derive(Clone, Debug)]
pub struct Recognised {
    pub wrapping: Wrapping,
    pub content_type: Option<String>,
    pub transport: Transport,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty())
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::InvalidTransport(detail.into())
}

/// The media type without parameters, lowercased.
fn essence(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// Reads the door from the headers alone, cheapest checks first.
pub fn recognise(headers: &HeaderMap) -> Result<Recognised, ApiError> {
    let content_type = match headers.get(header::CONTENT_TYPE) {
        None => None,
        Some(value) => {
            Some(value.to_str().map_err(|_| ApiError::UnsupportedMediaType(format!("{value:?}")))?.to_owned())
        }
    };
    let essence = content_type.as_deref().map(essence);
    if let Some(kind) = header(headers, "x-amz-sns-message-type") {
        let kind =
            SnsType::parse(kind).ok_or_else(|| invalid(format!("unknown SNS message type {kind:?}")))?;
        let transport = Transport::new(Door::Sns, header(headers, "x-amz-sns-message-id"));
        return Ok(Recognised { wrapping: Wrapping::Sns(kind), content_type: None, transport });
    }
    let (wrapping, transport) = match essence.as_deref() {
        Some(CLOUDEVENTS_JSON) => (Wrapping::CloudEvent, Transport::new(Door::Cloudevents, None)),
        Some("application/json") => (Wrapping::PubSub, Transport::new(Door::Pubsub, None)),
        None => (Wrapping::Raw, raw_transport(headers)?),
        Some(edi) if EDI_MEDIA_TYPES.contains(&edi) => (Wrapping::Raw, raw_transport(headers)?),
        Some(secured)
            if super::as2::SECURED_MEDIA_TYPES.contains(&secured) && headers.contains_key("as2-from") =>
        {
            (Wrapping::Raw, raw_transport(headers)?)
        }
        Some(_) => return Err(ApiError::UnsupportedMediaType(content_type.unwrap_or_default())),
    };
    let content_type = (wrapping == Wrapping::Raw).then_some(content_type).flatten();
    Ok(Recognised { wrapping, content_type, transport })
}

/// The transport of a raw body: CloudEvents binary mode, an AS2 gateway, a Standard Webhooks
/// sender, or a plain POST.
fn raw_transport(headers: &HeaderMap) -> Result<Transport, ApiError> {
    let h = |name| header(headers, name);
    if let Some(version) = h("ce-specversion") {
        if version != "1.0" {
            return Err(invalid(format!("CloudEvents specversion {version:?} is not 1.0")));
        }
        let (Some(id), Some(source), Some(kind)) = (h("ce-id"), h("ce-source"), h("ce-type")) else {
            return Err(invalid("a binary-mode CloudEvent needs ce-id, ce-source and ce-type"));
        };
        return Ok(Transport::new(Door::Cloudevents, Some(id))
            .with("mode", Some("binary"))
            .with("source", Some(source))
            .with("type", Some(kind))
            .with("subject", h("ce-subject"))
            .with("time", h("ce-time")));
    }
    if let Some(from) = h("as2-from") {
        // RFC 4130 quotes names with spaces: the name is what is inside.
        let unquoted = |name: &str| name.trim_matches('"').to_owned();
        return Ok(Transport::new(Door::As2, h("message-id"))
            .with("as2_from", Some(unquoted(from)))
            .with("as2_to", h("as2-to").map(unquoted))
            .with("as2_version", h("as2-version"))
            .with("disposition_notification_to", h("disposition-notification-to"))
            .with("disposition_notification_options", h("disposition-notification-options"))
            .with("receipt_delivery_option", h("receipt-delivery-option"))
            .with("original_message_id", h("original-message-id")));
    }
    if let Some(id) = h("webhook-id") {
        return Ok(Transport::new(Door::Webhook, Some(id)).with("timestamp", h("webhook-timestamp")));
    }
    Ok(Transport::default())
}

/// What a delivery's body turned out to hold.
#[derive(Debug)]
pub enum Arrival {
    /// An interchange, with its own media type when the wrapping names one.
    Interchange { body: Bytes, content_type: Option<String>, transport: Transport },
    /// An SNS subscription or unsubscribe confirmation, kept for an operator.
    SnsControl(SnsControl),
}

/// Takes the interchange out of a wrapped body (a raw body is the interchange); an SNS message
/// whose signature was verified comes `parsed` already.
pub fn unwrap(recognised: Recognised, body: Bytes, parsed: Option<SnsMessage>) -> Result<Arrival, ApiError> {
    let Recognised { wrapping, content_type, transport } = recognised;
    if !matches!(wrapping, Wrapping::Raw) {
        crate::http::nul::refuse_in_json(&body)?;
    }
    match wrapping {
        Wrapping::Raw => Ok(Arrival::Interchange { body, content_type, transport }),
        Wrapping::CloudEvent => cloud_event(&body),
        Wrapping::PubSub => pubsub(&body),
        Wrapping::Sns(kind) => sns(kind, parsed.map_or_else(|| json(&body, "SNS message"), Ok)?),
    }
}

fn json<'a, T: Deserialize<'a>>(body: &'a [u8], what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|error| {
        let hint = match edi::standard_of(body) {
            Some(Standard::X12) => {
                "; the body is a raw X12 interchange: send it with `Content-Type: application/edi-x12`"
            }
            Some(Standard::Edifact) => {
                "; the body is a raw EDIFACT interchange: send it with `Content-Type: application/edifact`"
            }
            None => "",
        };
        invalid(format!("not a valid {what}: {error}{hint}"))
    })
}

fn base64(data: &str, what: &str) -> Result<Bytes, ApiError> {
    STANDARD
        .decode(data.trim())
        .map(Bytes::from)
        .map_err(|error| invalid(format!("{what} is not base64: {error}")))
}

/// A structured-mode CloudEvent (CloudEvents 1.0 JSON format).
#[derive(Deserialize, ToSchema)]
pub struct CloudEvent {
    specversion: String,
    id: String,
    source: String,
    #[serde(rename = "type")]
    kind: String,
    subject: Option<String>,
    time: Option<String>,
    datacontenttype: Option<String>,
    /// The interchange as a string.
    // Kept as raw JSON until it is known to be one: a huge array costs its bytes, not a value tree.
    #[schema(value_type = Option<String>)]
    data: Option<Box<RawValue>>,
    /// The interchange, base64.
    data_base64: Option<String>,
}

fn cloud_event(body: &[u8]) -> Result<Arrival, ApiError> {
    let event: CloudEvent = json(body, "structured CloudEvent")?;
    if event.specversion != "1.0" {
        return Err(invalid(format!("CloudEvents specversion {:?} is not 1.0", event.specversion)));
    }
    if [&event.id, &event.source, &event.kind].iter().any(|v| v.is_empty()) {
        return Err(invalid("a CloudEvent needs a non-empty id, source and type"));
    }
    if let Some(media_type) = &event.datacontenttype
        && !EDI_MEDIA_TYPES.contains(&essence(media_type).as_str())
    {
        return Err(ApiError::UnsupportedMediaType(media_type.clone()));
    }
    let body = match (event.data, event.data_base64) {
        (Some(data), None) if data.get().starts_with('"') => {
            Bytes::from(serde_json::from_str::<String>(data.get()).map_err(|e| invalid(e.to_string()))?)
        }
        (None, Some(encoded)) => base64(&encoded, "data_base64")?,
        (Some(_), None) => return Err(invalid("CloudEvent data must be the interchange as a string")),
        (Some(_), Some(_)) => return Err(invalid("a CloudEvent has data or data_base64, not both")),
        (None, None) => return Err(invalid("the CloudEvent has no data")),
    };
    let transport = Transport::new(Door::Cloudevents, Some(&event.id))
        .with("mode", Some("structured"))
        .with("source", Some(event.source))
        .with("type", Some(event.kind))
        .with("subject", event.subject)
        .with("time", event.time);
    Ok(Arrival::Interchange { body, content_type: event.datacontenttype, transport })
}

/// A Pub/Sub push request body.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushRequest {
    message: PushMessage,
    subscription: String,
    delivery_attempt: Option<i64>,
}

/// A Pub/Sub message.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushMessage {
    /// The interchange, base64 (a message without data is refused).
    #[schema(value_type = String, required = true)]
    data: Option<String>,
    // Kept as raw JSON: only its first bytes are recorded (see `attributes`).
    #[schema(value_type = Object, required = false)]
    #[serde(default, deserialize_with = "present")]
    attributes: Option<Box<RawValue>>,
    message_id: String,
    publish_time: Option<String>,
    ordering_key: Option<String>,
}

/// A field that is there, `null` included (which `Option` would read as absent).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Box<RawValue>>, D::Error> {
    <Box<RawValue> as Deserialize>::deserialize(deserializer).map(Some)
}

fn pubsub(body: &[u8]) -> Result<Arrival, ApiError> {
    let push: PushRequest = json(body, "Pub/Sub push message")?;
    let message = push.message;
    if message.message_id.is_empty() || push.subscription.is_empty() {
        return Err(invalid("a Pub/Sub push message needs message.messageId and subscription"));
    }
    let data = message.data.ok_or_else(|| invalid("the Pub/Sub message has no data"))?;
    if message.attributes.as_deref().is_some_and(|raw| !raw.get().starts_with('{')) {
        return Err(invalid("message.attributes must be an object of strings"));
    }
    let body = base64(&data, "message.data")?;
    let transport = Transport::new(Door::Pubsub, Some(&message.message_id))
        .with("subscription", Some(push.subscription))
        .with("publish_time", message.publish_time)
        .with("delivery_attempt", push.delivery_attempt)
        .with("ordering_key", message.ordering_key)
        .with("attributes", message.attributes.as_deref().and_then(attributes));
    Ok(Arrival::Interchange { body, content_type: None, transport })
}

/// Raw attributes this long at most are recorded as their JSON object; longer ones as their first
/// bytes (the transport metadata is cut to 2 KiB anyway).
const MAX_ATTRIBUTES_BYTES: usize = 2048;

/// A Pub/Sub message's attributes as the audit trail records them: the object when it is small and
/// not empty, else the start of its text. A 10 MiB attribute never becomes a tree of values.
fn attributes(raw: &RawValue) -> Option<Value> {
    let text = raw.get();
    if text.len() > MAX_ATTRIBUTES_BYTES {
        return Some(Value::String(crate::inbox::truncated(text, MAX_ATTRIBUTES_BYTES)));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) if map.is_empty() => None,
        Ok(Value::Null) => None,
        Ok(value) => Some(value),
        Err(_) => None,
    }
}

/// The longest value of each SNS field kept or recorded (AWS's own are far shorter: a token is 256
/// characters, an ARN at most 256, a subject 100); a longer one is refused, never stored.
const SNS_FIELD_BOUNDS: [(&str, usize); 10] = [
    ("MessageId", 128),
    ("TopicArn", 1024),
    ("Token", 1024),
    ("SubscribeURL", 2048),
    ("Message (of a confirmation)", 4096),
    ("Subject", 256),
    ("Timestamp", 64),
    ("SignatureVersion", 8),
    ("Signature", 1024),
    ("SigningCertURL", 2048),
];

/// Every field within [`SNS_FIELD_BOUNDS`] (a notification's `Message`, the interchange, is
/// bounded by the body limit instead).
fn check_bounds(sns: &SnsMessage, kind: SnsType) -> Result<(), ApiError> {
    let len = |field: &Option<String>| field.as_deref().map_or(0, str::len);
    let message = if kind == SnsType::Notification { 0 } else { len(&sns.message) };
    let lengths = [
        sns.message_id.len(),
        sns.topic_arn.len(),
        len(&sns.token),
        len(&sns.subscribe_url),
        message,
        len(&sns.subject),
        len(&sns.timestamp),
        len(&sns.signature_version),
        len(&sns.signature),
        len(&sns.signing_cert_url),
    ];
    match SNS_FIELD_BOUNDS.iter().zip(lengths).find(|((_, max), length)| length > max) {
        Some(((name, max), length)) => {
            Err(invalid(format!("the SNS {name} has {length} bytes; at most {max} are accepted")))
        }
        None => Ok(()),
    }
}

fn sns(kind: SnsType, message: SnsMessage) -> Result<Arrival, ApiError> {
    if SnsType::parse(&message.kind) != Some(kind) {
        return Err(invalid(format!(
            "x-amz-sns-message-type says {} but the message is a {}",
            kind.as_str(),
            message.kind
        )));
    }
    if message.message_id.is_empty() || message.topic_arn.is_empty() {
        return Err(invalid("an SNS message needs MessageId and TopicArn"));
    }
    check_bounds(&message, kind)?;
    if kind != SnsType::Notification {
        let (Some(token), Some(subscribe_url)) = (message.token, message.subscribe_url) else {
            return Err(invalid(format!("an SNS {} needs Token and SubscribeURL", kind.as_str())));
        };
        return Ok(Arrival::SnsControl(SnsControl {
            kind,
            message_id: message.message_id,
            topic_arn: message.topic_arn,
            token,
            subscribe_url,
            message: message.message,
            signature_version: message.signature_version,
            signature: message.signature,
            signing_cert_url: message.signing_cert_url,
            timestamp: message.timestamp,
        }));
    }
    let body = Bytes::from(message.message.ok_or_else(|| invalid("the SNS notification has no Message"))?);
    let transport = Transport::new(Door::Sns, Some(&message.message_id))
        .with("topic_arn", Some(message.topic_arn))
        .with("subject", message.subject)
        .with("timestamp", message.timestamp)
        .with("signature_version", message.signature_version)
        .with("signature", message.signature)
        .with("signing_cert_url", message.signing_cert_url);
    Ok(Arrival::Interchange { body, content_type: None, transport })
}

#[cfg(test)]
mod tests {
    use super::super::examples::{EXAMPLE_EDIFACT, example_pubsub_push, example_x12};
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (header::HeaderName::from_static(name), HeaderValue::from_str(value).unwrap())
            })
            .collect()
    }

    fn interchange(arrival: Arrival) -> (Bytes, Transport) {
        match arrival {
            Arrival::Interchange { body, transport, .. } => (body, transport),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_example_interchanges_are_valid_invoices_each_under_its_own_key() {
        let mut keys = std::collections::HashSet::new();
        let examples = [9144, 9145, 9146, 9147, 9149, 9150].map(example_x12);
        for example in examples.iter().chain([&EXAMPLE_EDIFACT.to_owned()]) {
            let interchange = crate::edi::read(example.as_bytes()).unwrap();
            let documents = interchange.documents().unwrap();
            assert!(documents[0].invoice.is_some() && documents[0].warnings.is_empty(), "{documents:?}");
            assert!(keys.insert(interchange.envelope.control_number.clone()), "{example}");
        }
        // Nor any fixture's: an example tried in Swagger UI never replays or conflicts with one.
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for folder in ["x12", "edifact", "booking", "public"] {
            for file in std::fs::read_dir(fixtures.join(folder)).unwrap() {
                let path = file.unwrap().path();
                let bytes = std::fs::read(&path).unwrap();
                let Ok(interchange) = crate::edi::read(&bytes) else { continue };
                let key = &interchange.envelope.control_number;
                assert!(!keys.contains(key), "{} uses an example's control number {key}", path.display());
            }
        }
        let pushed = unwrap(
            recognise(&headers(&[("content-type", "application/json")])).unwrap(),
            Bytes::from(example_pubsub_push().to_string()),
            None,
        );
        assert_eq!(&interchange_of(pushed)[..], example_x12(9147).as_bytes());
    }

    fn interchange_of(arrival: Result<Arrival, ApiError>) -> Bytes {
        interchange(arrival.unwrap()).0
    }

    #[test]
    fn the_headers_name_the_door() {
        let door = |pairs: &[(&'static str, &str)]| {
            recognise(&headers(pairs)).map(|r| (r.wrapping, r.transport.door))
        };
        assert_eq!(door(&[]).unwrap(), (Wrapping::Raw, Door::Direct));
        assert_eq!(door(&[("content-type", "application/json")]).unwrap(), (Wrapping::PubSub, Door::Pubsub));
        assert_eq!(
            door(&[("content-type", "application/cloudevents+json; charset=utf-8")]).unwrap(),
            (Wrapping::CloudEvent, Door::Cloudevents)
        );
        assert_eq!(
            door(&[
                ("content-type", "text/plain; charset=UTF-8"),
                ("x-amz-sns-message-type", "Notification")
            ])
            .unwrap(),
            (Wrapping::Sns(SnsType::Notification), Door::Sns)
        );
        assert_eq!(
            door(&[("as2-from", "ACME"), ("message-id", "<1@acme>")]).unwrap(),
            (Wrapping::Raw, Door::As2)
        );
        assert_eq!(door(&[("webhook-id", "msg_1")]).unwrap(), (Wrapping::Raw, Door::Webhook));
        assert!(matches!(
            door(&[("content-type", "application/xml")]),
            Err(ApiError::UnsupportedMediaType(_))
        ));
        assert!(matches!(door(&[("x-amz-sns-message-type", "Other")]), Err(ApiError::InvalidTransport(_))));
        assert!(matches!(
            door(&[("ce-specversion", "1.0"), ("ce-id", "1")]),
            Err(ApiError::InvalidTransport(_))
        ));
        assert!(matches!(door(&[("ce-specversion", "0.3")]), Err(ApiError::InvalidTransport(_))));
    }

    #[test]
    fn wrapped_interchanges_come_out_whole() {
        let pubsub = recognise(&headers(&[("content-type", "application/json")])).unwrap();
        let body = r#"{"message":{"data":"SVNBKg==","messageId":"42","publishTime":"2026-01-01T00:00:00Z","attributes":{"a":"b"}},"subscription":"projects/p/subscriptions/s","deliveryAttempt":3}"#;
        let (edi, transport) = interchange(unwrap(pubsub.clone(), Bytes::from(body), None).unwrap());
        assert_eq!((&edi[..], transport.id.as_deref()), (&b"ISA*"[..], Some("42")));
        assert_eq!(transport.meta["delivery_attempt"], 3);
        for bad in [
            r#"{"message":{"messageId":"1"},"subscription":"s"}"#,
            r#"{"message":{"data":"!!","messageId":"1"},"subscription":"s"}"#,
            "[]",
        ] {
            assert!(
                matches!(unwrap(pubsub.clone(), Bytes::from(bad), None), Err(ApiError::InvalidTransport(_))),
                "{bad}"
            );
        }
        let event = recognise(&headers(&[("content-type", CLOUDEVENTS_JSON)])).unwrap();
        let body = r#"{"specversion":"1.0","id":"e1","source":"/acme","type":"edi.invoice","datacontenttype":"application/edi-x12","data":"ISA*"}"#;
        let (edi, transport) = interchange(unwrap(event.clone(), Bytes::from(body), None).unwrap());
        assert_eq!((&edi[..], transport.id.as_deref()), (&b"ISA*"[..], Some("e1")));
        let json_data = r#"{"specversion":"1.0","id":"e1","source":"/acme","type":"t","data":{"a":1}}"#;
        assert!(matches!(
            unwrap(event.clone(), Bytes::from(json_data), None),
            Err(ApiError::InvalidTransport(_))
        ));
        let xml = r#"{"specversion":"1.0","id":"e1","source":"/acme","type":"t","datacontenttype":"application/xml","data":"<a/>"}"#;
        assert!(matches!(unwrap(event, Bytes::from(xml), None), Err(ApiError::UnsupportedMediaType(_))));
    }

    #[test]
    fn sns_types_must_agree_and_confirmations_are_kept() {
        let confirm = recognise(&headers(&[("x-amz-sns-message-type", "SubscriptionConfirmation")])).unwrap();
        let body = r#"{"Type":"SubscriptionConfirmation","MessageId":"m1","Token":"t","TopicArn":"arn:aws:sns:eu-west-1:1:edi","Message":"confirm","SubscribeURL":"https://sns.example/?Action=ConfirmSubscription","Timestamp":"2026-01-01T00:00:00.000Z","SignatureVersion":"1","Signature":"c2ln","SigningCertURL":"https://sns.example/cert.pem"}"#;
        match unwrap(confirm, Bytes::from(body), None).unwrap() {
            Arrival::SnsControl(control) => {
                assert_eq!((control.kind, control.token.as_str()), (SnsType::SubscriptionConfirmation, "t"))
            }
            other => panic!("{other:?}"),
        }
        let notification = recognise(&headers(&[("x-amz-sns-message-type", "Notification")])).unwrap();
        assert!(matches!(unwrap(notification, Bytes::from(body), None), Err(ApiError::InvalidTransport(_))));
    }
}
