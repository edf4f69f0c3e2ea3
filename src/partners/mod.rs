//! Trading partners and how they prove who they are: API keys (`Authorization: Bearer`) and
//! Standard Webhooks signatures. Key generation, hashing and signature checks are pure; `admin`
//! runs the registry operations over the store.

mod changes;
pub mod directory;
mod id;
pub mod oidc;
pub mod sns;
pub mod webhooks;

text_enum! {
    /// Whether a partner's requests are accepted.
    PartnerStatus {
        Active = "active",
        /// Its requests get 403 (after they prove to be its).
        Suspended = "suspended",
    }
}

text_enum! {
    /// How strictly a partner's interchanges are validated.
    Validation {
        /// Every rule.
        Strict = "strict",
        /// Bytes outside the charset read as ISO-8859-1; repeated group and document control numbers accepted.
        Lenient = "lenient",
    }
}

text_enum! {
    /// What a reused control number with other content means for a partner.
    ConflictPolicy {
        /// A 409 conflict.
        Reject = "reject",
        /// The content decides: it is recorded under `{control number}#{fingerprint prefix}`.
        Process = "process",
        /// Answered 202 and held for an operator, as is an invalid interchange: for push brokers
        /// that would retry a 409 or 422 for days.
        Quarantine = "quarantine",
    }
}

text_enum! {
    /// What an invoice whose stated figures do not reconcile (a total against its lines, charges
    /// and tax; a line against its quantity and price) means for a partner.
    MismatchPolicy {
        /// Booked as stated, with a warning naming both figures.
        Warn = "warn",
        /// The interchange is invalid: 422, stored as rejected, naming the first mismatch.
        Reject = "reject",
        /// Held for an operator (202, reason `mismatch`), as a quarantine-policy partner's invalid
        /// delivery is; released, it is booked as stated, with its warnings.
        Quarantine = "quarantine",
    }
}

text_enum! {
    /// What an invoice number its seller had booked before means when the content differs (the
    /// same content is a resend: never booked twice, whatever this says).
    DuplicateNumberPolicy {
        /// Held for an operator (202, reason `duplicate-number`), with the fields that differ, to be
        /// booked as a new invoice, as the replacement of the earlier one, or discarded.
        Quarantine = "quarantine",
        /// The interchange is invalid: 422 naming the earlier invoice and the fields that differ.
        Reject = "reject",
        /// Booked as a new invoice (the number's next revision), with a warning.
        Book = "book",
    }
}

text_enum! {
    /// Whether a partner's sellers number their invoices once for ever or anew every year (the
    /// issue year is then part of an invoice's business key).
    InvoiceNumbers {
        /// A number is its seller's once.
        Unique = "unique",
        /// Numbers restart every year: `INV-1` of 2026 is not `INV-1` of 2025.
        PerYear = "per-year",
    }
}

text_enum! {
    /// How a partner's deliveries are answered when the request does not say (`Prefer`).
    ResponseForm {
        /// The whole interchange resource, invoices and their lines included.
        Full = "full",
        /// The minimal interchange: each invoice's id, number, total and link, no lines.
        Minimal = "minimal",
    }
}

text_enum! {
    /// The kinds of credential a partner can hold.
    CredentialKind {
        /// Sent as `Authorization: Bearer …`; stored as its SHA-256.
        ApiKey = "api_key",
        /// A Standard Webhooks signing secret (`whsec_…`).
        WebhookSecret = "webhook_secret",
    }
}

pub use crate::as2::As2Security;
pub use changes::{PartnerChanges, changed_settings};
pub use id::PartnerId;

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
    #[schema(value_type = String, example = "acme")]
    pub id: PartnerId,
    #[schema(example = "ACME Supply Co")]
    pub name: String,
    /// A suspended partner's requests get 403.
    pub status: PartnerStatus,
    /// EDI identities it may send as: `{standard}:{qualifier}:{id}`, e.g. `x12:ZZ:ACMESUPPLY`.
    pub senders: Vec<String>,
    /// Our identities it may send to; empty means any.
    pub receivers: Vec<String>,
    /// Largest body it may post; the server default when absent.
    pub max_body_bytes: Option<i64>,
    /// Requests per minute it may make; the server default when absent.
    pub requests_per_minute: Option<i32>,
    pub validation: Validation,
    pub conflict_policy: ConflictPolicy,
    /// Whether an invoice whose figures do not reconcile is booked with a warning or refused.
    pub on_mismatch: MismatchPolicy,
    /// What an invoice number booked before with other content means.
    pub on_duplicate_number: DuplicateNumberPolicy,
    /// Whether its sellers' invoice numbers restart every year.
    pub invoice_numbers: InvoiceNumbers,
    /// How its deliveries are answered unless a request says `Prefer: return=minimal` or
    /// `return=representation`.
    pub response: ResponseForm,
    /// The AS2 names (`AS2-From`) its gateway sends as; an AS2 delivery naming another gets 403.
    pub as2_ids: Vec<String>,
    /// What its AS2 messages must be: `optional`, `signed`, `encrypted` or `signed-encrypted`.
    pub as2_security: As2Security,
    /// The certificates (PEM) its AS2 signatures are verified with; a valid signature with one of
    /// them proves the partner without an API key.
    pub as2_certificates: Vec<String>,
    /// URL prefixes its asynchronous MDNs may be delivered to (`Receipt-Delivery-Option`).
    pub as2_mdn_urls: Vec<String>,
    /// The service accounts of its Pub/Sub push subscriptions: a Google-signed OIDC token for one
    /// of them proves this partner.
    pub pubsub_accounts: Vec<String>,
    /// The SNS topics (ARNs) whose signed messages are this partner's.
    pub sns_topics: Vec<String>,
    /// Document types whose interchanges bypass the inbox (naturally idempotent flows).
    pub bypass_documents: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub credentials: Vec<Credential>,
}

impl Partner {
    /// Whether an interchange of these documents bypasses the inbox: all of them are of types the
    /// partner declared naturally idempotent.
    pub fn bypasses(&self, kinds: &[String]) -> bool {
        !kinds.is_empty()
            && !self.bypass_documents.is_empty()
            && kinds.iter().all(|kind| self.bypass_documents.contains(kind))
    }
}

/// A credential as listed: never the secret itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Credential {
    pub id: Uuid,
    pub kind: CredentialKind,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// What registering a partner needs: the admin API's JSON body and `edi-inbox partner add`'s arguments.
#[derive(Clone, Debug, Deserialize, ToSchema, clap::Args)]
pub struct NewPartner {
    /// Partner id, e.g. `acme` (letters, digits, `-`, `_`, `.`).
    #[schema(value_type = String, example = "acme", min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9._-]+$")]
    pub id: PartnerId,
    #[arg(long)]
    #[schema(example = "ACME Supply Co", min_length = 1)]
    pub name: String,
    /// An EDI identity it sends as, `x12:QUALIFIER:ID` or `edifact:QUALIFIER:ID` (repeatable).
    #[arg(long = "sender", required = true)]
    #[schema(example = json!(["x12:ZZ:ACMESUPPLY"]), min_items = 1)]
    pub senders: Vec<String>,
    /// One of our identities it may send to (repeatable; none means any).
    #[serde(default)]
    #[arg(long = "receiver")]
    #[schema(example = json!(["x12:ZZ:BUYERCO"]))]
    pub receivers: Vec<String>,
    /// Largest body it may post, in bytes (default: the server's body limit).
    #[arg(long)]
    #[serde(default, deserialize_with = "changes::whole")]
    pub max_body_bytes: Option<i64>,
    /// Requests per minute it may make (default: the server's limit).
    #[arg(long)]
    #[serde(default, deserialize_with = "changes::whole")]
    pub requests_per_minute: Option<i32>,
    /// `strict` (the default), or `lenient`: bytes outside the charset read as ISO-8859-1, repeated
    /// group and document control numbers accepted.
    #[serde(default = "strict")]
    #[arg(long, value_enum, default_value_t = Validation::Strict)]
    pub validation: Validation,
    /// `reject` (the default: 409 for a reused control number with other content) or `process`
    /// (recorded under `{control number}#{fingerprint prefix}`).
    #[serde(default = "reject")]
    #[arg(long, value_enum, default_value_t = ConflictPolicy::Reject)]
    pub conflict_policy: ConflictPolicy,
    /// `warn` (the default: an invoice whose total does not reconcile with its lines, charges and
    /// tax, or a line with its quantity and price, is booked as stated with a warning), `reject`
    /// (the interchange is refused with 422 naming the mismatch) or `quarantine` (held for an
    /// operator, answered 202; a release books it as stated).
    #[serde(default = "warn")]
    #[arg(long, value_enum, default_value_t = MismatchPolicy::Warn)]
    pub on_mismatch: MismatchPolicy,
    /// `quarantine` (the default: an invoice number its seller had booked before, arriving with
    /// other content, is held for an operator, 202), `reject` (422 naming the earlier invoice and
    /// the fields that differ) or `book` (booked as a new invoice with a warning). The same invoice
    /// arriving again is never booked twice, whatever this says.
    #[serde(default = "quarantine")]
    #[arg(long, value_enum, default_value_t = DuplicateNumberPolicy::Quarantine)]
    pub on_duplicate_number: DuplicateNumberPolicy,
    /// `unique` (the default: a number is its seller's once) or `per-year` (numbers restart every
    /// year: the issue year is part of the invoice's business key).
    #[serde(default = "unique")]
    #[arg(long, value_enum, default_value_t = InvoiceNumbers::Unique)]
    pub invoice_numbers: InvoiceNumbers,
    /// `full` (the default) or `minimal`: how its deliveries are answered when a request does not
    /// say (`Prefer: return=minimal` or `return=representation`).
    #[serde(default = "full")]
    #[arg(long, value_enum, default_value_t = ResponseForm::Full)]
    pub response: ResponseForm,
    /// An AS2 name (`AS2-From`) its gateway sends as (repeatable).
    #[serde(default)]
    #[arg(long = "as2-id")]
    #[schema(example = json!(["ACME-AS2"]))]
    pub as2_ids: Vec<String>,
    /// What its AS2 messages must be: `optional` (the default), `signed`, `encrypted` or
    /// `signed-encrypted`; a message that is less is answered `insufficient-message-security`.
    #[serde(default = "optional")]
    #[arg(long, value_enum, default_value_t = As2Security::Optional)]
    pub as2_security: As2Security,
    /// A certificate (PEM) its AS2 gateway signs with (repeatable, for rotation): a message signed
    /// with it is this partner's.
    #[serde(default)]
    #[arg(long = "as2-certificate", allow_hyphen_values = true)]
    pub as2_certificates: Vec<String>,
    /// A URL prefix its asynchronous MDNs may be delivered to, e.g. `https://as2.acme.example/mdn`
    /// (repeatable; none: a message asking for an asynchronous MDN gets an error MDN).
    #[serde(default)]
    #[arg(long = "as2-mdn-url")]
    #[schema(example = json!(["https://as2.acme.example/pyas2/as2receive"]))]
    pub as2_mdn_urls: Vec<String>,
    /// The service account (`email` of its OIDC token) of a Pub/Sub push subscription that delivers
    /// this partner's interchanges (repeatable): the token is then the partner's proof.
    #[serde(default)]
    #[arg(long = "pubsub-account")]
    #[schema(example = json!(["edi-push@acme-project.iam.gserviceaccount.com"]))]
    pub pubsub_accounts: Vec<String>,
    /// The ARN of an SNS topic whose messages, signed by SNS, are this partner's (repeatable): the
    /// signature is then the partner's proof.
    #[serde(default)]
    #[arg(long = "sns-topic")]
    #[schema(example = json!(["arn:aws:sns:eu-west-1:123456789012:acme-invoices"]))]
    pub sns_topics: Vec<String>,
    /// A document type whose interchanges are naturally idempotent and bypass the inbox, e.g. `997`
    /// or `APERAK` (repeatable; none by default; never `810` or `INVOIC`).
    #[serde(default)]
    #[arg(long = "bypass-document")]
    #[schema(schema_with = document_types)]
    pub bypass_documents: Vec<String>,
}

/// The schema of `bypass_documents`: 1-6 letters or digits each (an invoice document is refused too).
fn document_types() -> utoipa::openapi::Array {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let document_type = ObjectBuilder::new().schema_type(Type::String).pattern(Some("^[A-Za-z0-9]{1,6}$"));
    utoipa::openapi::Array::builder()
        .items(document_type)
        .description(Some(
            "A document type whose interchanges are naturally idempotent and bypass the inbox, e.g. `997` \
             or `APERAK` (none by default; never `810` or `INVOIC`)",
        ))
        .examples([serde_json::json!(["997"])])
        .build()
}

fn optional() -> As2Security {
    As2Security::Optional
}

fn strict() -> Validation {
    Validation::Strict
}

fn reject() -> ConflictPolicy {
    ConflictPolicy::Reject
}

fn warn() -> MismatchPolicy {
    MismatchPolicy::Warn
}

fn quarantine() -> DuplicateNumberPolicy {
    DuplicateNumberPolicy::Quarantine
}

fn unique() -> InvoiceNumbers {
    InvoiceNumbers::Unique
}

fn full() -> ResponseForm {
    ResponseForm::Full
}

impl NewPartner {
    /// Refuses ids and identities that cannot be right.
    pub fn validate(&self) -> Result<(), String> {
        if self.senders.is_empty() {
            return Err("a partner needs at least one sender identity".into());
        }
        for identity in self.senders.iter().chain(&self.receivers) {
            parse_identity(identity)?;
        }
        if self.name.is_empty() {
            return Err("a partner needs a name".into());
        }
        if let Some(id) = self.as2_ids.iter().find(|id| !as2_name_ok(id)) {
            return Err(format!("AS2 name {id:?} must be 1-128 printable ASCII characters"));
        }
        for pem in &self.as2_certificates {
            openssl::x509::X509::from_pem(pem.as_bytes()).map_err(
                |_| "an AS2 certificate must be one PEM certificate (-----BEGIN CERTIFICATE-----)",
            )?;
        }
        if let Some(url) = self.as2_mdn_urls.iter().find(|url| !mdn_url_ok(url)) {
            return Err(format!("AS2 MDN URL {url:?} must be an http or https URL"));
        }
        if let Some(account) = self.pubsub_accounts.iter().find(|account| !service_account_ok(account)) {
            return Err(format!("Pub/Sub service account {account:?} must be an e-mail address"));
        }
        if let Some(topic) = self.sns_topics.iter().find(|topic| !sns_topic_ok(topic)) {
            return Err(format!("SNS topic {topic:?} must be a topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)"));
        }
        // Invoices book an effect: never naturally idempotent, so they never bypass the inbox.
        if let Some(kind) =
            self.bypass_documents.iter().find(|kind| crate::edi::INVOICE_DOCUMENTS.contains(&kind.as_str()))
        {
            return Err(format!(
                "{kind} books invoices: it is not naturally idempotent and cannot bypass the inbox"
            ));
        }
        if let Some(kind) = self
            .bypass_documents
            .iter()
            .find(|k| k.is_empty() || k.len() > 6 || !k.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            return Err(format!("document type {kind:?} must be 1-6 letters or digits, e.g. 997 or APERAK"));
        }
        Ok(())
    }
}

/// An SNS topic ARN: `arn:PARTITION:sns:REGION:ACCOUNT:NAME`, printable ASCII, at most 256 bytes.
fn sns_topic_ok(topic: &str) -> bool {
    let parts: Vec<&str> = topic.split(':').collect();
    topic.len() <= 256
        && parts.len() == 6
        && parts[0] == "arn"
        && parts[2] == "sns"
        && parts.iter().all(|part| !part.is_empty())
        && topic.bytes().all(|b| b.is_ascii_graphic())
}

/// An asynchronous MDN goes to an absolute http(s) URL with a host.
fn mdn_url_ok(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|url| {
        matches!(url.scheme(), "http" | "https") && url.host().is_some() && url.username().is_empty()
    })
}

/// Whether `url` is under one of the partner's registered MDN URLs: the same scheme, host and
/// port (as URLs, not as text: `http://localhost` does not admit `http://localhost:5432/`, nor
/// `https://as2.acme.example` `https://as2.acme.example.evil.net/`), and a path equal to the
/// registered one or below it on a segment boundary.
pub fn mdn_url_allowed(registered: &[String], url: &str) -> bool {
    let Some(url) = reqwest::Url::parse(url).ok().filter(|url| mdn_url_ok(url.as_str())) else {
        return false;
    };
    registered.iter().filter_map(|base| reqwest::Url::parse(base).ok()).any(|base| {
        let same_origin = base.scheme() == url.scheme()
            && base.host() == url.host()
            && base.port_or_known_default() == url.port_or_known_default();
        let base_path = base.path().trim_end_matches('/');
        let under = url.path() == base_path
            || url.path().strip_prefix(base_path).is_some_and(|rest| rest.starts_with('/'));
        same_origin && under && (base.query().is_none() || base.query() == url.query())
    })
}

/// A service account is an e-mail address: `name@domain`, printable ASCII, at most 254 bytes.
fn service_account_ok(account: &str) -> bool {
    account.len() <= 254
        && account.split_once('@').is_some_and(|(name, domain)| !name.is_empty() && domain.contains('.'))
        && account.bytes().all(|b| b.is_ascii_graphic())
}

/// RFC 4130 AS2 names: 1-128 printable ASCII characters (quoted names are sent unquoted here).
fn as2_name_ok(name: &str) -> bool {
    !name.is_empty() && name.len() <= 128 && name.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
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
    pub kind: CredentialKind,
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
            id: PartnerId::parse("acme").unwrap(),
            name: "ACME".into(),
            senders: vec!["x12:ZZ:ACMESUPPLY".into()],
            receivers: vec!["edifact::BUYER".into()],
            max_body_bytes: None,
            requests_per_minute: None,
            validation: strict(),
            conflict_policy: reject(),
            on_mismatch: warn(),
            on_duplicate_number: quarantine(),
            invoice_numbers: unique(),
            response: full(),
            as2_ids: vec!["ACME AS2".into()],
            as2_security: optional(),
            as2_certificates: Vec::new(),
            as2_mdn_urls: vec!["https://as2.acme.example/mdn".into()],
            pubsub_accounts: vec!["push@acme.iam.gserviceaccount.com".into()],
            sns_topics: vec!["arn:aws:sns:eu-west-1:123456789012:acme".into()],
            bypass_documents: vec!["997".into()],
        };
        assert_eq!(partner.validate(), Ok(()));
        for account in ["push", "push@localhost", "@acme.com", "push me@acme.com"] {
            partner.pubsub_accounts.push(account.into());
            assert!(partner.validate().unwrap_err().contains("e-mail"), "{account}");
            partner.pubsub_accounts.pop();
        }
        for topic in ["acme", "arn:aws:sqs:eu-west-1:1:acme", "arn:aws:sns:eu-west-1::acme"] {
            partner.sns_topics.push(topic.into());
            assert!(partner.validate().unwrap_err().contains("topic ARN"), "{topic}");
            partner.sns_topics.pop();
        }
        partner.as2_certificates.push("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----".into());
        assert!(partner.validate().unwrap_err().contains("PEM"));
        partner.as2_certificates.pop();
        for url in ["file:///etc/passwd", "https://user:pw@acme.example/", "/mdn"] {
            partner.as2_mdn_urls.push(url.into());
            assert!(partner.validate().unwrap_err().contains("MDN URL"), "{url}");
            partner.as2_mdn_urls.pop();
        }
        assert!(mdn_url_allowed(&partner.as2_mdn_urls, "https://as2.acme.example/mdn/42"));
        assert!(!mdn_url_allowed(&partner.as2_mdn_urls, "https://as2.acme.example.evil/mdn"));
        assert!(!mdn_url_allowed(&partner.as2_mdn_urls, "http://169.254.169.254/"));
        let registered = ["http://localhost".to_owned(), "https://as2.acme.example/mdn".to_owned()];
        for (url, allowed) in [
            ("http://localhost/receipts", true),
            ("http://localhost:80/x", true),
            ("http://localhost:5432/", false),
            ("https://localhost/", false),
            ("https://as2.acme.example/mdn", true),
            ("https://as2.acme.example/mdn/42", true),
            ("https://as2.acme.example/mdnx", false),
            ("https://as2.acme.example.evil.net/mdn", false),
            ("https://as2.acme.example:8443/mdn", false),
            ("https://as2.acme.example@evil.net/mdn", false),
        ] {
            assert_eq!(mdn_url_allowed(&registered, url), allowed, "{url}");
        }
        partner.bypass_documents.push("810".into());
        assert!(partner.validate().unwrap_err().contains("books invoices"));
        partner.bypass_documents.pop();
        partner.senders.push("as2:ACME".into());
        assert!(partner.validate().is_err());
        partner.senders.pop();
    }

    #[test]
    fn policies_parse_once_from_their_words() {
        assert_eq!(Validation::parse("lenient"), Some(Validation::Lenient));
        assert_eq!(Validation::parse("loose"), None);
        assert_eq!(CredentialKind::try_from("api_key".to_owned()), Ok(CredentialKind::ApiKey));
        assert_eq!(serde_json::to_string(&ConflictPolicy::Process).unwrap(), "\"process\"");
        assert!(serde_json::from_str::<PartnerStatus>("\"gone\"").is_err());
    }
}
