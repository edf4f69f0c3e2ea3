//! Message Disposition Notifications (RFC 3798 as RFC 4130 uses them): what the sender asked for
//! (`Disposition-Notification-To`, `-Options`, `Receipt-Delivery-Option`), read leniently, and the
//! `multipart/report` that answers it, signed (`multipart/signed`) when asked.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::mime::split_outside_quotes;
use super::{Failure, Identity, Mic, MicAlg, MicChoice};

/// The receipt a sender asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requested {
    /// Signed with `pkcs7-signature` (`signed-receipt-protocol`).
    pub signed: bool,
    /// The MIC algorithm: the first of `signed-receipt-micalg` this service computes.
    pub mic: MicChoice,
    /// Where an asynchronous receipt goes (`Receipt-Delivery-Option`); `None`: in the HTTP answer.
    pub return_to: Option<String>,
}

impl Requested {
    /// `sync` (in the HTTP answer) or `async` (to `return_to`).
    pub fn mode(&self) -> &'static str {
        if self.return_to.is_some() { "async" } else { "sync" }
    }

    /// The request of a message with these headers' values; `None` when no receipt is asked
    /// (`Disposition-Notification-To` absent).
    pub fn read(to: Option<&str>, options: Option<&str>, delivery: Option<&str>) -> Option<Requested> {
        to?;
        let mut requested = Requested {
            signed: false,
            mic: MicChoice::default(),
            return_to: delivery.map(str::trim).filter(|url| !url.is_empty()).map(str::to_owned),
        };
        for parameter in split_outside_quotes(options.unwrap_or_default(), ';') {
            let Some((name, values)) = parameter.split_once('=') else { continue };
            // `importance, value, value…`: the importance is the first element.
            let values: Vec<&str> = values.split(',').map(|v| v.trim().trim_matches('"')).skip(1).collect();
            match name.trim().to_ascii_lowercase().as_str() {
                "signed-receipt-protocol" => {
                    requested.signed = values.iter().any(|v| v.eq_ignore_ascii_case("pkcs7-signature"));
                }
                "signed-receipt-micalg" => {
                    if let Some((alg, spelled)) =
                        values.iter().find_map(|v| MicAlg::parse(v).map(|alg| (alg, *v)))
                    {
                        requested.mic = MicChoice { alg, spelled: spelled.to_ascii_lowercase() };
                    }
                }
                _ => {}
            }
        }
        Some(requested)
    }
}

/// What became of a message, as its receipt says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Received and recorded (or recorded before: a resend).
    Processed,
    /// Not processed, with the RFC 4130 modifier and the reason for people.
    Failed { modifier: &'static str, detail: String },
}

impl Disposition {
    pub fn failed(failure: &Failure) -> Disposition {
        Disposition::Failed { modifier: failure.modifier(), detail: failure.to_string() }
    }

    /// The `Disposition` field's value after the action mode.
    pub fn field(&self) -> String {
        match self {
            Disposition::Processed => "processed".to_owned(),
            Disposition::Failed { modifier, .. } => format!("processed/error: {modifier}"),
        }
    }
}

/// A receipt for one message.
pub struct Receipt<'a> {
    /// Our AS2 name (the message's `AS2-To`).
    pub recipient: &'a str,
    pub original_message_id: &'a str,
    pub mic: Option<&'a Mic>,
    pub disposition: &'a Disposition,
}

/// A written MDN: its own Message-ID and the MIME headers that travel as HTTP headers, and the
/// body.
#[derive(Clone, Debug)]
pub struct Written {
    pub message_id: String,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// Header values cannot carry line breaks: anything a sender put in an echoed value is flattened.
fn one_line(value: &str) -> String {
    value.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// What identifies a receipt: the message it answers, what was received and the disposition. The
/// same message resent with the same outcome gets the same receipt, byte for byte but for a
/// signature's time.
fn seed(receipt: &Receipt<'_>) -> [u8; 32] {
    let mic = receipt.mic.map(Mic::to_string).unwrap_or_default();
    let identity =
        [receipt.original_message_id, receipt.recipient, &mic, &receipt.disposition.field()].join("\n");
    openssl::sha::sha256(identity.as_bytes())
}

/// A MIME boundary of its own for each `part` of a receipt.
fn boundary(seed: &[u8; 32], part: &str) -> String {
    let digest = openssl::sha::sha256(&[seed.as_slice(), part.as_bytes()].concat());
    format!("----=_edi-inbox_{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..18]))
}

/// Writes the `multipart/report` of `receipt`, signed with `signer` when given.
pub fn write(receipt: &Receipt<'_>, signer: Option<&Identity>) -> Result<Written, Failure> {
    let seed = seed(receipt);
    let report = report(receipt, &seed);
    let Some(signer) = signer else { return Ok(report) };
    // The signed entity is the report with its Content-Type header, as the sender will read it.
    let mut signed = format!("Content-Type: {}\r\n\r\n", report.content_type).into_bytes();
    signed.extend_from_slice(&report.body);
    let signature = STANDARD.encode(signer.sign(&signed)?);
    let outer = boundary(&seed, "signed");
    let mut body = format!("--{outer}\r\n").into_bytes();
    body.extend_from_slice(&signed);
    body.extend_from_slice(
        format!(
            "\r\n--{outer}\r\nContent-Type: application/pkcs7-signature; name=\"smime.p7s\"\r\n\
             Content-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename=\"smime.p7s\"\r\n\r\n"
        )
        .as_bytes(),
    );
    for line in signature.as_bytes().chunks(76) {
        body.extend_from_slice(line);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{outer}--\r\n").as_bytes());
    let content_type = format!(
        "multipart/signed; protocol=\"application/pkcs7-signature\"; micalg=\"sha-256\"; boundary=\"{outer}\""
    );
    Ok(Written { message_id: report.message_id, content_type, body })
}

fn report(receipt: &Receipt<'_>, seed: &[u8; 32]) -> Written {
    let recipient = one_line(receipt.recipient);
    let message_id = one_line(receipt.original_message_id);
    let text = match receipt.disposition {
        Disposition::Processed => format!(
            "The AS2 message {message_id} was received and its interchange recorded by edi-inbox.\r\n"
        ),
        Disposition::Failed { detail, .. } => format!(
            "The AS2 message {message_id} was not processed: nothing was recorded.\r\n{}\r\n",
            one_line(detail)
        ),
    };
    let mut notification = format!(
        "Reporting-UA: edi-inbox\r\nOriginal-Recipient: rfc822; {recipient}\r\nFinal-Recipient: rfc822; {recipient}\r\n\
         Original-Message-ID: {message_id}\r\n"
    );
    if let Some(mic) = receipt.mic {
        notification.push_str(&format!("Received-Content-MIC: {mic}\r\n"));
    }
    notification.push_str(&format!(
        "Disposition: automatic-action/MDN-sent-automatically; {}\r\n",
        receipt.disposition.field()
    ));
    let inner = boundary(seed, "report");
    let body = format!(
        "--{inner}\r\nContent-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: 7bit\r\n\r\n{text}\r\n\
         --{inner}\r\nContent-Type: message/disposition-notification\r\nContent-Transfer-Encoding: 7bit\r\n\r\n\
         {notification}\r\n--{inner}--\r\n"
    );
    let content_type =
        format!("multipart/report; report-type=disposition-notification; boundary=\"{inner}\"");
    let hex: String = seed[..16].iter().map(|b| format!("{b:02x}")).collect();
    Written { message_id: format!("<{hex}@edi-inbox>"), content_type, body: body.into_bytes() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_leniently() {
        let read = |options| Requested::read(Some("mdn@acme"), Some(options), None).unwrap();
        let asked = read(
            "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256",
        );
        assert!(asked.signed);
        assert_eq!(asked.mic, MicChoice { alg: MicAlg::Sha256, spelled: "sha-256".into() });
        let spaced = read(
            " Signed-Receipt-Protocol = Required , PKCS7-Signature ;signed-receipt-micalg=required,md5, SHA1 ",
        );
        assert!(spaced.signed);
        assert_eq!(spaced.mic, MicChoice { alg: MicAlg::Sha1, spelled: "sha1".into() });
        assert!(!read("").signed);
        assert_eq!(
            Requested::read(None, Some("signed-receipt-protocol=optional, pkcs7-signature"), None),
            None
        );
        let later = Requested::read(Some("x"), None, Some(" https://acme.example/mdn ")).unwrap();
        assert_eq!(later.return_to.as_deref(), Some("https://acme.example/mdn"));
    }

    #[test]
    fn a_report_carries_the_disposition_and_flattens_what_the_sender_wrote() {
        let disposition =
            Disposition::Failed { modifier: "decryption-failed", detail: "no\r\nInjected: 1".into() };
        let receipt = Receipt {
            recipient: "BUYER",
            original_message_id: "<1@acme>\r\nX: y",
            mic: None,
            disposition: &disposition,
        };
        let written = write(&receipt, None).unwrap();
        let text = String::from_utf8(written.body).unwrap();
        assert!(text.contains(
            "Disposition: automatic-action/MDN-sent-automatically; processed/error: decryption-failed\r\n"
        ));
        assert!(text.contains("Original-Message-ID: <1@acme>  X: y\r\n"));
        assert!(!text.contains("\r\nInjected"));
        assert!(written.content_type.starts_with("multipart/report; report-type=disposition-notification"));
        let again = write(&receipt, None).unwrap();
        assert_eq!(
            (&again.message_id, &again.body),
            (&written.message_id, &text.into_bytes()),
            "a resend's receipt"
        );
        let processed = Receipt { disposition: &Disposition::Processed, ..receipt };
        assert_ne!(write(&processed, None).unwrap().message_id, again.message_id);
    }
}
