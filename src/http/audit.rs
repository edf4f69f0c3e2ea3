//! `GET /v1/admin/audit`: what operators did, from the admin API, the console and the command
//! line (who, what, to which, the state before and after), for operators holding the admin token.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::Params;
use super::problem::ApiError;
use super::{ApiContext, non_empty, page_limit};
use crate::inbox::resource::Page;
use crate::store::OperatorAction;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this actor's actions, e.g. `console:olga`, `admin-api`, `cli:root`.
    #[param(min_length = 1)]
    actor: Option<String>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<Uuid>,
}

/// List operators' actions, newest first.
///
/// Every release, discard, retry, confirmation, registration, suspension, activation, credential
/// issued or revoked, and every change to a named operator, with its actor, subject and the state
/// before and after. Kept for the retention period.
#[utoipa::path(get, path = "/v1/admin/audit", tag = "admin", security(("admin_token" = [])),
    params(AuditQuery),
    responses((status = 200, description = "One page of recorded actions", body = Page<OperatorAction>)))]
pub async fn list_actions(
    State(ctx): State<ApiContext>,
    Params(query): Params<AuditQuery>,
) -> Result<Json<Page<OperatorAction>>, ApiError> {
    let actor = non_empty("actor", query.actor)?;
    Ok(Json(ctx.store.operator_actions(actor.as_deref(), query.cursor, page_limit(query.limit)?).await?))
}

pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new().routes(routes!(list_actions))
}
