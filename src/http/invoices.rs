//! `/v1/invoices`: the invoices booked from processed interchanges.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Id, Params};
use super::problem::ApiError;
use super::{ApiContext, non_empty, page_limit};
use crate::inbox::outbox::AccountingStatus;
use crate::inbox::resource::{InvoiceResource, Page};
use crate::store::InvoiceFilter;

/// Read one invoice with its lines.
///
/// As booked: parties, dates, currency, lines, allowances and charges, taxes, payment terms and
/// totals, with where each value was read, and its state with the accounting API.
#[utoipa::path(
    get,
    path = "/v1/invoices/{id}",
    tag = "invoices",
    security((), ("admin_token" = [])),
    params(("id" = Uuid, Path, description = "Invoice id")),
    responses(
        (status = 200, description = "The invoice", body = InvoiceResource),
    )
)]
pub async fn get_invoice(
    State(ctx): State<ApiContext>,
    Id(id): Id,
) -> Result<Json<InvoiceResource>, ApiError> {
    Ok(Json(ctx.store.invoice(id).await?.ok_or(ApiError::NotFound)?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InvoiceQuery {
    /// Only invoices of this interchange.
    interchange_id: Option<Uuid>,
    /// Invoice number (BIG02 / BGM 1004).
    #[param(min_length = 1)]
    number: Option<String>,
    /// Only invoices in this state with the accounting API.
    accounting_status: Option<AccountingStatus>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<Uuid>,
}

/// List invoices with their lines, newest first.
///
/// Filter by interchange, invoice number and state with the accounting API; page with `cursor`.
#[utoipa::path(
    get,
    path = "/v1/invoices",
    tag = "invoices",
    security((), ("admin_token" = [])),
    params(InvoiceQuery),
    responses(
        (status = 200, description = "One page of invoices", body = Page<InvoiceResource>),
    )
)]
pub async fn list_invoices(
    State(ctx): State<ApiContext>,
    Params(query): Params<InvoiceQuery>,
) -> Result<Json<Page<InvoiceResource>>, ApiError> {
    let filter = InvoiceFilter {
        interchange_id: query.interchange_id,
        number: non_empty("number", query.number)?,
        accounting_status: query.accounting_status,
        export_id: None,
        cursor: query.cursor,
        limit: page_limit(query.limit)?,
    };
    Ok(Json(ctx.store.invoices(&filter).await?))
}

/// The booked invoices.
pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new().routes(routes!(list_invoices)).routes(routes!(get_invoice))
}
