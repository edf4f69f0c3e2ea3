//! Operator use cases: what an operator does to partners, held deliveries, outbox messages and SNS
//! subscription messages. The admin API, the console and the CLI call these same functions and only
//! translate an [`Error`] into their own answer (a problem document, a console notice, an exit code).

use crate::ingest;
use crate::store::StoreError;

pub mod outbox;
pub mod partners;
pub mod quarantine;
pub mod sns;

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
    /// Recording a released delivery failed as a delivery can.
    #[error(transparent)]
    Ingest(#[from] ingest::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}
