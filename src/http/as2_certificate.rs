//! `GET /v1/as2/certificate`: the certificate of this service's AS2 key (the one MDNs are signed
//! with and partners encrypt to), for partners to download. Public, as a certificate is: a request
//! costs a copy of bytes already in memory and learns nothing a partner's MDN does not show.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiContext;
use super::problem::{ApiError, Problem};

/// DER, asked for with `Accept`.
const DER: &str = "application/pkix-cert";
const PEM: &str = "application/pem-certificate-chain";

/// This service's AS2 certificate.
///
/// The certificate of the first `--as2-keys` key, or of the key generated at the first start when
/// none is configured: partners encrypt to it and verify signed MDNs with it. PEM by default; DER
/// with `Accept: application/pkix-cert`.
#[utoipa::path(
    get,
    path = "/v1/as2/certificate",
    tag = "as2",
    security(()),
    responses(
        (status = 200, description = "The certificate",
            content((String = "application/pem-certificate-chain"), (Vec<u8> = "application/pkix-cert"))),
        (status = 404, description = "`not-found`: this server has no AS2 key (PostgreSQL without `--as2-keys` or `--as2-generated-key`)",
            body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn certificate(State(ctx): State<ApiContext>, headers: HeaderMap) -> Result<Response, ApiError> {
    let certificate = ctx.as2.certificate().ok_or(ApiError::NotFound)?;
    let (media_type, body) = match super::representation::accepts(&headers, DER) {
        true => (DER, certificate.to_der()),
        false => (PEM, certificate.to_pem()),
    };
    let body = body.map_err(|_| ApiError::Internal)?;
    Ok(([(header::CONTENT_TYPE, HeaderValue::from_static(media_type))], body).into_response())
}

pub(super) fn routes() -> OpenApiRouter<ApiContext> {
    OpenApiRouter::new().routes(routes!(certificate))
}
