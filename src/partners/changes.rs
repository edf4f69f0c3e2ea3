//! Changing a registered partner: [`PartnerChanges`] names the settings to change (any of those
//! `partner add` takes but the id), and applied to the partner's current settings gives the
//! [`NewPartner`] that is checked and stored whole, exactly as a registration is.

use serde::Deserialize;
use utoipa::ToSchema;

use super::{
    As2Security, ConflictPolicy, DuplicateNumberPolicy, InvoiceNumbers, MismatchPolicy, NewPartner, Partner,
    ResponseForm, Validation,
};

/// The settings to change, each left as it is when absent. A list given replaces the list (an
/// empty one clears it; on the command line, the option with no value).
#[derive(Clone, Debug, Default, Deserialize, ToSchema, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct PartnerChanges {
    #[arg(long)]
    #[schema(example = "ACME Supply Company")]
    pub name: Option<String>,
    /// Its EDI identities, `x12:QUALIFIER:ID` or `edifact:QUALIFIER:ID` (at least one).
    #[arg(long = "sender", num_args = 1)]
    pub senders: Option<Vec<String>>,
    /// Our identities it may send to (none: any).
    #[arg(long = "receiver", num_args = 0..=1)]
    pub receivers: Option<Vec<String>>,
    /// Largest body it may post, in bytes.
    #[arg(long)]
    #[serde(deserialize_with = "whole")]
    pub max_body_bytes: Option<i64>,
    /// Requests per minute it may make.
    #[arg(long)]
    #[serde(deserialize_with = "whole")]
    pub requests_per_minute: Option<i32>,
    #[arg(long, value_enum)]
    pub validation: Option<Validation>,
    #[arg(long, value_enum)]
    pub conflict_policy: Option<ConflictPolicy>,
    #[arg(long, value_enum)]
    pub on_mismatch: Option<MismatchPolicy>,
    #[arg(long, value_enum)]
    pub on_duplicate_number: Option<DuplicateNumberPolicy>,
    /// Refused once the partner has booked invoices: they keep the keys they were booked under, so
    /// a resend of one would no longer be recognised.
    #[arg(long, value_enum)]
    pub invoice_numbers: Option<InvoiceNumbers>,
    #[arg(long, value_enum)]
    pub response: Option<ResponseForm>,
    #[arg(long = "as2-id", num_args = 0..=1)]
    pub as2_ids: Option<Vec<String>>,
    #[arg(long, value_enum)]
    pub as2_security: Option<As2Security>,
    #[arg(long = "as2-certificate", num_args = 0..=1, allow_hyphen_values = true)]
    pub as2_certificates: Option<Vec<String>>,
    #[arg(long = "as2-mdn-url", num_args = 0..=1)]
    pub as2_mdn_urls: Option<Vec<String>>,
    #[arg(long = "pubsub-account", num_args = 0..=1)]
    pub pubsub_accounts: Option<Vec<String>>,
    #[arg(long = "sns-topic", num_args = 0..=1)]
    pub sns_topics: Option<Vec<String>>,
    #[arg(long = "bypass-document", num_args = 0..=1)]
    pub bypass_documents: Option<Vec<String>>,
}

/// A whole number as JSON may write it (`113471`, or `113471.0`: both integers to JSON Schema);
/// none when null. Refused when it has a fraction or does not fit `T`.
pub(super) fn whole<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    /// Beyond this a float no longer holds every whole number exactly.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else { return Ok(None) };
    let float = || number.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= EXACT).map(|f| f as i64);
    let whole = number.as_i64().or_else(float).and_then(|n| T::try_from(n).ok());
    whole
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("{number} is not a whole number in range")))
}

/// `target = change` for every change given.
macro_rules! apply {
    ($changes:ident => $target:ident: $($field:ident),+) => {
        $(if let Some(value) = $changes.$field { $target.$field = value; })+
    };
}

impl PartnerChanges {
    /// `partner`'s settings with these changes: what is checked and stored.
    pub fn applied_to(self, partner: &Partner) -> NewPartner {
        let mut settings = NewPartner::from(partner);
        let changes = self;
        apply!(changes => settings: name, senders, validation, conflict_policy, on_mismatch,
            on_duplicate_number, invoice_numbers, response, as2_security, receivers, as2_ids,
            as2_certificates, as2_mdn_urls, pubsub_accounts, sns_topics, bypass_documents);
        settings.max_body_bytes = changes.max_body_bytes.or(settings.max_body_bytes);
        settings.requests_per_minute = changes.requests_per_minute.or(settings.requests_per_minute);
        settings
    }
}

impl From<&Partner> for NewPartner {
    fn from(partner: &Partner) -> NewPartner {
        NewPartner {
            id: partner.id.clone(),
            name: partner.name.clone(),
            senders: partner.senders.clone(),
            receivers: partner.receivers.clone(),
            max_body_bytes: partner.max_body_bytes,
            requests_per_minute: partner.requests_per_minute,
            validation: partner.validation,
            conflict_policy: partner.conflict_policy,
            on_mismatch: partner.on_mismatch,
            on_duplicate_number: partner.on_duplicate_number,
            invoice_numbers: partner.invoice_numbers,
            response: partner.response,
            as2_ids: partner.as2_ids.clone(),
            as2_security: partner.as2_security,
            as2_certificates: partner.as2_certificates.clone(),
            as2_mdn_urls: partner.as2_mdn_urls.clone(),
            pubsub_accounts: partner.pubsub_accounts.clone(),
            sns_topics: partner.sns_topics.clone(),
            bypass_documents: partner.bypass_documents.clone(),
        }
    }
}

/// What changed between two views of a partner, as `field=value` pairs (JSON values), before and
/// after: the operator action's audit row. Secrets are never in a partner, so none is in these.
pub fn changed_settings(before: &Partner, after: &Partner) -> (String, String) {
    let (serde_json::Value::Object(old), serde_json::Value::Object(new)) =
        (serde_json::json!(before), serde_json::json!(after))
    else {
        return (String::new(), String::new());
    };
    let (mut was, mut now) = (Vec::new(), Vec::new());
    for (field, value) in &new {
        let previous = old.get(field).unwrap_or(&serde_json::Value::Null);
        if previous != value {
            was.push(format!("{field}={previous}"));
            now.push(format!("{field}={value}"));
        }
    }
    (was.join(" "), now.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partners::PartnerStatus;

    fn partner() -> Partner {
        Partner {
            id: "acme".parse().unwrap(),
            name: "ACME".into(),
            status: PartnerStatus::Active,
            senders: vec!["x12:ZZ:ACME".into()],
            receivers: vec!["x12:ZZ:US".into()],
            max_body_bytes: Some(1000),
            requests_per_minute: None,
            validation: Validation::Strict,
            conflict_policy: ConflictPolicy::Reject,
            on_mismatch: MismatchPolicy::Warn,
            on_duplicate_number: DuplicateNumberPolicy::Quarantine,
            invoice_numbers: InvoiceNumbers::Unique,
            response: ResponseForm::Full,
            as2_ids: vec!["ACME-AS2".into()],
            as2_security: As2Security::Optional,
            as2_certificates: Vec::new(),
            as2_mdn_urls: Vec::new(),
            pubsub_accounts: Vec::new(),
            sns_topics: Vec::new(),
            bypass_documents: Vec::new(),
            created_at: chrono::Utc::now(),
            credentials: Vec::new(),
        }
    }

    #[test]
    fn only_the_settings_given_change_and_a_list_given_replaces_the_list() {
        let changes: PartnerChanges = serde_json::from_str(
            r#"{"on_duplicate_number":"reject","receivers":[],"requests_per_minute":60}"#,
        )
        .unwrap();
        let settings = changes.applied_to(&partner());
        assert_eq!(settings.on_duplicate_number, DuplicateNumberPolicy::Reject);
        assert!(settings.receivers.is_empty(), "an empty list clears it");
        assert_eq!(settings.requests_per_minute, Some(60));
        assert_eq!(settings.max_body_bytes, Some(1000), "absent: unchanged");
        assert_eq!(settings.senders, ["x12:ZZ:ACME"]);
        assert_eq!(settings.as2_ids, ["ACME-AS2"]);
        assert_eq!(settings.validation, Validation::Strict);
    }

    #[test]
    fn a_whole_number_may_be_written_as_a_float_but_not_a_fraction() {
        let parsed = |json: &str| serde_json::from_str::<PartnerChanges>(json).map(|c| c.requests_per_minute);
        assert_eq!(parsed(r#"{"requests_per_minute": 60}"#).unwrap(), Some(60));
        assert_eq!(parsed(r#"{"requests_per_minute": 60.0}"#).unwrap(), Some(60));
        assert_eq!(parsed(r#"{"requests_per_minute": null}"#).unwrap(), None);
        for wrong in [r#"{"requests_per_minute": 60.5}"#, r#"{"requests_per_minute": 3000000000}"#] {
            assert!(parsed(wrong).unwrap_err().to_string().contains("not a whole number"), "{wrong}");
        }
    }

    #[test]
    fn an_unknown_setting_is_refused_not_ignored() {
        let typo = serde_json::from_str::<PartnerChanges>(r#"{"on_duplicate_numbers":"book"}"#);
        assert!(typo.unwrap_err().to_string().contains("unknown field"));
    }

    #[test]
    fn the_audit_names_each_changed_setting_before_and_after() {
        let before = partner();
        let after = Partner { on_mismatch: MismatchPolicy::Reject, receivers: Vec::new(), ..before.clone() };
        assert_eq!(
            changed_settings(&before, &after),
            (
                r#"receivers=["x12:ZZ:US"] on_mismatch="warn""#.into(),
                r#"receivers=[] on_mismatch="reject""#.into()
            )
        );
        assert_eq!(changed_settings(&before, &before), (String::new(), String::new()));
    }
}
