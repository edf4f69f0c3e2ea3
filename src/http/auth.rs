//! Who is calling. With partner authentication every delivery proves its partner before its body is
//! parsed or the inbox is consulted (no oracle for strangers): an API key (`Authorization: Bearer`)
//! or a Standard Webhooks signature (`webhook-id`, `webhook-timestamp`, `webhook-signature`, with the
//! partner named by the `partner` query parameter). The interchange's sender must then be one of the
//! partner's identities. Operators use the admin token for `/v1/admin/…` and, with partner
//! authentication, for the read endpoints.

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use sha2::{Digest, Sha256};

use super::ApiContext;
use super::problem::ApiError;
use crate::edi::Envelope;
use crate::partners::webhooks::{self, SignedRequest};
use crate::partners::{Partner, api_key_hash};

/// The authenticated caller of a delivery.
pub enum Caller {
    /// Open mode: nobody is asked who they are.
    Open,
    Partner(Partner),
    /// A Standard Webhooks request whose signature is checked once the body is read.
    Signed {
        partner: Partner,
        secrets: Vec<String>,
    },
}

impl Caller {
    pub fn partner(&self) -> Option<&Partner> {
        match self {
            Caller::Open => None,
            Caller::Partner(partner) | Caller::Signed { partner, .. } => Some(partner),
        }
    }
}

fn header<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

fn bearer(parts: &Parts) -> Option<&str> {
    header(parts, header::AUTHORIZATION.as_str())?.strip_prefix("Bearer ").map(str::trim)
}

/// The `partner` query parameter, which names the partner of a signed request.
fn partner_parameter(parts: &Parts) -> Option<&str> {
    parts.uri.query()?.split('&').find_map(|pair| pair.strip_prefix("partner="))
}

/// Identifies the caller from the headers alone.
pub async fn identify(ctx: &ApiContext, parts: &Parts) -> Result<Caller, ApiError> {
    if !ctx.partner_auth {
        return Ok(Caller::Open);
    }
    let partner = if let Some(key) = bearer(parts) {
        ctx.store
            .partner_by_api_key(&api_key_hash(key))
            .await?
            .ok_or_else(|| unauthorized("the API key is not valid"))?
    } else if header(parts, "webhook-signature").is_some() {
        let id = partner_parameter(parts).ok_or_else(|| {
            unauthorized("a signed request names its partner in the `partner` query parameter")
        })?;
        let partner =
            ctx.store.partner(id).await?.ok_or_else(|| unauthorized("the signature is not valid"))?;
        let secrets = ctx.store.webhook_secrets(&partner.id).await?;
        // Whether it is suspended is only said to a caller that proved to be it.
        return Ok(Caller::Signed { partner, secrets });
    } else {
        return Err(unauthorized(
            "authenticate with `Authorization: Bearer <API key>` or a Standard Webhooks signature",
        ));
    };
    active(partner).map(Caller::Partner)
}

fn active(partner: Partner) -> Result<Partner, ApiError> {
    if partner.status == "active" {
        Ok(partner)
    } else {
        Err(ApiError::Forbidden(format!("partner {} is suspended", partner.id)))
    }
}

fn unauthorized(detail: &str) -> ApiError {
    ApiError::Unauthorized(detail.to_owned())
}

/// Checks a signed request's signature against the partner's secrets, now that the body is read.
pub fn verify_signature(
    ctx: &ApiContext,
    parts: &Parts,
    caller: Caller,
    body: &[u8],
) -> Result<Caller, ApiError> {
    let Caller::Signed { partner, secrets } = caller else {
        return Ok(caller);
    };
    let request = SignedRequest {
        id: header(parts, "webhook-id").unwrap_or_default(),
        timestamp: header(parts, "webhook-timestamp").unwrap_or_default(),
        signatures: header(parts, "webhook-signature").unwrap_or_default(),
        body,
    };
    match webhooks::verify(&request, &secrets, Utc::now()) {
        Ok(()) => active(partner).map(Caller::Partner),
        Err(error) => {
            ctx.metrics.security_event("bad-signature");
            tracing::warn!(target: "edi_inbox::security", partner = %partner.id, %error, "signature refused");
            Err(unauthorized(&error.to_string()))
        }
    }
}

/// The interchange's sender must be the partner's, and its receiver one the partner may send to.
pub fn check_sender(ctx: &ApiContext, caller: &Caller, envelope: &Envelope) -> Result<(), ApiError> {
    let Some(partner) = caller.partner() else { return Ok(()) };
    let standard = envelope.standard.as_str();
    let sender = format!("{standard}:{}:{}", envelope.sender.qualifier, envelope.sender.id);
    let receiver = format!("{standard}:{}:{}", envelope.receiver.qualifier, envelope.receiver.id);
    let refusal = if !partner.senders.contains(&sender) {
        Some(("forged-sender", format!("partner {} may not send as {sender}", partner.id)))
    } else if !partner.receivers.is_empty() && !partner.receivers.contains(&receiver) {
        Some(("wrong-receiver", format!("partner {} may not send to {receiver}", partner.id)))
    } else {
        None
    };
    match refusal {
        None => Ok(()),
        Some((reason, detail)) => {
            ctx.metrics.security_event(reason);
            tracing::warn!(target: "edi_inbox::security", partner = %partner.id, %sender, %receiver, reason, "delivery refused");
            Err(ApiError::Forbidden(detail))
        }
    }
}

/// Requires the admin token on `/v1/admin/…` and, with partner authentication, on reads of `/v1/…`.
pub async fn operators_only(State(ctx): State<ApiContext>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let guarded = path.starts_with("/v1/admin/")
        || (ctx.partner_auth && request.method() == Method::GET && path.starts_with("/v1/"));
    if !guarded {
        return next.run(request).await;
    }
    let Some(expected) = ctx.admin_token.as_deref() else {
        return unauthorized(
            "this endpoint needs the admin token, and none is configured (EDI_INBOX_ADMIN_TOKEN)",
        )
        .into_response();
    };
    let (parts, body) = request.into_parts();
    // Comparing digests keeps the comparison's timing independent of the token.
    let presented = bearer(&parts).map(|token| Sha256::digest(token.as_bytes()));
    if presented != Some(Sha256::digest(expected.as_bytes())) {
        ctx.metrics.security_event("bad-admin-token");
        return unauthorized("this endpoint needs `Authorization: Bearer <admin token>`").into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}
