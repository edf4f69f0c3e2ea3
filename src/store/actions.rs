//! The audit of operators' actions: one row per action (who, what, to which, the state before and
//! after), listed newest first.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::filter::Conditions;
use super::{Store, StoreError};
use crate::inbox::resource::Page;

/// One recorded action.
#[derive(Clone, Debug, Serialize, ToSchema, sqlx::FromRow)]
pub struct OperatorAction {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    /// `admin-api`, `console:NAME`, `console:admin-token` or `cli:USER`.
    #[schema(example = "console:olga")]
    pub actor: String,
    #[schema(example = "quarantine.release")]
    pub action: String,
    /// What it was done to: a partner id, an entry's or message's id, an operator's name.
    pub subject: String,
    /// Its state before, where the action knows it.
    #[sqlx(rename = "state_before")]
    pub before: Option<String>,
    /// Its state after.
    #[sqlx(rename = "state_after")]
    pub after: String,
}

const COLUMNS: &str = "id, at, actor, action, subject, state_before, state_after";

impl Store {
    pub async fn record_action(&self, action: &OperatorAction) -> Result<(), StoreError> {
        const SQL: &str =
            "INSERT INTO operator_actions (id, at, actor, action, subject, state_before, state_after)
            VALUES ($1, $2, $3, $4, $5, $6, $7)";
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(action.id).bind(action.at).bind(&action.actor).bind(&action.action).bind(&action.subject)
            .bind(&action.before).bind(&action.after)
            .execute(pool).await.map(|_| ())?);
        Ok(())
    }

    /// Recorded actions, newest first, of one actor when given, keyset-paginated on the
    /// time-ordered id.
    pub async fn operator_actions(
        &self,
        actor: Option<&str>,
        cursor: Option<Uuid>,
        limit: u32,
    ) -> Result<Page<OperatorAction>, StoreError> {
        let select = ["SELECT ", COLUMNS, " FROM operator_actions"];
        let conditions = Conditions::default().and("actor = ", actor).and("id < ", cursor);
        let items = on_pool!(self, pool => conditions
            .list(&select, "id DESC", Some(limit)).build_query_as().fetch_all(pool).await?);
        Ok(Page::new(items, limit, |item: &OperatorAction| item.id))
    }
}
