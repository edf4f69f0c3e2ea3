//! The OpenAPI 3.1 document, generated from the handlers and types. `openapi/openapi.json` is this
//! document as committed; a test fails when they differ.

use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    modifiers(&Security),
    servers((url = "/", description = "This service (the document is served by it)")),
    components(schemas(crate::inbox::resource::BypassedResource, crate::inbox::quarantine::ReleaseAs)),
    info(
        title = "edi-inbox",
        description = "Exactly-once HTTP receiver for X12 810 and UN/EDIFACT INVOIC interchanges (Inbox pattern).\n\n\
Errors are RFC 9457 `application/problem+json` documents whose `type` is one of the stable relative URIs \
`/problems/malformed-interchange` (400), `/problems/invalid-transport` (400), `/problems/invalid-request` (400), `/problems/not-found` (404), \
`/problems/unauthorized` (401), `/problems/forbidden-sender` (403), `/problems/control-number-conflict` (409), \
`/problems/already-exists` (409), `/problems/wrong-state` (409), `/problems/payload-too-large` (413), \
`/problems/unsupported-media-type` (415), `/problems/invalid-interchange` (422), `/problems/rate-limited` (429), \
`/problems/internal-error` (500) and `/problems/unavailable` (503). EDI errors carry \
`segment_position`, `segment` and `element`.\n\n\
With partner authentication (`--auth partners`, the default off loopback) deliveries need a partner's API key, \
Standard Webhooks signature, Pub/Sub push token, SNS topic or AS2 signature, and the read endpoints need the admin token; on loopback in open mode nothing \
is asked.\n\n\
With an accounting API configured (`EDI_INBOX_ACCOUNTING_URL`), every recorded invoice gets an outbox message in \
the same transaction; a relay POSTs it to that API with an `Idempotency-Key` and shows the result on the invoice \
(`accounting`). Dead messages are listed, retried and discarded under `/v1/admin/outbox`.\n\n\
Push brokers deliver as they already do: CloudEvents (binary and structured, with the webhook validation \
handshake), Google Pub/Sub push (its OIDC token verified), AWS SNS (its signature verified) and AS2 gateways \
(S/MIME decrypted and verified, answered with an MDN) all POST to `/v1/interchanges`; the key stays the EDI key. \
Quarantined deliveries and SNS confirmations wait for operators under `/v1/admin/quarantine` and \
`/v1/admin/sns-subscriptions`. `edi-inbox consume` reads the same interchanges from RabbitMQ or NATS JetStream.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
        contact(name = "The edi-inbox maintainers")
    ),
    tags(
        (name = "interchanges", description = "Receive interchanges exactly once and read them back"),
        (name = "invoices", description = "Invoices booked from processed interchanges"),
        (name = "operations", description = "Probes and metrics"),
        (name = "as2", description = "What AS2 partners need of this service: its certificate"),
        (name = "admin", description = "Partner registry, accounting outbox, quarantine and SNS subscriptions (admin token)"),
    )
)]
pub struct ApiDoc;

/// The credentials a person can give in Swagger UI's Authorize dialog: a partner's API key, a Pub/Sub
/// push token, the admin token. A signed delivery (SNS, AS2, Standard Webhooks) proves its partner
/// by a signature over its body, which no security scheme describes: the receive operation's
/// description and its header parameters say how.
struct Security;

impl utoipa::Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A partner's API key (`eik_…`), with partner authentication. In open mode (`--auth open`, \
                         or `auto` on a loopback address without partners) nothing is needed: leave it empty",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "pubsub_oidc",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A Google-signed OIDC token of a Pub/Sub push subscription, for the configured \
                         `--pubsub-audience`, issued to a partner's `--pubsub-account`",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "admin_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("EDI_INBOX_ADMIN_TOKEN"))
                    .build(),
            ),
        );
    }
}

/// Declares the 401 of every operation that `guarded` (the admin-token guard in partners mode) says
/// may answer it, and its 429 (an address that presented too many wrong tokens lately is refused
/// before its token is compared), so that the document cannot drift from the guard.
pub fn declare_unauthorized(
    doc: &mut utoipa::openapi::OpenApi,
    guarded: impl Fn(&axum::http::Method, &str) -> bool,
) {
    use axum::http::Method;
    for (path, item) in doc.paths.paths.iter_mut() {
        let operations = [
            (Method::GET, &mut item.get),
            (Method::PUT, &mut item.put),
            (Method::POST, &mut item.post),
            (Method::DELETE, &mut item.delete),
            (Method::OPTIONS, &mut item.options),
        ];
        for (method, operation) in operations {
            if let Some(operation) = operation.as_mut().filter(|_| guarded(&method, path)) {
                operation.responses.responses.entry("401".into()).or_insert_with(unauthorized);
                operation.responses.responses.entry("429".into()).or_insert_with(guessing);
            }
        }
    }
}

/// The 401 of a guarded route: an `unauthorized` problem.
fn unauthorized() -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    problem("`unauthorized`: the admin token is missing or wrong (partners mode)")
}

/// The 429 of a guarded route: a `rate-limited` problem, with `Retry-After`.
fn guessing() -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    problem(
        "`rate-limited`: this address presented too many wrong tokens lately (they count with its refusals, \
         `EDI_INBOX_REFUSALS_PER_MINUTE`); no token is compared until `Retry-After` seconds have passed",
    )
}

/// Declares the refusals the extractors (`extract::Id`, `extract::Params`) answer before a handler
/// runs, for every operation whose parameters they parse: 400 `invalid-request` for a query string
/// or a UUID path parameter that does not parse, and 404 `not-found` for a path naming nothing. An
/// operation that declares its own 400 keeps it.
pub fn declare_refusals(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::path::{Parameter, ParameterIn};
    use utoipa::openapi::schema::{KnownFormat, Schema, SchemaFormat};
    for item in doc.paths.paths.values_mut() {
        let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.options];
        for operation in operations.into_iter().flatten() {
            let parameters: Vec<&Parameter> = operation
                .parameters
                .iter()
                .flatten()
                .filter_map(|p| match p {
                    RefOr::T(p) => Some(p),
                    RefOr::Ref(_) => None,
                })
                .collect();
            let by_path = parameters.iter().any(|p| p.parameter_in == ParameterIn::Path);
            let uuid_path = parameters.iter().any(|p| {
                p.parameter_in == ParameterIn::Path
                    && matches!(&p.schema, Some(RefOr::T(Schema::Object(object)))
                        if object.format == Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
            });
            let by_query = parameters.iter().any(|p| p.parameter_in == ParameterIn::Query);
            let responses = &mut operation.responses.responses;
            if uuid_path {
                responses
                    .entry("400".into())
                    .or_insert_with(|| problem("`invalid-request`: an id is not a UUID"));
            } else if by_query {
                responses
                    .entry("400".into())
                    .or_insert_with(|| problem("`invalid-request`: a query parameter is not valid"));
            }
            if by_path {
                responses.entry("404".into()).or_insert_with(|| problem("`not-found`"));
            }
        }
    }
}

/// A response whose body is a problem document.
fn problem(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    ResponseBuilder::new()
        .description(description)
        .content(
            super::problem::PROBLEM_JSON,
            ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build(),
        )
        .build()
        .into()
}

/// The document as pretty JSON with a trailing newline, exactly as committed, with what utoipa's
/// macros cannot say about the delivery:
/// - its raw X12 request type comes first, as Swagger UI offers the first one (utoipa sorts them,
///   which put `application/cloudevents+json` there);
/// - `application/octet-stream` and AS2's S/MIME types are binary strings, so that generated clients
///   send a file's bytes;
/// - schemas nothing refers to are dropped (utoipa registers a generic's argument, e.g. the
///   `DeliveryAttempt` of `Page<DeliveryAttempt>`, although the page inlines it);
/// - its 200 is any of the replayed interchange (whole or minimal), a bypassed one and a kept SNS
///   message (`anyOf`: a replayed interchange also has every field of a bypassed one; generated
///   clients try them in this order).
pub fn to_json(doc: &utoipa::openapi::OpenApi) -> String {
    let mut value = serde_json::to_value(doc).unwrap_or_default();
    let delivery = "/paths/~1v1~1interchanges/post";
    for binary in ["application~1octet-stream", "application~1pkcs7-mime", "multipart~1signed"] {
        if let Some(schema) = value.pointer_mut(&format!("{delivery}/requestBody/content/{binary}/schema")) {
            *schema = serde_json::json!({"type": "string", "format": "binary"});
        }
    }
    if let Some(schema) =
        value.pointer_mut(&format!("{delivery}/responses/200/content/application~1json/schema"))
    {
        *schema = serde_json::json!({"anyOf": [
            {"$ref": "#/components/schemas/InterchangeResource"},
            {"$ref": "#/components/schemas/MinimalInterchange"},
            {"$ref": "#/components/schemas/BypassedResource"},
            {"$ref": "#/components/schemas/SnsSubscription"},
        ]});
    }
    if let Some(content) = value
        .pointer_mut(&format!("{delivery}/requestBody/content"))
        .and_then(serde_json::Value::as_object_mut)
    {
        let mut ordered = serde_json::Map::new();
        for first in ["application/edi-x12", "application/edifact"] {
            if let Some(media) = content.shift_remove(first) {
                ordered.insert(first.to_owned(), media);
            }
        }
        ordered.append(content);
        *content = ordered;
    }
    drop_unreferenced_schemas(&mut value);
    let mut json = serde_json::to_string_pretty(&value).unwrap_or_default();
    json.push('\n');
    json
}

/// The description of `POST /v1/interchanges` (its doors, answers and policies), kept here with the
/// rest of the document's prose rather than above the handler.
pub const RECEIVE: &str = r#"The idempotency key is read from the envelope: sender qualifier and id plus the interchange
control number (ISA05/ISA06 + ISA13, or UNB S002 + 0020). The first delivery of a key is recorded
with its invoices in one transaction and answered 201 after COMMIT; every later delivery of the same
content (even re-wrapped or with re-stamped envelope dates) is answered 200 with the original body
and `Idempotent-Replayed: true`. A rejected (422) interchange replays its 422.

The doors, told apart by their headers; the key is always the EDI key, so the same interchange
through two doors is one interchange, and each attempt's transport id is audited:
- **raw**: the body is the interchange (`application/edi-x12`, `application/edifact`, …);
- **CloudEvents binary mode**: a raw body with `ce-specversion: 1.0`, `ce-id`, `ce-source`, `ce-type`;
- **CloudEvents structured mode**: `application/cloudevents+json`, the interchange in `data` (a
  string) or `data_base64`;
- **Google Pub/Sub push**: `application/json`, the interchange base64 in `message.data`;
- **AWS SNS**: `x-amz-sns-message-type` (the body is SNS's JSON whatever its `Content-Type`):
  a `Notification` carries the interchange in `Message`; `SubscriptionConfirmation` and
  `UnsubscribeConfirmation` are answered 200 and kept for an operator (`/v1/admin/sns-subscriptions`);
- **AS2 gateway** (RFC 4130): `AS2-From` (one of the partner's AS2 names, 403 otherwise), `AS2-To`,
  `Message-ID`; the body is the EDI, or S/MIME around it (`application/pkcs7-mime` enveloped or
  compressed data, `multipart/signed`, nested in any order, binary or base64). A signature with
  the partner's registered certificate proves the partner without an API key. With
  `Disposition-Notification-To` the answer is an MDN (`multipart/report`, signed as
  `multipart/signed` when `Disposition-Notification-Options` asks): HTTP 200 with disposition
  `processed` on first delivery and every resend, `processed/error` with a modifier for a refusal
  (`decryption-failed`, `authentication-failed`, `integrity-check-failed`,
  `insufficient-message-security`, `unexpected-processing-error` with the problem's detail); or,
  with `Receipt-Delivery-Option` on one of the partner's registered MDN URLs, an empty 200 and
  the MDN POSTed there. A 429 or 503 stays HTTP, for the gateway to retry;
- **Standard Webhooks**: a raw body with `webhook-id`, `webhook-timestamp`, `webhook-signature`.

A signed delivery needs no API key: its signature proves the partner, which is why the security
of this operation also allows none. An SNS message signed by SNS (SignatureVersion 1 or 2) with a
certificate from a trusted `SigningCertURL`, of a partner's topic; an AS2 message S/MIME-signed
with a certificate registered for the partner whose AS2 name `AS2-From` is; a Standard Webhooks
v1 `webhook-signature` (HMAC-SHA256 with the partner's `whsec_` secret over `webhook-id`,
`webhook-timestamp` and the body), the partner named in the `partner` query parameter. An
unsigned delivery needs the partner's API key (partner authentication) or nothing (open mode).

Partners whose conflict policy is `quarantine` get 202 (held) instead of 409 or 422; partners'
naturally idempotent document types get 200 `bypassed`."#;

/// Removes the component schemas that no `$ref` names, until none is left.
fn drop_unreferenced_schemas(document: &mut serde_json::Value) {
    loop {
        let text = document.to_string();
        let Some(schemas) =
            document.pointer_mut("/components/schemas").and_then(serde_json::Value::as_object_mut)
        else {
            return;
        };
        let unused: Vec<String> = schemas
            .keys()
            .filter(|name| !text.contains(&format!("\"#/components/schemas/{name}\"")))
            .cloned()
            .collect();
        if unused.is_empty() {
            return;
        }
        for name in unused {
            schemas.shift_remove(&name);
        }
    }
}
