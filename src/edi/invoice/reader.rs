//! Typed values out of one document's segments: text, decimals in the interchange's notation, dates
//! in the format their qualifier names, each error located at its segment and element.

use std::borrow::Cow;
use std::str::FromStr;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::{Code, Shared};
use crate::edi::syntax::{Fields, Segment};
use crate::edi::{EdiError, ErrorKind, Interchange};

/// Codes common enough in invoices to be borrowed rather than allocated each time they are read:
/// units, currencies, party and product id qualifiers, and the totals' qualifiers.
pub(super) const COMMON_CODES: [&str; 60] = [
    "EA", "PCE", "C62", "H87", "CS", "BX", "PK", "KGM", "LBR", "MTR", "LTR", "USD", "EUR", "GBP", "CAD",
    "CHF", "SEK", "DKK", "NOK", "PLN", "AUD", "1", "9", "14", "91", "92", "ZZ", "01", "VP", "BP", "UP", "VN",
    "IN", "SK", "EN", "UK", "SA", "SRV", "MF", "PN", "TDS01", "TDS02", "TDS03", "TDS04", "77", "79", "86",
    "39", "125", "128", "129", "176", "124", "VAT", "GST", "S", "Z", "E", "AE", "D360",
];

/// A qualifier's code: a common one borrowed, any other copied (qualifiers are ASCII codes).
pub(super) fn code_of(raw: &[u8]) -> Code {
    match COMMON_CODES.iter().find(|code| code.as_bytes() == raw) {
        Some(common) => Cow::Borrowed(common),
        None => Cow::Owned(String::from_utf8_lossy(raw).into_owned()),
    }
}

/// Reads typed values out of one document's segments.
pub(super) struct Reader<'i, 'a> {
    pub ic: &'i Interchange<'a>,
}

impl Reader<'_, '_> {
    fn text(&self, segment: &Segment<'_>, raw: &[u8], element: usize) -> Result<Option<String>, EdiError> {
        if raw.is_empty() {
            return Ok(None);
        }
        let text = self.ic.text(segment, raw, element)?;
        Ok(Some(text).filter(|t| !t.is_empty()))
    }

    /// A code in raw element (or component) bytes of element `n`: a common one borrowed.
    pub fn code(&self, segment: &Segment<'_>, raw: &[u8], n: usize) -> Result<Option<Code>, EdiError> {
        if let Some(common) = COMMON_CODES.iter().find(|code| code.as_bytes() == raw) {
            return Ok(Some(Cow::Borrowed(common)));
        }
        Ok(self.text(segment, raw, n)?.map(Cow::Owned))
    }

    /// The code in element `n`.
    pub fn code_at(&self, segment: &Fields<'_, '_>, n: usize) -> Result<Option<Code>, EdiError> {
        self.code(segment, segment.element(n), n)
    }

    /// The code in component `c` of element `n`.
    pub fn code_in(&self, segment: &Fields<'_, '_>, n: usize, c: usize) -> Result<Option<Code>, EdiError> {
        self.code(segment, segment.component(n, c), n)
    }

    /// The text in raw element (or component) bytes of element `n`, to be kept in more than one
    /// place of the model.
    fn shared(&self, segment: &Segment<'_>, raw: &[u8], n: usize) -> Result<Option<Shared>, EdiError> {
        if let Some(plain) = self.ic.plain(raw) {
            return Ok(Some(plain).filter(|t| !t.is_empty()).map(Shared::from));
        }
        Ok(self.text(segment, raw, n)?.map(Shared::from))
    }

    /// The shared text in element `n`.
    pub fn shared_at(&self, segment: &Fields<'_, '_>, n: usize) -> Result<Option<Shared>, EdiError> {
        self.shared(segment, segment.element(n), n)
    }

    /// The shared text in component `c` of element `n`.
    pub fn shared_in(
        &self,
        segment: &Fields<'_, '_>,
        n: usize,
        c: usize,
    ) -> Result<Option<Shared>, EdiError> {
        self.shared(segment, segment.component(n, c), n)
    }

    pub fn element(&self, segment: &Fields<'_, '_>, n: usize) -> Result<Option<String>, EdiError> {
        self.text(segment, segment.element(n), n)
    }

    pub fn component(
        &self,
        segment: &Fields<'_, '_>,
        n: usize,
        c: usize,
    ) -> Result<Option<String>, EdiError> {
        self.text(segment, segment.component(n, c), n)
    }

    /// `value` of element `n` when it is at most `max` characters (the standard's own maximum,
    /// and all the store indexes): a longer one is refused, naming the element and its limit.
    pub fn bounded(
        &self,
        segment: &Segment<'_>,
        value: Option<String>,
        n: usize,
        max: usize,
    ) -> Result<Option<String>, EdiError> {
        match value {
            Some(text) if text.chars().count() > max => {
                let name = segment.element_name(n);
                let message = format!(
                    "{name} is {} characters long; the standard allows at most {max}",
                    text.chars().count()
                );
                Err(segment.error(Some(name), message).with_kind(ErrorKind::Invalid))
            }
            value => Ok(value),
        }
    }

    pub fn required(
        &self,
        segment: &Segment<'_>,
        value: Option<String>,
        n: usize,
        what: &str,
    ) -> Result<String, EdiError> {
        value.ok_or_else(|| absent(segment, n, what))
    }

    /// The decimal in raw element (or component) bytes of element `n`, in the interchange's
    /// notation; `implied` decimals for X12 N-type elements. Plain ASCII, the common case, is read
    /// where it stands; anything else is decoded first, so that an error shows the text.
    fn number(
        &self,
        segment: &Segment<'_>,
        raw: &[u8],
        n: usize,
        implied: Option<u32>,
    ) -> Result<Option<Decimal>, EdiError> {
        let release = self.ic.delimiters.release;
        if raw.iter().all(|&b| b.is_ascii_graphic() && Some(b) != release) {
            let Ok(text) = std::str::from_utf8(raw) else { unreachable!("ASCII is UTF-8") };
            return self.decimal(segment, Some(text).filter(|t| !t.is_empty()), n, implied);
        }
        let text = self.text(segment, raw, n)?;
        self.decimal(segment, text.as_deref(), n, implied)
    }

    /// The decimal in element `n`.
    pub fn decimal_at(
        &self,
        segment: &Fields<'_, '_>,
        n: usize,
        implied: Option<u32>,
    ) -> Result<Option<Decimal>, EdiError> {
        self.number(segment, segment.element(n), n, implied)
    }

    /// A whole count (of days) in element `n`.
    pub fn count_at(&self, segment: &Fields<'_, '_>, n: usize) -> Result<Option<u32>, EdiError> {
        self.count(segment, segment.element(n), n)
    }

    /// A whole count (of days) in raw element (or component) bytes of element `n`.
    pub fn count(&self, segment: &Segment<'_>, raw: &[u8], n: usize) -> Result<Option<u32>, EdiError> {
        let Some(value) = self.number(segment, raw, n, Some(0))? else { return Ok(None) };
        u32::try_from(value).map(Some).map_err(|_| {
            let name = segment.element_name(n);
            segment
                .error(Some(name.clone()), format!("{name} must be a count of days, found {value}"))
                .with_kind(ErrorKind::Invalid)
        })
    }

    /// The decimal in component `c` of element `n`.
    pub fn component_decimal(
        &self,
        segment: &Fields<'_, '_>,
        n: usize,
        c: usize,
    ) -> Result<Option<Decimal>, EdiError> {
        self.number(segment, segment.component(n, c), n, None)
    }

    /// The decimal in element `n`, which is required (`what` names it).
    pub fn required_decimal(
        &self,
        segment: &Fields<'_, '_>,
        n: usize,
        what: &str,
        implied: Option<u32>,
    ) -> Result<Decimal, EdiError> {
        self.decimal_at(segment, n, implied)?.ok_or_else(|| absent(segment, n, what))
    }

    /// `value` as a decimal in the interchange's notation (see [`Reader::number`]).
    fn decimal(
        &self,
        segment: &Segment<'_>,
        value: Option<&str>,
        n: usize,
        implied: Option<u32>,
    ) -> Result<Option<Decimal>, EdiError> {
        let Some(text) = value else { return Ok(None) };
        let invalid = || {
            segment
                .error(
                    Some(segment.element_name(n)),
                    format!(
                        "{} must be a {}number, found {text:?}",
                        segment.element_name(n),
                        if implied.is_some() { "whole " } else { "" }
                    ),
                )
                .with_kind(ErrorKind::Invalid)
        };
        let normalized: std::borrow::Cow<'_, str> = if self.ic.decimal_mark == b'.' {
            text.into()
        } else {
            text.replace(char::from(self.ic.decimal_mark), ".").into()
        };
        let plain = normalized.strip_prefix('-').unwrap_or(&normalized);
        let well_formed = !plain.is_empty()
            && plain.bytes().all(|b| b.is_ascii_digit() || (b == b'.' && implied.is_none()))
            && plain.bytes().filter(|&b| b == b'.').count() <= 1
            && plain != ".";
        if !well_formed {
            return Err(invalid());
        }
        let mut value = Decimal::from_str(&normalized).map_err(|_| invalid())?;
        if let Some(scale) = implied {
            value.set_scale(scale).map_err(|_| invalid())?;
        }
        Ok(Some(value))
    }

    /// The date in element `n`, written as `format` says (EDIFACT code list 2379: 102 CCYYMMDD, 203
    /// CCYYMMDDHHMM, 204 CCYYMMDDHHMMSS; X12 dates are 102): every digit it must have, no more.
    pub fn date(
        &self,
        segment: &Segment<'_>,
        value: Option<String>,
        n: usize,
        format: &[u8],
    ) -> Result<Option<NaiveDate>, EdiError> {
        let Some(text) = value else { return Ok(None) };
        let element = segment.element_name(n);
        let invalid =
            |message: String| segment.error(Some(element.clone()), message).with_kind(ErrorKind::InvalidDate);
        let pattern = match format {
            b"" | b"102" => "CCYYMMDD",
            b"203" => "CCYYMMDDHHMM",
            b"204" => "CCYYMMDDHHMMSS",
            other => {
                return Err(invalid(format!(
                    "date format {:?} is not read (102 CCYYMMDD, 203 CCYYMMDDHHMM or 204 CCYYMMDDHHMMSS)",
                    String::from_utf8_lossy(other)
                )));
            }
        };
        // Every layout is completed to seconds, so that one parse checks the date and any time.
        let complete = format!("{text}{}", &"000000"[..14usize.saturating_sub(text.len()).min(6)]);
        let read = (text.len() == pattern.len() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| chrono::NaiveDateTime::parse_from_str(&complete, "%Y%m%d%H%M%S").ok())
            .flatten()
            .map(|at| at.date());
        read.map(Some).ok_or_else(|| invalid(format!("{element} must be a date {pattern}, found {text:?}")))
    }
}

/// Element `n` (`what`) is required and absent.
fn absent(segment: &Segment<'_>, n: usize, what: &str) -> EdiError {
    let name = segment.element_name(n);
    segment.error(Some(name.clone()), format!("{name} ({what}) is required")).with_kind(ErrorKind::Missing)
}

/// A document's required part is missing: reported at its header (ST / UNH).
pub(super) fn missing(header: &Segment<'_>, message: &str) -> EdiError {
    header.error(None, message).with_kind(ErrorKind::Missing)
}

/// Quantity × unit price ÷ basis, refused where it leaves the range of an exact amount (28 digits).
pub(super) fn line_amount(
    segment: &Segment<'_>,
    quantity: Decimal,
    unit_price: Decimal,
    basis: Option<Decimal>,
) -> Result<Decimal, EdiError> {
    let product = quantity.checked_mul(unit_price);
    let amount = match basis.filter(|basis| !basis.is_zero()) {
        Some(basis) => product.and_then(|p| p.checked_div(basis)),
        None => product,
    };
    amount.ok_or_else(|| {
        segment
            .error(
                None,
                format!("quantity {quantity} × unit price {unit_price} is beyond the range of an amount"),
            )
            .with_kind(ErrorKind::Invalid)
    })
}

/// The original invoice a document names, as its REF / RFF segments offer it: the one qualified
/// `OI` (original, or previous, invoice number), else the first `IV` (invoice number). Only a
/// credit note, debit note or corrected invoice names one ([`OriginalInvoice::of`]).
#[derive(Default)]
pub(super) struct OriginalInvoice {
    number: Option<String>,
    position: Option<usize>,
    qualified_oi: bool,
}

impl OriginalInvoice {
    /// Whether a reference qualified `qualifier` would be taken: read it only then.
    pub fn wants(&self, qualifier: &[u8]) -> bool {
        match qualifier {
            b"OI" => !self.qualified_oi,
            b"IV" => self.number.is_none(),
            _ => false,
        }
    }

    /// Takes a reference [`OriginalInvoice::wants`], stated (or empty) at `position`.
    pub fn take(&mut self, qualifier: &[u8], number: Option<String>, position: usize) {
        if number.is_some() {
            (self.number, self.position, self.qualified_oi) = (number, Some(position), qualifier == b"OI");
        }
    }

    /// The number named and where, for a document of `kind` (none for an invoice, whose `IV`
    /// restates its own number).
    pub fn of(self, kind: super::DocumentKind) -> (Option<String>, Option<usize>) {
        match kind {
            super::DocumentKind::Invoice => (None, None),
            _ => (self.number, self.position),
        }
    }
}
