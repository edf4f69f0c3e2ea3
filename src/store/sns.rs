//! SNS subscription and unsubscribe confirmations, kept for an operator: this service does not call
//! AWS, so an operator visits the `SubscribeURL` (or confirms with the token) and marks it here.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::filter::Conditions;
use super::{Store, StoreError};
use crate::inbox::resource::Page;
use crate::inbox::transport::{SnsControl, SnsType};

text_enum! {
    /// Whether an operator confirmed a subscription message.
    SnsStatus {
        Pending = "pending",
        Confirmed = "confirmed",
    }
}

/// A kept confirmation message.
#[derive(Clone, Debug, Serialize, ToSchema, sqlx::FromRow)]
pub struct SnsSubscription {
    pub id: Uuid,
    pub partner_id: Option<String>,
    #[sqlx(try_from = "String")]
    pub kind: SnsType,
    #[sqlx(try_from = "String")]
    pub status: SnsStatus,
    pub message_id: String,
    pub topic_arn: String,
    /// The URL to visit (or the token to pass to `ConfirmSubscription`) to confirm.
    pub subscribe_url: String,
    pub token: String,
    pub message: Option<String>,
    /// Recorded as sent; not verified (that needs AWS's signing certificate).
    pub signature_version: Option<String>,
    pub signature: Option<String>,
    pub signing_cert_url: Option<String>,
    /// The `Timestamp` SNS sent.
    pub sent_at: Option<String>,
    pub received_at: DateTime<Utc>,
    pub confirmed_at: Option<DateTime<Utc>>,
}

/// Pending messages kept per partner at most (open mode's count as one partner); SNS resends a
/// refused one, so none is lost while an operator catches up.
pub const MAX_PENDING_PER_PARTNER: i64 = 100;

const COLUMNS: &str = "id, NULLIF(partner_id, '') AS partner_id, kind, status, message_id, topic_arn, subscribe_url, token, message, \
    signature_version, signature, signing_cert_url, sent_at, received_at, confirmed_at";

impl Store {
    /// Keeps a confirmation message once per partner (SNS resends it until answered 2xx); `None`
    /// when the partner has [`MAX_PENDING_PER_PARTNER`] pending already and this one is new.
    pub async fn keep_sns_control(
        &self,
        control: &SnsControl,
        partner_id: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Option<SnsSubscription>, StoreError> {
        const INSERT: &str = "INSERT INTO sns_subscriptions (id, partner_id, kind, message_id, topic_arn, token,
                subscribe_url, message, signature_version, signature, signing_cert_url, sent_at, status, received_at)
            SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', $13
            WHERE (SELECT COUNT(*) FROM sns_subscriptions WHERE partner_id = $2 AND status = 'pending') < $14
            ON CONFLICT (partner_id, message_id) DO NOTHING";
        let select =
            format!("SELECT {COLUMNS} FROM sns_subscriptions WHERE partner_id = $1 AND message_id = $2");
        let partner_id = partner_id.unwrap_or_default();
        Ok(on_pool!(self, pool => {
            sqlx::query(INSERT)
                .bind(Uuid::now_v7()).bind(partner_id).bind(control.kind.as_str()).bind(&control.message_id)
                .bind(&control.topic_arn).bind(&control.token).bind(&control.subscribe_url).bind(&control.message)
                .bind(&control.signature_version).bind(&control.signature).bind(&control.signing_cert_url)
                .bind(&control.timestamp).bind(now).bind(MAX_PENDING_PER_PARTNER)
                .execute(pool).await?;
            sqlx::query_as(sqlx::AssertSqlSafe(select)).bind(partner_id).bind(&control.message_id).fetch_optional(pool).await?
        }))
    }

    /// Kept confirmation messages, newest first, keyset-paginated on the time-ordered id.
    pub async fn sns_subscriptions(
        &self,
        cursor: Option<Uuid>,
        limit: u32,
    ) -> Result<Page<SnsSubscription>, StoreError> {
        let select = ["SELECT ", COLUMNS, " FROM sns_subscriptions"];
        let conditions = Conditions::default().and("id < ", cursor);
        let items = on_pool!(self, pool => conditions
            .list(&select, "id DESC", Some(limit)).build_query_as().fetch_all(pool).await?);
        Ok(Page::new(items, limit, |item: &SnsSubscription| item.id))
    }

    /// Marks a message confirmed by an operator; `None` when there is no such message. Confirming
    /// twice keeps the first time.
    pub async fn confirm_sns(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Option<SnsSubscription>, StoreError> {
        let sql = format!(
            "UPDATE sns_subscriptions SET status = 'confirmed', confirmed_at = COALESCE(confirmed_at, $2) \
             WHERE id = $1 RETURNING {COLUMNS}"
        );
        Ok(
            on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).bind(now).fetch_optional(pool).await?),
        )
    }
}
