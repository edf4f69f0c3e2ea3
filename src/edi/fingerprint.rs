//! An interchange's fingerprint: what tells a resend of the same content from other content under
//! the same key, computed once from the parsed interchange and compared as a [`Fingerprint`].

use std::fmt;

use sha2::{Digest, Sha256};

use super::{Interchange, Standard, syntax};

/// SHA-256 of an interchange's canonical form, as 64 lowercase hex digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first `n` hex digits (at most all 64): what tells content apart in a distinguished key.
    pub fn prefix(&self, n: usize) -> &str {
        &self.0[..n.min(self.0.len())]
    }
}

impl TryFrom<String> for Fingerprint {
    type Error = String;

    /// A stored fingerprint, as written: 64 lowercase hex digits.
    fn try_from(text: String) -> Result<Fingerprint, String> {
        match text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            true => Ok(Fingerprint(text)),
            false => Err(format!("{text:?} is not a SHA-256 in hex")),
        }
    }
}

impl AsRef<str> for Fingerprint {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Interchange<'_> {
    /// SHA-256 (hex) of the canonical interchange: segments re-joined with the terminator and no
    /// filler between them, envelope dates and times blanked, so that re-wrapped or re-stamped
    /// resends of the same content have the same fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        let d = self.delimiters;
        let mut hash = Sha256::new();
        hash.update(self.service_advice);
        for segment in self.segments() {
            let blanked: &[usize] = match (self.envelope.standard, segment.tag()) {
                (Standard::X12, b"ISA") => &[9, 10],
                (Standard::X12, b"GS") => &[4, 5],
                (Standard::Edifact, b"UNB" | b"UNG") => &[4],
                _ => &[],
            };
            if blanked.is_empty() {
                hash.update(segment.bytes);
            } else {
                for (n, element) in syntax::split(segment.bytes, d.element, d.release).enumerate() {
                    if n > 0 {
                        hash.update([d.element]);
                    }
                    if !blanked.contains(&n) {
                        hash.update(element);
                    }
                }
            }
            hash.update([d.segment]);
        }
        Fingerprint(format!("{:x}", hash.finalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_fingerprint_is_read_back_only_as_written() {
        let interchange =
            crate::edi::read(include_bytes!("../../tests/fixtures/x12/810-single.edi")).unwrap();
        let fingerprint = interchange.fingerprint();
        assert_eq!(Fingerprint::try_from(fingerprint.to_string()), Ok(fingerprint.clone()));
        assert_eq!(fingerprint.prefix(16).len(), 16);
        for bad in [fingerprint.to_string().to_uppercase(), fingerprint.prefix(63).to_owned(), String::new()]
        {
            assert!(Fingerprint::try_from(bad.clone()).is_err(), "{bad:?}");
        }
    }
}
