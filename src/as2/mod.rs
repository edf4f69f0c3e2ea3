//! AS2 (RFC 4130): opening a partner gateway's S/MIME message — decrypting it with one of this
//! service's keys, verifying the partner's signature with its certificate, inflating RFC 3274
//! compressed data, in any nesting order — and writing the MDN that answers it. Pure: the HTTP
//! door (`http::receive::as2`) feeds it a request's headers and body and sends what it writes.

mod compressed;
pub mod gateway;
mod identity;
pub mod mdn;
pub mod mime;
mod open;

pub use compressed::Allowance;
pub use identity::Identity;
pub use open::{Opened, Opening, Security, open};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use openssl::hash::MessageDigest;

/// Why an AS2 message could not be opened; each is answered with its MDN disposition modifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// Not a MIME or CMS structure this service reads.
    #[error("the AS2 message could not be read: {0}")]
    Malformed(String),
    /// None of this service's keys opens it, or what it decrypts to fails in any way: one answer
    /// without detail, so that a changed ciphertext teaches nothing (no padding oracle). What failed
    /// inside, if decryption got that far, is kept for the operator's log only.
    #[error("the AS2 message could not be decrypted with this service's key")]
    DecryptionFailed(Option<Box<Failure>>),
    /// The signature is not the partner's (unknown signer, no certificate registered, unsigned
    /// without another proof).
    #[error("the AS2 message's signer could not be authenticated: {0}")]
    AuthenticationFailed(String),
    /// The partner's signature does not match the content: changed in transit.
    #[error("the AS2 message's content does not match its signature")]
    IntegrityCheckFailed,
    /// The partner must sign (or encrypt) and this message is not.
    #[error("the AS2 message must be {0}")]
    InsufficientSecurity(&'static str),
    /// The content inflates past the body limit (all layers together).
    #[error("the AS2 message's content inflates past the limit of {0} bytes")]
    TooLarge(usize),
    /// The memory budget has no room now for what the content inflates to: retry.
    #[error("the server's memory budget has no room now for the AS2 message's inflated content")]
    Busy,
    /// An asynchronous MDN was asked to an address the partner has not registered.
    #[error("receipts are not delivered to {0:?}: not one of the partner's registered MDN URLs")]
    ReceiptUrlRefused(String),
}

impl Failure {
    /// The `processed/error` modifier of the MDN that answers it (RFC 4130 7.4.3).
    pub fn modifier(&self) -> &'static str {
        match self {
            Failure::DecryptionFailed(_) => "decryption-failed",
            Failure::AuthenticationFailed(_) => "authentication-failed",
            Failure::IntegrityCheckFailed => "integrity-check-failed",
            Failure::InsufficientSecurity(_) => "insufficient-message-security",
            Failure::Malformed(_) | Failure::TooLarge(_) | Failure::Busy | Failure::ReceiptUrlRefused(_) => {
                "unexpected-processing-error"
            }
        }
    }
}

text_enum! {
    /// What a partner's AS2 messages must be.
    As2Security {
        /// Plain, signed or encrypted: whatever arrives (a plain message proves nothing by itself).
        Optional = "optional",
        /// Signed with one of the partner's certificates.
        Signed = "signed",
        /// Encrypted to this service.
        Encrypted = "encrypted",
        /// Both.
        SignedEncrypted = "signed-encrypted",
    }
}

impl As2Security {
    /// The protection a message lacks, if any.
    pub fn missing(self, security: Security) -> Option<&'static str> {
        let signed = matches!(self, As2Security::Signed | As2Security::SignedEncrypted);
        let encrypted = matches!(self, As2Security::Encrypted | As2Security::SignedEncrypted);
        match (signed && !security.signed, encrypted && !security.encrypted) {
            (true, true) => Some("signed and encrypted"),
            (true, false) => Some("signed"),
            (false, true) => Some("encrypted"),
            (false, false) => None,
        }
    }
}

/// A message integrity check algorithm (`signed-receipt-micalg`, `micalg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MicAlg {
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

impl MicAlg {
    /// Reads the names senders write (`sha1`, `SHA-1`, `sha-256`, `sha256`, …); `None` for others.
    pub fn parse(name: &str) -> Option<MicAlg> {
        match name.trim().to_ascii_lowercase().replace('-', "").as_str() {
            "sha1" => Some(MicAlg::Sha1),
            "sha256" => Some(MicAlg::Sha256),
            "sha384" => Some(MicAlg::Sha384),
            "sha512" => Some(MicAlg::Sha512),
            _ => None,
        }
    }

    fn digest(self) -> MessageDigest {
        match self {
            MicAlg::Sha1 => MessageDigest::sha1(),
            MicAlg::Sha256 => MessageDigest::sha256(),
            MicAlg::Sha384 => MessageDigest::sha384(),
            MicAlg::Sha512 => MessageDigest::sha512(),
        }
    }

    /// The name RFC 5751 gives it.
    pub fn name(self) -> &'static str {
        match self {
            MicAlg::Sha1 => "sha-1",
            MicAlg::Sha256 => "sha-256",
            MicAlg::Sha384 => "sha-384",
            MicAlg::Sha512 => "sha-512",
        }
    }
}

/// The algorithm a receipt's MIC is computed with, named as the sender named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicChoice {
    pub alg: MicAlg,
    pub spelled: String,
}

impl Default for MicChoice {
    fn default() -> MicChoice {
        MicChoice { alg: MicAlg::Sha256, spelled: MicAlg::Sha256.name().to_owned() }
    }
}

/// A `Received-Content-MIC`: the base64 digest of what was received, and its algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mic {
    pub digest: String,
    pub alg: String,
}

impl Mic {
    pub fn of(content: &[u8], choice: &MicChoice) -> Mic {
        // Every MicAlg is one OpenSSL always has; hashing memory cannot fail otherwise.
        let digest = openssl::hash::hash(choice.alg.digest(), content).map(|d| STANDARD.encode(d));
        Mic { digest: digest.unwrap_or_default(), alg: choice.spelled.clone() }
    }
}

impl std::fmt::Display for Mic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, {}", self.digest, self.alg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mic_algorithms_are_read_as_senders_spell_them() {
        for (name, alg) in [
            ("sha1", MicAlg::Sha1),
            ("SHA-256", MicAlg::Sha256),
            (" sha384", MicAlg::Sha384),
            ("sha-512", MicAlg::Sha512),
        ] {
            assert_eq!(MicAlg::parse(name), Some(alg), "{name}");
        }
        assert_eq!(MicAlg::parse("md5"), None);
        let mic = Mic::of(b"abc", &MicChoice { alg: MicAlg::Sha1, spelled: "sha1".into() });
        assert_eq!(mic.to_string(), "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=, sha1");
    }

    #[test]
    fn a_partners_requirement_names_what_a_message_lacks() {
        let plain = Security::default();
        let signed = Security { signed: true, ..Security::default() };
        assert_eq!(As2Security::Optional.missing(plain), None);
        assert_eq!(As2Security::Signed.missing(plain), Some("signed"));
        assert_eq!(As2Security::Signed.missing(signed), None);
        assert_eq!(As2Security::SignedEncrypted.missing(signed), Some("encrypted"));
        assert_eq!(As2Security::SignedEncrypted.missing(plain), Some("signed and encrypted"));
    }
}
