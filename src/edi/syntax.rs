//! Byte-level EDI syntax shared by X12 and EDIFACT: service characters, segment and element splitting
//! that honours a release (escape) character, text decoding per declared character set, and the
//! bounds applied while parsing.
//!
//! Everything here borrows the request body: segments and elements are slices of it, and text is only
//! copied when a release character or a non-UTF-8 charset forces it.

use std::borrow::Cow;

use encoding_rs::DecoderResult;
use memchr::{memchr, memchr2};

use super::EdiError;

/// The service characters of one interchange, read from the X12 ISA or the EDIFACT UNA (or defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delimiters {
    pub segment: u8,
    pub element: u8,
    pub component: u8,
    pub repetition: Option<u8>,
    pub release: Option<u8>,
}

/// Bounds applied while parsing, so that no input costs more than its size warrants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Segments read at most; one more makes the interchange invalid (and is where reading stops).
    pub max_segments: usize,
    /// Longest element in bytes.
    pub max_element_length: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_segments: 1_000_000, max_element_length: 65_536 }
    }
}

/// How element text is turned into Unicode; read from the envelope, never guessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charset {
    /// 7-bit only (X12 basic/extended, EDIFACT UNOA/UNOB): a byte above 0x7F is an error.
    Ascii,
    /// ISO-8859-1 (EDIFACT UNOC): every byte is the code point of the same value.
    Latin1,
    /// Any other single-byte ISO-8859 part (UNOD, UNOE, UNOF, …) or UTF-8 (UNOW, UNOY).
    Other(&'static encoding_rs::Encoding),
}

impl Charset {
    /// Decodes `bytes`, or returns the offset of the first byte that is not valid in this charset.
    /// Whether bytes 0x20–0x7E mean the ASCII characters in this character set.
    pub fn is_ascii_compatible(&self) -> bool {
        match self {
            Charset::Ascii | Charset::Latin1 => true,
            Charset::Other(encoding) => encoding.is_ascii_compatible(),
        }
    }

    pub fn decode<'a>(&self, bytes: &'a [u8]) -> Result<Cow<'a, str>, usize> {
        match self {
            Charset::Ascii if !bytes.is_ascii() => Err(bytes.iter().position(|b| !b.is_ascii()).unwrap_or(0)),
            Charset::Ascii | Charset::Latin1 if bytes.is_ascii() => {
                std::str::from_utf8(bytes).map(Cow::Borrowed).map_err(|e| e.valid_up_to())
            }
            Charset::Ascii | Charset::Latin1 => {
                Ok(Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect()))
            }
            Charset::Other(encoding) if *encoding == encoding_rs::UTF_8 => {
                std::str::from_utf8(bytes).map(Cow::Borrowed).map_err(|e| e.valid_up_to())
            }
            Charset::Other(encoding) => decode_single_pass(encoding, bytes).map(Cow::Owned),
        }
    }
}

/// Decodes in one pass; on the first malformed sequence, its offset (the decoder reports how far it
/// read past the sequence's start, so multibyte characters before it are counted right).
fn decode_single_pass(encoding: &'static encoding_rs::Encoding, bytes: &[u8]) -> Result<String, usize> {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut text = String::with_capacity(bytes.len());
    let mut offset = 0;
    loop {
        let (result, read) = decoder.decode_to_string_without_replacement(&bytes[offset..], &mut text, true);
        offset += read;
        match result {
            DecoderResult::InputEmpty => return Ok(text),
            DecoderResult::OutputFull => text.reserve(bytes.len() - offset + 16),
            DecoderResult::Malformed(length, after) => {
                return Err(offset - usize::from(length) - usize::from(after));
            }
        }
    }
}

/// Position of the first `sep` in `hay` that is not preceded by the release character.
pub fn find_unescaped(hay: &[u8], sep: u8, release: Option<u8>) -> Option<usize> {
    let Some(release) = release else {
        return memchr(sep, hay);
    };
    let mut from = 0;
    while from < hay.len() {
        let at = from + memchr2(sep, release, &hay[from..])?;
        if hay[at] == sep {
            return Some(at);
        }
        // A release character escapes the byte after it, whatever it is (itself included).
        from = at + 2;
    }
    None
}

/// Splits `bytes` on unescaped `sep`; yields at least one (possibly empty) piece.
pub fn split(bytes: &[u8], sep: u8, release: Option<u8>) -> Split<'_> {
    Split { rest: Some(bytes), sep, release }
}

pub struct Split<'a> {
    rest: Option<&'a [u8]>,
    sep: u8,
    release: Option<u8>,
}

impl<'a> Iterator for Split<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match find_unescaped(rest, self.sep, self.release) {
            Some(at) => {
                self.rest = Some(&rest[at + 1..]);
                Some(&rest[..at])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// Removes release characters: `?+` becomes `+`, `??` becomes `?`.
pub fn unescape(bytes: &[u8], release: Option<u8>) -> Cow<'_, [u8]> {
    let Some(release) = release.filter(|&r| memchr(r, bytes).is_some()) else {
        return Cow::Borrowed(bytes);
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut escaped = false;
    for &b in bytes {
        if b == release && !escaped {
            escaped = true;
        } else {
            out.push(b);
            escaped = false;
        }
    }
    Cow::Owned(out)
}

/// One segment: 1-based position in the interchange, byte offset, and its bytes without terminator.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    pub position: usize,
    pub offset: usize,
    pub bytes: &'a [u8],
    pub terminated: bool,
    pub delimiters: Delimiters,
}

impl<'a> Segment<'a> {
    /// The segment tag (`ISA`, `BIG`, `UNH`, …): the bytes before the first element separator.
    pub fn tag(&self) -> &'a [u8] {
        split(self.bytes, self.delimiters.element, self.delimiters.release).next().unwrap_or_default()
    }

    pub fn tag_str(&self) -> String {
        String::from_utf8_lossy(self.tag()).into_owned()
    }

    /// Element `n` (1-based, after the tag) as raw bytes; empty when absent.
    pub fn element(&self, n: usize) -> &'a [u8] {
        split(self.bytes, self.delimiters.element, self.delimiters.release).nth(n).unwrap_or_default()
    }

    /// Component `c` (1-based) of element `n`; the whole element when it has no component separator.
    pub fn component(&self, n: usize, c: usize) -> &'a [u8] {
        split(self.element(n), self.delimiters.component, self.delimiters.release)
            .nth(c - 1)
            .unwrap_or_default()
    }

    /// An error located at this segment (and element, when given as e.g. `"SE01"`).
    pub fn error(&self, element: Option<String>, message: impl Into<String>) -> EdiError {
        EdiError {
            kind: super::ErrorKind::Structure,
            message: message.into(),
            segment_position: Some(self.position),
            segment: Some(self.tag_str()),
            element,
        }
    }

    /// Names element `n` the way EDI people write it: `SE01`, `UNZ02`.
    pub fn element_name(&self, n: usize) -> String {
        format!("{}{n:02}", self.tag_str())
    }
}

/// Most elements a segment is split into at once by [`Fields`]; later ones read as empty. No segment
/// the mapping reads has more.
const MAX_FIELDS: usize = 16;

/// A segment split into its elements once, for code that reads several elements of it.
pub struct Fields<'s, 'a> {
    segment: &'s Segment<'a>,
    elements: [&'a [u8]; MAX_FIELDS],
    count: usize,
}

impl<'s, 'a> Fields<'s, 'a> {
    pub fn new(segment: &'s Segment<'a>) -> Self {
        let mut elements = [&[][..]; MAX_FIELDS];
        let mut count = 0;
        let d = segment.delimiters;
        for (slot, element) in elements.iter_mut().zip(split(segment.bytes, d.element, d.release)) {
            *slot = element;
            count += 1;
        }
        Fields { segment, elements, count }
    }

    pub fn tag(&self) -> &'a [u8] {
        self.elements[0]
    }

    /// Element `n` (1-based, after the tag); empty when absent.
    pub fn element(&self, n: usize) -> &'a [u8] {
        if n < self.count { self.elements[n] } else { &[] }
    }

    /// Component `c` (1-based) of element `n`.
    pub fn component(&self, n: usize, c: usize) -> &'a [u8] {
        let d = self.segment.delimiters;
        split(self.element(n), d.component, d.release).nth(c - 1).unwrap_or_default()
    }
}

impl<'a> std::ops::Deref for Fields<'_, 'a> {
    type Target = Segment<'a>;

    fn deref(&self) -> &Segment<'a> {
        self.segment
    }
}

/// Splits the bytes after the envelope header into segments, skipping line breaks and blanks between them.
pub struct Segments<'a> {
    input: &'a [u8],
    offset: usize,
    position: usize,
    delimiters: Delimiters,
}

impl<'a> Segments<'a> {
    /// Starts at byte `offset` of `input`; the first segment found gets number `position`.
    pub fn new(input: &'a [u8], offset: usize, position: usize, delimiters: Delimiters) -> Self {
        Segments { input, offset, position, delimiters }
    }
}

fn is_filler(b: u8) -> bool {
    matches!(b, b'\r' | b'\n' | b'\t' | b' ')
}

impl<'a> Iterator for Segments<'a> {
    type Item = Segment<'a>;

    fn next(&mut self) -> Option<Segment<'a>> {
        let d = self.delimiters;
        while self.offset < self.input.len()
            && (is_filler(self.input[self.offset]) || self.input[self.offset] == d.segment)
        {
            self.offset += 1;
        }
        if self.offset >= self.input.len() {
            return None;
        }
        let start = self.offset;
        let rest = &self.input[start..];
        let (bytes, terminated) = match find_unescaped(rest, d.segment, d.release) {
            Some(end) => (&rest[..end], true),
            None => (rest, false),
        };
        self.offset = start + bytes.len() + usize::from(terminated);
        let segment = Segment { position: self.position, offset: start, bytes, terminated, delimiters: d };
        self.position += 1;
        Some(segment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDIFACT: Delimiters =
        Delimiters { segment: b'\'', element: b'+', component: b':', repetition: None, release: Some(b'?') };

    #[test]
    fn release_character_escapes_separators_and_itself() {
        let pieces: Vec<&[u8]> = split(b"NAD+SU+A?+B??+C", b'+', Some(b'?')).collect();
        assert_eq!(pieces, [&b"NAD"[..], b"SU", b"A?+B??", b"C"]);
        assert_eq!(&*unescape(b"A?+B??", Some(b'?')), b"A+B?");
        assert_eq!(&*unescape(b"O?'Brien", Some(b'?')), b"O'Brien");
    }

    #[test]
    fn segments_skip_line_breaks_and_keep_escaped_terminators() {
        let input = b"UNB+X'\r\nNAD+BY+O?'Brien'\nUNZ+1";
        let segments: Vec<_> = Segments::new(input, 0, 1, EDIFACT).collect();
        assert_eq!(segments.len(), 3);
        assert_eq!(segments[1].bytes, b"NAD+BY+O?'Brien");
        assert_eq!(segments[1].position, 2);
        assert!(segments[1].terminated);
        assert!(!segments[2].terminated);
        assert_eq!(segments[1].element(2), b"O?'Brien");
    }

    #[test]
    fn trailing_release_character_does_not_escape_past_the_end() {
        assert_eq!(find_unescaped(b"AB?", b'\'', Some(b'?')), None);
        assert_eq!(find_unescaped(b"A??'", b'\'', Some(b'?')), Some(3));
    }

    #[test]
    fn components_and_charsets() {
        let seg = Segments::new(b"UNB+UNOC:3+SENDER:14'", 0, 1, EDIFACT).next().unwrap();
        assert_eq!(seg.component(2, 2), b"14");
        assert_eq!(seg.component(1, 1), b"UNOC");
        assert_eq!(seg.component(2, 3), b"");
        assert_eq!(Charset::Latin1.decode(b"M\xfcller").unwrap(), "Müller");
        assert_eq!(Charset::Ascii.decode(b"M\xfcller"), Err(1));
        let utf8 = Charset::Other(encoding_rs::UTF_8);
        assert_eq!(utf8.decode("Müller".as_bytes()).unwrap(), "Müller");
        assert_eq!(utf8.decode(b"ab\xff"), Err(2));
    }

    /// The first invalid byte is named at its own offset, after multibyte characters too, and
    /// finding it takes one pass (it used to decode every prefix: quadratic in the offset).
    #[test]
    fn the_first_undecodable_byte_is_found_in_one_pass() {
        let utf8 = Charset::Other(encoding_rs::UTF_8);
        assert_eq!(
            utf8.decode("é".as_bytes().iter().chain(b"\xff").copied().collect::<Vec<_>>().as_slice()),
            Err(2)
        );
        assert_eq!(utf8.decode(b"ab\xe2\x82"), Err(2), "a truncated character at the end");
        // ISO-8859-7 (UNOF) leaves 0xAE undefined; 0xE1 is alpha.
        let greek = Charset::Other(encoding_rs::ISO_8859_7);
        assert_eq!(greek.decode(b"\xe1\xe1\xae"), Err(2));
        assert_eq!(greek.decode(b"\xe1b").unwrap(), "αb");
        let mut long = vec![0xe1u8; 2_000_000];
        long.push(0xae);
        assert_eq!(greek.decode(&long), Err(2_000_000));
    }
}
