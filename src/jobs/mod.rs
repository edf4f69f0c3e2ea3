//! Work done beside the deliveries, above the store: the accounting relay, the CSV export and the
//! retention purge.

pub mod export;
pub mod purge;
pub mod relay;
