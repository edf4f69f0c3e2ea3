//! Admission: everything the headers can tell, checked cheapest first before a byte of the body
//! is read, and the proven partner's rate and body limits.

use axum::http::header;
use axum::http::request::Parts;

use super::body::READ_COPIES;
use super::{Attempt, doors};
use crate::http::ApiContext;
use crate::http::auth;
use crate::http::problem::ApiError;
use crate::http::unproven::UnprovenSlot;
use crate::inbox::transport::{Door, Transport};
use crate::ingest::{self, Shortfall};
use crate::partners::Partner;
use crate::store::AttemptFacts;

/// What a request is allowed before its body is read.
pub(super) struct Admitted {
    pub caller: auth::Caller,
    pub recognised: doors::Recognised,
    /// The slot of a caller whose credential is in its body, until it is proven.
    pub unproven: Option<UnprovenSlot>,
}

/// Checks everything the headers can tell, cheapest first, before a byte of the body is read: the
/// door and media type, the credential (an API key is proven here and charged to its partner, and
/// its AS2 names checked; a signature only gets a slot of the smaller unproven budget, of which
/// its address may hold a few), the declared size, and the byte budget: a proven partner reserves
/// what its body costs (waiting for room), any other request is charged as its bytes arrive and
/// is refused here only when its declared length cannot fit now.
pub(super) async fn admit(
    ctx: &ApiContext,
    parts: &Parts,
    attempt: &mut Attempt,
) -> Result<Admitted, ApiError> {
    let exchange = attempt.exchange.take();
    let recognised = doors::recognise(&parts.headers)?;
    attempt.exchange = exchange.filter(|_| recognised.transport.door == Door::As2);
    attempt.facts.transport = recognised.transport.clone();
    let (remote, facts, reservation) = (attempt.remote, &mut attempt.facts, &mut attempt.reservation);
    let caller = auth::identify(ctx, parts).await?;
    let mut unproven = None;
    let budget = ctx.ingest.budget();
    match &caller {
        auth::Caller::Partner(partner) => {
            charge(ctx, partner, facts)?;
            check_as2(ctx, partner, &facts.transport)?;
        }
        auth::Caller::Signed { .. } | auth::Caller::SnsSigned(_) | auth::Caller::As2Signed => {
            if let Some(remote) = remote {
                ctx.limiter.refusing(remote).map_err(ApiError::RateLimited)?;
            }
            unproven = Some(ctx.limiter.admit_unproven(remote).map_err(ApiError::RateLimited)?);
            *reservation = budget.unproven();
        }
        auth::Caller::Open => {}
    }
    let limit = body_limit(ctx, &caller);
    let declared =
        parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(ApiError::PayloadTooLarge(limit));
    }
    let bytes = declared.unwrap_or(limit).saturating_mul(READ_COPIES);
    match &caller {
        auth::Caller::Partner(_) => *reservation = budget.reserve(bytes).await.map_err(short_of_reading)?,
        _ => {
            room(ctx, reservation, declared.unwrap_or(0).saturating_mul(READ_COPIES), unproven.is_some())
                .await?
        }
    }
    Ok(Admitted { caller, recognised, unproven })
}

/// Most unproven requests overtaken to make room for one body.
const OVERTAKEN_FOR_ROOM: usize = 4;
/// How long an overtaken request may take to let go of its memory.
const LETTING_GO: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether `bytes` fit the budget now for a request charged as its bytes arrive. An unproven one
/// overtakes the slowest unproven requests for their memory when the unproven pool is held (a few
/// dribbled bodies must not hold it against a signed partner).
async fn room(
    ctx: &ApiContext,
    reservation: &ingest::Reservation,
    bytes: usize,
    unproven: bool,
) -> Result<(), ApiError> {
    let budget = ctx.ingest.budget();
    for _ in 0..OVERTAKEN_FOR_ROOM {
        match budget.fits(reservation, bytes) {
            Err(Shortfall::Spent { .. }) if unproven => match ctx.limiter.overtake_slowest_unproven() {
                Some(gone) => {
                    let _ = tokio::time::timeout(LETTING_GO, gone).await;
                }
                None => break,
            },
            fits => return fits.map_err(short_of_reading),
        }
    }
    budget.fits(reservation, bytes).map_err(short_of_reading)
}

/// The refusal of a body whose reading the memory budget cannot take.
pub(super) fn short_of_reading(shortfall: Shortfall) -> ApiError {
    match shortfall {
        Shortfall::Exceeds { needed, budget } => ApiError::OverBudget(format!(
            "reading a body of up to {} bytes needs {needed} bytes of memory, more than the {budget} bytes \
             this server lets such a request hold (EDI_INBOX_BUFFER_BYTES); nothing was read",
            needed / READ_COPIES
        )),
        Shortfall::Spent { needed, budget } => ApiError::Busy { needed, budget },
    }
}

/// The largest body the caller may send: a proven partner's own limit, else the server's.
pub(super) fn body_limit(ctx: &ApiContext, caller: &auth::Caller) -> usize {
    caller
        .partner()
        .and_then(|p| p.max_body_bytes)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(ctx.body_limit)
}

/// Takes one request from a proven partner's rate budget.
pub(super) fn charge(ctx: &ApiContext, partner: &Partner, facts: &mut AttemptFacts) -> Result<(), ApiError> {
    facts.partner_id = Some(partner.id.clone());
    let per_minute =
        partner.requests_per_minute.and_then(|n| u32::try_from(n).ok()).unwrap_or(ctx.rate_limit);
    ctx.limiter.take(partner.id.as_str(), per_minute).map_err(ApiError::RateLimited)
}

/// An AS2 delivery's names must be the partner's and ours.
pub(super) fn check_as2(ctx: &ApiContext, partner: &Partner, transport: &Transport) -> Result<(), ApiError> {
    Ok(ingest::check_as2(&ctx.ingest.options().as2_receiver_ids, partner, transport)?)
}
