//! `/v1/admin/partners`: the partner registry over HTTP, for operators holding the admin token.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiContext;
use super::extract::parse_id;
use super::problem::{ApiError, Problem};
use crate::operate::Actor;
use crate::operate::partners as admin;
use crate::partners::{CredentialKind, IssuedSecret, NewPartner, Partner, PartnerChanges, PartnerStatus};

fn json<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    body.map(|Json(value)| value).map_err(|rejection| ApiError::BadRequest(rejection.body_text()))
}

/// A registered partner with the secrets issued for it, shown only in this response.
#[derive(Serialize, ToSchema)]
pub struct RegisteredPartner {
    pub partner: Partner,
    pub secrets: Vec<IssuedSecret>,
}

/// List partners.
///
/// Every registered partner with its identities, policies and credentials (kind and dates, never
/// a secret).
#[utoipa::path(get, path = "/v1/admin/partners", tag = "admin", security(("admin_token" = [])),
    responses(
        (status = 200, description = "All partners", body = [Partner]),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_partners(State(ctx): State<ApiContext>) -> Result<Json<Vec<Partner>>, ApiError> {
    Ok(Json(ctx.store.partners().await?))
}

/// Register a partner; its first API key and signing secret are in the response, and only there.
///
/// Its sender identities must be free (409 `already-exists` otherwise); identities, AS2 settings,
/// Pub/Sub accounts and SNS topics are checked (400 `invalid-request` naming the field).
#[utoipa::path(post, path = "/v1/admin/partners", tag = "admin", security(("admin_token" = [])),
    request_body = NewPartner,
    responses(
        (status = 201, description = "Registered", body = RegisteredPartner),
        (status = 400, description = "`invalid-request`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`already-exists`: the id or a sender identity is taken", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_partner(
    State(ctx): State<ApiContext>,
    body: Result<Json<NewPartner>, JsonRejection>,
) -> Result<(StatusCode, Json<RegisteredPartner>), ApiError> {
    let (partner, secrets) = admin::register(&ctx.store, &json(body)?, &Actor::AdminApi).await?;
    Ok((StatusCode::CREATED, Json(RegisteredPartner { partner, secrets })))
}

/// Read one partner (credentials listed without their secrets).
///
/// 404 `not-found` for an unknown id.
#[utoipa::path(get, path = "/v1/admin/partners/{id}", tag = "admin", security(("admin_token" = [])),
    params(("id" = String, Path, description = "Partner id")),
    responses(
        (status = 200, description = "The partner", body = Partner),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_partner(
    State(ctx): State<ApiContext>,
    Path(id): Path<String>,
) -> Result<Json<Partner>, ApiError> {
    Ok(Json(ctx.store.partner(&id).await?.ok_or(ApiError::NotFound)?))
}

/// Change a partner's settings.
///
/// Any setting of a registration but the id; those absent stay as they are, a list given replaces
/// the list. Checked as a registration is (400 `invalid-request` naming the field, also for an
/// unknown field, and for a change of `invoice_numbers` once the partner has booked invoices); 409
/// `already-exists` when an identity belongs to another partner. Audited as `partner.update` with
/// each changed setting before and after.
#[utoipa::path(patch, path = "/v1/admin/partners/{id}", tag = "admin", security(("admin_token" = [])),
    params(("id" = String, Path, description = "Partner id")),
    request_body = PartnerChanges,
    responses(
        (status = 200, description = "The partner as changed", body = Partner),
        (status = 400, description = "`invalid-request`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not-found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`already-exists`: an identity is another partner's", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_partner(
    State(ctx): State<ApiContext>,
    Path(id): Path<String>,
    body: Result<Json<serde_json::Map<String, serde_json::Value>>, JsonRejection>,
) -> Result<Json<Partner>, ApiError> {
    // Read from an object only: serde would take a JSON array as the fields in order.
    let changes: PartnerChanges = serde_json::from_value(serde_json::Value::Object(json(body)?))
        .map_err(|error| ApiError::BadRequest(format!("the partner's changes: {error}")))?;
    Ok(Json(admin::update(&ctx.store, &id, changes, &Actor::AdminApi).await?))
}

#[derive(Deserialize, ToSchema)]
pub struct StatusChange {
    pub status: PartnerStatus,
}

/// Suspend or reactivate a partner.
///
/// A suspended partner's deliveries are refused (403 `forbidden-sender`) on every door until it is
/// activated; what it delivered before stays.
#[utoipa::path(put, path = "/v1/admin/partners/{id}/status", tag = "admin", security(("admin_token" = [])),
    params(("id" = String, Path, description = "Partner id")),
    request_body = StatusChange,
    responses(
        (status = 200, description = "The partner", body = Partner),
        (status = 400, description = "`invalid-request`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn set_status(
    State(ctx): State<ApiContext>,
    Path(id): Path<String>,
    body: Result<Json<StatusChange>, JsonRejection>,
) -> Result<Json<Partner>, ApiError> {
    Ok(Json(admin::set_status(&ctx.store, &id, json(body)?.status, &Actor::AdminApi).await?))
}

#[derive(Deserialize, ToSchema)]
pub struct CredentialRequest {
    pub kind: CredentialKind,
}

/// Issue an additional credential (rotation: the older ones stay valid until revoked).
///
/// The new API key or webhook secret is in the response, and only there.
#[utoipa::path(post, path = "/v1/admin/partners/{id}/credentials", tag = "admin", security(("admin_token" = [])),
    params(("id" = String, Path, description = "Partner id")),
    request_body = CredentialRequest,
    responses(
        (status = 201, description = "The new secret, shown only here", body = IssuedSecret),
        (status = 400, description = "`invalid-request`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn issue_credential(
    State(ctx): State<ApiContext>,
    Path(id): Path<String>,
    body: Result<Json<CredentialRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<IssuedSecret>), ApiError> {
    let request = json(body)?;
    Ok((StatusCode::CREATED, Json(admin::rotate(&ctx.store, &id, request.kind, &Actor::AdminApi).await?)))
}

/// Revoke a credential.
///
/// Requests with it are refused from then on (401); the partner's other credentials keep working.
#[utoipa::path(delete, path = "/v1/admin/partners/{id}/credentials/{credential}", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, description = "Partner id"), ("credential" = Uuid, Path, description = "Credential id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "`unauthorized`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn revoke_credential(
    State(ctx): State<ApiContext>,
    Path((id, credential)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    admin::revoke(&ctx.store, &id, parse_id(&credential)?, &Actor::AdminApi).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The partner registry.
pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new()
        .routes(routes!(list_partners, create_partner))
        .routes(routes!(get_partner, update_partner))
        .routes(routes!(set_status))
        .routes(routes!(issue_credential))
        .routes(routes!(revoke_credential))
}
