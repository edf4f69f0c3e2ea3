//! AWS SNS message signatures: the string SNS signs for each message type, its `SignatureVersion`
//! (1: SHA1withRSA, 2: SHA256withRSA) checked with the certificate at `SigningCertURL`, and which
//! certificate URLs are trusted at all (AWS's own by default). Pure: the certificate is handed in.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::signature::{
    RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY, RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey,
    VerificationAlgorithm,
};
use serde::Deserialize;

/// An SNS HTTP(S) message (the JSON body SNS posts, whatever its `Content-Type`).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SnsMessage {
    #[serde(rename = "Type")]
    pub kind: String,
    pub message_id: String,
    pub topic_arn: String,
    pub message: Option<String>,
    pub subject: Option<String>,
    pub timestamp: Option<String>,
    pub signature_version: Option<String>,
    pub signature: Option<String>,
    #[serde(rename = "SigningCertURL")]
    pub signing_cert_url: Option<String>,
    pub token: Option<String>,
    #[serde(rename = "SubscribeURL")]
    pub subscribe_url: Option<String>,
}

/// Why a message's signature proves nothing.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SnsError {
    #[error("the SNS message lacks a field its signature covers")]
    Incomplete,
    #[error("SignatureVersion {0:?} is not accepted (1 or 2)")]
    Version(String),
    #[error("the signing certificate is not at a trusted SNS address")]
    CertificateUrl,
    #[error("the signing certificate cannot be read")]
    Certificate,
    #[error("the SNS signature does not verify")]
    Signature,
}

impl SnsMessage {
    /// The string SNS signs: each covered field's name and value on lines of their own, in
    /// alphabetical order (a notification's `Subject` only when it has one).
    pub fn string_to_sign(&self) -> Result<String, SnsError> {
        let value = |field: &Option<String>| field.clone().ok_or(SnsError::Incomplete);
        let fields: Vec<(&str, String)> = match self.kind.as_str() {
            "Notification" => {
                let mut fields =
                    vec![("Message", value(&self.message)?), ("MessageId", self.message_id.clone())];
                if let Some(subject) = self.subject.as_ref().filter(|s| !s.is_empty()) {
                    fields.push(("Subject", subject.clone()));
                }
                fields.extend([
                    ("Timestamp", value(&self.timestamp)?),
                    ("TopicArn", self.topic_arn.clone()),
                    ("Type", self.kind.clone()),
                ]);
                fields
            }
            "SubscriptionConfirmation" | "UnsubscribeConfirmation" => vec![
                ("Message", value(&self.message)?),
                ("MessageId", self.message_id.clone()),
                ("SubscribeURL", value(&self.subscribe_url)?),
                ("Timestamp", value(&self.timestamp)?),
                ("Token", value(&self.token)?),
                ("TopicArn", self.topic_arn.clone()),
                ("Type", self.kind.clone()),
            ],
            _ => return Err(SnsError::Incomplete),
        };
        Ok(fields.into_iter().map(|(name, value)| format!("{name}\n{value}\n")).collect())
    }

    /// The certificate URL, if it is one of `trusted` (see [`url_trusted`]).
    pub fn certificate_url(&self, trusted: &[String]) -> Result<&str, SnsError> {
        let url = self.signing_cert_url.as_deref().ok_or(SnsError::Incomplete)?;
        if trusted.iter().any(|prefix| url_trusted(url, prefix)) {
            Ok(url)
        } else {
            Err(SnsError::CertificateUrl)
        }
    }

    /// Checks the signature with the PEM certificate `certificate`.
    pub fn verify(&self, certificate: &[u8]) -> Result<(), SnsError> {
        let algorithm: &dyn VerificationAlgorithm = match self.signature_version.as_deref() {
            Some("1") => &RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY,
            Some("2") => &RSA_PKCS1_2048_8192_SHA256,
            other => return Err(SnsError::Version(other.unwrap_or_default().chars().take(8).collect())),
        };
        let signature = STANDARD
            .decode(self.signature.as_deref().ok_or(SnsError::Incomplete)?)
            .map_err(|_| SnsError::Signature)?;
        let signed = self.string_to_sign()?;
        let (_, pem) = x509_parser::pem::parse_x509_pem(certificate).map_err(|_| SnsError::Certificate)?;
        let certificate = pem.parse_x509().map_err(|_| SnsError::Certificate)?;
        let key = &certificate.public_key().subject_public_key.data;
        UnparsedPublicKey::new(algorithm, key)
            .verify(signed.as_bytes(), &signature)
            .map_err(|_| SnsError::Signature)
    }
}

/// Whether `url` starts with `prefix`, where a `*` in the prefix stands for one DNS label (letters,
/// digits and `-`): `https://sns.*.amazonaws.com/` trusts every region's SNS and nothing else.
pub fn url_trusted(url: &str, prefix: &str) -> bool {
    let Some((before, after)) = prefix.split_once('*') else { return url.starts_with(prefix) };
    let Some(rest) = url.strip_prefix(before) else { return false };
    let label = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'-').count();
    label > 0 && rest[label..].starts_with(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_aws_certificate_urls_are_trusted_by_default() {
        let trusted =
            vec!["https://sns.*.amazonaws.com/".to_owned(), "https://sns.*.amazonaws.com.cn/".to_owned()];
        let message = |url: &str| SnsMessage {
            kind: "Notification".into(),
            message_id: "m".into(),
            topic_arn: "t".into(),
            message: None,
            subject: None,
            timestamp: None,
            signature_version: None,
            signature: None,
            signing_cert_url: Some(url.into()),
            token: None,
            subscribe_url: None,
        };
        for good in [
            "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-abc.pem",
            "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-abc.pem",
        ] {
            assert!(message(good).certificate_url(&trusted).is_ok(), "{good}");
        }
        for bad in [
            "http://sns.eu-west-1.amazonaws.com/cert.pem",
            "https://sns.eu-west-1.amazonaws.com.evil.example/cert.pem",
            "https://sns.amazonaws.com/cert.pem",
            "https://sns.eu.west.amazonaws.com/cert.pem",
            "https://evil.example/https://sns.eu-west-1.amazonaws.com/",
            "https://sns..amazonaws.com/cert.pem",
        ] {
            assert_eq!(message(bad).certificate_url(&trusted), Err(SnsError::CertificateUrl), "{bad}");
        }
    }
}
