//! Reading and recording: the body read at a minimum rate and charged as it arrives, the caller
//! proven by its signature, an AS2 message opened, the door's envelope unwrapped, and the
//! interchange handed to the inbox (or an SNS subscription message kept for an operator).

use axum::body::Bytes;
use axum::extract::Request;

use super::admit::{admit, body_limit, charge, check_as2, short_of_reading};
use super::body::{charged_for, drain, read_body};
use super::{Attempt, as2, doors};
use crate::http::ApiContext;
use crate::http::auth;
use crate::http::problem::ApiError;
use crate::inbox::Logged;
use crate::ingest::{Inbound, Ingested, PartnerOf};
use crate::partners::{PartnerId, ResponseForm};
use crate::store::SnsSubscription;

/// How long an SNS sender with too many pending confirmations is asked to wait (SNS retries).
const SNS_BACKLOG_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What an admitted, proven request came to.
pub(super) enum Arrived {
    /// An interchange, through the inbox, with how its partner is answered by default.
    Interchange(Ingested, ResponseForm),
    /// An SNS subscription message, kept for an operator.
    SnsKept(SnsSubscription),
}

/// Authenticates, reads and unwraps one delivery, and hands its interchange to the inbox.
pub(super) async fn deliver(
    ctx: &ApiContext,
    request: Request,
    attempt: &mut Attempt,
) -> Result<Arrived, ApiError> {
    let (parts, body) = request.into_parts();
    let mut admitted = match admit(ctx, &parts, attempt).await {
        Ok(admitted) => admitted,
        Err(error) => {
            drain(&parts, body).await;
            return Err(error);
        }
    };
    let budget = ctx.ingest.budget();
    let reservation = &mut attempt.reservation;
    let charge_read = |read: usize| budget.top_up(reservation, charged_for(read)).map_err(short_of_reading);
    let progress = admitted.unproven.as_ref().map(|slot| slot.progress());
    let body = match read_body(body, ctx.body_limit, ctx.min_body_rate, progress, charge_read).await {
        Ok(body) => body,
        Err(error) => {
            // Its memory is given back before its slot (dropped on return), which tells a newcomer
            // that overtook it that the memory is free.
            attempt.reservation = budget.nothing();
            return Err(error);
        }
    };
    attempt.facts.body_bytes = i64::try_from(body.len()).unwrap_or(i64::MAX);
    let signed = admitted.caller.unproven();
    let caller = auth::verify_signature(&parts, admitted.caller, &body)?;
    let (caller, sns) = auth::verify_sns(ctx, caller, &body).await?;
    let (caller, body) = match attempt.exchange.clone() {
        Some(exchange) => {
            let (caller, opened) = as2::open(ctx, caller, &exchange, body, attempt).await?;
            admitted.recognised.content_type = opened.content_type;
            admitted.recognised.transport = attempt.facts.transport.clone();
            (caller, Bytes::from(opened.payload))
        }
        None => (caller, body),
    };
    let partner = caller.partner().cloned();
    if partner.is_some() {
        attempt.reservation.proven();
        admitted.unproven = None;
    }
    if let (true, Some(partner)) = (signed, &partner) {
        charge(ctx, partner, &mut attempt.facts)?;
        check_as2(ctx, partner, &attempt.facts.transport)?;
    }
    let limit = body_limit(ctx, &caller);
    if body.len() > limit {
        return Err(ApiError::PayloadTooLarge(limit));
    }
    let _slot = ctx.limiter.admit().map_err(ApiError::RateLimited)?;
    match doors::unwrap(admitted.recognised, body, sns)? {
        doors::Arrival::SnsControl(control) => {
            let kept = ctx
                .store
                .keep_sns_control(
                    &control,
                    attempt.facts.partner_id.as_ref().map(PartnerId::as_str),
                    attempt.received_at,
                )
                .await?
                .ok_or(ApiError::RateLimited(SNS_BACKLOG_WAIT))?;
            tracing::info!(target: "edi_inbox::security", kind = control.kind.as_str(), topic_arn = %Logged(&control.topic_arn),
                "SNS subscription message kept for an operator to confirm");
            Ok(Arrived::SnsKept(kept))
        }
        doors::Arrival::Interchange { body, content_type, transport } => {
            attempt.facts.transport = transport;
            let form = partner.as_ref().map_or(ResponseForm::Full, |p| p.response);
            let inbound = Inbound { body, content_type, partner: PartnerOf::Caller(partner) };
            let Attempt { reservation, facts, received_at, .. } = attempt;
            Ok(Arrived::Interchange(
                ctx.ingest.deliver(inbound, reservation, facts, *received_at).await?,
                form,
            ))
        }
    }
}
