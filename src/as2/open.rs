//! Opening an AS2 message layer by layer: `application/pkcs7-mime` enveloped data is decrypted with
//! this service's keys, compressed data inflated, `multipart/signed` verified against the partner's
//! certificates, until the EDI entity is reached. The MIC of the receipt is that of the signed
//! entity exactly as received (the outermost signature, wherever it is nested: RFC 5402 signs
//! before or after compressing); an unsigned message's is that of the first layer inside the
//! encryption.

use openssl::cms::{CMSOptions, CmsContentInfo};
use openssl::pkey::{PKey, Private};
use openssl::stack::Stack;
use openssl::x509::X509;

use super::mime::{self, Entity};
use super::{Failure, Mic, MicChoice, compressed};

/// Deepest nesting of S/MIME layers opened.
const MAX_LAYERS: usize = 6;

/// One of this service's AS2 keys with its certificate.
pub struct Identity {
    key: PKey<Private>,
    pub certificate: X509,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("certificate", &self.certificate.subject_name())
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// A private key and its certificate from one PEM file (in either order).
    pub fn from_pem(pem: &[u8]) -> Result<Identity, String> {
        let key = PKey::private_key_from_pem(pem).map_err(|_| "no readable private key".to_owned())?;
        let certificate = X509::from_pem(pem).map_err(|_| "no readable certificate".to_owned())?;
        let public = certificate.public_key().map_err(|_| "the certificate has no public key".to_owned())?;
        if !key.public_eq(&public) {
            return Err("the private key is not the certificate's".into());
        }
        Ok(Identity { key, certificate })
    }

    /// A detached CMS signature of `content` (binary, no line-ending translation), DER.
    pub fn sign(&self, content: &[u8]) -> Result<Vec<u8>, Failure> {
        CmsContentInfo::sign(
            Some(&self.certificate),
            Some(&self.key),
            None,
            Some(content),
            CMSOptions::DETACHED | CMSOptions::BINARY,
        )
        .and_then(|cms| cms.to_der())
        .map_err(|_| Failure::Malformed("the receipt could not be signed".into()))
    }
}

/// What opening a message needs.
pub struct Opening<'a> {
    /// This service's keys, newest first (rotation: the one a message is encrypted to opens it).
    pub identities: &'a [Identity],
    /// The partner's signing certificates.
    pub signers: &'a [X509],
    /// How the receipt's MIC is computed.
    pub mic: &'a MicChoice,
    /// Largest content accepted once inflated.
    pub limit: usize,
}

/// How a message was protected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Security {
    pub encrypted: bool,
    pub signed: bool,
    pub compressed: bool,
}

/// The EDI inside an AS2 message.
#[derive(Debug)]
pub struct Opened {
    pub payload: Vec<u8>,
    /// The EDI entity's own `Content-Type`.
    pub content_type: Option<String>,
    pub security: Security,
    pub mic: Mic,
}

/// Opens a message whose outermost entity is `top` (the HTTP request's headers and body).
pub fn open(top: &Entity<'_>, opening: &Opening<'_>) -> Result<Opened, Failure> {
    let mut state = State { security: Security::default(), signed_mic: None, unsigned_mic: None };
    let (payload, content_type) = layer(top, None, 0, opening, &mut state)?;
    let mic = state.signed_mic.or(state.unsigned_mic).unwrap_or_else(|| Mic::of(top.body, opening.mic));
    Ok(Opened { payload, content_type, security: state.security, mic })
}

struct State {
    security: Security,
    /// The MIC of the outermost signed entity.
    signed_mic: Option<Mic>,
    /// The MIC of the first entity inside the encryption, for an unsigned message.
    unsigned_mic: Option<Mic>,
}

/// Opens one layer and those inside it; `raw` is the entity as received, headers included (none
/// for the HTTP request, whose headers came apart).
fn layer(
    entity: &Entity<'_>,
    raw: Option<&[u8]>,
    depth: usize,
    opening: &Opening<'_>,
    state: &mut State,
) -> Result<(Vec<u8>, Option<String>), Failure> {
    if depth > MAX_LAYERS {
        return Err(Failure::Malformed("too many S/MIME layers".into()));
    }
    let content_type = entity.content_type();
    let inner = if content_type.is_pkcs7_mime() {
        let der = entity.decoded_body()?;
        let kind = content_type.param("smime-type").map(str::to_ascii_lowercase);
        match kind.as_deref() {
            Some("compressed-data") => {
                mic_once(state, entity, raw, opening);
                state.security.compressed = true;
                compressed::decompress(&der, opening.limit)?
            }
            Some("enveloped-data") | None => {
                state.security.encrypted = true;
                let inner = decrypt(&der, opening.identities)?;
                // CBC has no integrity of its own: whatever fails inside answers as decryption.
                return Entity::parse(&inner)
                    .and_then(|entity| layer(&entity, Some(&inner), depth + 1, opening, state))
                    .map_err(|failure| match failure {
                        Failure::DecryptionFailed(_) => failure,
                        other => Failure::DecryptionFailed(Some(Box::new(other))),
                    });
            }
            Some(other) => return Err(Failure::Malformed(format!("S/MIME type {other:?} is not read here"))),
        }
    } else if content_type.essence == "multipart/signed" {
        let boundary = content_type
            .param("boundary")
            .ok_or_else(|| Failure::Malformed("multipart/signed without a boundary".into()))?;
        let (signed, signature) = mime::signed_parts(entity.body, boundary)?;
        let signature = Entity::parse(signature)?.decoded_body()?;
        verify(signed, &signature, opening.signers)?;
        if state.signed_mic.is_none() {
            state.signed_mic = Some(Mic::of(signed, opening.mic));
        }
        state.security.signed = true;
        return layer(&Entity::parse(signed)?, Some(signed), depth + 1, opening, state);
    } else {
        mic_once(state, entity, raw, opening);
        let content_type = entity.header("content-type").map(str::to_owned);
        return Ok((entity.decoded_body()?, content_type));
    };
    layer(&Entity::parse(&inner)?, Some(&inner), depth + 1, opening, state)
}

/// Takes an unsigned message's MIC from this entity unless an outer layer gave it.
fn mic_once(state: &mut State, entity: &Entity<'_>, raw: Option<&[u8]>, opening: &Opening<'_>) {
    if state.unsigned_mic.is_none() && state.signed_mic.is_none() {
        state.unsigned_mic = Some(Mic::of(raw.unwrap_or(entity.body), opening.mic));
    }
}

/// Decrypts with the first of this service's keys the message is encrypted to. OpenSSL is given
/// the certificate, so a wrong RSA padding decrypts to a random content key (its countermeasure to
/// Bleichenbacher's attack) and fails like any other bad ciphertext: one answer for all.
fn decrypt(der: &[u8], identities: &[Identity]) -> Result<Vec<u8>, Failure> {
    let cms = CmsContentInfo::from_der(der).map_err(|_| Failure::DecryptionFailed(None))?;
    identities
        .iter()
        .find_map(|identity| cms.decrypt(&identity.key, &identity.certificate).ok())
        .ok_or(Failure::DecryptionFailed(None))
}

/// Verifies a detached signature over `signed` with one of the partner's certificates, and only
/// those (certificates the message carries are ignored; a partner's certificate is trusted as
/// registered, not through a chain). A signature that only fails its content digest means the
/// content changed; one no certificate verifies is not the partner's.
fn verify(signed: &[u8], signature: &[u8], signers: &[X509]) -> Result<(), Failure> {
    if signers.is_empty() {
        return Err(Failure::AuthenticationFailed(
            "the partner has no AS2 signing certificate registered".into(),
        ));
    }
    let mut cms = CmsContentInfo::from_der(signature)
        .map_err(|_| Failure::AuthenticationFailed("the signature is not a CMS signature".into()))?;
    let unusable = |_| Failure::AuthenticationFailed("the partner's certificates could not be used".into());
    let mut certificates = Stack::new().map_err(unusable)?;
    for certificate in signers {
        certificates.push(certificate.clone()).map_err(unusable)?;
    }
    let flags = CMSOptions::BINARY | CMSOptions::NOINTERN | CMSOptions::NO_SIGNER_CERT_VERIFY;
    if cms.verify(Some(&certificates), None, Some(signed), None, flags).is_ok() {
        return Ok(());
    }
    let signer_only = flags | CMSOptions::NO_CONTENT_VERIFY;
    match cms.verify(Some(&certificates), None, Some(signed), None, signer_only) {
        Ok(()) => Err(Failure::IntegrityCheckFailed),
        Err(_) => Err(Failure::AuthenticationFailed(
            "the signature is not made with the partner's certificate".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use openssl::asn1::Asn1Time;
    use openssl::bn::{BigNum, MsbOption};
    use openssl::hash::MessageDigest;
    use openssl::rsa::Rsa;
    use openssl::symm::Cipher;
    use openssl::x509::X509NameBuilder;

    use super::*;
    use crate::as2::compressed::tests::entity as compressed;

    fn identity(name: &str) -> Identity {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let mut subject = X509NameBuilder::new().unwrap();
        subject.append_entry_by_text("CN", name).unwrap();
        let subject = subject.build();
        let mut serial = BigNum::new().unwrap();
        serial.rand(64, MsbOption::MAYBE_ZERO, false).unwrap();
        let mut builder = X509::builder().unwrap();
        builder.set_version(2).unwrap();
        builder.set_serial_number(&serial.to_asn1_integer().unwrap()).unwrap();
        builder.set_subject_name(&subject).unwrap();
        builder.set_issuer_name(&subject).unwrap();
        builder.set_pubkey(&key).unwrap();
        builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        builder.set_not_after(&Asn1Time::days_from_now(1).unwrap()).unwrap();
        builder.sign(&key, MessageDigest::sha256()).unwrap();
        Identity { key, certificate: builder.build() }
    }

    fn enveloped(entity: &[u8], to: &Identity) -> Vec<u8> {
        let mut recipients = Stack::new().unwrap();
        recipients.push(to.certificate.clone()).unwrap();
        CmsContentInfo::encrypt(&recipients, entity, Cipher::aes_192_cbc(), CMSOptions::BINARY)
            .unwrap()
            .to_der()
            .unwrap()
    }

    fn open_with(body: &[u8], content_type: &str, identities: &[Identity]) -> Result<Opened, Failure> {
        let top = Entity::new(vec![("content-type".into(), content_type.into())], body);
        open(&top, &Opening { identities, signers: &[], mic: &MicChoice::default(), limit: 1 << 20 })
    }

    const EDI: &[u8] = b"Content-Type: application/edi-x12\r\n\r\nISA*00*";

    #[test]
    fn a_message_encrypted_to_any_of_the_keys_opens_rotation() {
        let (new, old) = (identity("new"), identity("old"));
        let keys = [new, old];
        let opened = open_with(&enveloped(EDI, &keys[1]), "application/pkcs7-mime", &keys).unwrap();
        assert_eq!(opened.payload, b"ISA*00*");
        assert_eq!(opened.content_type.as_deref(), Some("application/edi-x12"));
        assert!(opened.security.encrypted && !opened.security.signed);
        let stranger = identity("stranger");
        let refused = open_with(&enveloped(EDI, &stranger), "application/pkcs7-mime", &keys);
        assert_eq!(refused.unwrap_err(), Failure::DecryptionFailed(None));
    }

    #[test]
    fn nesting_is_bounded_and_unknown_layers_are_named() {
        let mut nested = EDI.to_vec();
        for _ in 0..=MAX_LAYERS {
            nested = compressed(&nested);
        }
        let (top_headers, body) =
            nested.split_at(nested.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4);
        let content_type =
            std::str::from_utf8(top_headers).unwrap().trim().trim_start_matches("Content-Type: ");
        let refused = open_with(body, content_type, &[]).unwrap_err();
        assert_eq!(refused, Failure::Malformed("too many S/MIME layers".into()));
        let signed_data = open_with(b"", "application/pkcs7-mime; smime-type=signed-data", &[]).unwrap_err();
        assert!(matches!(signed_data, Failure::Malformed(detail) if detail.contains("signed-data")));
    }
}
