//! How a delivery reached us: the door (a push broker, an AS2 gateway, a queue, or a plain POST)
//! and the transport's own message id and metadata. Kept with the audit row of every attempt; the
//! idempotency key never comes from here but from the EDI envelope, so the same interchange through
//! two doors is one interchange.

use serde_json::{Map, Value};

text_enum! {
    /// The way a delivery came in.
    Door {
        /// A plain POST of the interchange.
        Direct = "direct",
        /// A Standard Webhooks sender (`webhook-id`).
        Webhook = "webhook",
        /// The CloudEvents HTTP binding, binary or structured.
        Cloudevents = "cloudevents",
        /// A Google Pub/Sub push subscription.
        Pubsub = "pubsub",
        /// An AWS SNS HTTP(S) subscription.
        Sns = "sns",
        /// An AS2 gateway forwarding the decrypted payload.
        As2 = "as2",
        /// The RabbitMQ consumer.
        Amqp = "amqp",
        /// The NATS JetStream consumer.
        Nats = "nats",
        /// The Kafka consumer (its id is `topic/partition/offset`).
        Kafka = "kafka",
    }
}

text_enum! {
    /// The `x-amz-sns-message-type` values, spelled as AWS spells them everywhere (header, body, API).
    SnsType {
        Notification = "Notification",
        SubscriptionConfirmation = "SubscriptionConfirmation",
        UnsubscribeConfirmation = "UnsubscribeConfirmation",
    }
}

/// An SNS `SubscriptionConfirmation` or `UnsubscribeConfirmation`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnsControl {
    pub kind: SnsType,
    pub message_id: String,
    pub topic_arn: String,
    pub token: String,
    pub subscribe_url: String,
    pub message: Option<String>,
    pub signature_version: Option<String>,
    pub signature: Option<String>,
    pub signing_cert_url: Option<String>,
    pub timestamp: Option<String>,
}

/// Longest transport id kept, in bytes.
const MAX_ID_BYTES: usize = 256;
/// Longest metadata document kept, in bytes; beyond it the metadata says it was cut.
const MAX_META_BYTES: usize = 2048;

/// The metadata key of an AS2 receipt's mode.
const RECEIPT_MODE: &str = "mdn_mode";

/// The transport facts of one delivery.
#[derive(Clone, Debug, PartialEq)]
pub struct Transport {
    pub door: Door,
    /// The transport's message id, when it has one.
    pub id: Option<String>,
    /// Door-specific metadata (never a credential).
    pub meta: Map<String, Value>,
}

impl Default for Transport {
    fn default() -> Transport {
        Transport::new(Door::Direct, None)
    }
}

impl Transport {
    pub fn new(door: Door, id: Option<&str>) -> Transport {
        // A NUL (which the doors refuse, and no text column takes) is kept visible, never stored.
        let id = id.map(|id| super::truncated(id, MAX_ID_BYTES).replace('\0', "\u{FFFD}"));
        Transport { door, id, meta: Map::new() }
    }

    /// Adds one metadata value when present.
    pub fn with(mut self, name: &str, value: Option<impl Into<Value>>) -> Transport {
        if let Some(value) = value {
            self.meta.insert(name.to_owned(), value.into());
        }
        self
    }

    /// An AS2 delivery's `AS2-From` and `AS2-To`; `None` for any other door.
    pub fn as2_names(&self) -> Option<(&str, Option<&str>)> {
        if self.door != Door::As2 {
            return None;
        }
        let name = |key: &str| self.meta.get(key).and_then(Value::as_str);
        Some((name("as2_from")?, name("as2_to")))
    }

    /// Whether the sender asked for an AS2 receipt (MDN), whose disposition is then audited.
    pub fn asks_receipt(&self) -> bool {
        self.door == Door::As2 && self.meta.contains_key(RECEIPT_MODE)
    }

    /// Notes that the sender asked for an AS2 receipt, `sync` or `async`.
    pub fn asking_receipt(self, mode: &'static str) -> Transport {
        self.with(RECEIPT_MODE, Some(mode))
    }

    /// The metadata as stored: JSON of at most [`MAX_META_BYTES`], or none when there is none.
    pub fn meta_json(&self) -> Option<String> {
        if self.meta.is_empty() {
            return None;
        }
        let json = Value::Object(self.meta.clone()).to_string();
        if json.len() <= MAX_META_BYTES {
            return Some(json);
        }
        let kept: Map<String, Value> = self
            .meta
            .iter()
            .map(|(name, value)| {
                let text = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
                (name.clone(), Value::String(super::truncated(&text, 128)))
            })
            .chain([("truncated".to_owned(), Value::Bool(true))])
            .collect();
        Some(Value::Object(kept).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_bounded() {
        let small =
            Transport::new(Door::Pubsub, Some("42")).with("subscription", Some("projects/p/subscriptions/s"));
        assert_eq!(small.meta_json().unwrap(), r#"{"subscription":"projects/p/subscriptions/s"}"#);
        let big =
            Transport::new(Door::Sns, Some(&"m".repeat(1000))).with("Signature", Some("s".repeat(5000)));
        assert_eq!(big.id.as_deref().map(str::len), Some(MAX_ID_BYTES));
        let json = big.meta_json().unwrap();
        assert!(json.len() < MAX_META_BYTES && json.contains("\"truncated\":true"), "{json}");
        assert_eq!(Transport::default().meta_json(), None);
        assert_eq!(Transport::new(Door::Amqp, Some("poison\0")).id.as_deref(), Some("poison\u{FFFD}"));
    }
}
