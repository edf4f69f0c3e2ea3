//! A partner's id, checked once where it is read (a request, a command line, a row) and passed
//! around as a [`PartnerId`] from there on.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A partner's id: 1 to 64 letters, digits, `-`, `_` or `.` (cheap to clone).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PartnerId(Arc<str>);

impl PartnerId {
    pub fn parse(text: &str) -> Result<PartnerId, String> {
        let valid = !text.is_empty()
            && text.len() <= 64
            && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        match valid {
            true => Ok(PartnerId(Arc::from(text))),
            false => Err(format!("partner id {text:?} must be 1-64 letters, digits, '-', '_' or '.'")),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for PartnerId {
    type Error = String;

    fn try_from(text: String) -> Result<PartnerId, String> {
        PartnerId::parse(&text)
    }
}

impl FromStr for PartnerId {
    type Err = String;

    fn from_str(text: &str) -> Result<PartnerId, String> {
        PartnerId::parse(text)
    }
}

impl From<PartnerId> for String {
    fn from(id: PartnerId) -> String {
        id.0.to_string()
    }
}

impl std::borrow::Borrow<str> for PartnerId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for PartnerId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PartnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_parsed_once_and_shown_as_given() {
        assert_eq!(PartnerId::parse("acme-1.eu_2").map(|id| id.to_string()), Ok("acme-1.eu_2".to_owned()));
        for bad in ["", "a b", "acme/1", "ä", &"a".repeat(65)] {
            assert!(PartnerId::parse(bad).is_err(), "{bad:?}");
        }
        let json: Result<PartnerId, _> = serde_json::from_str("\"not ok\"");
        assert!(json.is_err());
    }
}
