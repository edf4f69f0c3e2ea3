//! The command line's subcommands: what the binary does besides serving, and the operator's
//! commands (partners, quarantine, outbox, SNS), which run the same use cases as the admin API.

use clap::Subcommand;
use uuid::Uuid;

use super::ConsumeConfig;
use crate::inbox::outbox::AccountingStatus;
use crate::inbox::quarantine::{QuarantineStatus, ReleaseAs};
use crate::operators::{OperatorName, Role};
use crate::partners::{NewPartner, PartnerChanges};

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply migrations, then serve the HTTP API (the default).
    Serve,
    /// Apply the database migrations and exit.
    Migrate,
    /// Print the OpenAPI document.
    Openapi,
    /// Deliver pending outbox messages to the accounting API until stopped (what `serve` does in
    /// the background unless `--relay false`).
    Relay,
    /// Consume interchanges from RabbitMQ, NATS JetStream or Kafka until stopped, acknowledging
    /// each message (committing its offset) only after the transaction that recorded it committed.
    Consume(ConsumeConfig),
    /// Write the invoices not exported yet to CSV files in `--export-dir`, then exit.
    Export,
    /// Exit 0 when the server at `--bind` (or `url`) answers `GET /readyz` with 200, 1 otherwise:
    /// the container's health check, without a shell or curl in the image.
    Probe {
        /// Readiness URL; default `http://{loopback or bind address}/readyz`.
        url: Option<String>,
    },
    /// Print the effective configuration as JSON: every setting's value (secrets masked) and where
    /// it came from (`default`, `env` or `flag`).
    Config,
    /// Drop stored payloads older than the retention period (keys and outcomes stay, until the key
    /// retention if one is set), then exit.
    Purge {
        /// Count what would be dropped; drop nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Manage trading partners: who may post, as which senders, with which credentials.
    Partner {
        #[command(subcommand)]
        action: PartnerCommand,
    },
    /// Resolve the deliveries held for an operator (partners with the `quarantine` policy).
    Quarantine {
        #[command(subcommand)]
        action: QuarantineCommand,
    },
    /// Re-drive or give up the outbox's dead letters (messages the accounting API never took).
    Outbox {
        #[command(subcommand)]
        action: OutboxCommand,
    },
    /// Record SNS subscription messages as confirmed (after visiting their `subscribe_url`).
    Sns {
        #[command(subcommand)]
        action: SnsCommand,
    },
    /// Manage the console's named operators: who signs in, with which role.
    Operator {
        #[command(subcommand)]
        action: OperatorCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum PartnerCommand {
    /// Register a partner; prints its first API key and Standard Webhooks secret (shown once).
    Add(Box<NewPartner>),
    /// List partners as JSON.
    List,
    /// Show one partner as JSON.
    Show { id: String },
    /// Change a partner's settings (any of `add`'s but the id; a list option replaces the list,
    /// given without a value it clears it); prints the partner as changed. Audited.
    Update {
        id: String,
        #[command(flatten)]
        changes: Box<PartnerChanges>,
    },
    /// Refuse the partner's requests (403) until activated again.
    Suspend { id: String },
    /// Accept the partner's requests again.
    Activate { id: String },
    /// Issue an additional API key (or, with --webhook-secret, signing secret); the old ones stay
    /// valid until revoked, so senders can switch without downtime.
    RotateKey {
        id: String,
        #[arg(long)]
        webhook_secret: bool,
    },
    /// Revoke one credential (its id is in `partner show`).
    RevokeKey { id: String, credential: Uuid },
}

#[derive(Debug, Subcommand)]
pub enum QuarantineCommand {
    /// List held deliveries as a JSON page, newest first.
    List {
        /// Only entries in this state.
        #[arg(long)]
        status: Option<QuarantineStatus>,
        /// How many, 1 to 500.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=500))]
        limit: u32,
        /// `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<Uuid>,
    },
    /// Process a held delivery after all, under its partner's current settings.
    Release {
        id: Uuid,
        /// For a `duplicate-number` entry: book its invoice as a `new` invoice (the number's next
        /// revision) or as the `replacement` of the earlier one.
        #[arg(long = "as")]
        release_as: Option<ReleaseAs>,
    },
    /// Give up on a held delivery: it is never booked.
    Discard { id: Uuid },
}

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// List outbox messages as a JSON page, newest first.
    List {
        /// Only messages in this state (`dead`: the dead letters).
        #[arg(long)]
        status: Option<AccountingStatus>,
        /// How many, 1 to 500.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=500))]
        limit: u32,
        /// `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<Uuid>,
    },
    /// Send a dead message again, with a fresh budget of attempts.
    Retry { id: Uuid },
    /// Give up on a dead message: it is never sent.
    Discard { id: Uuid },
}

#[derive(Debug, Subcommand)]
pub enum SnsCommand {
    /// List the kept subscription messages as a JSON page, newest first.
    List {
        /// How many, 1 to 500.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=500))]
        limit: u32,
        /// `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<Uuid>,
    },
    /// Record a subscription message as confirmed.
    Confirm { id: Uuid },
}

#[derive(Debug, Subcommand)]
pub enum OperatorCommand {
    /// Register an operator; the password is asked on the terminal (twice), or read as the first
    /// line of standard input with `--password-stdin`.
    Add {
        name: OperatorName,
        /// `operator`: every page and button; `viewer`: every page, no button.
        #[arg(long, value_enum, default_value = "operator")]
        role: Role,
        /// Read the password from standard input instead of the terminal.
        #[arg(long)]
        password_stdin: bool,
    },
    /// List the operators as JSON (never their password hashes).
    List,
    /// Stop an operator signing in; its sessions end at once on every replica.
    Disable { name: OperatorName },
    /// Let a disabled operator sign in again.
    Enable { name: OperatorName },
    /// Give an operator a new password (asked as for `add`); its sessions end.
    Reset {
        name: OperatorName,
        #[arg(long)]
        password_stdin: bool,
    },
}
