//! Typed configuration: every setting has a documented default, an environment variable and a flag.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, Parser};

use crate::accounting::retry::RetryPolicy;
use crate::ingest::IngestOptions;
use crate::jobs::purge::Retention;
use crate::jobs::relay::{RelayOptions, shown};
use crate::partners::PartnerId;
use crate::store::StoreOptions;

mod as2_key;
mod commands;
pub use commands::{Command, OperatorCommand, OutboxCommand, PartnerCommand, QuarantineCommand, SnsCommand};

/// Exactly-once HTTP receiver for X12 810 and UN/EDIFACT INVOIC interchanges.
#[derive(Debug, Parser)]
#[command(name = "edi-inbox", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub database: DatabaseConfig,
    #[command(flatten)]
    pub server: ServerConfig,
    #[command(flatten)]
    pub accounting: AccountingConfig,
}

#[derive(Debug, Clone, Args)]
pub struct DatabaseConfig {
    /// `sqlite://FILE` (created when missing) or `postgres://USER@HOST/DB`.
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://edi-inbox.db", global = true)]
    pub database_url: String,
    /// Maximum connections in the pool.
    #[arg(long, env = "EDI_INBOX_DB_MAX_CONNECTIONS", default_value_t = 16, global = true)]
    pub db_max_connections: u32,
    /// Seconds a request waits for a connection (or, on SQLite, the write lock) before answering 503.
    #[arg(long, env = "EDI_INBOX_DB_TIMEOUT", default_value_t = 5, global = true)]
    pub db_timeout: u64,
    /// Days a stored payload and the audit trail are kept before `purge` (and the hourly purge of
    /// `serve`) drop them (1 to 36,500).
    #[arg(long, env = "EDI_INBOX_RETENTION_DAYS", default_value_t = 90, global = true,
        value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub retention_days: u32,
    /// Days an interchange's key and outcome (with its documents, invoices and acknowledgement) are
    /// kept; after that a resend is processed again. Unset: forever. At least the retention.
    #[arg(long, env = "EDI_INBOX_KEY_RETENTION_DAYS", global = true,
        value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub key_retention_days: Option<u32>,
    /// Rows per purge statement: each batch is a short transaction of its own.
    #[arg(long, env = "EDI_INBOX_PURGE_BATCH", default_value_t = 1000, global = true,
        value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub purge_batch: u32,
    /// Bytes of processed outcomes kept in memory to answer resends without the database (0: off).
    #[arg(long, env = "EDI_INBOX_REPLAY_CACHE_BYTES", default_value_t = 8 * 1024 * 1024, global = true)]
    pub replay_cache_bytes: usize,
    /// Seconds the in-memory partner directory is used before it is read again. Changes made through
    /// this instance apply at once; other replicas see them within this time.
    #[arg(long, env = "EDI_INBOX_PARTNER_CACHE_TTL", default_value_t = 5, global = true)]
    pub partner_cache_ttl: u64,
    /// PostgreSQL: refuse to start unless the primary's commits wait for a synchronous standby
    /// (`synchronous_standby_names` set, `synchronous_commit` on, remote_write or remote_apply), and
    /// answer `/readyz` 503 while no synchronous standby streams.
    #[arg(long, env = "EDI_INBOX_REQUIRE_SYNCHRONOUS_STANDBY", global = true)]
    pub require_synchronous_standby: bool,
    /// PostgreSQL with several hosts: a file in which the cluster and timeline last written to are
    /// kept across restarts, so that a restart that finds only an old primary (an older timeline of
    /// the same cluster) refuses to write to it. Unset: remembered only while the process runs.
    #[arg(long, env = "EDI_INBOX_TIMELINE_FILE", global = true)]
    pub timeline_file: Option<std::path::PathBuf>,
}

impl DatabaseConfig {
    pub fn store_options(&self) -> StoreOptions {
        StoreOptions {
            max_connections: self.db_max_connections,
            acquire_timeout: Duration::from_secs(self.db_timeout),
            replay_cache_bytes: self.replay_cache_bytes,
            partner_cache_ttl: Duration::from_secs(self.partner_cache_ttl),
            require_synchronous_standby: self.require_synchronous_standby,
            timeline_file: self.timeline_file.clone(),
        }
    }

    /// What the purge drops, checked: keys must outlive payloads.
    pub fn retention(&self) -> Result<Retention, String> {
        if let Some(keys) = self.key_retention_days.filter(|keys| *keys < self.retention_days) {
            return Err(format!(
                "the key retention ({keys} days) must be at least the retention ({} days)",
                self.retention_days
            ));
        }
        Ok(Retention {
            payloads: chrono::Duration::days(i64::from(self.retention_days)),
            keys: self.key_retention_days.map(|days| chrono::Duration::days(i64::from(days))),
            batch: self.purge_batch,
        })
    }
}

/// Fewest characters of an operator token served on a non-loopback address.
pub const MIN_REMOTE_TOKEN: usize = 32;

#[derive(Debug, Clone, Args)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port (the chosen address is logged).
    #[arg(long, env = "EDI_INBOX_BIND", default_value = "127.0.0.1:8080", global = true)]
    pub bind: SocketAddr,
    /// Largest accepted request body in bytes; larger ones get 413.
    #[arg(long, env = "EDI_INBOX_BODY_LIMIT", default_value_t = 10 * 1024 * 1024, global = true)]
    pub body_limit: usize,
    /// Seconds a request may take before it is answered 503 (the sender retries; replays are safe).
    #[arg(long, env = "EDI_INBOX_REQUEST_TIMEOUT", default_value_t = 30, global = true)]
    pub request_timeout: u64,
    /// Who may post: `partners` (API key or Standard Webhooks signature of a registered partner),
    /// `open` (anybody; local development only), or `auto`: open on a loopback address, partners otherwise.
    #[arg(long, env = "EDI_INBOX_AUTH", default_value = "auto", global = true)]
    pub auth: AuthMode,
    /// Allow `--auth open` on a non-loopback address (never in production).
    #[arg(long, env = "EDI_INBOX_ALLOW_OPEN_ON_NETWORK", global = true)]
    pub allow_open_on_network: bool,
    /// Bearer token of the admin API (`/v1/admin/…`) and, with partner authentication, of the read
    /// endpoints; the admin API is disabled without one.
    #[arg(long, env = "EDI_INBOX_ADMIN_TOKEN", global = true, hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Token that signs in to the operator console read only: every page, no button. The admin
    /// token signs in as an operator.
    #[arg(long, env = "EDI_INBOX_CONSOLE_VIEWER_TOKEN", global = true, hide_env_values = true)]
    pub console_viewer_token: Option<String>,
    /// When the console's session cookie is `Secure` (sent over HTTPS only): `auto` unless the
    /// console is reached on a loopback name, `always`, or `never` (plain HTTP on a network you
    /// trust, e.g. behind the shipped compose file's proxy on :8080).
    #[arg(long, env = "EDI_INBOX_CONSOLE_COOKIE_SECURE", value_enum, default_value = "auto", global = true)]
    pub console_cookie_secure: CookieSecure,
    /// Origins allowed to push CloudEvents webhooks here (the validation handshake's
    /// `WebHook-Request-Origin`), comma-separated; `*` allows any. None by default.
    #[arg(long, env = "EDI_INBOX_WEBHOOK_ALLOWED_ORIGINS", value_delimiter = ',', global = true)]
    pub webhook_allowed_origins: Vec<String>,
    /// The AS2 names this service receives as, comma-separated: when set, an AS2 delivery's
    /// `AS2-To` must be one of them (403 otherwise). None by default: `AS2-To` is only recorded.
    #[arg(long, env = "EDI_INBOX_AS2_RECEIVER_IDS", value_delimiter = ',', global = true)]
    pub as2_receiver_ids: Vec<String>,
    /// This service's AS2 keys, comma-separated PEM files each holding a private key and its
    /// certificate, newest first: a message encrypted to any of their certificates is decrypted
    /// (rotation), and the first signs MDNs. None by default: `serve` then uses the generated key
    /// (`--as2-generated-key`).
    #[arg(long, env = "EDI_INBOX_AS2_KEYS", value_delimiter = ',', global = true)]
    pub as2_keys: Vec<std::path::PathBuf>,
    /// `serve` without `--as2-keys`: the PEM file of the AS2 key generated at the first start (RSA
    /// 3072, self-signed, mode 0600) and used from then on. Default: `as2-key.pem` beside a SQLite
    /// database; with PostgreSQL none unless set (every replica needs the same key).
    #[arg(long, env = "EDI_INBOX_AS2_GENERATED_KEY", global = true)]
    pub as2_generated_key: Option<std::path::PathBuf>,
    /// The audience of Pub/Sub push tokens (the push subscription's `audience`, by default its push
    /// endpoint URL): when set, a delivery with a Google-signed OIDC token for it, issued to a
    /// partner's Pub/Sub service account, is that partner's. Unset: tokens are not accepted.
    #[arg(long, env = "EDI_INBOX_PUBSUB_AUDIENCE", global = true)]
    pub pubsub_audience: Option<String>,
    /// Where Google's token-signing keys (a JWKS) are read from: a URL, or a file.
    #[arg(
        long,
        env = "EDI_INBOX_PUBSUB_JWKS",
        default_value = "https://www.googleapis.com/oauth2/v3/certs",
        global = true
    )]
    pub pubsub_jwks: String,
    /// Where SNS signing certificates are trusted from, comma-separated URL prefixes in which `*`
    /// stands for one DNS label: a message signed with a certificate elsewhere proves nothing.
    #[arg(
        long,
        env = "EDI_INBOX_SNS_CERT_URLS",
        value_delimiter = ',',
        global = true,
        default_value = "https://sns.*.amazonaws.com/,https://sns.*.amazonaws.com.cn/"
    )]
    pub sns_cert_urls: Vec<String>,
    /// Requests per minute a partner may make, unless its own limit says otherwise.
    #[arg(long, env = "EDI_INBOX_RATE_LIMIT", default_value_t = 600, global = true)]
    pub rate_limit: u32,
    /// Deliveries processed at once by this instance; more get 429 with Retry-After.
    #[arg(long, env = "EDI_INBOX_MAX_IN_FLIGHT", default_value_t = 256, global = true)]
    pub max_in_flight: usize,
    /// Signed requests whose signature is not verified yet that this instance reads at once; more
    /// get 429. Kept small: these requests have proven nothing.
    #[arg(long, env = "EDI_INBOX_MAX_UNPROVEN_IN_FLIGHT", default_value_t = 16, global = true)]
    pub max_unproven_in_flight: usize,
    /// Refused requests per minute a remote address may cause before its signed requests are
    /// answered 429 without being read.
    #[arg(long, env = "EDI_INBOX_REFUSALS_PER_MINUTE", default_value_t = 60, global = true)]
    pub refusals_per_minute: u32,
    /// Bytes of memory the deliveries in flight may hold together: four times a body while it is
    /// read and parsed (reserved before reading for a partner proven by its API key, which waits
    /// for room; charged as the bytes arrive for any other request, which gets 429 when there is
    /// none, and which may hold a quarter of the budget together until it proves a partner), then
    /// what recording its interchange costs (beyond: 429 while others hold it, 413 when more than
    /// the whole budget).
    #[arg(long, env = "EDI_INBOX_BUFFER_BYTES", default_value_t = 512 * 1024 * 1024, global = true)]
    pub buffer_bytes: usize,
    /// Seconds a connection may stay silent (no byte either way) before it is closed; must exceed
    /// the request timeout so that a request in progress is never cut.
    #[arg(long, env = "EDI_INBOX_IDLE_TIMEOUT", default_value_t = 60, global = true)]
    pub idle_timeout: u64,
    /// Connections open at once; further ones are closed as soon as they are accepted.
    #[arg(long, env = "EDI_INBOX_MAX_CONNECTIONS", default_value_t = 4096, global = true)]
    pub max_connections: usize,
    /// Connections one remote address may hold open at once (0: no cap); further ones are closed
    /// as soon as they are accepted. Behind a reverse proxy every connection comes from the proxy.
    #[arg(long, env = "EDI_INBOX_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 512, global = true)]
    pub max_connections_per_address: usize,
    /// Requests that have proven nothing yet (a signature not verified) one remote address may
    /// have in flight at once (0: no cap beyond the instance's); more get 429.
    #[arg(long, env = "EDI_INBOX_MAX_UNPROVEN_PER_ADDRESS", default_value_t = 4, global = true)]
    pub max_unproven_per_address: usize,
    /// Slowest a request body may arrive, in bytes per second on average once its first five
    /// seconds are past (0: no minimum); a slower one is answered 408 and counted as a refusal.
    #[arg(long, env = "EDI_INBOX_MIN_BODY_RATE", default_value_t = 16 * 1024, global = true)]
    pub min_body_rate: u64,
    /// Segments an interchange may have; more make it invalid (422), and reading stops there.
    #[arg(long, env = "EDI_INBOX_MAX_SEGMENTS", default_value_t = 1_000_000, global = true)]
    pub max_segments: usize,
    /// Longest element in bytes; a longer one makes the interchange invalid (422).
    #[arg(long, env = "EDI_INBOX_MAX_ELEMENT_LENGTH", default_value_t = 65_536, global = true)]
    pub max_element_length: usize,
    /// Seconds a client may take to send its first byte and its request headers (slow-loris protection).
    #[arg(long, env = "EDI_INBOX_HEADER_TIMEOUT", default_value_t = 10, global = true)]
    pub header_timeout: u64,
    /// Log format: `pretty` for people, `json` for log pipelines.
    #[arg(long, env = "EDI_INBOX_LOG_FORMAT", default_value = "pretty", global = true)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    Auto,
    Partners,
    Open,
}

/// When the console's session cookie carries `Secure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CookieSecure {
    /// Unless the console is reached on a loopback name.
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

impl ServerConfig {
    /// Where this server's readiness is asked: its bind address, or loopback when it binds every
    /// interface.
    pub fn readiness_url(&self) -> String {
        let mut address = self.bind;
        if address.ip().is_unspecified() {
            address.set_ip(match address {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        format!("http://{address}/readyz")
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout)
    }

    /// How the delivery use case reads and books interchanges; `book_with_accounting` when an
    /// accounting API is configured, `partner_auth` when senders must be partners.
    pub fn ingest_options(&self, book_with_accounting: bool, partner_auth: bool) -> IngestOptions {
        IngestOptions {
            parse_limits: crate::edi::Limits {
                max_segments: self.max_segments,
                max_element_length: self.max_element_length,
            },
            partner_auth,
            book_with_accounting,
            as2_receiver_ids: self.as2_receiver_ids.iter().map(|id| id.trim().to_owned()).collect(),
            buffer_bytes: self.buffer_bytes,
        }
    }

    /// The operator tokens, refused when shorter than [`MIN_REMOTE_TOKEN`] characters on an address
    /// others can reach (a short token is guessed: the per-address throttle slows a guesser, it
    /// does not stop a botnet).
    pub fn check_operator_tokens(&self) -> Result<(), String> {
        if self.bind.ip().is_loopback() {
            return Ok(());
        }
        let tokens =
            [("admin token", &self.admin_token), ("console viewer token", &self.console_viewer_token)];
        for (name, token) in tokens {
            let length = token.as_deref().map_or(0, |token| token.chars().count());
            if (1..MIN_REMOTE_TOKEN).contains(&length) {
                return Err(format!(
                    "the {name} has {length} characters; on a network address ({}) it needs at least \
                     {MIN_REMOTE_TOKEN} (e.g. `openssl rand -hex 32`)",
                    self.bind
                ));
            }
        }
        Ok(())
    }

    /// This service's AS2 keys and certificates, read from `--as2-keys`.
    pub fn as2_identities(&self) -> Result<Vec<crate::as2::Identity>, String> {
        self.as2_keys
            .iter()
            .filter(|path| !path.as_os_str().is_empty())
            .map(|path| {
                let pem = std::fs::read(path).map_err(|e| format!("AS2 key file {}: {e}", path.display()))?;
                crate::as2::Identity::from_pem(&pem)
                    .map_err(|e| format!("AS2 key file {}: {e}", path.display()))
            })
            .collect()
    }

    /// Whether deliveries must authenticate as a partner; refuses open mode on a network address
    /// unless explicitly allowed.
    pub fn partner_auth(&self) -> Result<bool, String> {
        let loopback = self.bind.ip().is_loopback();
        match self.auth {
            AuthMode::Partners => Ok(true),
            AuthMode::Auto => Ok(!loopback),
            AuthMode::Open if loopback => Ok(false),
            AuthMode::Open if self.allow_open_on_network => {
                tracing::warn!(
                    bind = %self.bind,
                    "OPEN MODE ON A NETWORK ADDRESS: anybody who reaches this port can post as any sender \
                     and claim any partner's control numbers. Never run like this in production."
                );
                Ok(false)
            }
            AuthMode::Open => Err(format!(
                "refusing to serve without authentication on {}: open mode is for loopback addresses; \
                 use --auth partners (or --allow-open-on-network to force it)",
                self.bind
            )),
        }
    }
}

/// Whose messages a consumer books.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConsumeAuth {
    /// Only messages whose envelope names a registered, active partner's sender identity.
    Partners,
    /// Any sender's (the broker is trusted to admit only partners).
    Open,
}

/// What `edi-inbox consume` reads from, and what it accepts.
#[derive(Debug, Clone, Args)]
pub struct ConsumeConfig {
    /// Whose messages are booked: `partners` (the envelope's sender must be a registered partner's)
    /// or `open` (any sender's). Required: the broker's authentication is not this service's, so the
    /// choice is the operator's, never derived from the HTTP bind address.
    #[arg(long, env = "EDI_INBOX_CONSUME_AUTH")]
    pub consume_auth: ConsumeAuth,
    /// Bind the queue to one partner: a message whose sender is not that partner's is dead-lettered.
    #[arg(long, env = "EDI_INBOX_CONSUME_PARTNER")]
    pub consume_partner: Option<PartnerId>,
    /// Largest message in bytes; a larger one is dead-lettered unread.
    #[arg(long, env = "EDI_INBOX_CONSUME_MAX_BYTES", default_value_t = 10 * 1024 * 1024)]
    pub consume_max_bytes: usize,
    /// The broker: `amqp://user:password@host:5672/%2f` (RabbitMQ), `nats://host:4222` (JetStream)
    /// or `kafka://host:9092/topic?group=name` (a Kafka consumer group; `kafkas://` over TLS).
    #[arg(long, env = "EDI_INBOX_CONSUME_FROM", hide_env_values = true)]
    pub from: Option<String>,
    /// The RabbitMQ queue (its dead letters go to `{queue}.dead`), or the JetStream stream (Kafka
    /// reads the URL's topics).
    #[arg(long, env = "EDI_INBOX_CONSUME_QUEUE", default_value = "edi-interchanges")]
    pub queue: String,
    /// The subject the JetStream stream captures and the consumer reads.
    #[arg(long, env = "EDI_INBOX_CONSUME_SUBJECT", default_value = "edi.interchanges")]
    pub subject: String,
    /// The durable JetStream consumer's name, or the RabbitMQ consumer tag.
    #[arg(long, env = "EDI_INBOX_CONSUME_DURABLE", default_value = "edi-inbox")]
    pub durable: String,
    /// Messages taken from the broker and processed at once (unacknowledged, or not yet committed
    /// past, at most).
    #[arg(long, env = "EDI_INBOX_CONSUME_PREFETCH", default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    pub prefetch: u16,
    /// Milliseconds a message waits before redelivery when the database is unavailable (doubling
    /// with each JetStream redelivery).
    #[arg(long, env = "EDI_INBOX_CONSUME_RETRY_BACKOFF_MS", default_value_t = 1000)]
    pub retry_backoff_ms: u64,
    /// Seconds JetStream waits for an acknowledgement before redelivering.
    #[arg(long, env = "EDI_INBOX_CONSUME_ACK_WAIT", default_value_t = 30)]
    pub ack_wait_secs: u64,
}

/// The accounting side effects: the API the relay books invoices with, and the CSV export.
#[derive(Debug, Clone, Args)]
pub struct AccountingConfig {
    /// URL the relay POSTs each recorded invoice to (with an `Idempotency-Key`). When set, every
    /// invoice recorded gets an outbox message in its inbox transaction; unset, none is written.
    #[arg(long, env = "EDI_INBOX_ACCOUNTING_URL", global = true, value_parser = HttpUrl)]
    pub accounting_url: Option<reqwest::Url>,
    /// Bearer token sent to the accounting API.
    #[arg(long, env = "EDI_INBOX_ACCOUNTING_TOKEN", global = true, hide_env_values = true)]
    pub accounting_token: Option<String>,
    /// Seconds one call to the accounting API may take (connecting included).
    #[arg(long, env = "EDI_INBOX_ACCOUNTING_TIMEOUT", default_value_t = 10, global = true,
        value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub accounting_timeout: u64,
    /// Whether `serve` relays outbox messages itself (`false` when `edi-inbox relay` runs apart).
    #[arg(long, env = "EDI_INBOX_RELAY", default_value_t = true, global = true, action = clap::ArgAction::Set)]
    pub relay: bool,
    /// Calls to the accounting API one relay makes at once.
    #[arg(long, env = "EDI_INBOX_RELAY_CONCURRENCY", default_value_t = 16, global = true,
        value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub relay_concurrency: u32,
    /// Attempts per message before it is dead-lettered.
    #[arg(long, env = "EDI_INBOX_RELAY_MAX_ATTEMPTS", default_value_t = 12, global = true,
        value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub relay_max_attempts: u32,
    /// Milliseconds before the first retry; each further retry waits twice as long (with jitter).
    #[arg(long, env = "EDI_INBOX_RELAY_BACKOFF_MS", default_value_t = 2_000, global = true,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub relay_backoff_ms: u64,
    /// Longest wait between two attempts, in milliseconds.
    #[arg(long, env = "EDI_INBOX_RELAY_BACKOFF_MAX_MS", default_value_t = 900_000, global = true,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub relay_backoff_max_ms: u64,
    /// Milliseconds between two looks for due messages written by other replicas or due for a
    /// retry (messages this process records are sent at once).
    #[arg(long, env = "EDI_INBOX_RELAY_POLL_MS", default_value_t = 1_000, global = true,
        value_parser = clap::value_parser!(u64).range(10..))]
    pub relay_poll_ms: u64,
    /// Directory of the CSV export; with it, `serve` also exports every `--export-interval`.
    #[arg(long, env = "EDI_INBOX_EXPORT_DIR", global = true)]
    pub export_dir: Option<PathBuf>,
    /// Seconds between two scheduled exports of `serve`.
    #[arg(long, env = "EDI_INBOX_EXPORT_INTERVAL", default_value_t = 300, global = true,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub export_interval: u64,
    /// Invoices per export file at most.
    #[arg(long, env = "EDI_INBOX_EXPORT_MAX_INVOICES", default_value_t = 10_000, global = true,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub export_max_invoices: u32,
}

impl AccountingConfig {
    /// The relay's options; `None` without an accounting URL.
    pub fn relay_options(&self) -> Option<RelayOptions> {
        Some(RelayOptions {
            url: self.accounting_url.clone()?,
            token: self.accounting_token.clone(),
            timeout: Duration::from_secs(self.accounting_timeout),
            policy: RetryPolicy {
                max_attempts: self.relay_max_attempts,
                first_delay: Duration::from_millis(self.relay_backoff_ms),
                max_delay: Duration::from_millis(self.relay_backoff_max_ms),
            },
            concurrency: usize::try_from(self.relay_concurrency).unwrap_or(1),
            poll: Duration::from_millis(self.relay_poll_ms),
        })
    }
}

/// An `http://` or `https://` URL.
/// Parses `--accounting-url` with an error that quotes the URL without its credentials (clap's own
/// error for a value it could not parse would echo the value whole).
#[derive(Clone)]
struct HttpUrl;

impl clap::builder::TypedValueParser for HttpUrl {
    type Value = reqwest::Url;

    fn parse_ref(
        &self,
        command: &clap::Command,
        _: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<reqwest::Url, clap::Error> {
        let refused = |message: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("--accounting-url: {message}\n"),
            )
            .with_cmd(command)
        };
        http_url(&value.to_string_lossy()).map_err(refused)
    }
}

fn http_url(text: &str) -> Result<reqwest::Url, String> {
    let quoted = without_credentials(text);
    let url = reqwest::Url::parse(text).map_err(|e| format!("{quoted} is not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" if url.has_host() => Ok(url),
        _ => Err(format!("{quoted} is not an http:// or https:// URL")),
    }
}

/// A URL as an error message may quote it: whatever stands between `://` and the last `@` (user
/// and password) as `***`, even in text that does not parse as a URL.
fn without_credentials(text: &str) -> String {
    let shown = match (text.find("://"), text.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}***{}", &text[..scheme + 3], &text[at..]),
        _ => text.to_owned(),
    };
    format!("{:?}", crate::inbox::truncated(&shown, 200))
}

/// One setting as `edi-inbox config` shows it.
#[derive(Debug, serde::Serialize)]
pub struct Setting {
    /// The flag, without its dashes.
    pub name: String,
    pub env: Option<String>,
    /// As given (or defaulted), with secrets masked; `null` when unset.
    pub value: Option<String>,
    pub source: &'static str,
}

/// The effective value and origin of every setting in `matches` (the parse of [`Cli`]). Secrets
/// (settings whose environment values clap hides) show as `***` when set, and a database URL
/// without its password.
pub fn effective(matches: &ArgMatches) -> Vec<Setting> {
    let command = Cli::command();
    command
        .get_arguments()
        .filter(|arg| arg.get_long().is_some() && !matches!(arg.get_id().as_str(), "help" | "version"))
        .map(|arg| {
            let id = arg.get_id().as_str();
            let raw = matches
                .get_raw(id)
                .map(|values| values.map(|v| v.to_string_lossy().into_owned()).collect::<Vec<_>>().join(","));
            let value = match raw {
                Some(_) if arg.is_hide_env_values_set() => Some("***".to_owned()),
                Some(url) if id == "database_url" => Some(crate::store::redacted(&url)),
                Some(url) if id == "accounting_url" => {
                    Some(reqwest::Url::parse(&url).map_or_else(|_| "***".to_owned(), |url| shown(&url)))
                }
                other => other,
            };
            let source = match matches.value_source(id) {
                Some(ValueSource::CommandLine) => "flag",
                Some(ValueSource::EnvVariable) => "env",
                Some(ValueSource::DefaultValue) => "default",
                _ => "unset",
            };
            Setting {
                name: arg.get_long().unwrap_or(id).to_owned(),
                env: arg.get_env().map(|env| env.to_string_lossy().into_owned()),
                value,
                source,
            }
        })
        .collect()
}
