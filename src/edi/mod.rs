//! Pure EDI parsing: bytes in, envelope + documents + invoices out, no I/O.
//!
//! Parsing happens in two steps so that the HTTP layer can tell its two failure classes apart:
//! [`read`] finds the standard, the service characters and the envelope header (sender, receiver,
//! control number). When it fails no idempotency key exists and the request is *malformed* (400).
//! [`Interchange::documents`] then validates the envelope structure and maps every document; a failure
//! there is an *invalid* interchange (422) that still has a key, so it is stored and replayed.

pub mod ack;
pub mod diff;
mod edifact;
mod fingerprint;
pub mod invoice;
pub mod syntax;
mod walk;
mod x12;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use fingerprint::Fingerprint;
pub use invoice::Invoice;
pub use syntax::Limits;
use syntax::{Charset, Delimiters, Segment, Segments};
pub use walk::Documents;

/// The document types that carry an invoice (and book one), in each standard.
pub const INVOICE_DOCUMENTS: [&str; 2] = [x12::INVOICE, edifact::INVOICE];

/// The two standards the receiver speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Standard {
    X12,
    Edifact,
}

impl Standard {
    pub fn as_str(self) -> &'static str {
        match self {
            Standard::X12 => "x12",
            Standard::Edifact => "edifact",
        }
    }

    pub fn parse(text: &str) -> Option<Standard> {
        match text {
            "x12" => Some(Standard::X12),
            "edifact" => Some(Standard::Edifact),
            _ => None,
        }
    }
}

/// A stored row's `standard`, read once into the enum.
impl TryFrom<String> for Standard {
    type Error = String;

    fn try_from(text: String) -> Result<Standard, String> {
        Standard::parse(&text).ok_or_else(|| format!("{text:?} is not a standard"))
    }
}

/// An interchange party as named in the envelope: qualifier (may be empty in EDIFACT) and id, unpadded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PartyId {
    pub qualifier: String,
    pub id: String,
}

/// What the envelope header says: enough to build the idempotency key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub standard: Standard,
    pub sender: PartyId,
    pub receiver: PartyId,
    /// ISA13 or UNB 0020, exactly as sent (leading zeros kept).
    pub control_number: String,
}

/// What kind of rule an error breaks; acknowledgements turn it into the standard's error codes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ErrorKind {
    /// Segments in the wrong place, missing or extra envelopes, data after the trailer.
    #[default]
    Structure,
    /// A trailer count differs from what was received.
    Count,
    /// A trailer control number differs from its header's.
    Reference,
    /// A control number repeats one used before at the same level.
    Duplicate,
    /// A required segment or element is absent.
    Missing,
    /// A value is not of its type (number, code).
    Invalid,
    /// A date is not a valid date.
    InvalidDate,
    /// A byte outside the interchange character set.
    Charset,
    /// A stated figure does not reconcile with its parts (for a partner whose invoices must).
    Mismatch,
    /// An invoice number its seller had booked before, with other content (for a partner whose
    /// re-used numbers are refused or held).
    DuplicateNumber,
}

/// A syntax or content error, located as precisely as the input allows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EdiError {
    pub kind: ErrorKind,
    pub message: String,
    /// 1-based segment number in the interchange (ISA or UNB is 1; a UNA is not counted).
    pub segment_position: Option<usize>,
    pub segment: Option<String>,
    /// Element reference such as `SE01` or `UNZ02`.
    pub element: Option<String>,
}

impl EdiError {
    pub fn unlocated(message: impl Into<String>) -> EdiError {
        EdiError {
            kind: ErrorKind::Structure,
            message: message.into(),
            segment_position: None,
            segment: None,
            element: None,
        }
    }

    pub fn with_kind(mut self, kind: ErrorKind) -> EdiError {
        self.kind = kind;
        self
    }

    /// The 1-based element number of [`EdiError::element`] (`SE01` → 1).
    pub fn element_number(&self) -> Option<usize> {
        let element = self.element.as_deref()?;
        element.get(element.len().checked_sub(2)?..)?.parse().ok()
    }
}

/// One transaction set (ST..SE) or message (UNH..UNT).
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// `810`, `850`, `INVOIC`, …
    pub kind: String,
    pub control_number: String,
    /// Segment position of its ST / UNH.
    pub position: usize,
    /// Present when the document is an invoice; shared with the resources rendered from it.
    pub invoice: Option<std::sync::Arc<Invoice>>,
    /// Findings that do not reject the document, such as totals that disagree with the lines.
    pub warnings: Vec<Warning>,
}

/// Something worth a person's look that does not make the interchange invalid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Warning {
    /// Control number of the document (ST02 / UNH 0062).
    pub document: String,
    pub segment_position: Option<usize>,
    pub message: String,
    /// A stated figure that does not reconcile (a partner's `on_mismatch` decides); not in the API.
    #[serde(skip)]
    pub mismatch: bool,
}

/// What an interchange holds, as [`Interchange::shape`] counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub documents: usize,
    pub lines: usize,
}

/// An interchange whose header has been read: the key is known, the body not yet validated. Its
/// other segments are not held: each pass over them reads them again from the body (a scan, no
/// copy), so that an interchange of any size costs its body and one document at a time.
#[derive(Clone, Debug)]
pub struct Interchange<'a> {
    pub envelope: Envelope,
    delimiters: Delimiters,
    charset: Charset,
    /// EDIFACT decimal mark from the UNA (`.` otherwise); X12 always uses `.`.
    decimal_mark: u8,
    /// The whole body the interchange was read from.
    input: &'a [u8],
    /// The UNA service string advice, kept verbatim for the fingerprint.
    service_advice: &'a [u8],
    /// The header segment (ISA or UNB), position 1.
    header: Segment<'a>,
    /// Where the segments after the header start in `input`.
    rest: usize,
    limits: Limits,
    /// Relaxed validation: see [`Interchange::lenient`].
    lenient: bool,
    /// The body started with a UTF-8 byte order mark, which was skipped.
    byte_order_mark: bool,
    /// See [`Interchange::refusing_mismatches`].
    refuse_mismatches: bool,
}

/// How an interchange was read (its limits and a partner's relaxations), to read it again the same
/// way.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    limits: Limits,
    lenient: bool,
    refuse_mismatches: bool,
}

impl Reading {
    /// Reads `input` as the interchange this was taken from was read.
    pub fn read(self, input: &[u8]) -> Result<Interchange<'_>, EdiError> {
        let interchange = read_with(input, self.limits)?;
        Ok(Interchange { lenient: self.lenient, refuse_mismatches: self.refuse_mismatches, ..interchange })
    }
}

/// Reads the envelope header of an X12 or EDIFACT interchange with the default [`Limits`]. An error
/// means no key can be derived.
pub fn read(input: &[u8]) -> Result<Interchange<'_>, EdiError> {
    read_with(input, Limits::default())
}

/// [`read`] with explicit limits.
pub fn read_with(input: &[u8], limits: Limits) -> Result<Interchange<'_>, EdiError> {
    let byte_order_mark = input.starts_with(BYTE_ORDER_MARK);
    let start = start_of(input);
    let read = match standard_at(&input[start..]) {
        Some(Standard::X12) => x12::read(input, start, limits),
        Some(Standard::Edifact) => edifact::read(input, start, limits),
        None => return Err(not_an_interchange(&input[start..])),
    }?;
    // The key and the envelope are read from the header segment: a NUL there leaves no key.
    if let Some(error) = nul_byte(&read.header) {
        return Err(error);
    }
    Ok(Interchange { byte_order_mark, ..read })
}

/// The standard a raw interchange is in, told from its first bytes, or `None` when it starts like
/// neither.
pub fn standard_of(input: &[u8]) -> Option<Standard> {
    standard_at(&input[start_of(input)..])
}

/// The error for the first NUL byte in `segment`, if it holds one.
fn nul_byte(segment: &Segment<'_>) -> Option<EdiError> {
    let at = memchr::memchr(0, segment.bytes)?;
    Some(offending_byte(segment, at, "a NUL byte (0x00) is not EDI text".to_owned()))
}

/// A character-set error at byte `at` of `segment`, naming its element.
fn offending_byte(segment: &Segment<'_>, at: usize, message: String) -> EdiError {
    let delimiters = segment.delimiters;
    let element = syntax::split(&segment.bytes[..at], delimiters.element, delimiters.release).count() - 1;
    segment.error((element > 0).then(|| segment.element_name(element)), message).with_kind(ErrorKind::Charset)
}

/// Whether `input` holds one interchange that ends with its trailer (IEA or UNZ) and nothing after
/// it but line breaks: an interchange cut short, or followed by anything, does not. Checked where
/// no signature vouches for the bytes (AS2 content decrypted from CBC).
pub fn ends_with_trailer(input: &[u8]) -> bool {
    let Ok(interchange) = read(input) else { return false };
    let trailer: &[u8] = match interchange.envelope.standard {
        Standard::X12 => b"IEA",
        Standard::Edifact => b"UNZ",
    };
    let line_terminated = matches!(interchange.delimiters.segment, b'\r' | b'\n');
    interchange
        .segments()
        .last()
        .is_some_and(|last| last.tag() == trailer && (last.terminated || line_terminated))
}

fn standard_at(body: &[u8]) -> Option<Standard> {
    if body.starts_with(b"ISA") {
        Some(Standard::X12)
    } else if body.starts_with(b"UNA") || body.starts_with(b"UNB") {
        Some(Standard::Edifact)
    } else {
        None
    }
}

/// The UTF-8 byte order mark Windows tools write at the start of a text file; EDI has no use for it.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// Where the interchange starts: after a byte order mark and leading whitespace.
fn start_of(input: &[u8]) -> usize {
    let skipped = if input.starts_with(BYTE_ORDER_MARK) { BYTE_ORDER_MARK.len() } else { 0 };
    input[skipped..].iter().position(|b| !b.is_ascii_whitespace()).map_or(input.len(), |n| skipped + n)
}

/// Why `body` (after leading whitespace) is no interchange.
fn not_an_interchange(body: &[u8]) -> EdiError {
    if body.is_empty() {
        EdiError::unlocated("the body is empty; expected an X12 or EDIFACT interchange")
    } else {
        EdiError::unlocated(
            "not an EDI interchange: an X12 interchange starts with ISA, an EDIFACT one with UNA or UNB",
        )
    }
}

/// Reads an interchange like [`read`], also when a sender wrapped segments over several lines
/// (fixed-width line breaks inside segments): such an interchange is read from a copy without line
/// breaks, made in `scratch`. Interchanges whose segment terminator is a line break are read as they are.
pub fn parse<'a>(
    input: &'a [u8],
    scratch: &'a mut Vec<u8>,
    limits: Limits,
) -> Result<Interchange<'a>, EdiError> {
    let interchange = read_with(input, limits)?;
    if !interchange.is_wrapped() {
        return Ok(interchange);
    }
    scratch.clear();
    scratch.extend(input.iter().copied().filter(|b| !matches!(b, b'\r' | b'\n')));
    let unwrapped: &'a [u8] = scratch;
    read_with(unwrapped, limits)
}

impl<'a> Interchange<'a> {
    /// Relaxes validation for a partner that needs it: bytes outside the declared character set are
    /// read as ISO-8859-1 instead of rejected, and repeated group and document control numbers are
    /// accepted. Envelope counts, references and invoice data stay required.
    pub fn lenient(mut self) -> Self {
        self.lenient = true;
        self
    }

    /// Makes a stated figure that does not reconcile with its parts (a warning otherwise) an error
    /// at the segment that states it, for a partner whose invoices must reconcile.
    pub fn refusing_mismatches(mut self) -> Self {
        self.refuse_mismatches = true;
        self
    }

    /// How it is read, to read it again the same way.
    pub fn reading(&self) -> Reading {
        Reading { limits: self.limits, lenient: self.lenient, refuse_mismatches: self.refuse_mismatches }
    }

    /// The whole body it was read from (after unwrapping, for a wrapped one).
    pub fn input(&self) -> &'a [u8] {
        self.input
    }

    /// Its segments, the header first, read from the body as they are taken: at most
    /// `limits.max_segments + 1` (reading stops after the first segment over the limit).
    fn segments(&self) -> AllSegments<'a> {
        std::iter::once(self.header)
            .chain(Segments::new(self.input, self.rest, 2, self.delimiters))
            .take(self.limits.max_segments + 1)
    }

    /// True when line breaks stand inside segments rather than only between them.
    fn is_wrapped(&self) -> bool {
        let d = self.delimiters;
        let separators = [d.segment, d.element, d.component];
        !separators.iter().any(|b| matches!(b, b'\r' | b'\n'))
            && memchr::memchr2(b'\r', b'\n', self.input).is_some()
            && self.segments().any(|segment| memchr::memchr2(b'\r', b'\n', segment.bytes).is_some())
    }

    /// How many documents (ST or UNH) and item lines (IT1 or LIN) it holds, counted from the
    /// segment tags before anything is mapped.
    pub fn shape(&self) -> Shape {
        let (document, line): (&[u8], &[u8]) = match self.envelope.standard {
            Standard::X12 => (b"ST", b"IT1"),
            Standard::Edifact => (b"UNH", b"LIN"),
        };
        let mut shape = Shape::default();
        for tag in self.segments().map(|segment| segment.tag()) {
            shape.documents += usize::from(tag == document);
            shape.lines += usize::from(tag == line);
        }
        shape
    }

    /// Validates the envelope structure and maps every document; the first error wins.
    pub fn documents(&self) -> Result<Vec<Document>, EdiError> {
        self.walk()?.collect()
    }

    /// Checks what is checked of the whole interchange before its structure (its limits, NUL bytes
    /// and character set), then walks its documents: each validated and mapped as its trailer is
    /// read, one at a time; the first error ends the walk.
    pub fn walk(&self) -> Result<Documents<'a>, EdiError> {
        self.check_limits()?;
        self.check_nul()?;
        if !self.lenient {
            self.check_charset()?;
        }
        Documents::new(self.clone())
    }

    fn check_limits(&self) -> Result<(), EdiError> {
        let Limits { max_segments, max_element_length } = self.limits;
        if let Some(extra) = self.segments().nth(max_segments) {
            return Err(extra.error(None, format!("the interchange has more than {max_segments} segments")));
        }
        // A segment no longer than the limit cannot hold a longer element.
        for segment in self.segments().filter(|s| s.bytes.len() > max_element_length) {
            let d = self.delimiters;
            if let Some(n) =
                syntax::split(segment.bytes, d.element, d.release).position(|e| e.len() > max_element_length)
            {
                return Err(segment.error(
                    (n > 0).then(|| segment.element_name(n)),
                    format!("an element is longer than {max_element_length} bytes"),
                ));
            }
        }
        Ok(())
    }

    /// Every segment must be valid in the interchange's character set, read or not: a byte outside it
    /// is reported where it stands, never mangled.
    fn check_charset(&self) -> Result<(), EdiError> {
        // One vectorised pass over everything decides the common cases; segments are only searched
        // to locate an offending byte.
        if self.charset == Charset::Latin1 || (self.charset == Charset::Ascii && self.input.is_ascii()) {
            return Ok(());
        }
        for segment in self.segments() {
            if let Err(at) = self.charset.decode(segment.bytes) {
                let message =
                    format!("byte 0x{:02X} is not valid in the interchange character set", segment.bytes[at]);
                return Err(offending_byte(&segment, at, message));
            }
        }
        Ok(())
    }

    /// A NUL byte is text in no EDI character set (and in no PostgreSQL text column): refused even
    /// for a lenient partner, naming its segment and element.
    fn check_nul(&self) -> Result<(), EdiError> {
        if memchr::memchr(0, self.input).is_none() {
            return Ok(());
        }
        self.segments().find_map(|segment| nul_byte(&segment)).map_or(Ok(()), Err)
    }

    /// An element's text as it stands (end trimmed) when it is printable ASCII without a release
    /// character, as nearly every element is: it reads the same in every ASCII-compatible charset.
    fn plain<'b>(&self, raw: &'b [u8]) -> Option<&'b str> {
        let release = self.delimiters.release;
        let plain = raw.iter().all(|&b| matches!(b, b' '..=b'~') && Some(b) != release);
        (plain && self.charset.is_ascii_compatible())
            .then(|| std::str::from_utf8(raw).unwrap_or_default().trim_end())
    }

    /// Decodes an element's text: release characters removed, charset applied.
    fn text(&self, segment: &Segment<'_>, raw: &[u8], element: usize) -> Result<String, EdiError> {
        if let Some(plain) = self.plain(raw) {
            return Ok(plain.to_owned());
        }
        let unescaped = syntax::unescape(raw, self.delimiters.release);
        let decoded = match self.charset.decode(&unescaped) {
            Err(_) if self.lenient => Charset::Latin1.decode(&unescaped),
            decoded => decoded,
        };
        decoded.map(|text| text.trim_end().to_owned()).map_err(|at| {
            segment
                .error(
                    Some(segment.element_name(element)),
                    format!("byte 0x{:02X} is not valid in the interchange character set", unescaped[at]),
                )
                .with_kind(ErrorKind::Charset)
        })
    }
}

/// The segments of an interchange as [`Interchange::segments`] reads them.
type AllSegments<'a> = std::iter::Take<std::iter::Chain<std::iter::Once<Segment<'a>>, Segments<'a>>>;

/// Parses an element that must be a non-negative whole number (counts in trailers).
fn count(segment: &Segment<'_>, element: usize) -> Result<usize, EdiError> {
    let raw = segment.element(element);
    std::str::from_utf8(raw).ok().and_then(|s| s.trim().parse().ok()).ok_or_else(|| {
        segment
            .error(
                Some(segment.element_name(element)),
                format!(
                    "{} must be a number, found {:?}",
                    segment.element_name(element),
                    String::from_utf8_lossy(raw)
                ),
            )
            .with_kind(ErrorKind::Invalid)
    })
}

/// Checks that a trailer element repeats the header's control number.
fn expect_reference(segment: &Segment<'_>, element: usize, expected: &[u8]) -> Result<(), EdiError> {
    let found = segment.element(element);
    if found == expected {
        return Ok(());
    }
    Err(segment
        .error(
            Some(segment.element_name(element)),
            format!(
                "{} is {:?} but the matching header says {:?}",
                segment.element_name(element),
                String::from_utf8_lossy(found),
                String::from_utf8_lossy(expected)
            ),
        )
        .with_kind(ErrorKind::Reference))
}

/// Checks a trailer count against what was actually seen.
fn expect_count(segment: &Segment<'_>, element: usize, what: &str, actual: usize) -> Result<(), EdiError> {
    let declared = count(segment, element)?;
    if declared == actual {
        return Ok(());
    }
    Err(segment
        .error(
            Some(segment.element_name(element)),
            format!(
                "{} declares {declared} {what} but the interchange has {actual}",
                segment.element_name(element)
            ),
        )
        .with_kind(ErrorKind::Count))
}

/// The first segment found after the interchange trailer, if any: an error, as nothing may follow.
/// Another interchange there (a "mailbag" from a VAN or a file drop) is named as such, with what to do.
fn trailing_data(trailer: &Segment<'_>, next: Option<&Segment<'_>>) -> Result<(), EdiError> {
    let Some(extra) = next else { return Ok(()) };
    let trailer = trailer.tag_str();
    let message = if [b"ISA".as_slice(), b"UNA", b"UNB"].iter().any(|tag| extra.bytes.starts_with(tag)) {
        format!(
            "another interchange follows the {trailer} trailer: a request carries one interchange; send each \
             (ISA…IEA or UNB…UNZ) in a request of its own, and each is recorded once under its own key"
        )
    } else {
        format!("data after the {trailer} interchange trailer")
    };
    Err(extra.error(None, message))
}

/// Control numbers already used at one envelope level, to refuse a repeat (unless lenient).
struct Unique<'a> {
    seen: std::collections::HashMap<&'a [u8], usize>,
    enforced: bool,
}

impl<'a> Unique<'a> {
    fn new(interchange: &Interchange<'_>) -> Self {
        Unique { seen: std::collections::HashMap::new(), enforced: !interchange.lenient }
    }

    /// Errs when element `n` of `segment` repeats a control number seen before at this level.
    fn check(&mut self, segment: &Segment<'a>, n: usize) -> Result<(), EdiError> {
        if !self.enforced {
            return Ok(());
        }
        let value = segment.element(n);
        match self.seen.insert(value, segment.position) {
            None => Ok(()),
            Some(first) => Err(segment
                .error(
                    Some(segment.element_name(n)),
                    format!(
                        "{} {:?} repeats the control number of segment {first}",
                        segment.element_name(n),
                        String::from_utf8_lossy(value)
                    ),
                )
                .with_kind(ErrorKind::Duplicate)),
        }
    }

    fn clear(&mut self) {
        self.seen.clear();
    }
}

/// An unterminated final segment means the interchange was cut short — unless segments end with a
/// line break, where the end of the file ends the last line (editors drop the final newline); a cut
/// inside the trailer is still caught by its control number.
fn require_terminated(segment: &Segment<'_>) -> Result<(), EdiError> {
    if segment.terminated || matches!(segment.delimiters.segment, b'\n' | b'\r') {
        Ok(())
    } else {
        Err(segment.error(None, "the interchange ends inside this segment (no segment terminator)"))
    }
}
