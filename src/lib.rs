//! edi-inbox: an exactly-once HTTP receiver for X12 810 and UN/EDIFACT INVOIC interchanges.
//!
//! `edi` parses (pure), `inbox` decides what a delivery means, `store` is the only module with SQL,
//! `http` is the only module with status codes; `app` wires them together for the binary and tests.

pub mod app;
pub mod config;
pub mod edi;
pub mod http;
pub mod inbox;
pub mod partners;
pub mod store;
