//! Work done beside the deliveries, above the store: the accounting relay, the CSV export, the
//! retention purge, and the operator actions on the partner registry (shared by the CLI and the
//! admin API).

pub mod export;
pub mod purge;
pub mod registry;
pub mod relay;
