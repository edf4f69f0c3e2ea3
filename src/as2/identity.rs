//! This service's AS2 identity: a private key and its certificate, read from a PEM file or, when
//! none is configured, generated once (RSA 3072, self-signed) so that MDNs are signed and partners
//! have a certificate to encrypt to from the first start.

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::cms::{CMSOptions, CmsContentInfo};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{BasicConstraints, KeyUsage};
use openssl::x509::{X509, X509NameBuilder};

use super::Failure;

/// Days a generated certificate is valid.
const GENERATED_VALIDITY_DAYS: u32 = 3 * 365;

/// One of this service's AS2 keys with its certificate.
pub struct Identity {
    pub(super) key: PKey<Private>,
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

impl Identity {
    /// A new RSA 3072 key and a self-signed certificate for it, named `name` (its common name),
    /// valid for three years, usable to sign and to be encrypted to.
    pub fn generate(name: &str) -> Result<Identity, openssl::error::ErrorStack> {
        let key = PKey::from_rsa(Rsa::generate(3072)?)?;
        let mut subject = X509NameBuilder::new()?;
        subject.append_entry_by_nid(Nid::COMMONNAME, name)?;
        let subject = subject.build();
        let mut serial = BigNum::new()?;
        serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
        let mut certificate = X509::builder()?;
        certificate.set_version(2)?;
        let serial = serial.to_asn1_integer()?;
        certificate.set_serial_number(&serial)?;
        certificate.set_subject_name(&subject)?;
        certificate.set_issuer_name(&subject)?;
        certificate.set_pubkey(&key)?;
        let (from, until) = (Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(GENERATED_VALIDITY_DAYS)?);
        certificate.set_not_before(&from)?;
        certificate.set_not_after(&until)?;
        certificate.append_extension(BasicConstraints::new().critical().build()?)?;
        certificate
            .append_extension(KeyUsage::new().critical().digital_signature().key_encipherment().build()?)?;
        certificate.sign(&key, MessageDigest::sha256())?;
        Ok(Identity { key, certificate: certificate.build() })
    }

    /// The key (PKCS#8) and the certificate, as one PEM file `from_pem` reads.
    pub fn to_pem(&self) -> Result<Vec<u8>, openssl::error::ErrorStack> {
        let mut pem = self.key.private_key_to_pem_pkcs8()?;
        pem.extend(self.certificate.to_pem()?);
        Ok(pem)
    }

    /// The SHA-256 fingerprint of the certificate, as partners compare it (`AB:CD:…`).
    pub fn fingerprint(&self) -> String {
        let digest = self.certificate.digest(MessageDigest::sha256()).map(|d| d.to_vec()).unwrap_or_default();
        digest.iter().map(|byte| format!("{byte:02X}")).collect::<Vec<_>>().join(":")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_identity_reads_back_and_signs() {
        let generated = Identity::generate("edi-inbox").unwrap();
        let read = Identity::from_pem(&generated.to_pem().unwrap()).unwrap();
        assert_eq!(read.fingerprint(), generated.fingerprint());
        assert_eq!(read.fingerprint().len(), 32 * 3 - 1);
        let name = read.certificate.subject_name().entries_by_nid(Nid::COMMONNAME).next().unwrap();
        assert_eq!(name.data().as_slice(), b"edi-inbox");
        assert!(!read.sign(b"receipt").unwrap().is_empty());
    }
}
