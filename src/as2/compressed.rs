//! RFC 3274 compressed data: the zlib stream inside a CMS `CompressedData` (read here with a small
//! BER reader, definite and indefinite lengths, since Debian's OpenSSL is built without zlib), then
//! inflated under an [`Allowance`] shared by every layer of a message, so that nested small bombs
//! cannot together inflate past the body limit nor take memory the budget has not granted. The
//! same reader tells whether a CMS structure is exactly one value and what its content type is.

use std::io::Read;

use super::Failure;

/// id-ct-compressedData, 1.2.840.113549.1.9.16.1.9.
const COMPRESSED_DATA: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x10, 0x01, 0x09];
/// id-alg-zlibCompress, 1.2.840.113549.1.9.16.3.8.
const ZLIB: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x10, 0x03, 0x08];
/// Deepest nesting of BER values read.
const MAX_DEPTH: usize = 16;

const OID: u8 = 0x06;
const OCTETS: u8 = 0x04;
const OCTETS_CONSTRUCTED: u8 = 0x24;
const EXPLICIT_0: u8 = 0xA0;
const SEQUENCE: u8 = 0x30;

/// One BER value: its tag and its content (for an indefinite length, without the end marker).
struct Tlv<'a> {
    tag: u8,
    content: &'a [u8],
}

fn broken() -> Failure {
    Failure::Malformed("the compressed data is not a valid CMS CompressedData".into())
}

/// Reads one value off the front of `input`; returns it and what follows.
fn read(input: &[u8], depth: usize) -> Result<(Tlv<'_>, &[u8]), Failure> {
    if depth > MAX_DEPTH {
        return Err(broken());
    }
    let (&tag, rest) = input.split_first().ok_or_else(broken)?;
    if tag & 0x1F == 0x1F {
        return Err(broken());
    }
    let (&first, rest) = rest.split_first().ok_or_else(broken)?;
    if first == 0x80 {
        // Indefinite: children until the end-of-contents marker.
        let mut remaining = rest;
        loop {
            if remaining.starts_with(&[0, 0]) {
                let length = rest.len() - remaining.len();
                return Ok((Tlv { tag, content: &rest[..length] }, &remaining[2..]));
            }
            remaining = read(remaining, depth + 1)?.1;
        }
    }
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7F);
        if count > 4 || rest.len() < count {
            return Err(broken());
        }
        let length = rest[..count].iter().fold(0usize, |n, &b| (n << 8) | usize::from(b));
        (length, &rest[count..])
    };
    if rest.len() < length {
        return Err(broken());
    }
    Ok((Tlv { tag, content: &rest[..length] }, &rest[length..]))
}

/// The values inside a constructed value, in order.
fn children<'a>(mut content: &'a [u8], depth: usize) -> Result<Vec<Tlv<'a>>, Failure> {
    let mut found = Vec::new();
    while !content.is_empty() {
        let (tlv, rest) = read(content, depth + 1)?;
        found.push(tlv);
        content = rest;
    }
    Ok(found)
}

/// An OCTET STRING's bytes, primitive or constructed of segments.
fn octets(tlv: &Tlv<'_>, depth: usize, into: &mut Vec<u8>) -> Result<(), Failure> {
    match tlv.tag {
        OCTETS => into.extend_from_slice(tlv.content),
        OCTETS_CONSTRUCTED => {
            for child in children(tlv.content, depth)? {
                octets(&child, depth + 1, into)?;
            }
        }
        _ => return Err(broken()),
    }
    Ok(())
}

/// Whether `input` is exactly one BER value, with nothing after it.
pub(super) fn is_one_value(input: &[u8]) -> bool {
    matches!(read(input, 0), Ok((_, rest)) if rest.is_empty())
}

/// The content type OID (its encoded bytes) of a CMS `ContentInfo`.
pub(super) fn content_type(der: &[u8]) -> Option<&[u8]> {
    let (info, _) = read(der, 0).ok()?;
    let (oid, _) = read(info.content, 1).ok()?;
    (oid.tag == OID).then_some(oid.content)
}

/// Whether a CMS `AuthEnvelopedData` (RFC 5083) carries a full 16-byte authentication tag: its
/// `mac` (the structure's one OCTET STRING) is 16 bytes, and so is the tag length its GCM
/// parameters declare, when they declare one (RFC 5084). OpenSSL opens a message whose tag is cut
/// to 4 or 8 bytes, which makes forging one a matter of 2^32 tries instead of 2^128.
pub(super) fn has_full_tag(der: &[u8]) -> bool {
    full_tag(der).unwrap_or(false)
}

fn full_tag(der: &[u8]) -> Option<bool> {
    const INTEGER: u8 = 0x02;
    let (info, _) = read(der, 0).ok()?;
    let info = children(info.content, 0).ok()?;
    let explicit = info.get(1).filter(|value| value.tag == EXPLICIT_0)?;
    let (enveloped, _) = read(explicit.content, 1).ok()?;
    let fields = children(enveloped.content, 1).ok()?;
    let mac = fields.iter().rfind(|field| field.tag == OCTETS)?;
    // authEncryptedContentInfo: the SEQUENCE after the recipients' SET.
    let content = fields.iter().rfind(|field| field.tag == SEQUENCE)?;
    let algorithm = children(content.content, 2).ok()?.into_iter().find(|field| field.tag == SEQUENCE)?;
    let parameters = children(algorithm.content, 3).ok()?.into_iter().find(|field| field.tag == SEQUENCE);
    let declared = match parameters {
        Some(parameters) => {
            children(parameters.content, 4).ok()?.into_iter().find(|field| field.tag == INTEGER)
        }
        None => None,
    };
    let declared_full = declared.is_none_or(|length| length.content == [16]);
    Some(mac.content.len() == 16 && declared_full)
}

/// What inflating may still take, across every layer of one message: bytes under the content
/// limit, and memory, asked for as bytes are inflated (`false`: none free now).
pub struct Allowance<'a> {
    pub limit: usize,
    pub remaining: usize,
    pub charge: &'a mut dyn FnMut(usize) -> bool,
}

/// Bytes inflated at a time, each charged before it is kept.
const INFLATE_CHUNK: usize = 64 * 1024;

/// The compressed content of a DER or BER `ContentInfo` holding `CompressedData` (nothing may
/// follow it), inflated within `allowance`.
pub fn decompress(der: &[u8], allowance: &mut Allowance<'_>) -> Result<Vec<u8>, Failure> {
    let (info, rest) = read(der, 0)?;
    if !rest.is_empty() {
        return Err(Failure::Malformed("data follows the compressed data".into()));
    }
    let info = children(info.content, 0)?;
    let [content_type, content] = &info[..] else { return Err(broken()) };
    if content_type.tag != OID || content_type.content != COMPRESSED_DATA || content.tag != EXPLICIT_0 {
        return Err(broken());
    }
    let (compressed, _) = read(content.content, 1)?;
    let fields = children(compressed.content, 1)?;
    let [_version, algorithm, encapsulated] = &fields[..] else { return Err(broken()) };
    let algorithm = children(algorithm.content, 2)?;
    if algorithm.first().is_none_or(|oid| oid.tag != OID || oid.content != ZLIB) {
        return Err(Failure::Malformed("the compressed data is not zlib-compressed (RFC 3274)".into()));
    }
    let encapsulated = children(encapsulated.content, 2)?;
    let [_content_type, explicit] = &encapsulated[..] else { return Err(broken()) };
    let (stream, _) = read(explicit.content, 3)?;
    let mut zlib = Vec::new();
    octets(&stream, 3, &mut zlib)?;
    let mut decoder = flate2::read::ZlibDecoder::new(zlib.as_slice());
    let mut inflated = Vec::new();
    let mut chunk = vec![0; INFLATE_CHUNK];
    loop {
        let read = decoder
            .read(&mut chunk)
            .map_err(|_| Failure::Malformed("the compressed data does not inflate".into()))?;
        if read == 0 {
            return Ok(inflated);
        }
        if read > allowance.remaining {
            return Err(Failure::TooLarge(allowance.limit));
        }
        if !(allowance.charge)(read) {
            return Err(Failure::Busy);
        }
        allowance.remaining -= read;
        inflated.extend_from_slice(&chunk[..read]);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Write;

    use super::*;

    pub(in crate::as2) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match content.len() {
            n if n < 0x80 => out.push(n as u8),
            n => out.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        out.extend_from_slice(content);
        out
    }

    /// `der`'s `AuthEnvelopedData` with its tag cut to `length` bytes, and the tag length its GCM
    /// parameters declare with it: what a forger sends to try 2^32 tags instead of 2^128.
    pub(in crate::as2) fn cut_tag(der: &[u8], length: u8) -> Vec<u8> {
        let each = |content: &[u8], depth: usize, change: &dyn Fn(&Tlv<'_>) -> Vec<u8>| -> Vec<u8> {
            children(content, depth).unwrap().iter().map(change).collect::<Vec<_>>().concat()
        };
        let same = |value: &Tlv<'_>| tlv(value.tag, value.content);
        let declared = |value: &Tlv<'_>| match value.tag {
            0x02 => tlv(0x02, &[length]),
            _ => same(value),
        };
        let parameters = |value: &Tlv<'_>| match value.tag {
            SEQUENCE => tlv(SEQUENCE, &each(value.content, 4, &declared)),
            _ => same(value),
        };
        let algorithm = |value: &Tlv<'_>| match value.tag {
            SEQUENCE => tlv(SEQUENCE, &each(value.content, 3, &parameters)),
            _ => same(value),
        };
        let field = |value: &Tlv<'_>| match value.tag {
            OCTETS => tlv(OCTETS, &value.content[..usize::from(length)]),
            SEQUENCE => tlv(SEQUENCE, &each(value.content, 2, &algorithm)),
            _ => same(value),
        };
        let (info, _) = read(der, 0).unwrap();
        let info = children(info.content, 0).unwrap();
        let (enveloped, _) = read(info[1].content, 1).unwrap();
        let enveloped = tlv(SEQUENCE, &each(enveloped.content, 1, &field));
        tlv(SEQUENCE, &[same(&info[0]), tlv(EXPLICIT_0, &enveloped)].concat())
    }

    /// A CompressedData as RFC 3274 writes it, its stream in `octets` (already encoded).
    fn compressed_data(stream: Vec<u8>) -> Vec<u8> {
        let algorithm = tlv(SEQUENCE, &tlv(OID, ZLIB));
        let encapsulated = tlv(SEQUENCE, &[tlv(OID, &[0x2A, 0x86, 0x48]), tlv(EXPLICIT_0, &stream)].concat());
        let compressed = tlv(SEQUENCE, &[tlv(0x02, &[0]), algorithm, encapsulated].concat());
        tlv(SEQUENCE, &[tlv(OID, COMPRESSED_DATA), tlv(EXPLICIT_0, &compressed)].concat())
    }

    /// A compressed-data MIME entity around `entity` (binary).
    pub fn entity(entity: &[u8]) -> Vec<u8> {
        let mut out = b"Content-Type: application/pkcs7-mime; smime-type=compressed-data\r\n\r\n".to_vec();
        out.extend(compressed_data(tlv(OCTETS, &zlib(entity))));
        out
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn inflate(der: &[u8], limit: usize) -> Result<Vec<u8>, Failure> {
        decompress(der, &mut Allowance { limit, remaining: limit, charge: &mut |_| true })
    }

    #[test]
    fn definite_and_indefinite_segmented_streams_inflate() {
        let text = b"Content-Type: application/edi-x12\r\n\r\nISA*00*".repeat(20);
        let stream = zlib(&text);
        assert_eq!(inflate(&compressed_data(tlv(OCTETS, &stream)), 10_000).unwrap(), text);
        let (a, b) = stream.split_at(7);
        let segmented = [vec![OCTETS_CONSTRUCTED, 0x80], tlv(OCTETS, a), tlv(OCTETS, b), vec![0, 0]].concat();
        assert_eq!(inflate(&compressed_data(segmented), 10_000).unwrap(), text);
    }

    #[test]
    fn bombs_and_garbage_are_refused() {
        let bomb = compressed_data(tlv(OCTETS, &zlib(&vec![b'A'; 100_000])));
        assert!(matches!(inflate(&bomb, 50_000), Err(Failure::TooLarge(50_000))));
        assert!(matches!(inflate(b"\x30\x80\x30\x80", 10), Err(Failure::Malformed(_))));
        let deep = [0x30u8, 0x80].repeat(40);
        assert!(inflate(&deep, 10).is_err());
        assert!(inflate(&compressed_data(tlv(OCTETS, b"not zlib")), 10).is_err());
        let padded = [compressed_data(tlv(OCTETS, &zlib(b"x"))), vec![0; 64]].concat();
        assert!(matches!(inflate(&padded, 10), Err(Failure::Malformed(_))), "zeros after the DER");
    }

    #[test]
    fn the_allowance_is_shared_and_memory_is_charged_as_bytes_inflate() {
        let layer = compressed_data(tlv(OCTETS, &zlib(&vec![b'A'; 150_000])));
        let mut charged = 0;
        let mut charge = |bytes| {
            charged += bytes;
            charged <= 200_000
        };
        let mut allowance = Allowance { limit: 400_000, remaining: 400_000, charge: &mut charge };
        assert_eq!(decompress(&layer, &mut allowance).unwrap().len(), 150_000);
        assert_eq!(allowance.remaining, 250_000, "what one layer took, the next cannot");
        assert!(matches!(decompress(&layer, &mut allowance), Err(Failure::Busy)), "the budget said no");
        let mut allowance = Allowance { limit: 200_000, remaining: 100_000, charge: &mut |_| true };
        assert!(matches!(decompress(&layer, &mut allowance), Err(Failure::TooLarge(200_000))));
    }
}
