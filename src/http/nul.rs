//! The NUL character refused at the edge. No EDI character set has it and no PostgreSQL text
//! column takes it, so a NUL that got in would fail the write on one engine and not the other (a
//! 500 that brokers retry forever, an audit batch that never lands). A request carrying one gets a
//! 400 naming where it is, the same on both engines: in the path or a query parameter (every
//! route), or in a string of a JSON push message. EDI content is checked by the parser
//! (`edi::Interchange::documents`), which names the segment and element.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::problem::ApiError;

/// Refuses a request whose path or query string decodes to text with a NUL.
pub async fn refuse_in_url(request: Request, next: Next) -> Response {
    match nul_in_url(request.uri()) {
        Some(place) => ApiError::BadRequest(format!("{place} holds a NUL character (%00), which is refused"))
            .into_response(),
        None => next.run(request).await,
    }
}

/// Where a URI's decoded path or query holds a NUL, if anywhere.
fn nul_in_url(uri: &axum::http::Uri) -> Option<String> {
    let encoded = |text: &str| text.contains('\0') || text.to_ascii_lowercase().contains("%00");
    if encoded(uri.path()) {
        return Some("the path".into());
    }
    let query = uri.query().filter(|query| encoded(query))?;
    let pairs = form_urlencoded::parse(query.as_bytes());
    let named = pairs.into_iter().find(|(name, value)| name.contains('\0') || value.contains('\0'));
    Some(named.map_or_else(|| "the query string".into(), |(name, _)| format!("query parameter {name:?}")))
}

/// Refuses a JSON body with a NUL in any string or member name, naming the first such member.
/// Cheap when there is none: one search for the escape (a raw NUL is no JSON at all).
pub fn refuse_in_json(body: &[u8]) -> Result<(), ApiError> {
    if memchr::memmem::find(body, b"\\u0000").is_none() {
        return Ok(());
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return Ok(()) };
    match nul_member(&value, "the body") {
        Some(path) => Err(ApiError::InvalidTransport(format!(
            "{path} holds a NUL character (\\u0000), which is refused"
        ))),
        None => Ok(()),
    }
}

/// The JSON path of the first string under `value` (or member name) that holds a NUL.
fn nul_member(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::String(text) => text.contains('\0').then(|| path.to_owned()),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(n, item)| nul_member(item, &format!("{path}[{n}]")))
        }
        Value::Object(members) => members.iter().find_map(|(name, member)| match name.contains('\0') {
            true => Some(format!("a member name in {path}")),
            false => nul_member(member, &format!("{path}.{name}")),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_place_holding_a_nul_is_named() {
        let place = |uri: &str| nul_in_url(&uri.parse().unwrap());
        assert_eq!(place("/v1/interchanges?sender=ACME&limit=5"), None);
        assert_eq!(
            place("/v1/interchanges?sender=A%00&limit=5").as_deref(),
            Some("query parameter \"sender\"")
        );
        assert_eq!(place("/v1/admin/partners/%00").as_deref(), Some("the path"));
        assert_eq!(place("/console/interchanges?%00=x").as_deref(), Some("query parameter \"\\0\""));
    }

    #[test]
    fn the_json_member_holding_a_nul_is_named() {
        let named = |json: &str| refuse_in_json(json.as_bytes()).unwrap_err().to_string();
        let pubsub = r#"{"message": {"messageId": "poison\u0000", "data": "SVNB"}, "subscription": "s"}"#;
        assert!(named(pubsub).starts_with("the body.message.messageId holds a NUL"), "{}", named(pubsub));
        assert!(named(r#"{"a": [1, "x\u0000"]}"#).starts_with("the body.a[1] holds"));
        assert!(refuse_in_json(br#"{"id": "an escaped backslash: \\u0000"}"#).is_ok());
        assert!(refuse_in_json(br#"{"id": "plain"}"#).is_ok());
    }
}
