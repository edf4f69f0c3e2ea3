//! edi-inbox: an exactly-once HTTP receiver for X12 810 and UN/EDIFACT INVOIC interchanges.

pub mod edi;
