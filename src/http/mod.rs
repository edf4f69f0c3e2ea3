//! The HTTP API: routing, middleware (request ids, tracing, limits, timeouts, panics) and serving
//! with graceful shutdown. Handlers live one file per resource; status codes are decided only here.

mod health;
pub mod interchanges;
mod invoices;
pub mod openapi;
pub mod problem;

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderName;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::{Config, SwaggerUi};
use uuid::Uuid;

use crate::store::Store;
use problem::ApiError;

/// Shared state of every handler.
#[derive(Clone)]
pub struct ApiContext {
    pub store: Store,
    pub body_limit: usize,
    pub request_timeout: Duration,
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Largest page a list endpoint returns.
const MAX_PAGE: u32 = 500;
const DEFAULT_PAGE: u32 = 50;

/// The API routes and the OpenAPI document that describes them.
pub fn api() -> (Router<ApiContext>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(interchanges::receive, interchanges::list_interchanges))
        .routes(routes!(interchanges::get_interchange))
        .routes(routes!(interchanges::get_ack))
        .routes(routes!(invoices::list_invoices))
        .routes(routes!(invoices::get_invoice))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .split_for_parts()
}

/// The OpenAPI document of this build.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    api().1
}

/// The complete application: API, OpenAPI document, Swagger UI and middleware.
pub fn router(ctx: ApiContext) -> Router {
    let (api, doc) = api();
    let timeout = ctx.request_timeout;
    let spec = openapi::to_json(&doc);
    api.merge(SwaggerUi::new("/swagger-ui").config(Config::from("/openapi.json")))
        .route(
            "/openapi.json",
            axum::routing::get(move || async move { ([(axum::http::header::CONTENT_TYPE, "application/json")], spec) }),
        )
        .layer(DefaultBodyLimit::max(ctx.body_limit))
        .layer(middleware::from_fn(move |request: Request, next: Next| time_limit(timeout, request, next)))
        .layer(CatchPanicLayer::custom(|_| ApiError::Internal.into_response()))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request| {
            let request_id = request.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-");
            tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id)
        }))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .with_state(ctx)
}

/// Answers 503 `unavailable` when a request takes longer than `limit`. Dropping the handler cannot
/// acknowledge anything uncommitted: the sender retries and gets 201 or a replay.
async fn time_limit(limit: Duration, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout.into_response(),
    }
}

/// Serves until `shutdown` resolves, then finishes the requests in flight.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}

fn parse_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::BadRequest(format!("{text:?} is not a UUID")))
}

fn page_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    match limit.unwrap_or(DEFAULT_PAGE) {
        limit @ 1..=MAX_PAGE => Ok(limit),
        other => Err(ApiError::BadRequest(format!("limit must be between 1 and {MAX_PAGE}, not {other}"))),
    }
}
