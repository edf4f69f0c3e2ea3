//! Who is calling. With partner authentication every delivery proves its partner before its body is
//! parsed or the inbox is consulted (no oracle for strangers): an API key (`Authorization: Bearer`),
//! a Google-signed Pub/Sub push token (`Authorization: Bearer`, a JWT, when `--pubsub-audience` is
//! set) or a Standard Webhooks signature (`webhook-id`, `webhook-timestamp`, `webhook-signature`,
//! with the partner named by the `partner` query parameter). The interchange's sender must then be one of the
//! partner's identities. Operators use the admin token for `/v1/admin/…` and, with partner
//! authentication, for the read endpoints.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use chrono::Utc;
use sha2::{Digest, Sha256};

use std::sync::Arc;

use super::ApiContext;
use super::google_keys::GoogleKeys;
use super::problem::ApiError;
use crate::inbox::Logged;
use crate::ingest;
use crate::partners::Partner;
use crate::partners::directory::Directory;
use crate::partners::sns::SnsMessage;
use crate::partners::webhooks::{self, SignatureError, Signatures, SignedRequest};
use crate::store::AttemptFacts;

/// The caller of a delivery, as far as its headers tell.
pub enum Caller {
    /// Open mode: nobody is asked who they are.
    Open,
    /// Proven by its API key.
    Partner(Arc<Partner>),
    /// Claims to be partner `id` by a signature that is checked once the body is read.
    Signed { id: String, signatures: Signatures, directory: Arc<Directory> },
    /// An SNS message, whose signature (in the body) names the partner by its topic once read.
    SnsSigned(Arc<Directory>),
    /// An AS2 message without an API key: its S/MIME signature, once read, must be the partner's
    /// whose AS2 name it bears.
    As2Signed,
}

impl Caller {
    /// The partner, once proven.
    pub fn partner(&self) -> Option<&Arc<Partner>> {
        match self {
            Caller::Partner(partner) => Some(partner),
            Caller::Open | Caller::Signed { .. } | Caller::SnsSigned(_) | Caller::As2Signed => None,
        }
    }

    /// Whether it claims a partner that only its body can prove.
    pub fn unproven(&self) -> bool {
        matches!(self, Caller::Signed { .. } | Caller::SnsSigned(_) | Caller::As2Signed)
    }
}

fn header<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

fn bearer(parts: &Parts) -> Option<&str> {
    header(parts, header::AUTHORIZATION.as_str())?.strip_prefix("Bearer ").map(str::trim)
}

/// The user and password of `Authorization: Basic`, which carries the partner id and its API key
/// for senders that can only put credentials in the endpoint URL (`https://partner:KEY@host/…`, as
/// AWS SNS does).
fn basic_credentials(parts: &Parts) -> Option<(String, String)> {
    let encoded = header(parts, header::AUTHORIZATION.as_str())?.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    text.split_once(':').map(|(user, password)| (user.to_owned(), password.to_owned()))
}

/// The `partner` query parameter, which names the partner of a signed request.
fn partner_parameter(parts: &Parts) -> Option<&str> {
    parts.uri.query()?.split('&').find_map(|pair| pair.strip_prefix("partner=")).filter(|id| !id.is_empty())
}

/// Identifies the caller from the headers alone, from the in-memory partner directory: an unknown
/// key costs the same lookup as a known one, and a signed request is only bounded here (its
/// signature header parsed and capped), never trusted.
pub async fn identify(ctx: &ApiContext, parts: &Parts) -> Result<Caller, ApiError> {
    let query = parts.uri.query().unwrap_or_default();
    if query.split('&').any(|pair| pair == "partner" || pair == "partner=") {
        return Err(ApiError::BadRequest(
            "the `partner` query parameter, when given, names a partner".into(),
        ));
    }
    if !ctx.partner_auth {
        return Ok(Caller::Open);
    }
    // Bearer: the key alone; Basic: the user must name the key's partner.
    let credentials = match bearer(parts) {
        Some(key) => Some((None, key.to_owned())),
        None => basic_credentials(parts).map(|(user, key)| (Some(user), key)),
    };
    if let (Some((None, token)), Some(keys)) = (&credentials, &ctx.google_keys)
        && token.matches('.').count() == 2
    {
        return pubsub_partner(ctx, keys, token).await;
    }
    if let Some((user, key)) = credentials {
        let directory = ctx.store.directory().await?;
        let partner = directory
            .by_api_key(&key)
            .filter(|partner| user.as_ref().is_none_or(|user| user == partner.id.as_str()))
            .ok_or_else(|| unauthorized("the API key is not valid"))?;
        return Ok(ingest::active(Arc::clone(partner)).map(Caller::Partner)?);
    }
    if parts.headers.contains_key("x-amz-sns-message-type") {
        return Ok(Caller::SnsSigned(ctx.store.directory().await?));
    }
    if parts.headers.contains_key("as2-from") {
        return Ok(Caller::As2Signed);
    }
    let Some(signatures) = header(parts, "webhook-signature") else {
        return Err(unauthorized(
            "authenticate with `Authorization: Bearer <API key>` (or Basic, the key as password), a Pub/Sub push token, an SNS signature, an AS2 signature or a Standard Webhooks signature",
        ));
    };
    let signatures =
        Signatures::parse(signatures).map_err(|error| ApiError::BadRequest(error.to_string()))?;
    let id = partner_parameter(parts)
        .ok_or_else(|| unauthorized("a signed request names its partner in the `partner` query parameter"))?;
    Ok(Caller::Signed { id: id.to_owned(), signatures, directory: ctx.store.directory().await? })
}

/// The partner a Pub/Sub push token proves: one RSA verification against Google's keys, then the
/// partner whose subscription signs as the token's service account.
async fn pubsub_partner(ctx: &ApiContext, keys: &GoogleKeys, token: &str) -> Result<Caller, ApiError> {
    let account = keys.verify(token).await.map_err(|error| {
        ingest::security_event("bad-token");
        tracing::warn!(target: "edi_inbox::security", error = %Logged(&error.to_string()), "Pub/Sub token refused");
        unauthorized(&error.to_string())
    })?;
    let directory = ctx.store.directory().await?;
    let partner = directory.by_pubsub_account(&account).ok_or_else(|| {
        tracing::warn!(target: "edi_inbox::security", account = %Logged(&account), "Pub/Sub token of no partner");
        unauthorized("the token's service account is no partner's")
    })?;
    Ok(ingest::active(Arc::clone(partner)).map(Caller::Partner)?)
}

fn unauthorized(detail: &str) -> ApiError {
    ApiError::Unauthorized(detail.to_owned())
}

/// A key no signature can match: an unknown partner's request is MACed with it, so it costs the
/// same time and gets the same answer as a known partner's with a wrong signature.
fn decoy_key() -> &'static [Vec<u8>] {
    static DECOY: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| {
        let mut key = vec![0u8; 32];
        // Without randomness the decoy is still a key nobody signs with; it only has to cost a MAC.
        let _ = getrandom::fill(&mut key);
        vec![key]
    })
}

/// Checks an SNS message's signature, now that the body is read: the certificate URL must be a
/// trusted one (its certificate fetched once), the signature verify, and the topic be a partner's.
/// Returns the message too, parsed once.
pub async fn verify_sns(
    ctx: &ApiContext,
    caller: Caller,
    body: &[u8],
) -> Result<(Caller, Option<SnsMessage>), ApiError> {
    let Caller::SnsSigned(directory) = caller else {
        return Ok((caller, None));
    };
    let refused = |error: String| {
        ingest::security_event("bad-signature");
        tracing::warn!(target: "edi_inbox::security", error = %Logged(&error), "SNS signature refused");
        unauthorized(&error)
    };
    let message: SnsMessage = serde_json::from_slice(body)
        .map_err(|_| ApiError::InvalidTransport("not a valid SNS message".into()))?;
    let certificates = &ctx.sns_certificates;
    let url = message.certificate_url(&certificates.trusted).map_err(|error| refused(error.to_string()))?;
    let certificate = certificates
        .get(url)
        .await
        .map_err(|error| refused(format!("the SNS signing certificate: {error}")))?;
    message.verify(&certificate).map_err(|error| refused(error.to_string()))?;
    let partner = directory.by_sns_topic(&message.topic_arn).ok_or_else(|| {
        tracing::warn!(target: "edi_inbox::security", topic_arn = %Logged(&message.topic_arn), "SNS topic of no partner");
        unauthorized("the SNS topic is no partner's")
    })?;
    Ok((ingest::active(Arc::clone(partner)).map(Caller::Partner)?, Some(message)))
}

/// Checks a signed request's signature, now that the body is read: at most one MAC per secret.
pub fn verify_signature(parts: &Parts, caller: Caller, body: &[u8]) -> Result<Caller, ApiError> {
    let Caller::Signed { id, signatures, directory } = caller else {
        return Ok(caller);
    };
    let signer = directory.signer(&id);
    let request = SignedRequest {
        id: header(parts, "webhook-id").unwrap_or_default(),
        timestamp: header(parts, "webhook-timestamp").unwrap_or_default(),
        signatures: &signatures,
        body,
    };
    let keys = signer.map_or(decoy_key(), |signer| signer.keys.as_slice());
    match (webhooks::verify(&request, keys, Utc::now()), signer) {
        (Ok(()), Some(signer)) => Ok(ingest::active(Arc::clone(&signer.partner)).map(Caller::Partner)?),
        (Ok(()), None) => Err(unauthorized(&SignatureError::NoMatch.to_string())),
        (Err(error), _) => {
            ingest::security_event("bad-signature");
            tracing::warn!(target: "edi_inbox::security", partner = %Logged(&id), error = %Logged(&error.to_string()), "signature refused");
            Err(unauthorized(&error.to_string()))
        }
    }
}

/// Whether a request needs the admin token: `/v1/admin/…` always; with partner authentication also
/// every other route of `/v1/…` and `/metrics`, whatever the method (HEAD and OPTIONS included),
/// except the delivery itself (`POST /v1/interchanges`, which partners authenticate).
pub(super) fn guarded(partner_auth: bool, method: &Method, path: &str) -> bool {
    let public = (method == Method::POST && path == "/v1/interchanges")
        || path == crate::as2::gateway::CERTIFICATE_PATH;
    path.starts_with("/v1/admin/")
        || (partner_auth && !public && (path.starts_with("/v1/") || path == "/metrics"))
}

/// The CloudEvents webhook validation handshake (`OPTIONS /v1/interchanges` with
/// `WebHook-Request-Origin`), which push senders make before their first delivery, without our
/// credentials. It only tells whether an origin is allowed to push here.
fn is_handshake(request: &Request) -> bool {
    request.method() == Method::OPTIONS
        && request.uri().path() == "/v1/interchanges"
        && request.headers().contains_key(super::doors::WEBHOOK_REQUEST_ORIGIN)
}

/// Requires the admin token where [`guarded`] says so.
pub async fn operators_only(State(ctx): State<ApiContext>, request: Request, next: Next) -> Response {
    if !guarded(ctx.partner_auth, request.method(), request.uri().path()) || is_handshake(&request) {
        return next.run(request).await;
    }
    let Some(expected) = ctx.admin_token.as_deref() else {
        return unauthorized(
            "this endpoint needs the admin token, and none is configured (EDI_INBOX_ADMIN_TOKEN)",
        )
        .into_response();
    };
    let remote = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip());
    let (parts, body) = request.into_parts();
    let needed = || unauthorized("this endpoint needs `Authorization: Bearer <admin token>`").into_response();
    if bearer(&parts).is_none() {
        return needed();
    }
    if let Err(refused) = token_guesses_allowed(&ctx, remote) {
        return refused.into_response();
    }
    if !presents_token(&parts, expected) {
        wrong_token(&ctx, remote);
        return needed();
    }
    next.run(Request::from_parts(parts, body)).await
}

/// Whether `remote` may present an operator token now. Guessing costs the guesser: an address
/// refused too often lately is answered 429 before its token is compared (so that a throttled
/// guesser learns nothing, not even a right guess).
pub fn token_guesses_allowed(ctx: &ApiContext, remote: Option<IpAddr>) -> Result<(), ApiError> {
    match remote {
        Some(remote) => ctx.limiter.refusing(remote).map_err(ApiError::RateLimited),
        None => Ok(()),
    }
}

/// A wrong operator token from `remote` (a guess): counted against its address and aggregated on
/// the console's Refusals page, never a log line per guess.
pub fn wrong_token(ctx: &ApiContext, remote: Option<IpAddr>) {
    ingest::security_event("bad-admin-token");
    let Some(remote) = remote else { return };
    ctx.limiter.refused(remote);
    let facts = AttemptFacts::new(None, Some(remote.to_string()), None, None);
    ctx.store.refused("bad-admin-token", StatusCode::UNAUTHORIZED.as_u16(), &facts, Utc::now());
}

/// Whether the request may see operational detail on a public route (`/readyz`): always in open
/// mode, otherwise only with the admin token.
pub fn is_operator(ctx: &ApiContext, parts: &Parts) -> bool {
    !ctx.partner_auth || ctx.admin_token.as_deref().is_some_and(|expected| presents_token(parts, expected))
}

/// Whether the request carries `expected` as its bearer token; comparing digests keeps the
/// comparison's timing independent of the token.
fn presents_token(parts: &Parts, expected: &str) -> bool {
    bearer(parts).map(|token| Sha256::digest(token.as_bytes())) == Some(Sha256::digest(expected.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_but_the_delivery_is_guarded_in_partner_mode() {
        for method in [Method::GET, Method::HEAD, Method::OPTIONS, Method::PUT, Method::DELETE] {
            for path in
                ["/v1/interchanges", "/v1/interchanges/x", "/v1/invoices", "/v1/invoices/x", "/metrics"]
            {
                assert!(guarded(true, &method, path), "{method} {path}");
                assert!(!guarded(false, &method, path), "{method} {path} in open mode");
            }
            assert!(guarded(false, &method, "/v1/admin/partners"));
        }
        assert!(!guarded(true, &Method::POST, "/v1/interchanges"));
        assert!(!guarded(true, &Method::GET, "/healthz"));
        assert!(!guarded(true, &Method::GET, "/openapi.json"));
    }
}
