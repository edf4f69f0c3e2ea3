//! Google-signed OIDC tokens, as a Pub/Sub push subscription sends them in `Authorization: Bearer`
//! (a JWT, RS256): the signature against Google's published keys (a JWKS), then the claims — issuer,
//! audience, expiry and a verified service-account e-mail, which names the partner. Pure: the keys
//! are handed in.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents};
use serde::Deserialize;

/// The issuers Google signs ID tokens as.
const GOOGLE_ISSUERS: [&str; 2] = ["https://accounts.google.com", "accounts.google.com"];

/// Clock skew tolerated on `exp` and `iat`.
const SKEW_SECONDS: i64 = 60;

/// The longest token read; Google's are about 1 KB.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Why a token proves nothing.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    #[error("the token is not a JWT")]
    Malformed,
    #[error("the token's algorithm {0:?} is not accepted (RS256 only)")]
    Algorithm(String),
    #[error("the token was signed with a key that is not Google's")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token was issued by {0:?}, not Google")]
    Issuer(String),
    #[error("the token is for another audience")]
    Audience,
    #[error("the token has expired")]
    Expired,
    #[error("the token is issued in the future")]
    NotYetValid,
    #[error("the token carries no verified e-mail")]
    Unverified,
}

/// A JSON Web Key Set's RSA keys, by key id.
#[derive(Debug, Default)]
pub struct Jwks {
    keys: HashMap<String, RsaPublicKeyComponents<Vec<u8>>>,
}

#[derive(Deserialize)]
struct KeySet {
    keys: Vec<Key>,
}

#[derive(Deserialize)]
struct Key {
    kty: String,
    kid: Option<String>,
    n: Option<String>,
    e: Option<String>,
}

impl Jwks {
    /// Reads a JWKS document; keys other than RSA ones with an id are left out.
    pub fn parse(json: &[u8]) -> Result<Jwks, String> {
        let set: KeySet = serde_json::from_slice(json).map_err(|e| format!("not a JWKS: {e}"))?;
        let keys = set
            .keys
            .into_iter()
            .filter(|key| key.kty == "RSA")
            .filter_map(|key| {
                let n = URL_SAFE_NO_PAD.decode(key.n?).ok()?;
                let e = URL_SAFE_NO_PAD.decode(key.e?).ok()?;
                Some((key.kid?, RsaPublicKeyComponents { n, e }))
            })
            .collect();
        Ok(Jwks { keys })
    }

    /// Whether it has the key `kid`.
    pub fn has(&self, kid: &str) -> bool {
        self.keys.contains_key(kid)
    }
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    aud: String,
    exp: i64,
    iat: Option<i64>,
    email: Option<String>,
    #[serde(default)]
    email_verified: bool,
}

/// A token split, with its header read: enough to pick its key.
pub struct Token<'a> {
    signed: &'a str,
    claims: &'a str,
    signature: &'a str,
    header: Header,
}

impl<'a> Token<'a> {
    /// Splits a compact JWT (at most [`MAX_TOKEN_BYTES`]) and reads its header.
    pub fn parse(token: &'a str) -> Result<Token<'a>, OidcError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(OidcError::Malformed);
        }
        let (signed, signature) = token.rsplit_once('.').ok_or(OidcError::Malformed)?;
        let (header, claims) = signed.split_once('.').ok_or(OidcError::Malformed)?;
        let header: Header =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).map_err(|_| OidcError::Malformed)?)
                .map_err(|_| OidcError::Malformed)?;
        Ok(Token { signed, claims, signature, header })
    }

    /// The id of the key it says it was signed with.
    pub fn key_id(&self) -> Option<&str> {
        self.header.kid.as_deref()
    }

    /// Verifies the signature with `keys`, then the claims for `audience` at `now`: the verified
    /// service-account e-mail it was issued to.
    pub fn verify(&self, keys: &Jwks, audience: &str, now: DateTime<Utc>) -> Result<String, OidcError> {
        if self.header.alg != "RS256" {
            return Err(OidcError::Algorithm(self.header.alg.chars().take(16).collect()));
        }
        let key = self.key_id().and_then(|kid| keys.keys.get(kid)).ok_or(OidcError::UnknownKey)?;
        let signature = URL_SAFE_NO_PAD.decode(self.signature).map_err(|_| OidcError::Malformed)?;
        key.verify(&RSA_PKCS1_2048_8192_SHA256, self.signed.as_bytes(), &signature)
            .map_err(|_| OidcError::Signature)?;
        let claims: Claims =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(self.claims).map_err(|_| OidcError::Malformed)?)
                .map_err(|_| OidcError::Malformed)?;
        if !GOOGLE_ISSUERS.contains(&claims.iss.as_str()) {
            return Err(OidcError::Issuer(claims.iss.chars().take(64).collect()));
        }
        if claims.aud != audience {
            return Err(OidcError::Audience);
        }
        let now = now.timestamp();
        if claims.exp + SKEW_SECONDS <= now {
            return Err(OidcError::Expired);
        }
        if claims.iat.is_some_and(|iat| iat - SKEW_SECONDS > now) {
            return Err(OidcError::NotYetValid);
        }
        match claims.email {
            Some(email) if claims.email_verified => Ok(email),
            _ => Err(OidcError::Unverified),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(json: &str) -> String {
        URL_SAFE_NO_PAD.encode(json)
    }

    #[test]
    fn only_rs256_tokens_with_a_known_key_are_read_further() {
        let claims = part(
            r#"{"iss":"https://accounts.google.com","aud":"a","exp":9999999999,"email":"x@y.z","email_verified":true}"#,
        );
        let keys = Jwks::parse(
            br#"{"keys":[{"kty":"RSA","kid":"k","n":"AQAB","e":"AQAB"},{"kty":"EC","kid":"e"}]}"#,
        )
        .unwrap();
        assert!(keys.has("k") && !keys.has("e"), "EC keys are left out");
        let now = Utc::now();
        let none = format!("{}.{claims}.", part(r#"{"alg":"none","kid":"k"}"#));
        assert_eq!(
            Token::parse(&none).unwrap().verify(&keys, "a", now),
            Err(OidcError::Algorithm("none".into()))
        );
        let hs256 = format!("{}.{claims}.c2ln", part(r#"{"alg":"HS256","kid":"k"}"#));
        assert_eq!(
            Token::parse(&hs256).unwrap().verify(&keys, "a", now),
            Err(OidcError::Algorithm("HS256".into()))
        );
        let unknown = format!("{}.{claims}.c2ln", part(r#"{"alg":"RS256","kid":"other"}"#));
        assert_eq!(Token::parse(&unknown).unwrap().verify(&keys, "a", now), Err(OidcError::UnknownKey));
        let forged = format!("{}.{claims}.c2ln", part(r#"{"alg":"RS256","kid":"k"}"#));
        assert_eq!(Token::parse(&forged).unwrap().verify(&keys, "a", now), Err(OidcError::Signature));
        for malformed in ["", "a.b", "!!.e30.", &"a".repeat(MAX_TOKEN_BYTES + 1)] {
            assert_eq!(Token::parse(malformed).err(), Some(OidcError::Malformed), "{malformed:.20}");
        }
    }
}
