//! Authenticate what the content says against the proven partner: it may deliver (not suspended),
//! the envelope's sender and receiver are its own, and an AS2 delivery's names are its and ours.
//! Every refusal here is a security event: counted and logged, never stored.

use std::sync::Arc;

use super::Error;
use crate::edi::Envelope;
use crate::inbox::Logged;
use crate::inbox::transport::Transport;
use crate::partners::{Partner, PartnerStatus};

/// Counts a refusal worth an operator's attention (`edi_inbox_security_events_total`).
pub fn security_event(reason: &'static str) {
    metrics::counter!("edi_inbox_security_events_total", "reason" => reason).increment(1);
}

/// A proven partner may deliver unless suspended (which only a proven caller learns).
pub fn active(partner: Arc<Partner>) -> Result<Arc<Partner>, Error> {
    match partner.status {
        PartnerStatus::Active => Ok(partner),
        PartnerStatus::Suspended => Err(Error::Forbidden(format!("partner {} is suspended", partner.id))),
    }
}

/// The interchange's sender must be the partner's, and its receiver one the partner may send to.
pub(super) fn check_sender(partner: Option<&Partner>, envelope: &Envelope) -> Result<(), Error> {
    let Some(partner) = partner else { return Ok(()) };
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
            security_event(reason);
            tracing::warn!(target: "edi_inbox::security", partner = %partner.id,
                sender = %Logged(&sender), receiver = %Logged(&receiver), reason, "delivery refused");
            Err(Error::Forbidden(detail))
        }
    }
}

/// An AS2 delivery's `AS2-From` must be one of the partner's registered AS2 names (a gateway
/// forwarding for another partner, or a spoofed header, is refused), and its `AS2-To` one of this
/// service's own (`receivers`, when any: a message addressed to another station is refused). AS2
/// names compare exactly, as RFC 4130 has them case-sensitive.
pub fn check_as2(receivers: &[String], partner: &Partner, transport: &Transport) -> Result<(), Error> {
    let Some((from, to)) = transport.as2_names() else { return Ok(()) };
    let refusal = if !partner.as2_ids.iter().any(|id| id == from) {
        format!("partner {} does not send as AS2 name {from:?}", partner.id)
    } else if !receivers.is_empty() && !to.is_some_and(|to| receivers.iter().any(|id| id == to)) {
        format!("this service does not receive as AS2 name {:?}", to.unwrap_or_default())
    } else {
        return Ok(());
    };
    security_event("wrong-as2-id");
    tracing::warn!(target: "edi_inbox::security", partner = %partner.id,
        as2_from = %Logged(from), as2_to = %Logged(to.unwrap_or_default()), "AS2 delivery refused");
    Err(Error::Forbidden(refusal))
}
