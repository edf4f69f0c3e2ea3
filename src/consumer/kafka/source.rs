//! Where the Kafka consumer reads, parsed once from `--from`:
//! `kafka://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…]/TOPIC[,TOPIC…]?group=GROUP` (`kafkas://` over
//! TLS), with `sasl=plain|scram-sha-256|scram-sha-512`, `ca=PATH` and `session_timeout_ms=N` as
//! further query parameters; then turned into librdkafka's settings. No error quotes the user or
//! the password: `--from` is a secret as a whole.

use std::path::PathBuf;
use std::time::Duration;

use percent_encoding::percent_decode_str;
use rdkafka::ClientConfig;

text_enum! {
    /// The SASL mechanism, spelled as librdkafka's `sasl.mechanisms` takes it.
    Mechanism {
        /// User and password as they are: only over TLS (Azure Event Hubs, Confluent Cloud).
        Plain = "PLAIN",
        ScramSha256 = "SCRAM-SHA-256",
        /// Amazon MSK's.
        ScramSha512 = "SCRAM-SHA-512",
    }
}

/// SASL credentials.
#[derive(Clone)]
pub struct Sasl {
    pub mechanism: Mechanism,
    pub username: String,
    password: String,
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl").field("mechanism", &self.mechanism).field("username", &"***").finish()
    }
}

/// The brokers, topics and group of one consumer, and how it authenticates.
#[derive(Clone, Debug)]
pub struct KafkaSource {
    pub brokers: Vec<String>,
    pub topics: Vec<String>,
    pub group: String,
    pub tls: bool,
    pub sasl: Option<Sasl>,
    /// The CA certificates (PEM) that sign the brokers' certificates, when not the system's.
    pub ca: Option<PathBuf>,
    /// How long the group waits for a silent member before giving its partitions to another.
    pub session_timeout: Option<Duration>,
}

/// The longest topic name Kafka takes.
const MAX_TOPIC: usize = 249;

impl std::str::FromStr for KafkaSource {
    type Err = String;

    fn from_str(from: &str) -> Result<KafkaSource, String> {
        let (tls, rest) = if let Some(rest) = from.strip_prefix("kafka://") {
            (false, rest)
        } else if let Some(rest) = from.strip_prefix("kafkas://") {
            (true, rest)
        } else {
            return Err("a Kafka source starts with kafka:// (or kafkas:// for TLS)".into());
        };
        let (authority, rest) = rest
            .split_once('/')
            .ok_or("the Kafka URL names no topic: kafka://HOST:PORT/TOPIC?group=GROUP")?;
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo), hosts),
            None => (None, authority),
        };
        let brokers = hosts.split(',').map(broker).collect::<Result<Vec<_>, _>>()?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let topics = path.split(',').map(topic).collect::<Result<Vec<_>, _>>()?;
        let (mut group, mut mechanism, mut ca, mut session_timeout) = (None, None, None, None);
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            match &*name {
                "group" => group = Some(value.into_owned()).filter(|group| !group.is_empty()),
                "sasl" => {
                    let upper = value.to_ascii_uppercase();
                    mechanism = Some(Mechanism::parse(&upper).ok_or_else(|| {
                        format!("sasl={value:?}: use plain, scram-sha-256 or scram-sha-512")
                    })?);
                }
                "ca" => ca = Some(PathBuf::from(&*value)),
                "session_timeout_ms" => {
                    let ms = value.parse::<u64>().ok().filter(|ms| (1_000..=3_600_000).contains(ms));
                    let ms = ms.ok_or_else(|| {
                        format!("session_timeout_ms={value:?}: milliseconds, 1000 to 3600000")
                    })?;
                    session_timeout = Some(Duration::from_millis(ms));
                }
                other => {
                    return Err(format!(
                        "unknown Kafka URL parameter {other:?} (group, sasl, ca, session_timeout_ms)"
                    ));
                }
            }
        }
        let group = group.ok_or("the Kafka URL names no consumer group: add ?group=GROUP")?;
        let sasl = match userinfo {
            Some(userinfo) => Some(credentials(userinfo, mechanism.unwrap_or(Mechanism::Plain))?),
            None if mechanism.is_some() => {
                return Err("sasl= needs a user and password in the URL (USER:PASSWORD@HOST)".into());
            }
            None => None,
        };
        if let Some(Sasl { mechanism: Mechanism::Plain, .. }) = &sasl
            && !tls
        {
            return Err(
                "SASL PLAIN would send the password in clear: use kafkas:// (TLS), or a SCRAM mechanism"
                    .into(),
            );
        }
        Ok(KafkaSource { brokers, topics, group, tls, sasl, ca, session_timeout })
    }
}

/// `HOST:PORT`, or `[IPV6]:PORT`.
fn broker(text: &str) -> Result<String, String> {
    let (host, port) = text.rsplit_once(':').ok_or_else(|| format!("broker {text:?} has no :PORT"))?;
    let valid_port = port.parse::<u16>().is_ok_and(|port| port > 0);
    if host.is_empty() || !valid_port || host.contains(['/', '?', '#', '@', ' ']) {
        return Err(format!("broker {text:?} is not HOST:PORT"));
    }
    Ok(text.to_owned())
}

/// A topic name as Kafka allows it: 1 to 249 of `[A-Za-z0-9._-]`.
fn topic(text: &str) -> Result<String, String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if text.is_empty() || text.len() > MAX_TOPIC || !text.chars().all(allowed) || text == "." || text == ".."
    {
        return Err(format!("{text:?} is not a Kafka topic name (1 to 249 of A-Z a-z 0-9 . _ -)"));
    }
    Ok(text.to_owned())
}

/// `USER:PASSWORD`, each percent-encoded (Event Hubs' user is `$ConnectionString`).
fn credentials(userinfo: &str, mechanism: Mechanism) -> Result<Sasl, String> {
    let decoded = |part: &str| percent_decode_str(part).decode_utf8().map(|text| text.into_owned());
    let (user, password) = userinfo.split_once(':').ok_or("the Kafka URL's credentials are USER:PASSWORD")?;
    match (decoded(user), decoded(password)) {
        (Ok(username), Ok(password)) if !username.is_empty() => Ok(Sasl { mechanism, username, password }),
        _ => {
            Err("the Kafka URL's user and password must be percent-encoded UTF-8, the user not empty".into())
        }
    }
}

impl KafkaSource {
    /// The settings every client of this source shares (consumer and dead-letter producer).
    pub fn client_config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        let protocol = match (self.tls, self.sasl.is_some()) {
            (false, false) => "plaintext",
            (true, false) => "ssl",
            (false, true) => "sasl_plaintext",
            (true, true) => "sasl_ssl",
        };
        config.set("bootstrap.servers", self.brokers.join(",")).set("security.protocol", protocol);
        config.set("client.id", "edi-inbox");
        if let Some(sasl) = &self.sasl {
            config.set("sasl.mechanisms", sasl.mechanism.as_str());
            config.set("sasl.username", &sasl.username).set("sasl.password", &sasl.password);
        }
        if self.tls {
            // The system's CA bundle unless told otherwise (OpenSSL is vendored: its own default
            // directory is not the system's).
            let ca = self.ca.as_ref().map_or_else(|| "probe".to_owned(), |ca| ca.display().to_string());
            config.set("ssl.ca.location", ca);
        }
        config
    }

    /// The dead-letter topic of `topic`.
    pub fn dead_letters(topic: &str) -> String {
        format!("{topic}.dead")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(from: &str) -> Result<KafkaSource, String> {
        from.parse()
    }

    #[test]
    fn several_brokers_and_topics_and_scram_credentials_become_librdkafka_settings() {
        let source =
            parsed("kafkas://app%24:p%40ss%3Aw@b1.example:9093,[::1]:9094/edi.in,edi-2?group=inbox&sasl=scram-sha-512&session_timeout_ms=6000")
                .unwrap();
        assert_eq!(source.brokers, ["b1.example:9093", "[::1]:9094"]);
        assert_eq!(source.topics, ["edi.in", "edi-2"]);
        assert_eq!(source.group, "inbox");
        assert_eq!(source.session_timeout, Some(Duration::from_secs(6)));
        let config = source.client_config();
        assert_eq!(config.get("bootstrap.servers"), Some("b1.example:9093,[::1]:9094"));
        assert_eq!(config.get("security.protocol"), Some("sasl_ssl"));
        assert_eq!(config.get("sasl.mechanisms"), Some("SCRAM-SHA-512"));
        assert_eq!(config.get("sasl.username"), Some("app$"));
        assert_eq!(config.get("sasl.password"), Some("p@ss:w"));
        assert_eq!(config.get("ssl.ca.location"), Some("probe"));
        assert!(!format!("{source:?}").contains("p@ss"), "Debug never shows the password");
        let plain = parsed("kafka://127.0.0.1:9092/t?group=g").unwrap().client_config();
        assert_eq!(plain.get("security.protocol"), Some("plaintext"));
        assert_eq!(plain.get("sasl.username"), None);
    }

    #[test]
    fn what_cannot_be_a_source_is_refused_without_quoting_credentials() {
        for (from, says) in [
            ("amqp://h:1/t?group=g", "kafka://"),
            ("kafka://h:9092?group=g", "names no topic"),
            ("kafka://h:9092/t", "no consumer group"),
            ("kafka://h:9092/t?group=", "no consumer group"),
            ("kafka://h/t?group=g", "no :PORT"),
            ("kafka://h:0/t?group=g", "not HOST:PORT"),
            ("kafka://h:9092/bad topic?group=g", "not a Kafka topic"),
            ("kafka://h:9092/t,?group=g", "not a Kafka topic"),
            ("kafka://h:9092/t?group=g&acks=all", "unknown Kafka URL parameter"),
            ("kafka://h:9092/t?group=g&sasl=gssapi", "sasl="),
            ("kafka://h:9092/t?group=g&sasl=plain", "needs a user"),
            ("kafka://user:secret@h:9092/t?group=g", "in clear"),
            ("kafka://secret@h:9092/t?group=g&sasl=scram-sha-256", "USER:PASSWORD"),
            ("kafkas://:secret@h:9092/t?group=g", "not empty"),
            ("kafka://h:9092/t?group=g&session_timeout_ms=5", "1000 to 3600000"),
        ] {
            let error = parsed(from).unwrap_err();
            assert!(error.contains(says), "{from}: {error}");
            assert!(!error.contains("secret"), "{from}: {error}");
        }
        let scram = parsed("kafka://u:secret@h:9092/t?group=g&sasl=scram-sha-256").unwrap();
        assert_eq!(scram.client_config().get("security.protocol"), Some("sasl_plaintext"));
    }
}
