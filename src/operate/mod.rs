//! Operator use cases: what an operator does to partners, held deliveries, outbox messages and SNS
//! subscription messages. The admin API, the console and the CLI call these same functions and only
//! translate an [`Error`] into their own answer (a problem document, a console notice, an exit code).

use crate::ingest;
use crate::operators::OperatorName;
use crate::store::{OperatorAction, Store, StoreError};

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

/// Records a done action: who did what to which, its state before (where the action knows it) and
/// after, as a log line and a row of the audit (`operator_actions`). The action is done already
/// when it is recorded: a row that cannot be written is logged as an error with everything it held.
async fn recorded(
    store: &Store,
    actor: &Actor,
    action: &'static str,
    subject: &(dyn std::fmt::Display + Sync),
    (before, after): (Option<&str>, &str),
) {
    tracing::info!(target: "edi_inbox::operator", actor = %actor, action, subject = %subject, before, now = after, "operator action");
    let row = OperatorAction {
        id: uuid::Uuid::now_v7(),
        at: chrono::Utc::now(),
        actor: actor.to_string(),
        action: action.to_owned(),
        subject: subject.to_string(),
        before: before.map(str::to_owned),
        after: after.to_owned(),
    };
    if let Err(error) = store.record_action(&row).await {
        tracing::error!(target: "edi_inbox::operator", %error, actor = %actor, action, subject = %subject, "an operator action was done but its audit row was not written");
    }
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
