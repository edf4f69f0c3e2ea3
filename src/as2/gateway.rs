//! What a partner's AS2 gateway must be configured with to send here: where to post, under which
//! AS2 names, how its messages must be protected, the certificate to encrypt to (and to verify
//! receipts with) and the receipts to ask for. `edi-inbox partner add` prints it with a partner
//! that has an AS2 name, so that nothing a partner needs has to be pieced together.

use serde::Serialize;

use super::{As2Security, Identity};

/// Where the certificate is served to partners (`http::as2_certificate`).
pub const CERTIFICATE_PATH: &str = "/v1/as2/certificate";

/// Where AS2 messages are posted.
const RECEIVE_PATH: &str = "/v1/interchanges";

/// The receipts this service writes: signed when it has a key, and with a MIC of what was signed.
const RECEIPT: &str = "ask for a synchronous signed MDN (signed-receipt-protocol=optional, \
    pkcs7-signature; signed-receipt-micalg=optional, sha-256); an asynchronous MDN goes only to a URL \
    registered with --as2-mdn-url";

/// A partner gateway's settings for this service.
#[derive(Debug, Serialize)]
pub struct GatewaySettings {
    /// The URL its messages are posted to, as this server listens (behind a proxy or a load
    /// balancer, the public URL that leads here).
    pub url: String,
    /// The AS2 names it sends as (`AS2-From`).
    pub as2_from: Vec<String>,
    /// The AS2 name it sends to (`AS2-To`): this service's; empty when none is configured (then
    /// any is accepted).
    pub as2_to: Vec<String>,
    /// What its messages must be (signed with a certificate registered for it, encrypted to this
    /// service's).
    pub security: As2Security,
    /// The certificate it encrypts to and verifies receipts with (PEM), when this service has an
    /// AS2 key.
    pub certificate: Option<String>,
    /// That certificate's SHA-256 fingerprint, as its gateway shows it (`AB:CD:…`).
    pub certificate_sha256: Option<String>,
    /// Where a running server serves that certificate (PEM, or DER with `Accept:
    /// application/pkix-cert`).
    pub certificate_url: String,
    /// The receipts to ask for.
    pub receipt: &'static str,
    /// The URLs its asynchronous MDNs may be delivered to.
    pub mdn_urls: Vec<String>,
}

/// This service as a partner's gateway reaches it.
pub struct Station<'a> {
    /// `http://host:port`, where it is reached.
    pub base_url: &'a str,
    /// Its AS2 names.
    pub receiver_ids: &'a [String],
    /// Its current AS2 key, if it has one.
    pub identity: Option<&'a Identity>,
}

impl GatewaySettings {
    /// The settings of a partner known by `as2_ids`, sending to `station`.
    pub fn new(
        station: &Station<'_>,
        as2_ids: &[String],
        security: As2Security,
        mdn_urls: &[String],
    ) -> Result<GatewaySettings, openssl::error::ErrorStack> {
        let Station { base_url, receiver_ids, identity } = *station;
        let certificate = match identity {
            Some(identity) => Some(String::from_utf8_lossy(&identity.certificate.to_pem()?).into_owned()),
            None => None,
        };
        Ok(GatewaySettings {
            url: format!("{base_url}{RECEIVE_PATH}"),
            as2_from: as2_ids.to_vec(),
            as2_to: receiver_ids.to_vec(),
            security,
            certificate,
            certificate_sha256: identity.map(Identity::fingerprint),
            certificate_url: format!("{base_url}{CERTIFICATE_PATH}"),
            receipt: RECEIPT,
            mdn_urls: mdn_urls.to_vec(),
        })
    }
}
