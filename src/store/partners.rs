//! The partner registry, credentials and the delivery audit trail. The SQL is shared by both engines.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::filter::Conditions;
use super::{Store, StoreError};
use crate::inbox::resource::Page;
use crate::inbox::transport::Door;
use crate::partners::directory::{ActiveCredential, Directory};
use crate::partners::{
    As2Security, ConflictPolicy, Credential, CredentialKind, DuplicateNumberPolicy, InvoiceNumbers,
    MismatchPolicy, NewPartner, Partner, PartnerId, PartnerStatus, ResponseForm, Validation,
};

/// Inserts a partner's identities in `tx`: false when one (a receiver excepted) belongs to another.
macro_rules! insert_identities {
    ($tx:ident, $partner:expr) => {{
        let partner = $partner;
        let identities = partner
            .senders
            .iter()
            .map(|i| ("sender", i))
            .chain(partner.receivers.iter().map(|i| ("receiver", i)))
            .chain(partner.as2_ids.iter().map(|i| ("as2", i)))
            .chain(partner.pubsub_accounts.iter().map(|i| ("pubsub", i)))
            .chain(partner.sns_topics.iter().map(|i| ("sns", i)));
        let mut free = true;
        for (role, identity) in identities {
            let added = sqlx::query(
                "INSERT INTO partner_identities (partner_id, role, identity) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
            )
            .bind(partner.id.as_str())
            .bind(role)
            .bind(identity)
            .execute(&mut *$tx)
            .await?
            .rows_affected();
            if added == 0 && role != "receiver" {
                free = false;
                break;
            }
        }
        free
    }};
}

/// One delivery attempt of an interchange's key, as audited.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct DeliveryAttempt {
    pub id: Uuid,
    pub partner_id: Option<String>,
    /// `recorded`, `replayed`, `conflict`, `rejected`, `malformed`, `unauthenticated`, `forbidden`, …
    pub outcome: String,
    /// The HTTP status it was answered with.
    pub status: i32,
    pub request_id: Option<String>,
    pub remote_addr: Option<String>,
    pub user_agent: Option<String>,
    pub content_type: Option<String>,
    pub body_bytes: i64,
    pub received_at: DateTime<Utc>,
    /// How it came in: `direct`, `webhook`, `cloudevents`, `pubsub`, `sns`, `as2`, `amqp`, `nats`.
    #[sqlx(try_from = "String")]
    pub door: Door,
    /// The transport's message id (ce-id, Pub/Sub messageId, SNS MessageId, AS2 Message-ID, …).
    pub transport_id: Option<String>,
    /// The door's metadata (ce-source, subscription, TopicArn and signature fields, AS2-From, …).
    #[sqlx(try_from = "Option<String>")]
    #[schema(value_type = Option<Object>)]
    pub transport: TransportMeta,
    /// Its transport id was seen before with a different interchange.
    pub transport_reused: bool,
}

/// The stored transport metadata (JSON text), served as JSON.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(transparent)]
pub struct TransportMeta(Option<serde_json::Value>);

impl TryFrom<Option<String>> for TransportMeta {
    type Error = serde_json::Error;

    fn try_from(text: Option<String>) -> Result<TransportMeta, serde_json::Error> {
        text.map(|text| serde_json::from_str(&text)).transpose().map(TransportMeta)
    }
}

#[derive(sqlx::FromRow)]
struct PartnerRow {
    #[sqlx(try_from = "String")]
    id: PartnerId,
    name: String,
    #[sqlx(try_from = "String")]
    status: PartnerStatus,
    max_body_bytes: Option<i64>,
    requests_per_minute: Option<i32>,
    #[sqlx(try_from = "String")]
    validation: Validation,
    #[sqlx(try_from = "String")]
    conflict_policy: ConflictPolicy,
    #[sqlx(try_from = "String")]
    on_mismatch: MismatchPolicy,
    #[sqlx(try_from = "String")]
    on_duplicate_number: DuplicateNumberPolicy,
    #[sqlx(try_from = "String")]
    invoice_numbers: InvoiceNumbers,
    #[sqlx(try_from = "String")]
    response: ResponseForm,
    created_at: DateTime<Utc>,
    /// A JSON array of document types.
    bypass_documents: String,
    #[sqlx(try_from = "String")]
    as2_security: As2Security,
    /// JSON arrays of PEM certificates and of URL prefixes.
    as2_certificates: String,
    as2_mdn_urls: String,
}

#[derive(sqlx::FromRow)]
struct IdentityRow {
    partner_id: String,
    role: String,
    identity: String,
}

#[derive(sqlx::FromRow)]
struct CredentialRow {
    partner_id: String,
    #[sqlx(flatten)]
    credential: Credential,
}

/// The in-memory partner directory and when it was read; reloaded after its time to live, or at
/// once after a change made through this store.
pub(super) struct DirectoryCache {
    ttl: Duration,
    current: RwLock<Option<(Instant, Arc<Directory>)>>,
    reload: tokio::sync::Mutex<()>,
}

impl DirectoryCache {
    pub(super) fn new(ttl: Duration) -> DirectoryCache {
        DirectoryCache { ttl, current: RwLock::new(None), reload: tokio::sync::Mutex::new(()) }
    }

    fn fresh(&self) -> Option<Arc<Directory>> {
        let current = self.current.read().ok()?;
        let (loaded, directory) = current.as_ref()?;
        (loaded.elapsed() < self.ttl).then(|| Arc::clone(directory))
    }

    pub(super) fn set(&self, directory: Option<Arc<Directory>>) {
        if let Ok(mut current) = self.current.write() {
            *current = directory.map(|directory| (Instant::now(), directory));
        }
    }
}

impl Store {
    /// Registers a partner with its identities and first credentials (already hashed or issued).
    /// Returns false when the id or a sender identity is taken.
    pub async fn create_partner(
        &self,
        partner: &NewPartner,
        api_key: (Uuid, &str),
        webhook_secret: (Uuid, &str),
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let inserted = sqlx::query(
                "INSERT INTO partners (id, name, status, max_body_bytes, requests_per_minute, validation,
                    conflict_policy, created_at, bypass_documents, response, as2_security, as2_certificates,
                    as2_mdn_urls, on_mismatch, on_duplicate_number, invoice_numbers)
                 VALUES ($1, $2, 'active', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(partner.id.as_str()).bind(&partner.name).bind(partner.max_body_bytes)
            .bind(partner.requests_per_minute).bind(partner.validation.as_str()).bind(partner.conflict_policy.as_str()).bind(now)
            .bind(json_list(&partner.bypass_documents))
            .bind(partner.response.as_str())
            .bind(partner.as2_security.as_str())
            .bind(json_list(&partner.as2_certificates))
            .bind(json_list(&partner.as2_mdn_urls))
            .bind(partner.on_mismatch.as_str())
            .bind(partner.on_duplicate_number.as_str())
            .bind(partner.invoice_numbers.as_str())
            .execute(&mut *tx).await?.rows_affected();
            if inserted == 0 || !insert_identities!(tx, partner) {
                return Ok(false);
            }
            for (kind, (id, value)) in [(CredentialKind::ApiKey, api_key), (CredentialKind::WebhookSecret, webhook_secret)] {
                let (hash, secret) = credential_columns(kind, value);
                sqlx::query(INSERT_CREDENTIAL)
                    .bind(id).bind(partner.id.as_str()).bind(kind.as_str()).bind(hash).bind(secret).bind(now)
                    .execute(&mut *tx).await?;
            }
            tx.commit().await?;
            self.shared.directory.set(None);
            Ok(true)
        })
    }

    /// Stores a registered partner's settings and identities (`settings`, checked, replaces them
    /// all) in one transaction. Returns false when one of its identities belongs to another partner.
    pub async fn update_partner(&self, settings: &NewPartner) -> Result<bool, StoreError> {
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "UPDATE partners SET name = $2, max_body_bytes = $3, requests_per_minute = $4, validation = $5,
                    conflict_policy = $6, bypass_documents = $7, response = $8, as2_security = $9,
                    as2_certificates = $10, as2_mdn_urls = $11, on_mismatch = $12, on_duplicate_number = $13,
                    invoice_numbers = $14
                 WHERE id = $1",
            )
            .bind(settings.id.as_str()).bind(&settings.name).bind(settings.max_body_bytes)
            .bind(settings.requests_per_minute).bind(settings.validation.as_str())
            .bind(settings.conflict_policy.as_str()).bind(json_list(&settings.bypass_documents))
            .bind(settings.response.as_str()).bind(settings.as2_security.as_str())
            .bind(json_list(&settings.as2_certificates)).bind(json_list(&settings.as2_mdn_urls))
            .bind(settings.on_mismatch.as_str()).bind(settings.on_duplicate_number.as_str())
            .bind(settings.invoice_numbers.as_str())
            .execute(&mut *tx).await?;
            sqlx::query("DELETE FROM partner_identities WHERE partner_id = $1")
                .bind(settings.id.as_str()).execute(&mut *tx).await?;
            if !insert_identities!(tx, settings) {
                return Ok(false);
            }
            tx.commit().await?;
            self.shared.directory.set(None);
            Ok(true)
        })
    }

    /// Whether an interchange from one of `senders` booked an invoice (what its business keys
    /// were made under then holds).
    pub async fn has_booked_invoices(&self, senders: &[String]) -> Result<bool, StoreError> {
        const SQL: &str = "SELECT EXISTS (SELECT 1 FROM inbox i JOIN invoices v ON v.inbox_id = i.id
            WHERE i.source = $1)";
        for sender in senders {
            let booked: bool =
                on_pool!(self, pool => sqlx::query_scalar(SQL).bind(sender).fetch_one(pool).await?);
            if booked {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every partner, complete, in three statements whatever their number.
    pub async fn partners(&self) -> Result<Vec<Partner>, StoreError> {
        self.load_partners(None).await
    }

    pub async fn partner(&self, id: &str) -> Result<Option<Partner>, StoreError> {
        Ok(self.load_partners(Some(id)).await?.into_iter().next())
    }

    /// The partner directory that authenticates requests, from memory while it is fresh.
    pub async fn directory(&self) -> Result<Arc<Directory>, StoreError> {
        let cache = &self.shared.directory;
        if let Some(directory) = cache.fresh() {
            return Ok(directory);
        }
        let _only_one_reload = cache.reload.lock().await;
        if let Some(directory) = cache.fresh() {
            return Ok(directory);
        }
        const CREDENTIALS: &str = "SELECT partner_id, kind, key_sha256, secret FROM partner_credentials
            WHERE revoked_at IS NULL";
        let partners = self.partners().await?;
        let credentials: Vec<ActiveCredential> =
            on_pool!(self, pool => sqlx::query_as(CREDENTIALS).fetch_all(pool).await?);
        let directory = Arc::new(Directory::new(partners, credentials));
        cache.set(Some(Arc::clone(&directory)));
        Ok(directory)
    }

    /// Suspends or reactivates a partner; false when there is no such partner.
    pub async fn set_partner_status(&self, id: &str, status: PartnerStatus) -> Result<bool, StoreError> {
        const SQL: &str = "UPDATE partners SET status = $2 WHERE id = $1";
        let changed = on_pool!(self, pool => sqlx::query(SQL).bind(id).bind(status.as_str()).execute(pool).await?.rows_affected());
        self.shared.directory.set(None);
        Ok(changed > 0)
    }

    /// Adds a credential (the old ones stay valid until revoked, for rotation with overlap).
    pub async fn add_credential(
        &self,
        partner_id: &str,
        kind: CredentialKind,
        credential: (Uuid, &str),
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let (hash, secret) = credential_columns(kind, credential.1);
        on_pool!(self, pool => sqlx::query(INSERT_CREDENTIAL)
            .bind(credential.0).bind(partner_id).bind(kind.as_str()).bind(hash).bind(secret).bind(now)
            .execute(pool).await.map(|_| ())?);
        self.shared.directory.set(None);
        Ok(())
    }

    /// Revokes one credential of a partner; false when it does not exist or is revoked already.
    pub async fn revoke_credential(
        &self,
        partner_id: &str,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        const SQL: &str = "UPDATE partner_credentials SET revoked_at = $3
            WHERE partner_id = $1 AND id = $2 AND revoked_at IS NULL";
        let changed = on_pool!(self, pool => sqlx::query(SQL).bind(partner_id).bind(id).bind(now).execute(pool).await?.rows_affected());
        self.shared.directory.set(None);
        Ok(changed > 0)
    }

    /// The audited delivery attempts of an interchange's key, oldest first.
    pub async fn delivery_attempts(
        &self,
        inbox_id: Uuid,
        cursor: Option<Uuid>,
        limit: u32,
    ) -> Result<Page<DeliveryAttempt>, StoreError> {
        const SELECT: &str = "SELECT d.id, d.partner_id, d.outcome, d.status, d.request_id, d.remote_addr,
                d.user_agent, d.content_type, d.body_bytes, d.received_at, d.door, d.transport_id, d.transport,
                d.transport_reused
            FROM inbox i JOIN deliveries d ON d.source = i.source AND d.message_id = i.message_id";
        let conditions = Conditions::default().and("i.id = ", Some(inbox_id)).and("d.id > ", cursor);
        let items = on_pool!(self, pool => conditions
            .list(&[SELECT], "d.id", Some(limit)).build_query_as().fetch_all(pool).await?);
        Ok(Page::new(items, limit, |item: &DeliveryAttempt| item.id))
    }

    /// Partners (all, or the one named) with their identities and credentials.
    async fn load_partners(&self, id: Option<&str>) -> Result<Vec<Partner>, StoreError> {
        const PARTNERS: &str = "SELECT id, name, status, max_body_bytes, requests_per_minute, validation, \
            conflict_policy, on_mismatch, on_duplicate_number, invoice_numbers, response, created_at, bypass_documents, as2_security, as2_certificates, \
            as2_mdn_urls FROM partners";
        const IDENTITIES: &str = "SELECT partner_id, role, identity FROM partner_identities";
        const CREDENTIALS: &str =
            "SELECT partner_id, id, kind, created_at, revoked_at FROM partner_credentials";
        let partner = Conditions::default().and("id = ", id);
        let owned = Conditions::default().and("partner_id = ", id);
        let (rows, identities, credentials): (Vec<PartnerRow>, Vec<IdentityRow>, Vec<CredentialRow>) = on_pool!(self, pool => (
            partner.list(&[PARTNERS], "id", None).build_query_as().fetch_all(pool).await?,
            owned.list(&[IDENTITIES], "role, identity", None).build_query_as().fetch_all(pool).await?,
            owned.list(&[CREDENTIALS], "created_at, id", None).build_query_as().fetch_all(pool).await?,
        ));
        let mut partners: Vec<Partner> = rows
            .into_iter()
            .map(|row| {
                Ok(Partner {
                    id: row.id,
                    name: row.name,
                    status: row.status,
                    senders: Vec::new(),
                    receivers: Vec::new(),
                    max_body_bytes: row.max_body_bytes,
                    requests_per_minute: row.requests_per_minute,
                    validation: row.validation,
                    conflict_policy: row.conflict_policy,
                    on_mismatch: row.on_mismatch,
                    on_duplicate_number: row.on_duplicate_number,
                    invoice_numbers: row.invoice_numbers,
                    response: row.response,
                    as2_ids: Vec::new(),
                    pubsub_accounts: Vec::new(),
                    sns_topics: Vec::new(),
                    bypass_documents: from_json_list("bypass_documents", &row.bypass_documents)?,
                    as2_security: row.as2_security,
                    as2_certificates: from_json_list("as2_certificates", &row.as2_certificates)?,
                    as2_mdn_urls: from_json_list("as2_mdn_urls", &row.as2_mdn_urls)?,
                    created_at: row.created_at,
                    credentials: Vec::new(),
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let index: HashMap<PartnerId, usize> =
            partners.iter().enumerate().map(|(n, partner)| (partner.id.clone(), n)).collect();
        for row in identities {
            let Some(&n) = index.get(row.partner_id.as_str()) else { continue };
            match row.role.as_str() {
                "sender" => partners[n].senders.push(row.identity),
                "as2" => partners[n].as2_ids.push(row.identity),
                "pubsub" => partners[n].pubsub_accounts.push(row.identity),
                "sns" => partners[n].sns_topics.push(row.identity),
                _ => partners[n].receivers.push(row.identity),
            }
        }
        for row in credentials {
            if let Some(&n) = index.get(row.partner_id.as_str()) {
                partners[n].credentials.push(row.credential);
            }
        }
        Ok(partners)
    }
}

/// A list column's JSON.
fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

/// A list column read back.
fn from_json_list(column: &str, json: &str) -> Result<Vec<String>, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("a partner's {column}: {e}")))
}

/// Stores a credential: an API key as its hash, a signing secret as issued (`$4`/`$5`).
const INSERT_CREDENTIAL: &str =
    "INSERT INTO partner_credentials (id, partner_id, kind, key_sha256, secret, created_at)
    VALUES ($1, $2, $3, $4, $5, $6)";

/// The `key_sha256` and `secret` columns of a credential of `kind`.
fn credential_columns(kind: CredentialKind, value: &str) -> (Option<&str>, Option<&str>) {
    match kind {
        CredentialKind::ApiKey => (Some(value), None),
        CredentialKind::WebhookSecret => (None, Some(value)),
    }
}
