//! The partner directory: every partner with the hashes of its API keys and its decoded signing
//! keys, held in memory so that authenticating a request costs no database round trip and a
//! stranger's request costs the same lookup as a partner's.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use openssl::x509::X509;

use super::{CredentialKind, Partner, PartnerId, api_key_hash};

/// A partner that signs its requests, with the keys a signature may be made with.
pub struct Signer {
    pub partner: Arc<Partner>,
    pub keys: Vec<Vec<u8>>,
}

/// A credential that is not revoked, as the directory is built from it.
#[derive(Debug)]
pub struct ActiveCredential {
    pub partner_id: PartnerId,
    pub kind: CredentialKind,
    pub key_sha256: Option<String>,
    pub secret: Option<String>,
}

/// A partner with an AS2 name, and the certificates its signatures are verified with.
pub struct As2Sender {
    pub partner: Arc<Partner>,
    pub certificates: Vec<X509>,
}

#[derive(Default)]
pub struct Directory {
    by_as2_name: HashMap<String, Arc<As2Sender>>,
    by_api_key: HashMap<String, Arc<Partner>>,
    signers: HashMap<PartnerId, Signer>,
    by_sender: HashMap<String, Arc<Partner>>,
    by_pubsub_account: HashMap<String, Arc<Partner>>,
    by_sns_topic: HashMap<String, Arc<Partner>>,
}

impl Directory {
    pub fn new(partners: Vec<Partner>, credentials: Vec<ActiveCredential>) -> Directory {
        let partners: HashMap<PartnerId, Arc<Partner>> =
            partners.into_iter().map(|partner| (partner.id.clone(), Arc::new(partner))).collect();
        let mut directory = Directory::default();
        for partner in partners.values() {
            for sender in &partner.senders {
                directory.by_sender.insert(sender.clone(), Arc::clone(partner));
            }
            for account in &partner.pubsub_accounts {
                directory.by_pubsub_account.insert(account.clone(), Arc::clone(partner));
            }
            for topic in &partner.sns_topics {
                directory.by_sns_topic.insert(topic.clone(), Arc::clone(partner));
            }
            let sender = Arc::new(As2Sender {
                partner: Arc::clone(partner),
                // Validated when registered; a certificate that no longer parses verifies nothing.
                certificates: partner
                    .as2_certificates
                    .iter()
                    .filter_map(|pem| X509::from_pem(pem.as_bytes()).ok())
                    .collect(),
            });
            for name in &partner.as2_ids {
                directory.by_as2_name.insert(name.clone(), Arc::clone(&sender));
            }
        }
        for credential in credentials {
            let Some(partner) = partners.get(&credential.partner_id) else { continue };
            match (credential.kind, credential.key_sha256, credential.secret) {
                (CredentialKind::ApiKey, Some(hash), _) => {
                    directory.by_api_key.insert(hash, Arc::clone(partner));
                }
                (CredentialKind::WebhookSecret, _, Some(secret)) => {
                    let Some(key) = signing_key(&secret) else { continue };
                    directory
                        .signers
                        .entry(partner.id.clone())
                        .or_insert_with(|| Signer { partner: Arc::clone(partner), keys: Vec::new() })
                        .keys
                        .push(key);
                }
                _ => {}
            }
        }
        directory
    }

    /// The partner holding this API key, if the key is not revoked.
    pub fn by_api_key(&self, key: &str) -> Option<&Arc<Partner>> {
        self.by_api_key.get(&api_key_hash(key))
    }

    /// The partner that sends as `identity` (`{standard}:{qualifier}:{id}`).
    pub fn by_sender(&self, identity: &str) -> Option<&Arc<Partner>> {
        self.by_sender.get(identity)
    }

    /// The partner whose Pub/Sub push subscriptions sign their tokens as service `account`.
    pub fn by_pubsub_account(&self, account: &str) -> Option<&Arc<Partner>> {
        self.by_pubsub_account.get(account)
    }

    /// The partner whose messages SNS topic `arn` carries.
    pub fn by_sns_topic(&self, arn: &str) -> Option<&Arc<Partner>> {
        self.by_sns_topic.get(arn)
    }

    /// The partner whose AS2 gateway sends as `name` (`AS2-From`).
    pub fn by_as2_name(&self, name: &str) -> Option<&Arc<As2Sender>> {
        self.by_as2_name.get(name)
    }

    /// The partner `id` and its signing keys, if it has any.
    pub fn signer(&self, id: &str) -> Option<&Signer> {
        self.signers.get(id)
    }
}

/// The HMAC key of a `whsec_…` secret.
pub fn signing_key(secret: &str) -> Option<Vec<u8>> {
    secret.strip_prefix("whsec_").and_then(|key| STANDARD.decode(key).ok())
}
