//! Opening an AS2 message layer by layer: `application/pkcs7-mime` enveloped data is decrypted with
//! this service's keys, compressed data inflated, `multipart/signed` and opaque `signed-data`
//! verified against the partner's certificates, until the EDI entity is reached. The MIC of the
//! receipt is that of the signed entity exactly as received (the outermost signature, wherever it
//! is nested: RFC 5402 signs before or after compressing; for opaque signed-data, the entity it
//! carries); an unsigned message's is that of the first layer inside the encryption. Everything
//! decrypted is read strictly, and any failure to read it answers as a decryption failure: with
//! CBC, a changed ciphertext must not be told apart by its padding.

use openssl::cms::{CMSOptions, CmsContentInfo};
use openssl::stack::Stack;
use openssl::x509::X509;

use super::compressed::{self, Allowance};
use super::mime::{self, Entity, Reading};
use super::{Failure, Identity, Mic, MicChoice};

/// Deepest nesting of S/MIME layers opened.
const MAX_LAYERS: usize = 6;

/// What opening a message needs.
pub struct Opening<'a> {
    /// This service's keys, newest first (rotation: the one a message is encrypted to opens it).
    pub identities: &'a [Identity],
    /// The partner's signing certificates.
    pub signers: &'a [X509],
    /// How the receipt's MIC is computed.
    pub mic: &'a MicChoice,
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

/// Opens a message whose outermost entity is `top` (the HTTP request's headers and body),
/// inflating compressed layers within `allowance`.
pub fn open(top: &Entity<'_>, opening: &Opening<'_>, allowance: Allowance<'_>) -> Result<Opened, Failure> {
    let mut state = State {
        security: Security::default(),
        signed_mic: None,
        unsigned_mic: None,
        reading: Reading::Lenient,
        malleable: false,
        allowance,
    };
    let (payload, content_type) = layer(top, None, 0, opening, &mut state)?;
    let mic = state.signed_mic.or(state.unsigned_mic).unwrap_or_else(|| Mic::of(top.body, opening.mic));
    Ok(Opened { payload, content_type, security: state.security, mic })
}

struct State<'a> {
    security: Security,
    /// The MIC of the outermost signed entity.
    signed_mic: Option<Mic>,
    /// The MIC of the first entity inside the encryption, for an unsigned message.
    unsigned_mic: Option<Mic>,
    /// Strict once inside encryption.
    reading: Reading,
    /// Decrypted from CBC, which has no integrity of its own: until a signature vouches for the
    /// content, it may have been changed or extended block by block.
    malleable: bool,
    allowance: Allowance<'a>,
}

/// Opens one layer and those inside it; `raw` is the entity as received, headers included (none
/// for the HTTP request, whose headers came apart).
fn layer(
    entity: &Entity<'_>,
    raw: Option<&[u8]>,
    depth: usize,
    opening: &Opening<'_>,
    state: &mut State<'_>,
) -> Result<(Vec<u8>, Option<String>), Failure> {
    if depth > MAX_LAYERS {
        return Err(Failure::Malformed("too many S/MIME layers".into()));
    }
    let content_type = entity.content_type();
    if content_type.is_pkcs7_mime() {
        let kind = content_type.param("smime-type").map(str::to_ascii_lowercase);
        let inner = match kind.as_deref() {
            Some("compressed-data") => {
                mic_once(state, entity, raw, opening);
                state.security.compressed = true;
                compressed::decompress(&entity.decoded_body()?, &mut state.allowance)?
            }
            Some("enveloped-data" | "authenveloped-data") | None => {
                state.security.encrypted = true;
                let der = entity.decoded_body()?;
                if state.reading == Reading::Strict && !compressed::is_one_value(&der) {
                    return Err(Failure::Malformed("data follows the enveloped data".into()));
                }
                let (inner, authenticated) = decrypt(&der, opening.identities)?;
                drop(der);
                state.malleable |= !authenticated;
                state.reading = Reading::Strict;
                return Entity::parse(&inner, Reading::Strict)
                    .and_then(|entity| layer(&entity, Some(&inner), depth + 1, opening, state))
                    .map_err(inside_encryption);
            }
            Some("signed-data") => {
                let der = entity.decoded_body()?;
                if state.reading == Reading::Strict && !compressed::is_one_value(&der) {
                    return Err(Failure::Malformed("data follows the signed data".into()));
                }
                let signed = verify(None, &der, opening.signers, state.reading)?;
                sign_once(state, &signed, opening);
                signed
            }
            Some(other) => return Err(Failure::Malformed(format!("S/MIME type {other:?} is not read here"))),
        };
        return layer(&Entity::parse(&inner, state.reading)?, Some(&inner), depth + 1, opening, state);
    }
    if content_type.essence == "multipart/signed" {
        let boundary = content_type
            .param("boundary")
            .ok_or_else(|| Failure::Malformed("multipart/signed without a boundary".into()))?;
        let (signed, signature) = mime::signed_parts(entity.body, boundary, state.reading)?;
        let signature = Entity::parse(signature, state.reading)?.decoded_body()?;
        let signed_entity = Entity::parse(signed, state.reading)?;
        verify(Some(signed), &signature, opening.signers, state.reading)?;
        sign_once(state, signed, opening);
        return layer(&signed_entity, Some(signed), depth + 1, opening, state);
    }
    mic_once(state, entity, raw, opening);
    let content_type = entity.header("content-type").map(str::to_owned);
    let payload = entity.decoded_body()?;
    if state.malleable && !state.security.signed && !crate::edi::ends_with_trailer(&payload) {
        return Err(Failure::Malformed("the decrypted interchange does not end with its trailer".into()));
    }
    Ok((payload, content_type))
}

/// What fails inside encryption, before a signature or the key proved the plaintext authentic,
/// answers as decryption: a changed ciphertext must not tell a padding error from a parse error.
/// A plaintext that parsed strictly may still fail its signature (said as such, RFC 4130), be
/// too large, or find the budget spent.
fn inside_encryption(failure: Failure) -> Failure {
    match failure {
        Failure::DecryptionFailed(_)
        | Failure::AuthenticationFailed(_)
        | Failure::IntegrityCheckFailed
        | Failure::TooLarge(_)
        | Failure::Busy => failure,
        other => Failure::DecryptionFailed(Some(Box::new(other))),
    }
}

/// Marks the message signed, taking the receipt's MIC from `signed` (the entity a signature
/// covers, headers included) unless an outer signature gave it.
fn sign_once(state: &mut State<'_>, signed: &[u8], opening: &Opening<'_>) {
    if state.signed_mic.is_none() {
        state.signed_mic = Some(Mic::of(signed, opening.mic));
    }
    state.security.signed = true;
}

/// Takes an unsigned message's MIC from this entity unless an outer layer gave it.
fn mic_once(state: &mut State<'_>, entity: &Entity<'_>, raw: Option<&[u8]>, opening: &Opening<'_>) {
    if state.unsigned_mic.is_none() && state.signed_mic.is_none() {
        state.unsigned_mic = Some(Mic::of(raw.unwrap_or(entity.body), opening.mic));
    }
}

/// id-ct-authEnvelopedData, 1.2.840.113549.1.9.16.1.23 (RFC 5083): AES-GCM, authenticated.
const AUTH_ENVELOPED_DATA: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x10, 0x01, 0x17];

/// Decrypts with the first of this service's keys the message is encrypted to; also says whether
/// the encryption authenticated the content (`AuthEnvelopedData`, whose tag must be the full 16
/// bytes) or not (CBC `EnvelopedData`).
/// OpenSSL is given the certificate, so a wrong RSA padding decrypts to a random content key (its
/// countermeasure to Bleichenbacher's attack) and fails like any other bad ciphertext: one answer
/// for all.
fn decrypt(der: &[u8], identities: &[Identity]) -> Result<(Vec<u8>, bool), Failure> {
    let authenticated = compressed::content_type(der) == Some(AUTH_ENVELOPED_DATA);
    if authenticated && !compressed::has_full_tag(der) {
        return Err(Failure::DecryptionFailed(None));
    }
    let cms = CmsContentInfo::from_der(der).map_err(|_| Failure::DecryptionFailed(None))?;
    let plaintext = identities
        .iter()
        .find_map(|identity| cms.decrypt(&identity.key, &identity.certificate).ok())
        .ok_or(Failure::DecryptionFailed(None))?;
    Ok((plaintext, authenticated))
}

/// Verifies a signature with one of the partner's certificates, and only those (certificates the
/// message carries are ignored; a partner's certificate is trusted as registered, not through a
/// chain): a detached one (`multipart/signed`) over `detached`, or, without it, an opaque one
/// (`smime-type=signed-data`) over the content it carries, which is returned. A signature that
/// only fails its content digest means the content changed; one no certificate verifies is not
/// the partner's. Read strictly, a signature that is not exactly one CMS structure is malformed,
/// not unproven.
fn verify(
    detached: Option<&[u8]>,
    signature: &[u8],
    signers: &[X509],
    reading: Reading,
) -> Result<Vec<u8>, Failure> {
    let not_cms = "the signature is not a CMS signature";
    let parsed = CmsContentInfo::from_der(signature)
        .ok()
        .filter(|_| reading == Reading::Lenient || compressed::is_one_value(signature));
    let mut cms = match (parsed, reading) {
        (Some(cms), _) => cms,
        (None, Reading::Strict) => return Err(Failure::Malformed(not_cms.into())),
        (None, Reading::Lenient) => return Err(Failure::AuthenticationFailed(not_cms.into())),
    };
    if signers.is_empty() {
        return Err(Failure::AuthenticationFailed(
            "the partner has no AS2 signing certificate registered".into(),
        ));
    }
    let unusable = |_| Failure::AuthenticationFailed("the partner's certificates could not be used".into());
    let mut certificates = Stack::new().map_err(unusable)?;
    for certificate in signers {
        certificates.push(certificate.clone()).map_err(unusable)?;
    }
    let flags = CMSOptions::BINARY | CMSOptions::NOINTERN | CMSOptions::NO_SIGNER_CERT_VERIFY;
    let mut content = Vec::new();
    let output = detached.is_none().then_some(&mut content);
    if cms.verify(Some(&certificates), None, detached, output, flags).is_ok() {
        return Ok(content);
    }
    let signer_only = flags | CMSOptions::NO_CONTENT_VERIFY;
    match cms.verify(Some(&certificates), None, detached, None, signer_only) {
        Ok(()) => Err(Failure::IntegrityCheckFailed),
        Err(_) => Err(Failure::AuthenticationFailed(
            "the signature is not made with the partner's certificate".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use openssl::symm::Cipher;

    use super::*;
    use crate::as2::compressed::tests::entity as compressed;

    fn identity(name: &str) -> Identity {
        Identity::generate(name).unwrap()
    }

    fn enveloped_with(entity: &[u8], to: &Identity, cipher: Cipher) -> Vec<u8> {
        let mut recipients = Stack::new().unwrap();
        recipients.push(to.certificate.clone()).unwrap();
        CmsContentInfo::encrypt(&recipients, entity, cipher, CMSOptions::BINARY).unwrap().to_der().unwrap()
    }

    fn enveloped(entity: &[u8], to: &Identity) -> Vec<u8> {
        enveloped_with(entity, to, Cipher::aes_192_cbc())
    }

    fn open_as(
        body: &[u8],
        content_type: &str,
        identities: &[Identity],
        signers: &[X509],
    ) -> Result<Opened, Failure> {
        let top = Entity::new(vec![("content-type".into(), content_type.into())], body);
        let allowance = Allowance { limit: 1 << 20, remaining: 1 << 20, charge: &mut |_| true };
        open(&top, &Opening { identities, signers, mic: &MicChoice::default() }, allowance)
    }

    fn open_with(body: &[u8], content_type: &str, identities: &[Identity]) -> Result<Opened, Failure> {
        open_as(body, content_type, identities, &[])
    }

    const INTERCHANGE: &[u8] = b"ISA*00*          *00*          *ZZ*ACME           *ZZ*BUYER          *260317*1015*U*00401*000000007*0*P*>~\
GS*IN*ACME*BUYER*20260317*1015*7*X*004010~ST*810*0001~BIG*20260317*INV-7~IT1*1*2*EA*1.50~TDS*300~SE*5*0001~GE*1*7~IEA*1*000000007~";

    fn edi() -> Vec<u8> {
        [b"Content-Type: application/edi-x12\r\n\r\n".as_slice(), INTERCHANGE].concat()
    }

    /// `multipart/signed` around `entity` by `signer`, with `after` past the closing delimiter.
    fn signed(entity: &[u8], signer: &Identity, after: &[u8]) -> Vec<u8> {
        use base64::Engine;
        let signature = base64::engine::general_purpose::STANDARD.encode(signer.sign(entity).unwrap());
        [
            b"Content-Type: multipart/signed; boundary=b1\r\n\r\n--b1\r\n".as_slice(),
            entity,
            b"\r\n--b1\r\nContent-Type: application/pkcs7-signature\r\nContent-Transfer-Encoding: base64\r\n\r\n",
            signature.as_bytes(),
            b"\r\n--b1--\r\n",
            after,
        ]
        .concat()
    }

    const SMIME: &str = "application/pkcs7-mime; smime-type=enveloped-data";

    #[test]
    fn a_message_encrypted_to_any_of_the_keys_opens_rotation() {
        let (new, old) = (identity("new"), identity("old"));
        let keys = [new, old];
        let opened = open_with(&enveloped(&edi(), &keys[1]), "application/pkcs7-mime", &keys).unwrap();
        assert_eq!(opened.payload, INTERCHANGE);
        assert_eq!(opened.content_type.as_deref(), Some("application/edi-x12"));
        assert!(opened.security.encrypted && !opened.security.signed);
        let stranger = identity("stranger");
        let refused = open_with(&enveloped(&edi(), &stranger), "application/pkcs7-mime", &keys);
        assert_eq!(refused.unwrap_err(), Failure::DecryptionFailed(None));
    }

    #[test]
    fn whatever_follows_the_content_inside_cbc_is_a_decryption_failure() {
        let (station, partner) = (identity("station"), identity("partner"));
        let keys = [station];
        let signers = [partner.certificate.clone()];
        let open = |plaintext: &[u8]| open_as(&enveloped(plaintext, &keys[0]), SMIME, &keys, &signers);
        assert!(open(&signed(&edi(), &partner, b"")).unwrap().security.signed);
        // What appended ciphertext blocks decrypt to: the old padding, then blocks of noise.
        let appended = b"\x05\x05\x05\x05\x05\x8f\x12\xe4\x00\x9a";
        for plaintext in [
            signed(&edi(), &partner, appended),
            [edi().as_slice(), appended].concat(),
            signed(&edi(), &partner, b"")[..400].to_vec(),
            b"\r\n\r\nISA*00*".to_vec(),
        ] {
            let failure = open(&plaintext).unwrap_err();
            assert!(matches!(failure, Failure::DecryptionFailed(Some(_))), "{failure:?}");
        }
        let garbled_signature = String::from_utf8(signed(&edi(), &partner, b""))
            .unwrap()
            .replace("base64\r\n\r\nMII", "base64\r\n\r\nNII")
            .into_bytes();
        assert!(matches!(open(&garbled_signature).unwrap_err(), Failure::DecryptionFailed(Some(_))));
    }

    #[test]
    fn a_strictly_read_plaintext_tells_its_signature_failures_as_rfc_4130_names_them() {
        let (station, partner, stranger) = (identity("station"), identity("partner"), identity("stranger"));
        let keys = [station];
        let signers = [partner.certificate.clone()];
        let open = |plaintext: &[u8]| open_as(&enveloped(plaintext, &keys[0]), SMIME, &keys, &signers);
        let foreign = open(&signed(&edi(), &stranger, b"")).unwrap_err();
        assert!(matches!(foreign, Failure::AuthenticationFailed(_)), "{foreign:?}");
        let genuine = signed(&edi(), &partner, b"");
        let changed = String::from_utf8(genuine).unwrap().replace("INV-7", "INV-8").into_bytes();
        assert_eq!(open(&changed).unwrap_err(), Failure::IntegrityCheckFailed);
    }

    #[test]
    fn authenticated_encryption_opens_and_is_not_held_to_the_trailer() {
        let keys = [identity("station")];
        let gcm = enveloped_with(&edi(), &keys[0], Cipher::aes_256_gcm());
        assert_eq!(compressed::content_type(&gcm), Some(AUTH_ENVELOPED_DATA));
        let opened = open_with(&gcm, "application/pkcs7-mime; smime-type=authEnveloped-data", &keys).unwrap();
        assert_eq!(opened.payload, INTERCHANGE);
        assert!(opened.security.encrypted);
        let mut tampered = gcm.clone();
        let at = tampered.len() - 40;
        tampered[at] ^= 1;
        let refused = open_with(&tampered, "application/pkcs7-mime; smime-type=authEnveloped-data", &keys);
        assert!(matches!(refused.unwrap_err(), Failure::DecryptionFailed(_)));
        assert_eq!(compressed::tests::cut_tag(&gcm, 16), gcm, "re-encoded as it was");
        for length in [4, 8, 12] {
            let truncated = compressed::tests::cut_tag(&gcm, length);
            let refused =
                open_with(&truncated, "application/pkcs7-mime; smime-type=authEnveloped-data", &keys);
            assert!(matches!(refused, Err(Failure::DecryptionFailed(_))), "a {length}-byte tag: {refused:?}");
        }
        let cut = [edi().as_slice(), b"\r\nnot the trailer"].concat();
        let extended = enveloped_with(&cut, &keys[0], Cipher::aes_128_gcm());
        assert!(
            open_with(&extended, SMIME, &keys).is_ok(),
            "GCM vouches for its plaintext; the EDI parser judges it"
        );
    }

    /// Opaque `signed-data` around `entity` by `signer` (the content inside the signature).
    fn opaque(entity: &[u8], signer: &Identity) -> Vec<u8> {
        let flags = CMSOptions::BINARY;
        CmsContentInfo::sign(Some(&signer.certificate), Some(&signer.key), None, Some(entity), flags)
            .unwrap()
            .to_der()
            .unwrap()
    }

    #[test]
    fn opaque_signed_data_opens_with_the_mic_of_what_it_carries() {
        let (station, partner, stranger) = (identity("station"), identity("partner"), identity("stranger"));
        let keys = [station];
        let signers = [partner.certificate.clone()];
        const OPAQUE: &str = "application/pkcs7-mime; smime-type=signed-data; name=smime.p7m";
        let opened = open_as(&opaque(&edi(), &partner), OPAQUE, &keys, &signers).unwrap();
        assert_eq!(opened.payload, INTERCHANGE);
        assert_eq!(opened.security, Security { signed: true, ..Security::default() });
        assert_eq!(opened.mic, Mic::of(&edi(), &MicChoice::default()), "the MIC of the signed entity");

        let entity =
            [format!("Content-Type: {OPAQUE}\r\n\r\n").as_bytes(), &opaque(&edi(), &partner)].concat();
        let inside = open_as(&enveloped(&entity, &keys[0]), SMIME, &keys, &signers).unwrap();
        assert_eq!(inside.payload, INTERCHANGE);
        assert!(inside.security.signed && inside.security.encrypted);
        assert_eq!(inside.mic, opened.mic);

        let foreign = open_as(&opaque(&edi(), &stranger), OPAQUE, &keys, &signers).unwrap_err();
        assert!(matches!(foreign, Failure::AuthenticationFailed(_)), "{foreign:?}");
        let mut changed = opaque(&edi(), &partner);
        let at = changed.windows(5).position(|w| w == b"INV-7").unwrap();
        changed[at + 4] = b'8';
        assert_eq!(open_as(&changed, OPAQUE, &keys, &signers).unwrap_err(), Failure::IntegrityCheckFailed);
        let unregistered = open_as(&opaque(&edi(), &partner), OPAQUE, &keys, &[]).unwrap_err();
        assert!(matches!(unregistered, Failure::AuthenticationFailed(_)), "{unregistered:?}");
    }

    #[test]
    fn nested_compression_shares_one_allowance() {
        let big = [b"Content-Type: text/plain\r\n\r\n".as_slice(), &vec![b'A'; 300_000]].concat();
        let once = compressed(&big);
        let twice = compressed(&once);
        let (headers, body) = twice.split_at(twice.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4);
        let content_type = std::str::from_utf8(headers).unwrap().trim().trim_start_matches("Content-Type: ");
        let top = Entity::new(vec![("content-type".into(), content_type.into())], body);
        let opening = Opening { identities: &[], signers: &[], mic: &MicChoice::default() };
        // The outer layer inflates to the inner entity, the inner one to `big`.
        let both = once.len() + big.len();
        let allowance = Allowance { limit: both - 1, remaining: both - 1, charge: &mut |_| true };
        assert_eq!(open(&top, &opening, allowance).unwrap_err(), Failure::TooLarge(both - 1));
        let mut charged = 0;
        let mut charge = |bytes| {
            charged += bytes;
            true
        };
        let allowance = Allowance { limit: both, remaining: both, charge: &mut charge };
        assert_eq!(open(&top, &opening, allowance).unwrap().payload.len(), 300_000);
        assert_eq!(charged, both, "every inflated byte of every layer is charged");
    }

    #[test]
    fn nesting_is_bounded_and_unknown_layers_are_named() {
        let mut nested = edi();
        for _ in 0..=MAX_LAYERS {
            nested = compressed(&nested);
        }
        let (top_headers, body) =
            nested.split_at(nested.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4);
        let content_type =
            std::str::from_utf8(top_headers).unwrap().trim().trim_start_matches("Content-Type: ");
        let refused = open_with(body, content_type, &[]).unwrap_err();
        assert_eq!(refused, Failure::Malformed("too many S/MIME layers".into()));
        let certs_only = open_with(b"", "application/pkcs7-mime; smime-type=certs-only", &[]).unwrap_err();
        assert!(matches!(certs_only, Failure::Malformed(detail) if detail.contains("certs-only")));
    }
}
