//! The OpenAPI 3.1 document, generated from the handlers and types. `openapi/openapi.json` is this
//! document as committed; a test fails when they differ.

use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "edi-inbox",
        description = "Exactly-once HTTP receiver for X12 810 and UN/EDIFACT INVOIC interchanges (Inbox pattern).\n\n\
Errors are RFC 9457 `application/problem+json` documents whose `type` is one of the stable relative URIs \
`/problems/malformed-interchange` (400), `/problems/invalid-request` (400), `/problems/not-found` (404), \
`/problems/control-number-conflict` (409), `/problems/payload-too-large` (413), \
`/problems/unsupported-media-type` (415), `/problems/invalid-interchange` (422), \
`/problems/internal-error` (500) and `/problems/unavailable` (503). EDI errors carry \
`segment_position`, `segment` and `element`.",
        license(name = "MIT OR Apache-2.0")
    ),
    tags(
        (name = "interchanges", description = "Receive interchanges exactly once and read them back"),
        (name = "invoices", description = "Invoices booked from processed interchanges"),
        (name = "operations", description = "Probes"),
    )
)]
pub struct ApiDoc;

/// The document as pretty JSON with a trailing newline, exactly as committed.
pub fn to_json(doc: &utoipa::openapi::OpenApi) -> String {
    let mut json = doc.to_pretty_json().unwrap_or_default();
    json.push('\n');
    json
}
