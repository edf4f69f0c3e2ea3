//! Trading partners and how they prove who they are: API keys (`Authorization: Bearer`) and
//! Standard Webhooks signatures. Key generation, hashing and signature checks are pure; `admin`
//! runs the registry operations over the store.

pub mod admin;
pub mod webhooks;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use uuid::Uuid;

/// A registered trading partner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Partner {
    #[schema(example = "acme")]
    pub id: String,
    #[schema(example = "ACME Supply Co")]
    pub name: String,
    /// `active` or `suspended` (a suspended partner's requests get 403).
    #[schema(example = "active")]
    pub status: String,
    /// EDI identities it may send as: `{standard}:{qualifier}:{id}`, e.g. `x12:ZZ:ACMESUPPLY`.
    pub senders: Vec<String>,
    /// Our identities it may send to; empty means any.
    pub receivers: Vec<String>,
    /// Largest body it may post; the server default when absent.
    pub max_body_bytes: Option<i64>,
    /// Requests per minute it may make; the server default when absent.
    pub requests_per_minute: Option<i32>,
    /// `strict` (every rule) or `lenient` (bytes outside the charset read as ISO-8859-1, repeated
    /// group and document control numbers accepted).
    pub validation: String,
    /// `reject` (a reused control number with other content is a 409) or `process` (the content
    /// decides: it is recorded under `{control number}#{fingerprint prefix}`).
    pub conflict_policy: String,
    pub created_at: DateTime<Utc>,
    pub credentials: Vec<Credential>,
}

/// A credential as listed: never the secret itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema, sqlx::FromRow)]
pub struct Credential {
    pub id: Uuid,
    /// `api_key` or `webhook_secret`.
    pub kind: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// What registering a partner needs: the admin API's JSON body and `edi-inbox partner add`'s arguments.
#[derive(Clone, Debug, Deserialize, ToSchema, clap::Args)]
pub struct NewPartner {
    /// Partner id, e.g. `acme` (letters, digits, `-`, `_`, `.`).
    #[schema(example = "acme")]
    pub id: String,
    #[arg(long)]
    #[schema(example = "ACME Supply Co")]
    pub name: String,
    /// An EDI identity it sends as, `x12:QUALIFIER:ID` or `edifact:QUALIFIER:ID` (repeatable).
    #[arg(long = "sender", required = true)]
    #[schema(example = json!(["x12:ZZ:ACMESUPPLY"]))]
    pub senders: Vec<String>,
    /// One of our identities it may send to (repeatable; none means any).
    #[serde(default)]
    #[arg(long = "receiver")]
    #[schema(example = json!(["x12:ZZ:BUYERCO"]))]
    pub receivers: Vec<String>,
    /// Largest body it may post, in bytes (default: the server's body limit).
    #[arg(long)]
    pub max_body_bytes: Option<i64>,
    /// Requests per minute it may make (default: the server's limit).
    #[arg(long)]
    pub requests_per_minute: Option<i32>,
    /// `strict`, or `lenient`: bytes outside the charset read as ISO-8859-1, repeated group and
    /// document control numbers accepted.
    #[serde(default = "strict")]
    #[arg(long, default_value = "strict")]
    #[schema(example = "strict")]
    pub validation: String,
    /// `reject` (409 for a reused control number with other content) or `process` (recorded under
    /// `{control number}#{fingerprint prefix}`).
    #[serde(default = "reject")]
    #[arg(long, default_value = "reject")]
    #[schema(example = "reject")]
    pub conflict_policy: String,
}

fn strict() -> String {
    "strict".into()
}

fn reject() -> String {
    "reject".into()
}

impl NewPartner {
    /// Refuses ids and identities that cannot be right.
    pub fn validate(&self) -> Result<(), String> {
        let id_ok = !self.id.is_empty()
            && self.id.len() <= 64
            && self.id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !id_ok {
            return Err(format!("partner id {:?} must be 1-64 letters, digits, '-', '_' or '.'", self.id));
        }
        if self.senders.is_empty() {
            return Err("a partner needs at least one sender identity".into());
        }
        for identity in self.senders.iter().chain(&self.receivers) {
            parse_identity(identity)?;
        }
        if !matches!(self.validation.as_str(), "strict" | "lenient") {
            return Err(format!("validation must be strict or lenient, not {:?}", self.validation));
        }
        if !matches!(self.conflict_policy.as_str(), "reject" | "process") {
            return Err(format!("conflict_policy must be reject or process, not {:?}", self.conflict_policy));
        }
        Ok(())
    }
}

/// Checks the `{standard}:{qualifier}:{id}` form (`x12:ZZ:ACME`, `edifact:14:4000001000005`, `edifact::ACME`).
pub fn parse_identity(identity: &str) -> Result<(), String> {
    let mut parts = identity.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("x12" | "edifact"), Some(_), Some(id)) if !id.is_empty() => Ok(()),
        _ => Err(format!("identity {identity:?} must be x12:QUALIFIER:ID or edifact:QUALIFIER:ID")),
    }
}

/// Freshly issued secrets, shown once.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct IssuedSecret {
    pub credential_id: Uuid,
    /// `api_key` or `webhook_secret`.
    pub kind: String,
    /// The API key (send as `Authorization: Bearer …`) or the `whsec_…` signing secret.
    pub secret: String,
}

fn random_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    // The OS random source failing is unrecoverable: nothing safe can be issued without it.
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    bytes
}

/// A new API key: 256 random bits, prefixed so leaked keys are recognisable.
pub fn new_api_key() -> String {
    format!("eik_{}", URL_SAFE_NO_PAD.encode(random_bytes()))
}

/// A new Standard Webhooks signing secret (`whsec_` + base64 of 32 random bytes).
pub fn new_webhook_secret() -> String {
    format!("whsec_{}", STANDARD.encode(random_bytes()))
}

/// What is stored of an API key: its SHA-256 (the key has 256 bits of entropy, so no slow hash is needed).
pub fn api_key_hash(key: &str) -> String {
    format!("{:x}", Sha256::digest(key.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_and_hashed() {
        let (a, b) = (new_api_key(), new_api_key());
        assert_ne!(a, b);
        assert!(a.starts_with("eik_") && a.len() > 40);
        assert_eq!(api_key_hash(&a).len(), 64);
        assert_ne!(api_key_hash(&a), api_key_hash(&b));
        assert!(new_webhook_secret().starts_with("whsec_"));
    }

    #[test]
    fn identities_and_ids_are_checked() {
        let mut partner = NewPartner {
            id: "acme".into(),
            name: "ACME".into(),
            senders: vec!["x12:ZZ:ACMESUPPLY".into()],
            receivers: vec!["edifact::BUYER".into()],
            max_body_bytes: None,
            requests_per_minute: None,
            validation: strict(),
            conflict_policy: reject(),
        };
        assert_eq!(partner.validate(), Ok(()));
        partner.validation = "loose".into();
        assert!(partner.validate().is_err());
        partner.validation = strict();
        partner.senders.push("as2:ACME".into());
        assert!(partner.validate().is_err());
        partner.senders.pop();
        partner.id = "a b".into();
        assert!(partner.validate().is_err());
    }
}
