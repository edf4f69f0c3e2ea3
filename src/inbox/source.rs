//! The first half of an idempotency key: the interchange's sender as `{standard}:{qualifier}:{id}`,
//! made from the envelope (or read back from a row) once and passed as a [`Source`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::edi::{Envelope, Standard};

/// `{standard}:{sender qualifier}:{sender id}`, e.g. `x12:ZZ:ACMESUPPLY` (the qualifier may be empty).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Source(String);

impl Source {
    /// The sender an envelope names.
    pub fn of(envelope: &Envelope) -> Source {
        let sender = &envelope.sender;
        Source(format!("{}:{}:{}", envelope.standard.as_str(), sender.qualifier, sender.id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Source {
    type Error = String;

    /// A source as written: a standard, a qualifier (possibly empty) and a non-empty id.
    fn try_from(text: String) -> Result<Source, String> {
        match text.splitn(3, ':').collect::<Vec<_>>()[..] {
            [standard, _, id] if Standard::parse(standard).is_some() && !id.is_empty() => Ok(Source(text)),
            _ => Err(format!("{text:?} is not a source ({{standard}}:{{qualifier}}:{{id}})")),
        }
    }
}

impl From<Source> for String {
    fn from(source: Source) -> String {
        source.0
    }
}

impl AsRef<str> for Source {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_read_back_only_as_written() {
        for good in ["x12:ZZ:ACMESUPPLY", "edifact:14:4000001000005", "edifact::BUYER"] {
            assert_eq!(Source::try_from(good.to_owned()).map(String::from), Ok(good.to_owned()));
        }
        for bad in ["", "x12", "x12:ZZ:", "cobol:ZZ:A"] {
            assert!(Source::try_from(bad.to_owned()).is_err(), "{bad:?}");
        }
    }
}
