//! How an interchange answer is represented, as the client asks: the acknowledgement (TA1/997/999
//! or CONTRL) instead of JSON when it accepts EDI (`Accept`), as AS2 gateways do for synchronous
//! acknowledgements, and the minimal interchange (no invoice lines) when it prefers it (`Prefer:
//! return=minimal`, RFC 7240) — a 20,000-invoice interchange then answers kilobytes, not 16 MB.

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use bytes::Bytes;

use super::problem::ApiError;
use crate::edi::Standard;
use crate::inbox::resource::MinimalInterchange;
use crate::partners::ResponseForm;

/// Set when the minimal representation was sent.
const PREFERENCE_APPLIED: HeaderName = HeaderName::from_static("preference-applied");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    /// The interchange resource as stored.
    Full,
    /// [`MinimalInterchange`].
    Minimal,
    /// The acknowledgement.
    Ack,
}

impl Representation {
    /// What the request's `Accept` and `Prefer` headers ask for; `None` when they say nothing
    /// (the partner's default applies).
    pub fn asked(headers: &HeaderMap) -> Option<Representation> {
        let values =
            |name| headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(','));
        let accepts_edi = accepts(headers, "application/edi-x12") || accepts(headers, "application/edifact");
        let preferred = values(HeaderName::from_static("prefer")).find_map(|preference| {
            let (name, value) = preference.split(';').next().unwrap_or_default().split_once('=')?;
            let value = value.trim().trim_matches('"');
            match name.trim().eq_ignore_ascii_case("return") {
                true if value.eq_ignore_ascii_case("minimal") => Some(Representation::Minimal),
                true if value.eq_ignore_ascii_case("representation") => Some(Representation::Full),
                _ => None,
            }
        });
        if accepts_edi { Some(Representation::Ack) } else { preferred }
    }

    /// A partner's default.
    pub fn of(form: ResponseForm) -> Representation {
        match form {
            ResponseForm::Full => Representation::Full,
            ResponseForm::Minimal => Representation::Minimal,
        }
    }

    /// A processed interchange's JSON (`stored`, the full resource) in this representation, and
    /// the header that says a preference was applied.
    pub fn interchange(self, stored: Bytes) -> Result<(Bytes, Option<(HeaderName, HeaderValue)>), ApiError> {
        match self {
            Representation::Minimal => {
                let stored = std::str::from_utf8(&stored).map_err(|_| ApiError::Internal)?;
                let minimal = MinimalInterchange::from_resource(stored).map_err(|_| ApiError::Internal)?;
                Representation::minimal(&minimal)
            }
            Representation::Full | Representation::Ack => Ok((stored, None)),
        }
    }

    /// The minimal representation's body, and the header that says the preference was applied.
    pub fn minimal(
        minimal: &MinimalInterchange,
    ) -> Result<(Bytes, Option<(HeaderName, HeaderValue)>), ApiError> {
        let body = serde_json::to_string(minimal).map_err(|_| ApiError::Internal)?;
        Ok((Bytes::from(body), Some((PREFERENCE_APPLIED, HeaderValue::from_static("return=minimal")))))
    }
}

/// Whether the request's `Accept` names `media_type` (parameters and quality ignored).
pub fn accepts(headers: &HeaderMap, media_type: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| range.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case(media_type))
}

/// The media type of an acknowledgement of `standard`.
pub fn ack_media_type(standard: Standard) -> &'static str {
    match standard {
        Standard::X12 => "application/edi-x12",
        Standard::Edifact => "application/edifact",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(pairs: &[(&'static str, &'static str)]) -> Option<Representation> {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        Representation::asked(&headers)
    }

    #[test]
    fn accept_and_prefer_are_read_as_rfc_7240_and_9110_write_them() {
        assert_eq!(asked(&[]), None);
        assert_eq!(asked(&[("prefer", "respond-async")]), None);
        assert_eq!(asked(&[("prefer", "return=minimal")]), Some(Representation::Minimal));
        assert_eq!(
            asked(&[("prefer", "respond-async, RETURN = \"minimal\"; x=1")]),
            Some(Representation::Minimal)
        );
        assert_eq!(asked(&[("prefer", "return=representation")]), Some(Representation::Full));
        assert_eq!(
            asked(&[("accept", "application/json, application/EDI-X12;q=0.5")]),
            Some(Representation::Ack)
        );
        assert_eq!(
            asked(&[("accept", "application/edifact"), ("prefer", "return=minimal")]),
            Some(Representation::Ack)
        );
    }
}
