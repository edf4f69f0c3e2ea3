//! Operator use cases: what an operator does to partners, held deliveries, outbox messages and SNS
//! subscription messages. The admin API, the console and the CLI call these same functions and only
//! translate an [`Error`] into their own answer (a problem document, a console notice, an exit code).

use crate::ingest;
use crate::operators::OperatorName;
use crate::store::StoreError;

pub mod operators;
pub mod outbox;
pub mod partners;
pub mod quarantine;
pub mod sns;

/// Who does an operator's action, as its log line names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Actor {
    /// The admin API, with the admin token.
    AdminApi,
    /// The operator console: a named operator, or (`None`) a session opened with the admin token.
    Console(Option<OperatorName>),
    /// `edi-inbox` on the command line, as this operating-system user.
    CommandLine(String),
}

impl Actor {
    /// The command line's actor: `$USER`, letters, digits and `._-` only.
    pub fn command_line() -> Actor {
        let user = std::env::var("USER").unwrap_or_default();
        let user: String =
            user.chars().filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c)).take(64).collect();
        Actor::CommandLine(if user.is_empty() { "unknown".into() } else { user })
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Actor::AdminApi => f.write_str("admin-api"),
            Actor::Console(Some(name)) => write!(f, "console:{name}"),
            Actor::Console(None) => f.write_str("console:admin-token"),
            Actor::CommandLine(user) => write!(f, "cli:{user}"),
        }
    }
}

/// The log line of a done action: who did what to which, and where it stands now.
fn logged(actor: &Actor, action: &'static str, subject: &dyn std::fmt::Display, now: &str) {
    tracing::info!(target: "edi_inbox::operator", actor = %actor, action, subject = %subject, now, "operator action");
}

/// Why an operator's action did nothing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong (a partner's settings that do not hold together).
    #[error("{0}")]
    Invalid(String),
    /// What it would create exists already.
    #[error("{0}")]
    Exists(String),
    /// What it names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// What it names is not in a state the action applies to.
    #[error("{0}")]
    WrongState(String),
    /// Too much of the same work is under way; try again shortly.
    #[error("{0}")]
    Busy(String),
    /// Recording a released delivery failed as a delivery can.
    #[error(transparent)]
    Ingest(#[from] ingest::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}
