//! The HTTP API: routing, middleware (request ids, tracing, limits, timeouts, panics) and serving
//! with graceful shutdown. Handlers live one file per resource; status codes are decided only here.

mod admin;
mod as2_certificate;
mod audit;
mod auth;
mod connection;
mod console;
mod extract;
mod google_keys;
mod health;
pub mod interchanges;
mod invoices;
mod limits;
pub mod metrics;
mod nul;
pub mod openapi;
mod outbox;
pub mod problem;
pub mod quarantine;
pub mod receive;
mod representation;
mod sns_certificates;
mod unproven;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request};
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower_http::add_extension::AddExtension;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::{Config, SwaggerUi};

use crate::config::ServerConfig;
use crate::inbox::Logged;
use crate::ingest::Ingest;
use crate::store::Store;
pub use connection::ConnectionLimits;
use problem::ApiError;
use receive::{as2, doors};

/// Shared state of every handler.
#[derive(Clone)]
pub struct ApiContext {
    pub store: Store,
    pub body_limit: usize,
    /// Slowest a request body may arrive once its first seconds are past, in bytes per second.
    pub min_body_rate: u64,
    pub request_timeout: Duration,
    /// Deliveries must authenticate as a registered partner.
    pub partner_auth: bool,
    pub admin_token: Option<String>,
    /// Requests per minute of a partner without a limit of its own.
    pub rate_limit: u32,
    pub limiter: Arc<limits::Limiter>,
    pub metrics: Arc<metrics::Metrics>,
    /// The delivery use case every door hands its interchanges to.
    pub ingest: Ingest,
    /// Origins the CloudEvents webhook validation handshake allows.
    pub webhook_allowed_origins: Arc<[String]>,
    /// Verifies Pub/Sub push tokens, when an audience is configured.
    pub google_keys: Option<Arc<google_keys::GoogleKeys>>,
    /// The certificates SNS messages are verified with.
    pub sns_certificates: Arc<sns_certificates::SnsCertificates>,
    /// This service's AS2 keys and its sender of asynchronous MDNs.
    pub as2: Arc<as2::Station>,
    /// The operator console's sessions.
    pub console: Arc<console::session::Sessions>,
}

impl ApiContext {
    /// The context of a server, its console cookies MACed with `console_key` (the stored one);
    /// fails when its AS2 keys cannot be read.
    pub fn new(ingest: Ingest, server: &ServerConfig, console_key: Vec<u8>) -> Result<ApiContext, String> {
        let partner_auth = ingest.options().partner_auth;
        server.check_operator_tokens()?;
        let as2 = Arc::new(as2::Station::new(server.as2_identities()?));
        Ok(ApiContext {
            store: ingest.store().clone(),
            body_limit: server.body_limit,
            min_body_rate: server.min_body_rate,
            request_timeout: server.request_timeout(),
            partner_auth,
            admin_token: server.admin_token.clone().filter(|token| !token.is_empty()),
            rate_limit: server.rate_limit,
            limiter: Arc::new(limits::Limiter::new(limits::Capacities {
                in_flight: server.max_in_flight,
                unproven_in_flight: server.max_unproven_in_flight,
                unproven_per_address: server.max_unproven_per_address,
                refusals_per_minute: server.refusals_per_minute,
            })),
            metrics: Arc::default(),
            ingest,
            webhook_allowed_origins: server
                .webhook_allowed_origins
                .iter()
                .map(|o| o.trim().to_owned())
                .collect(),
            google_keys: server
                .pubsub_audience
                .clone()
                .filter(|audience| !audience.is_empty())
                .map(|audience| Arc::new(google_keys::GoogleKeys::new(audience, &server.pubsub_jwks))),
            sns_certificates: Arc::new(sns_certificates::SnsCertificates::new(
                server
                    .sns_cert_urls
                    .iter()
                    .map(|url| url.trim().to_owned())
                    .filter(|url| !url.is_empty())
                    .collect(),
            )),
            as2,
            console: Arc::new(console::session::Sessions::new(
                console_key,
                server.admin_token.as_deref().filter(|token| !token.is_empty()),
                server.console_viewer_token.as_deref().filter(|token| !token.is_empty()),
                server.console_cookie_secure,
            )),
        })
    }
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Largest page a list endpoint returns.
const MAX_PAGE: u32 = 500;
const DEFAULT_PAGE: u32 = 50;

/// The API routes and the OpenAPI document that describes them.
pub fn api() -> (Router<ApiContext>, utoipa::openapi::OpenApi) {
    let (router, mut doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(receive::routes())
        .merge(interchanges::routes())
        .merge(invoices::routes())
        .merge(health::routes())
        .merge(as2_certificate::routes())
        .routes(routes!(metrics::metrics))
        .merge(admin::routes())
        .merge(outbox::routes())
        .merge(quarantine::routes())
        .merge(audit::routes())
        .split_for_parts();
    openapi::declare_unauthorized(&mut doc, |method, path| auth::guarded(true, method, path));
    openapi::declare_refusals(&mut doc);
    (router, doc)
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
    api.route_layer(middleware::from_fn(metrics::track))
        .merge(console::router())
        .merge(
            Router::from(SwaggerUi::new("/swagger-ui").config(Config::from("/openapi.json")))
                .layer(middleware::from_fn(swagger_headers)),
        )
        .route(
            "/openapi.json",
            axum::routing::get(move || async move { ([(header::CONTENT_TYPE, "application/json")], spec) }),
        )
        .layer(DefaultBodyLimit::max(ctx.body_limit))
        .layer(middleware::from_fn_with_state(ctx.clone(), auth::operators_only))
        .layer(middleware::from_fn(nul::refuse_in_url))
        .layer(middleware::from_fn(move |request: Request, next: Next| time_limit(timeout, request, next)))
        .layer(CatchPanicLayer::custom(|_| ApiError::Internal.into_response()))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request| {
            let request_id = request.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-");
            let (method, path) = (Logged(request.method().as_str()), Logged(request.uri().path()));
            tracing::info_span!("request", method = %method, path = %path, request_id)
        }))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(middleware::from_fn(client_request_id))
        .with_state(ctx)
}

/// What Swagger UI loads: its own scripts and styles (it sets inline styles), its icons as data:
/// URIs, and requests to this origin only.
const SWAGGER_UI_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' data:; font-src 'self' data:; connect-src 'self'; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

async fn swagger_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    page_headers(&mut response, SWAGGER_UI_POLICY);
    response
}

/// The headers of a page a person opens: its content security policy, never framed, never sniffed,
/// and the referrer kept to this origin (not `no-referrer`: with it a browser sends `Origin: null`
/// on a page's own forms).
fn page_headers(response: &mut Response, policy: &'static str) {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
}

/// Longest `X-Request-Id` a client may choose; a longer or odd one is replaced by the server's own.
const MAX_REQUEST_ID: usize = 64;

/// Keeps a client's `X-Request-Id` only when it is a short token (letters, digits, `-_.:`), so that
/// what is logged, echoed and audited under it stays small and plain.
async fn client_request_id(mut request: Request, next: Next) -> Response {
    let token = |id: &[u8]| {
        (1..=MAX_REQUEST_ID).contains(&id.len())
            && id.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
    };
    if request.headers().get(REQUEST_ID).is_some_and(|id| !token(id.as_bytes())) {
        request.headers_mut().remove(REQUEST_ID);
    }
    next.run(request).await
}

/// Answers 503 `unavailable` when a request takes longer than `limit`. Dropping the handler cannot
/// acknowledge anything uncommitted: the sender retries and gets 201 or a replay.
async fn time_limit(limit: Duration, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout.into_response(),
    }
}

/// Serves until `shutdown` resolves, then finishes the requests in flight. At most
/// `limits.max_connections` are open at once, and `limits.max_per_address` from one remote address
/// (more are closed on accept); a connection that sends
/// no byte within the first-byte timeout, or no request headers within it (slow loris), or stays
/// silent for the idle timeout, is closed. The body is bounded by the request timeout.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.first_byte);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    let open = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let per_address = limits::PerAddress::new(limits.max_per_address);
    tokio::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait a little instead of spinning.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            tracing::warn!(%remote, max = limits.max_connections, "too many open connections: closed");
            continue;
        };
        let Some(held) = per_address.hold(remote.ip()) else {
            // Counted, not logged: one address reconnecting in a loop must not grow the log.
            ::metrics::counter!("edi_inbox_connections_refused_total", "reason" => "per-address")
                .increment(1);
            continue;
        };
        // Wrapping the router as one service: `Router::layer` would rebuild every route per connection.
        let service = TowerToHyperService::new(AddExtension::new(app.clone(), ConnectInfo(remote)));
        let activity = connection::Activity::new();
        let io = TokioIo::new(connection::Watched::new(stream, Arc::clone(&activity)));
        let connection = graceful.watch(builder.serve_connection_with_upgrades(io, service).into_owned());
        tokio::spawn(async move {
            let _held = (permit, held);
            tokio::select! {
                ended = connection => if let Err(error) = ended {
                    tracing::debug!(%error, %remote, "connection ended with an error");
                },
                () = activity.silent(limits) => tracing::debug!(%remote, "silent connection closed"),
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A text filter that is given must say something: an empty one is a 400, as the spec declares.
fn non_empty(name: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    match value {
        Some(text) if text.is_empty() => Err(ApiError::BadRequest(format!("{name} must not be empty"))),
        other => Ok(other),
    }
}

/// The page of a list that takes no filter.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<uuid::Uuid>,
}

fn page_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    match limit.unwrap_or(DEFAULT_PAGE) {
        limit @ 1..=MAX_PAGE => Ok(limit),
        other => Err(ApiError::BadRequest(format!("limit must be between 1 and {MAX_PAGE}, not {other}"))),
    }
}
