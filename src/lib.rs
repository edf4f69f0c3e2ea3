//! edi-inbox: an exactly-once HTTP receiver for X12 810 and UN/EDIFACT INVOIC interchanges.
//!
//! `edi` parses (pure), `inbox` decides what a delivery means, `store` is the only module with SQL,
//! `http` is the only module with status codes; `operate` holds what an operator does (shared by the
//! admin API, the console and the CLI); `app` wires them together for the binary and tests.

/// An enum stored and sent as the text each variant names (the same in the database, JSON and on
/// the command line): parsed once, where it is read, never compared as a string afterwards.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$variant_meta:meta])* $variant:ident = $text:tt),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema, clap::ValueEnum)]
        pub enum $name {
            $($(#[$variant_meta])* #[serde(rename = $text)] #[value(name = $text)] $variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;

            fn try_from(text: String) -> Result<$name, String> {
                $name::parse(&text).ok_or_else(|| format!("{text:?} is not a {}", stringify!($name)))
            }
        }
    };
}

/// A test hook: the process aborts here when `EDI_INBOX_CRASH_AT` names this point, as a crash or
/// SIGKILL would stop it (no destructor, no flush). Unset in production.
pub fn crash_point(name: &str) {
    if std::env::var_os("EDI_INBOX_CRASH_AT").is_some_and(|at| at == name) {
        eprintln!("edi-inbox: crashing at {name} (EDI_INBOX_CRASH_AT)");
        std::process::abort();
    }
}

pub mod accounting;
pub mod app;
pub mod as2;
pub mod config;
pub mod consumer;
pub mod edi;
pub mod http;
pub mod inbox;
pub mod ingest;
pub mod jobs;
pub mod operate;
pub mod operators;
pub mod partners;
pub mod store;
