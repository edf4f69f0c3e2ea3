//! The AS2 door (RFC 4130). A partner's gateway POSTs to `/v1/interchanges` with `AS2-From`,
//! `AS2-To` and `Message-ID`; its body is the EDI itself or S/MIME around it. Once the body is read,
//! [`open`] decrypts, verifies and inflates it (a valid signature with the partner's certificate is
//! its proof when it sends no API key), and the interchange goes through the inbox like any other.
//! When the gateway asks for a receipt (`Disposition-Notification-To`), [`receipt`] answers with an
//! MDN instead of JSON — in the HTTP 200, or POSTed to a registered `Receipt-Delivery-Option` URL —
//! and every outcome but a transient one (429, 503: retry) is an MDN.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use super::Attempt;
use crate::as2::mdn::{self, Disposition, Receipt, Requested};
use crate::as2::mime::Entity;
use crate::as2::{Allowance, Failure, Identity, Mic, MicChoice, Opened, Opening};
use crate::http::ApiContext;
use crate::http::auth::Caller;
use crate::http::problem::{self, ApiError};
use crate::inbox::Logged;
use crate::ingest::{self, Ingested, Reply};
use crate::partners::mdn_url_allowed;

/// The outer media types of a secured AS2 message (a plain one carries an EDI media type).
pub const SECURED_MEDIA_TYPES: [&str; 3] =
    ["application/pkcs7-mime", "application/x-pkcs7-mime", "multipart/signed"];

/// Asynchronous receipts being delivered at once; beyond, a receipt is dropped (logged and
/// counted): the gateway resends a message whose receipt it does not get, and the resend is
/// answered from the stored outcome.
const RECEIPTS_IN_FLIGHT: usize = 64;
/// Attempts to deliver one asynchronous receipt, and the first wait between them (doubling).
const RECEIPT_ATTEMPTS: u32 = 5;
const RECEIPT_FIRST_WAIT: Duration = Duration::from_secs(1);
const RECEIPT_TIMEOUT: Duration = Duration::from_secs(30);

/// This service as an AS2 station: its keys (newest first; the first signs receipts) and the
/// client that delivers asynchronous receipts.
pub struct Station {
    identities: Arc<[Identity]>,
    client: reqwest::Client,
    receipts_in_flight: Arc<Semaphore>,
}

impl Station {
    pub fn new(identities: Vec<Identity>) -> Station {
        let client = reqwest::Client::builder()
            .timeout(RECEIPT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Station {
            identities: identities.into(),
            client,
            receipts_in_flight: Arc::new(Semaphore::new(RECEIPTS_IN_FLIGHT)),
        }
    }
}

impl Station {
    /// The certificate partners encrypt to and verify receipts with: the first key's.
    pub fn certificate(&self) -> Option<&openssl::x509::X509> {
        self.identities.first().map(|identity| &identity.certificate)
    }
}

/// What an AS2 request's headers say.
#[derive(Clone, Debug)]
pub struct Exchange {
    pub from: String,
    pub to: String,
    pub message_id: String,
    pub receipt: Option<Requested>,
    /// The body's own headers (`Content-Type`, `Content-Transfer-Encoding`): the outer MIME entity.
    entity_headers: Vec<(String, String)>,
}

impl Exchange {
    /// The exchange of a request with `AS2-From`; `None` for every other door.
    pub fn read(headers: &HeaderMap) -> Option<Exchange> {
        let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let unquoted = |value: &str| value.trim_matches('"').to_owned();
        Some(Exchange {
            from: unquoted(h("as2-from")?),
            to: h("as2-to").map(unquoted).unwrap_or_default(),
            message_id: h("message-id").unwrap_or_default().to_owned(),
            receipt: Requested::read(
                h("disposition-notification-to"),
                h("disposition-notification-options"),
                h("receipt-delivery-option"),
            ),
            entity_headers: ["content-type", "content-transfer-encoding"]
                .into_iter()
                .filter_map(|name| Some((name.to_owned(), h(name)?.to_owned())))
                .collect(),
        })
    }
}

/// What opening a message established for its receipt.
pub struct Checked {
    /// The `Received-Content-MIC`.
    pub mic: Mic,
    /// Where the receipt goes, once checked against the partner's registered URLs; `None`: in the
    /// HTTP answer.
    pub return_to: Option<String>,
}

/// Opens a read AS2 body: its EDI, the caller it proves, how it was protected (added to the
/// attempt's transport facts) and what its receipt needs. A partner's requirements
/// (`as2_security`, MDN URLs) apply once it is known by its AS2 name.
pub(super) async fn open(
    ctx: &ApiContext,
    caller: Caller,
    exchange: &Exchange,
    body: Bytes,
    attempt: &mut Attempt,
) -> Result<(Caller, Opened), ApiError> {
    let directory = ctx.store.directory().await?;
    let sender = directory.by_as2_name(&exchange.from).cloned();
    let signers = sender.as_ref().map(|sender| sender.certificates.clone()).unwrap_or_default();
    let identities = Arc::clone(&ctx.as2.identities);
    let mic = exchange.receipt.as_ref().map_or_else(MicChoice::default, |receipt| receipt.mic.clone());
    let entity_headers = exchange.entity_headers.clone();
    let limit = ctx.body_limit;
    let budget = ctx.ingest.budget().clone();
    let mut held = std::mem::replace(&mut attempt.reservation, budget.nothing());
    // RSA and inflating are CPU work: off the request threads. What inflates, in all layers
    // together, stays under the body limit and is charged to the memory budget as it inflates.
    let (opened, held) = tokio::task::spawn_blocking(move || {
        let opening = Opening { identities: &identities, signers: &signers, mic: &mic };
        let mut charge = |bytes| budget.grow(&mut held, bytes).is_ok();
        let allowance = Allowance { limit, remaining: limit, charge: &mut charge };
        (crate::as2::open(&Entity::new(entity_headers, &body), &opening, allowance), held)
    })
    .await
    .map_err(|_| ApiError::Internal)?;
    attempt.reservation = held;
    let opened = opened.map_err(refused)?;
    let security = opened.security;
    let facts = &mut attempt.facts;
    facts.transport = std::mem::take(&mut facts.transport)
        .with("signed", Some(security.signed))
        .with("encrypted", Some(security.encrypted))
        .with("compressed", Some(security.compressed))
        .with("mic", Some(opened.mic.to_string()));
    if let Some(receipt) = &exchange.receipt {
        facts.transport = std::mem::take(&mut facts.transport).asking_receipt(receipt.mode());
    }
    // A caller with no other proof is authenticated first, so that a stranger learns nothing of a
    // partner's requirements (nor whether its AS2 name exists).
    let caller = match caller {
        Caller::As2Signed => match (&sender, security.signed) {
            (Some(sender), true) => Caller::Partner(ingest::active(Arc::clone(&sender.partner))?),
            _ => {
                return Err(refused(Failure::AuthenticationFailed(
                    "an unsigned AS2 message proves nothing: sign it with a certificate registered for the \
                     partner, or send the partner's API key"
                        .into(),
                )));
            }
        },
        other => other,
    };
    if let Some(missing) = sender.as_ref().and_then(|sender| sender.partner.as2_security.missing(security)) {
        return Err(refused(Failure::InsufficientSecurity(missing)));
    }
    let return_to = exchange.receipt.as_ref().and_then(|receipt| receipt.return_to.clone());
    if let Some(url) = &return_to {
        let allowed =
            sender.as_ref().is_some_and(|sender| mdn_url_allowed(&sender.partner.as2_mdn_urls, url));
        if !allowed {
            return Err(refused(Failure::ReceiptUrlRefused(url.clone())));
        }
    }
    attempt.checked = Some(Checked { mic: opened.mic.clone(), return_to });
    Ok((caller, opened))
}

/// An AS2 refusal, counted as a security event when it is about proof.
fn refused(failure: Failure) -> ApiError {
    if !matches!(failure, Failure::Malformed(_) | Failure::TooLarge(_) | Failure::Busy) {
        ingest::security_event(failure.modifier());
        let inside = match &failure {
            Failure::DecryptionFailed(Some(inside)) => inside.to_string(),
            _ => String::new(),
        };
        tracing::warn!(target: "edi_inbox::security", error = %Logged(&failure.to_string()), inside = %Logged(&inside),
            "AS2 message refused");
    }
    ApiError::As2(failure)
}

/// The MDN that answers an AS2 exchange's outcome, when a receipt was asked and the outcome is
/// final (a 429 or 503 is answered as HTTP, so that the gateway retries). It goes to the partner's
/// URL only when opening the message checked it (`checked`); any earlier refusal is answered in
/// the HTTP response, so that no request makes this service call an address it was not given by
/// a partner. Records the disposition with the attempt.
pub(super) fn receipt(
    ctx: &ApiContext,
    attempt: &mut Attempt,
    outcome: Result<&Ingested, &ApiError>,
) -> Option<Response> {
    let Attempt { exchange, checked, facts, .. } = attempt;
    let (exchange, checked) = (exchange.as_ref()?, checked.as_ref());
    let requested = exchange.receipt.as_ref()?;
    let disposition = match outcome {
        Ok(ingested) => disposition_of(ingested),
        Err(error) if error.status() == StatusCode::TOO_MANY_REQUESTS || error.status().is_server_error() => {
            return None;
        }
        Err(ApiError::As2(failure)) => Disposition::failed(failure),
        Err(error @ ApiError::Unauthorized(_)) => {
            Disposition::Failed { modifier: "authentication-failed", detail: error.problem().detail }
        }
        Err(error) => Disposition::Failed { modifier: NOT_PROCESSED, detail: error.problem().detail },
    };
    let return_to = checked.and_then(|checked| checked.return_to.as_ref());
    facts.transport = std::mem::take(&mut facts.transport)
        .asking_receipt(if return_to.is_some() { "async" } else { "sync" })
        .with("mdn", Some(disposition.field()));
    let signer = requested.signed.then(|| ctx.as2.identities.first()).flatten();
    let written = mdn::write(
        &Receipt {
            recipient: &exchange.to,
            original_message_id: &exchange.message_id,
            mic: checked.map(|checked| &checked.mic),
            disposition: &disposition,
        },
        signer,
    );
    let written = match written {
        Ok(written) => written,
        Err(error) => return Some(ApiError::As2(error).into_response()),
    };
    let headers = match mdn_headers(exchange, &written) {
        Ok(headers) => headers,
        Err(error) => return Some(error.into_response()),
    };
    match return_to {
        None => Some((StatusCode::OK, headers, written.body).into_response()),
        Some(url) => {
            send_later(&ctx.as2, url.clone(), headers, written.body, &exchange.message_id);
            Some(StatusCode::OK.into_response())
        }
    }
}

/// The modifier of the receipt of an interchange that was not processed.
const NOT_PROCESSED: &str = "unexpected-processing-error";

/// Whether a receipt says `processed` for a reply: recorded, replayed, held or bypassed is a plain
/// `processed` (senders treat a warning as a failure); rejected or conflicting is an error.
fn processed(reply: Reply) -> bool {
    matches!(reply, Reply::Created | Reply::Replayed | Reply::Held)
}

/// The `Disposition` field a receipt gives each reply.
pub fn disposition_field(reply: Reply) -> &'static str {
    if processed(reply) { "processed" } else { "processed/error: unexpected-processing-error" }
}

/// What the receipt of an ingested interchange says; an error carries the problem's detail.
fn disposition_of(ingested: &Ingested) -> Disposition {
    if processed(ingested.reply()) {
        return Disposition::Processed;
    }
    let detail = match ingested {
        Ingested::Recorded { delivery, .. } => problem_detail(delivery.response()),
        Ingested::Replayed { body, .. } => problem_detail(body),
        Ingested::Conflict { delivery, original_id } => {
            problem::conflict(*original_id, delivery.key()).problem().detail
        }
        Ingested::Quarantined { .. } | Ingested::Bypassed(_) => String::new(),
    };
    Disposition::Failed { modifier: NOT_PROCESSED, detail }
}

/// The detail of a stored problem document.
fn problem_detail(body: &str) -> String {
    let problem: Option<serde_json::Value> = serde_json::from_str(body).ok();
    problem
        .as_ref()
        .and_then(|problem| problem.get("detail")?.as_str())
        .unwrap_or("the interchange is invalid")
        .to_owned()
}

/// The headers of an MDN: ours and the partner's AS2 names swapped, its Message-ID and type.
fn mdn_headers(exchange: &Exchange, written: &mdn::Written) -> Result<HeaderMap, ApiError> {
    let quoted = |name: &str| if name.contains(' ') { format!("\"{name}\"") } else { name.to_owned() };
    let (message_id, content_type) = (written.message_id.clone(), written.content_type.as_str());
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("as2-version", "1.2".to_owned()),
        ("as2-from", quoted(&exchange.to)),
        ("as2-to", quoted(&exchange.from)),
        ("message-id", message_id),
        ("mime-version", "1.0".to_owned()),
        (header::CONTENT_TYPE.as_str(), content_type.to_owned()),
    ] {
        let value = HeaderValue::from_str(&value).map_err(|_| ApiError::Internal)?;
        headers.insert(HeaderName::from_static(name), value);
    }
    Ok(headers)
}

/// Delivers an asynchronous receipt in the background, retrying with backoff.
fn send_later(station: &Station, url: String, headers: HeaderMap, body: Vec<u8>, message_id: &str) {
    let Ok(permit) = Arc::clone(&station.receipts_in_flight).try_acquire_owned() else {
        metrics::counter!("edi_inbox_as2_receipts_total", "outcome" => "dropped").increment(1);
        tracing::warn!(message_id = %Logged(message_id), "asynchronous MDN dropped: too many in flight");
        return;
    };
    let client = station.client.clone();
    let message_id = message_id.to_owned();
    tokio::spawn(async move {
        let _permit = permit;
        let mut wait = RECEIPT_FIRST_WAIT;
        for attempt in 1..=RECEIPT_ATTEMPTS {
            let sent = client.post(&url).headers(headers.clone()).body(body.clone()).send().await;
            match sent {
                Ok(answer) if answer.status().is_success() => {
                    metrics::counter!("edi_inbox_as2_receipts_total", "outcome" => "delivered").increment(1);
                    return;
                }
                Ok(answer) => {
                    tracing::warn!(message_id = %Logged(&message_id), status = answer.status().as_u16(), attempt,
                    "asynchronous MDN refused")
                }
                Err(error) => {
                    tracing::warn!(message_id = %Logged(&message_id), error = %error.without_url(), attempt,
                    "asynchronous MDN not delivered")
                }
            }
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
        metrics::counter!("edi_inbox_as2_receipts_total", "outcome" => "failed").increment(1);
    });
}
