//! Named operators of the console: who they are (an [`OperatorName`]), what they may do (a
//! [`Role`]), and how a password is kept (an Argon2id hash in PHC form, never the password) and
//! checked. Pure: the rows are `store::operators`'s, the use cases `operate::operators`'s.

use std::sync::OnceLock;

use argon2::password_hash::SaltString;
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

text_enum! {
    /// What a console session may do.
    Role {
        /// Every page and every button.
        Operator = "operator",
        /// Every page, no button.
        Viewer = "viewer",
    }
}

/// An operator's name: 1 to 64 of `A–Z a–z 0–9 . _ -`, so that it is safe in a log line, a page
/// and a file name as it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct OperatorName(String);

impl OperatorName {
    pub fn parse(text: &str) -> Result<OperatorName, String> {
        let valid = (1..=64).contains(&text.len())
            && text.bytes().all(|b| b.is_ascii_alphanumeric() || b".-_".contains(&b));
        if valid {
            Ok(OperatorName(text.to_owned()))
        } else {
            Err(format!("{text:?} is no operator name: 1 to 64 letters, digits, '.', '_' or '-'"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for OperatorName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for OperatorName {
    type Err = String;

    fn from_str(text: &str) -> Result<OperatorName, String> {
        OperatorName::parse(text)
    }
}

impl TryFrom<String> for OperatorName {
    type Error = String;

    fn try_from(text: String) -> Result<OperatorName, String> {
        OperatorName::parse(&text)
    }
}

/// A registered operator, as listed (never its password hash).
#[derive(Clone, Debug, Serialize, sqlx::FromRow)]
pub struct Operator {
    #[sqlx(try_from = "String")]
    pub name: OperatorName,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub password_changed_at: DateTime<Utc>,
    pub disabled_at: Option<DateTime<Utc>>,
    /// Wrong passwords given since the last sign-in.
    pub failed_sign_ins: i32,
    /// Until when a sign-in under this name is refused unread.
    pub locked_until: Option<DateTime<Utc>>,
}

/// The shortest and longest password accepted (a longer one would only cost hashing time).
pub const PASSWORD_LENGTH: std::ops::RangeInclusive<usize> = 12..=1024;

/// Wrong passwords under one name before it is locked; each further one doubles the lock, from one
/// minute up to an hour.
pub const FREE_ATTEMPTS: i32 = 5;

/// Until when a name is locked after its `failures`-th wrong password in a row, if at all.
pub fn locked_until(failures: i32, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let over = failures.checked_sub(FREE_ATTEMPTS).filter(|over| *over >= 0)?;
    Some(now + Duration::minutes((1i64 << over.min(6)).min(60)))
}

/// The Argon2id hash (PHC string, OWASP's parameters: 19 MiB, two passes) of an acceptable
/// password.
pub fn hash(password: &str) -> Result<String, String> {
    if !PASSWORD_LENGTH.contains(&password.chars().count()) {
        return Err(format!(
            "a password has {} to {} characters",
            PASSWORD_LENGTH.start(),
            PASSWORD_LENGTH.end()
        ));
    }
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| format!("no randomness for a salt: {e}"))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| e.to_string())
}

/// Whether `password` is the one `hash` was made from; `None` (no such operator) is checked
/// against a decoy hash, so that the time taken does not tell whether a name exists.
pub fn verify(hash: Option<&str>, password: &str) -> bool {
    // Longer than any password accepted: refused before hashing, whatever the name.
    if password.len() > 4 * PASSWORD_LENGTH.end() {
        return false;
    }
    let stored = match hash {
        Some(hash) => hash,
        None => decoy(),
    };
    let Ok(parsed) = PasswordHash::new(stored) else { return false };
    Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok() && hash.is_some()
}

/// A hash of a random password, made once: what an unknown name is checked against.
fn decoy() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| {
        let mut password = [0u8; 24];
        let _ = getrandom::fill(&mut password);
        let password: String = password.iter().map(|b| format!("{b:02x}")).collect();
        hash(&password).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_verifies_against_its_own_hash_only() {
        let hashed = hash("correct horse battery").unwrap();
        assert!(hashed.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hashed}");
        assert!(verify(Some(&hashed), "correct horse battery"));
        assert!(!verify(Some(&hashed), "correct horse battery "));
        assert!(!verify(None, "correct horse battery"));
        assert!(hash("too short").is_err());
        assert_ne!(hash("correct horse battery").unwrap(), hashed, "salted");
    }

    #[test]
    fn names_are_plain_and_locks_double_up_to_an_hour() {
        assert!(OperatorName::parse("alice.o-1_x").is_ok());
        for bad in ["", "a b", "<b>", "ä", &"x".repeat(65)] {
            assert!(OperatorName::parse(bad).is_err(), "{bad}");
        }
        let now = Utc::now();
        assert_eq!(locked_until(FREE_ATTEMPTS - 1, now), None);
        assert_eq!(locked_until(FREE_ATTEMPTS, now), Some(now + Duration::minutes(1)));
        assert_eq!(locked_until(FREE_ATTEMPTS + 3, now), Some(now + Duration::minutes(8)));
        assert_eq!(locked_until(FREE_ATTEMPTS + 40, now), Some(now + Duration::minutes(60)));
    }
}
