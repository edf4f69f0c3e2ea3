//! The partner registry, credentials and the delivery audit trail. The SQL is shared by both engines.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Store, StoreError};
use crate::partners::{Credential, NewPartner, Partner};

/// One delivery attempt, as audited.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct DeliveryAttempt {
    pub id: Uuid,
    pub partner_id: Option<String>,
    /// `recorded`, `replayed`, `conflict`, `rejected`, `malformed`, `unauthenticated`, `forbidden`, …
    pub outcome: String,
    pub status: i32,
    pub request_id: Option<String>,
    pub remote_addr: Option<String>,
    pub user_agent: Option<String>,
    pub content_type: Option<String>,
    pub body_bytes: i64,
    pub received_at: DateTime<Utc>,
}

/// What the audit trail records of an attempt besides its outcome.
#[derive(Clone, Debug, Default)]
pub struct AttemptFacts {
    pub inbox_id: Option<Uuid>,
    pub partner_id: Option<String>,
    pub source: Option<String>,
    pub message_id: Option<String>,
    pub request_id: Option<String>,
    pub remote_addr: Option<String>,
    pub user_agent: Option<String>,
    pub content_type: Option<String>,
    pub body_bytes: i64,
}

#[derive(sqlx::FromRow)]
struct PartnerRow {
    id: String,
    name: String,
    status: String,
    max_body_bytes: Option<i64>,
    requests_per_minute: Option<i32>,
    validation: String,
    conflict_policy: String,
    created_at: DateTime<Utc>,
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
                    conflict_policy, created_at)
                 VALUES ($1, $2, 'active', $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
            )
            .bind(&partner.id).bind(&partner.name).bind(partner.max_body_bytes)
            .bind(partner.requests_per_minute).bind(&partner.validation).bind(&partner.conflict_policy).bind(now)
            .execute(&mut *tx).await?.rows_affected();
            if inserted == 0 {
                return Ok(false);
            }
            let identities = partner.senders.iter().map(|i| ("sender", i)).chain(partner.receivers.iter().map(|i| ("receiver", i)));
            for (role, identity) in identities {
                let added = sqlx::query(
                    "INSERT INTO partner_identities (partner_id, role, identity) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                )
                .bind(&partner.id).bind(role).bind(identity)
                .execute(&mut *tx).await?.rows_affected();
                if added == 0 && role == "sender" {
                    return Ok(false);
                }
            }
            for (kind, (id, value)) in [("api_key", api_key), ("webhook_secret", webhook_secret)] {
                let (hash, secret) = credential_columns(kind, value);
                sqlx::query(INSERT_CREDENTIAL)
                    .bind(id).bind(&partner.id).bind(kind).bind(hash).bind(secret).bind(now)
                    .execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    pub async fn partners(&self) -> Result<Vec<Partner>, StoreError> {
        const SQL: &str =
            "SELECT id, name, status, max_body_bytes, requests_per_minute, validation, conflict_policy,
            created_at FROM partners ORDER BY id";
        let rows: Vec<PartnerRow> = on_pool!(self, pool => sqlx::query_as(SQL).fetch_all(pool).await?);
        let mut partners = Vec::with_capacity(rows.len());
        for row in rows {
            partners.push(self.complete(row).await?);
        }
        Ok(partners)
    }

    pub async fn partner(&self, id: &str) -> Result<Option<Partner>, StoreError> {
        const SQL: &str =
            "SELECT id, name, status, max_body_bytes, requests_per_minute, validation, conflict_policy,
            created_at FROM partners WHERE id = $1";
        let row: Option<PartnerRow> =
            on_pool!(self, pool => sqlx::query_as(SQL).bind(id).fetch_optional(pool).await?);
        match row {
            Some(row) => Ok(Some(self.complete(row).await?)),
            None => Ok(None),
        }
    }

    /// The active partner holding this API key hash, if the key is not revoked.
    pub async fn partner_by_api_key(&self, key_sha256: &str) -> Result<Option<Partner>, StoreError> {
        const SQL: &str = "SELECT partner_id FROM partner_credentials
            WHERE key_sha256 = $1 AND kind = 'api_key' AND revoked_at IS NULL";
        let id: Option<String> =
            on_pool!(self, pool => sqlx::query_scalar(SQL).bind(key_sha256).fetch_optional(pool).await?);
        match id {
            Some(id) => self.partner(&id).await,
            None => Ok(None),
        }
    }

    /// The partner's signing secrets that are not revoked.
    pub async fn webhook_secrets(&self, partner_id: &str) -> Result<Vec<String>, StoreError> {
        const SQL: &str = "SELECT secret FROM partner_credentials
            WHERE partner_id = $1 AND kind = 'webhook_secret' AND revoked_at IS NULL AND secret IS NOT NULL";
        Ok(on_pool!(self, pool => sqlx::query_scalar(SQL).bind(partner_id).fetch_all(pool).await?))
    }

    /// Sets `active` or `suspended`; false when there is no such partner.
    pub async fn set_partner_status(&self, id: &str, status: &str) -> Result<bool, StoreError> {
        const SQL: &str = "UPDATE partners SET status = $2 WHERE id = $1";
        let changed = on_pool!(self, pool => sqlx::query(SQL).bind(id).bind(status).execute(pool).await?.rows_affected());
        Ok(changed > 0)
    }

    /// Adds a credential (the old ones stay valid until revoked, for rotation with overlap).
    pub async fn add_credential(
        &self,
        partner_id: &str,
        kind: &str,
        credential: (Uuid, &str),
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let (hash, secret) = credential_columns(kind, credential.1);
        on_pool!(self, pool => sqlx::query(INSERT_CREDENTIAL)
            .bind(credential.0).bind(partner_id).bind(kind).bind(hash).bind(secret).bind(now)
            .execute(pool).await.map(|_| ())?);
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
        Ok(changed > 0)
    }

    /// Appends one delivery attempt to the audit trail.
    pub async fn audit(
        &self,
        facts: &AttemptFacts,
        outcome: &str,
        status: u16,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        const SQL: &str =
            "INSERT INTO deliveries (id, inbox_id, partner_id, source, message_id, outcome, status,
                request_id, remote_addr, user_agent, content_type, body_bytes, received_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(Uuid::now_v7()).bind(facts.inbox_id).bind(&facts.partner_id).bind(&facts.source)
            .bind(&facts.message_id).bind(outcome).bind(i32::from(status)).bind(&facts.request_id)
            .bind(&facts.remote_addr).bind(&facts.user_agent).bind(&facts.content_type)
            .bind(facts.body_bytes).bind(at)
            .execute(pool).await.map(|_| ())?);
        Ok(())
    }

    /// The audited delivery attempts of an interchange, oldest first.
    pub async fn delivery_attempts(&self, inbox_id: Uuid) -> Result<Vec<DeliveryAttempt>, StoreError> {
        const SQL: &str = "SELECT id, partner_id, outcome, status, request_id, remote_addr, user_agent,
                content_type, body_bytes, received_at
            FROM deliveries WHERE inbox_id = $1 ORDER BY received_at, id";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(inbox_id).fetch_all(pool).await?))
    }

    async fn complete(&self, row: PartnerRow) -> Result<Partner, StoreError> {
        const IDENTITIES: &str =
            "SELECT role, identity FROM partner_identities WHERE partner_id = $1 ORDER BY role, identity";
        const CREDENTIALS: &str = "SELECT id, kind, created_at, revoked_at FROM partner_credentials
            WHERE partner_id = $1 ORDER BY created_at, id";
        let (identities, credentials): (Vec<(String, String)>, Vec<Credential>) = on_pool!(self, pool => (
            sqlx::query_as(IDENTITIES).bind(&row.id).fetch_all(pool).await?,
            sqlx::query_as(CREDENTIALS).bind(&row.id).fetch_all(pool).await?,
        ));
        let of_role =
            |role: &str| identities.iter().filter(|(r, _)| r == role).map(|(_, i)| i.clone()).collect();
        Ok(Partner {
            senders: of_role("sender"),
            receivers: of_role("receiver"),
            id: row.id,
            name: row.name,
            status: row.status,
            max_body_bytes: row.max_body_bytes,
            requests_per_minute: row.requests_per_minute,
            validation: row.validation,
            conflict_policy: row.conflict_policy,
            created_at: row.created_at,
            credentials,
        })
    }
}

/// Stores a credential: an API key as its hash, a signing secret as issued (`$4`/`$5`).
const INSERT_CREDENTIAL: &str =
    "INSERT INTO partner_credentials (id, partner_id, kind, key_sha256, secret, created_at)
    VALUES ($1, $2, $3, $4, $5, $6)";

/// The `key_sha256` and `secret` columns of a credential of `kind`.
fn credential_columns<'v>(kind: &str, value: &'v str) -> (Option<&'v str>, Option<&'v str>) {
    if kind == "api_key" { (Some(value), None) } else { (None, Some(value)) }
}
