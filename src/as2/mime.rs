//! Just enough MIME (RFC 2045, 2046, 1847) to open an AS2 message: an entity's headers and body as
//! received, its `Content-Type` parameters, its transfer encoding undone, and the two parts of a
//! `multipart/signed` body as the exact bytes that were signed (no line-ending rewriting). What was
//! decrypted is read [`Reading::Strict`]ly: a changed ciphertext must never parse.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::Failure;

/// How much a structure may deviate from the exact form senders write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// As received over HTTP: an entity may lack headers, a multipart may carry an epilogue.
    Lenient,
    /// Inside encryption, where CBC lets an attacker append or change blocks: every entity has its
    /// `Content-Type`, nothing but a line break follows a closing delimiter.
    Strict,
}

/// A MIME entity: unfolded headers and the body as received.
#[derive(Debug)]
pub struct Entity<'a> {
    headers: Vec<(String, String)>,
    pub body: &'a [u8],
}

impl<'a> Entity<'a> {
    /// An entity whose headers arrived apart from its body (an HTTP request's).
    pub fn new(headers: Vec<(String, String)>, body: &'a [u8]) -> Entity<'a> {
        Entity { headers, body }
    }

    /// Reads headers up to the first empty line (CRLF or LF), then the body; read strictly, an
    /// entity without a `Content-Type` is refused.
    pub fn parse(raw: &'a [u8], reading: Reading) -> Result<Entity<'a>, Failure> {
        let mut headers: Vec<(String, String)> = Vec::new();
        let mut at = 0;
        loop {
            let end = raw[at..].iter().position(|&b| b == b'\n').map(|n| at + n);
            let Some(end) = end else {
                return Err(malformed("a MIME entity has no empty line after its headers"));
            };
            let line = raw[at..end].strip_suffix(b"\r").unwrap_or(&raw[at..end]);
            at = end + 1;
            if line.is_empty() {
                break;
            }
            let line = std::str::from_utf8(line).map_err(|_| malformed("a MIME header is not text"))?;
            if line.starts_with([' ', '\t']) {
                let (_, value) =
                    headers.last_mut().ok_or_else(|| malformed("a MIME entity starts folded"))?;
                value.push(' ');
                value.push_str(line.trim());
                continue;
            }
            let (name, value) =
                line.split_once(':').ok_or_else(|| malformed("a MIME header has no colon"))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            if headers.len() > MAX_HEADERS {
                return Err(malformed("a MIME entity has too many headers"));
            }
        }
        let entity = Entity { headers, body: &raw[at..] };
        if reading == Reading::Strict && entity.header("content-type").is_none() {
            return Err(malformed("a MIME entity has no Content-Type"));
        }
        Ok(entity)
    }

    /// The value of header `name` (lowercase), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn content_type(&self) -> ContentType {
        ContentType::parse(self.header("content-type").unwrap_or("text/plain"))
    }

    /// The body with its `Content-Transfer-Encoding` undone: base64 decoded, anything else as sent.
    pub fn decoded_body(&self) -> Result<Vec<u8>, Failure> {
        let encoding = self.header("content-transfer-encoding").unwrap_or("binary");
        if !encoding.eq_ignore_ascii_case("base64") {
            return Ok(self.body.to_vec());
        }
        let compact: Vec<u8> = self.body.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
        STANDARD.decode(compact).map_err(|_| malformed("a base64 MIME body does not decode"))
    }
}

/// Most headers one entity may have.
const MAX_HEADERS: usize = 64;

fn malformed(detail: &str) -> Failure {
    Failure::Malformed(detail.to_owned())
}

/// A `Content-Type`: its lowercase media type and its parameters (names lowercase, values unquoted).
#[derive(Debug, PartialEq, Eq)]
pub struct ContentType {
    pub essence: String,
    params: Vec<(String, String)>,
}

impl ContentType {
    pub fn parse(value: &str) -> ContentType {
        let mut pieces = split_outside_quotes(value, ';').into_iter();
        let essence = pieces.next().unwrap_or_default().trim().to_ascii_lowercase();
        let params = pieces
            .filter_map(|piece| {
                let (name, value) = piece.split_once('=')?;
                Some((name.trim().to_ascii_lowercase(), value.trim().trim_matches('"').to_owned()))
            })
            .collect();
        ContentType { essence, params }
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Whether this is S/MIME's `application/pkcs7-mime` (or its old `x-` spelling).
    pub fn is_pkcs7_mime(&self) -> bool {
        matches!(self.essence.as_str(), "application/pkcs7-mime" | "application/x-pkcs7-mime")
    }
}

/// Splits at `separator` where it is not inside double quotes.
pub fn split_outside_quotes(value: &str, separator: char) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (at, ch) in value.char_indices() {
        match ch {
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                pieces.push(&value[start..at]);
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    pieces.push(&value[start..]);
    pieces
}

/// The two parts of a `multipart/signed` body: the signed entity exactly as received (its headers
/// included, the line break before the next delimiter excluded, RFC 2046 5.1.1) and the signature's.
/// Read strictly, nothing but one line break may follow the closing delimiter.
pub fn signed_parts<'a>(
    body: &'a [u8],
    boundary: &str,
    reading: Reading,
) -> Result<(&'a [u8], &'a [u8]), Failure> {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut starts = Vec::new();
    let mut at = 0;
    while let Some(found) = find(&body[at..], delimiter).map(|n| at + n) {
        let line_start = found == 0 || body[found - 1] == b'\n';
        if line_start {
            starts.push(found);
        }
        at = found + delimiter.len();
        if starts.len() == 3 {
            break;
        }
    }
    let [first, second, last] = starts[..] else {
        return Err(malformed("a multipart/signed body needs two parts and a closing delimiter"));
    };
    let closed = last + delimiter.len() + 2;
    if body.get(last + delimiter.len()..closed) != Some(b"--") {
        return Err(malformed("a multipart/signed body has more than two parts"));
    }
    if reading == Reading::Strict && !matches!(&body[closed..], b"" | b"\r\n" | b"\n") {
        return Err(malformed("data follows the closing delimiter of a multipart/signed body"));
    }
    let part = |from: usize, to: usize| -> Result<&'a [u8], Failure> {
        let after_line = body[from..to].iter().position(|&b| b == b'\n').map(|n| from + n + 1);
        let start = after_line.ok_or_else(|| malformed("a multipart/signed delimiter line is cut"))?;
        let end = if body[..to].ends_with(b"\r\n") { to - 2 } else { to - 1 };
        Ok(&body[start..end.max(start)])
    };
    Ok((part(first, second)?, part(second, last)?))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_unfold_and_the_body_is_kept_as_sent() {
        let raw = b"Content-Type: application/edi-x12;\r\n\tname=\"a;b.edi\"\r\nContent-Transfer-Encoding: base64\r\n\r\nSVNB\r\nKg==\r\n";
        let entity = Entity::parse(raw, Reading::Strict).unwrap();
        let content_type = entity.content_type();
        assert_eq!(content_type.essence, "application/edi-x12");
        assert_eq!(content_type.param("name"), Some("a;b.edi"));
        assert_eq!(entity.body, b"SVNB\r\nKg==\r\n");
        assert_eq!(entity.decoded_body().unwrap(), b"ISA*");
        assert!(Entity::parse(b"Content-Type: text/plain\r\n", Reading::Lenient).is_err());
        assert!(Entity::parse(b"\r\nbody", Reading::Lenient).is_ok());
        assert!(Entity::parse(b"\r\nbody", Reading::Strict).is_err(), "no headers inside encryption");
    }

    #[test]
    fn the_signed_part_is_the_exact_bytes_between_the_delimiters() {
        let body = b"preamble\r\n--b1\r\nContent-Type: text/plain\r\n\r\nhello\r\n\r\n--b1\r\nContent-Type: application/pkcs7-signature\r\n\r\nSIG\r\n--b1--\r\n";
        let (signed, signature) = signed_parts(body, "b1", Reading::Strict).unwrap();
        assert_eq!(signed, b"Content-Type: text/plain\r\n\r\nhello\r\n");
        assert_eq!(signature, b"Content-Type: application/pkcs7-signature\r\n\r\nSIG");
        let lf = b"--b1\nA: 1\n\nx\n--b1\nB: 2\n\ny\n--b1--";
        assert_eq!(signed_parts(lf, "b1", Reading::Strict).unwrap(), (&b"A: 1\n\nx"[..], &b"B: 2\n\ny"[..]));
        assert!(signed_parts(b"--b1\r\nA: 1\r\n\r\nx\r\n--b1--", "b1", Reading::Lenient).is_err());
        let three = b"--b1\r\nx\r\n--b1\r\ny\r\n--b1\r\nz\r\n--b1--";
        assert!(signed_parts(three, "b1", Reading::Lenient).is_err());
    }

    #[test]
    fn read_strictly_nothing_but_a_line_break_follows_the_closing_delimiter() {
        let body = b"--b1\r\nA: 1\r\n\r\nx\r\n--b1\r\nB: 2\r\n\r\ny\r\n--b1--\r\n";
        assert!(signed_parts(body, "b1", Reading::Strict).is_ok());
        let appended = [&body[..], b"\x07\x07\x07\x07\x07\x07\x07"].concat();
        assert!(signed_parts(&appended, "b1", Reading::Lenient).is_ok(), "an epilogue, outside encryption");
        assert!(signed_parts(&appended, "b1", Reading::Strict).is_err());
        assert!(signed_parts(&[&body[..], b"\r\n"].concat(), "b1", Reading::Strict).is_err());
    }
}
