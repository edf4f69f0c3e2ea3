//! Reading a delivery's body: charged to the memory budget as it arrives, no slower than the
//! minimum rate, never past the body limit; and draining the body of a request refused before it
//! was read, so that its client gets the answer.

use axum::body::HttpBody as _;
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::http::request::Parts;
use bytes::BytesMut;
use http_body_util::BodyExt;

use crate::http::problem::ApiError;
use crate::http::unproven::Progress;

/// Copies of a body that reading and parsing hold at once at most (the body, and a wrapped one's
/// copy without line breaks; segments are read from the body, not held), charged to the memory
/// budget as the body is read (reserved before it is read for a partner proven by its API key);
/// once parsed, the delivery tops the reservation up to what recording it costs.
pub const READ_COPIES: usize = 2;

/// Bytes read between two charges of the memory budget.
const CHARGE_STEP: usize = 64 * 1024;

/// What reading `read` bytes is charged: [`READ_COPIES`] times them, counted in whole steps.
pub fn charged_for(read: usize) -> usize {
    read.div_ceil(CHARGE_STEP).saturating_mul(CHARGE_STEP).saturating_mul(READ_COPIES)
}

/// How long a body may take before it must keep up with the minimum rate.
const BODY_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads the body up to `limit` bytes (413 beyond), passing `charge` the bytes read so far as they
/// arrive (its refusal ends the reading), and refusing a body slower than `min_rate` bytes per
/// second on average once [`BODY_GRACE`] is past (408): a request that dribbles its body holds
/// its slot and its memory for seconds, not for the request timeout. An unproven request tells its
/// `progress` as it reads, and stops (408) when a newcomer overtakes it.
pub async fn read_body(
    mut body: Body,
    limit: usize,
    min_rate: u64,
    progress: Option<&Progress>,
    mut charge: impl FnMut(usize) -> Result<(), ApiError>,
) -> Result<Bytes, ApiError> {
    let overtaken = async {
        match progress {
            Some(progress) => progress.overtaken().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(overtaken);
    let started = tokio::time::Instant::now();
    let due = |read: usize| match min_rate {
        0 => None,
        rate => Some(started + BODY_GRACE + std::time::Duration::from_secs_f64(read as f64 / rate as f64)),
    };
    // A body that arrives in one frame is that frame; one in several is copied, as it arrives, into
    // one buffer of its declared length (the frames then freed), never held twice over.
    let declared = usize::try_from(body.size_hint().lower()).unwrap_or(0).min(limit);
    let (mut first, mut joined): (Option<Bytes>, Option<BytesMut>) = (None, None);
    let mut read = 0usize;
    loop {
        let frame = async {
            match due(read) {
                Some(deadline) => tokio::time::timeout_at(deadline, body.frame())
                    .await
                    .map_err(|_| ApiError::SlowBody(min_rate)),
                None => Ok(body.frame().await),
            }
        };
        let next = tokio::select! {
            biased;
            rate = &mut overtaken => return Err(ApiError::Overtaken(rate)),
            next = frame => next?,
        };
        let frame = match next {
            None => break,
            Some(Ok(frame)) => frame,
            Some(Err(error)) => {
                return Err(ApiError::BadRequest(format!("the request body could not be read: {error}")));
            }
        };
        let Ok(data) = frame.into_data() else { continue };
        read += data.len();
        if read > limit {
            return Err(ApiError::PayloadTooLarge(limit));
        }
        charge(read)?;
        if let Some(progress) = progress {
            progress.read(read);
        }
        match (&mut joined, first.take()) {
            (Some(buffer), _) => buffer.extend_from_slice(&data),
            (None, None) => first = Some(data),
            (None, Some(previous)) => {
                let mut buffer = BytesMut::with_capacity(declared.max(read));
                buffer.extend_from_slice(&previous);
                buffer.extend_from_slice(&data);
                joined = Some(buffer);
            }
        }
    }
    if let Some(progress) = progress {
        progress.finished();
    }
    Ok(joined.map(BytesMut::freeze).or(first).unwrap_or_default())
}

/// Most bytes of a refused request's body read and thrown away, and for how long.
const DRAIN_BYTES: usize = 64 * 1024 * 1024;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads and discards what the client still sends of a body refused before it was read (lingering
/// close, as nginx does): a client that writes its whole body before reading the answer (urllib,
/// requests, Java) then gets the answer instead of a reset connection. Bounded in bytes and time,
/// and skipped for `Expect: 100-continue`, whose client sends nothing until invited.
pub async fn drain(parts: &Parts, body: Body) {
    let expects_continue =
        parts.headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects_continue {
        return;
    }
    let discard = async {
        let mut body = body;
        let mut read = 0usize;
        while read < DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, |data| data.len()),
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, discard).await;
}
