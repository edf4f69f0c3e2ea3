//! Google's token-signing keys, for Pub/Sub push tokens: read from the configured JWKS (an `https://`
//! URL, Google's by default, or a file), kept, and read again when a token names a key that is not
//! among them — at most once a minute, so that tokens with made-up key ids cannot make the server
//! fetch. A request that proves nothing costs one header parse and at most one RSA verification.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::partners::oidc::{Jwks, OidcError, Token};

/// How often the keys may be read again for a token naming an unknown key.
const REFRESH_AT_MOST_EVERY: Duration = Duration::from_secs(60);

/// Time allowed to fetch the keys.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the keys are read from.
enum Source {
    Url(reqwest::Client, String),
    File(PathBuf),
}

struct Cached {
    keys: Arc<Jwks>,
    read: Option<Instant>,
}

/// Verifies Pub/Sub push tokens issued for one audience.
pub struct GoogleKeys {
    audience: String,
    source: Source,
    cached: tokio::sync::Mutex<Cached>,
}

impl GoogleKeys {
    /// Tokens for `audience`, verified with the keys at `jwks` (a URL or a file path).
    pub fn new(audience: String, jwks: &str) -> GoogleKeys {
        let source = if jwks.starts_with("https://") || jwks.starts_with("http://") {
            let client = reqwest::Client::builder().timeout(FETCH_TIMEOUT).build().unwrap_or_default();
            Source::Url(client, jwks.to_owned())
        } else {
            Source::File(PathBuf::from(jwks))
        };
        let cached = tokio::sync::Mutex::new(Cached { keys: Arc::default(), read: None });
        GoogleKeys { audience, source, cached }
    }

    /// The verified service-account e-mail `token` was issued to.
    pub async fn verify(&self, token: &str) -> Result<String, OidcError> {
        let token = Token::parse(token)?;
        let keys = self.keys_for(token.key_id()).await;
        token.verify(&keys, &self.audience, Utc::now())
    }

    /// The keys, read again first when they lack `kid` and were not read within the last minute.
    async fn keys_for(&self, kid: Option<&str>) -> Arc<Jwks> {
        let mut cached = self.cached.lock().await;
        let known = kid.is_some_and(|kid| cached.keys.has(kid));
        if !known && cached.read.is_none_or(|read| read.elapsed() >= REFRESH_AT_MOST_EVERY) {
            cached.read = Some(Instant::now());
            match self.read().await {
                Ok(keys) => cached.keys = Arc::new(keys),
                Err(error) => {
                    tracing::error!(%error, "the Pub/Sub token keys could not be read; tokens are refused")
                }
            }
        }
        Arc::clone(&cached.keys)
    }

    async fn read(&self) -> Result<Jwks, String> {
        let bytes = match &self.source {
            Source::Url(client, url) => {
                let response = client.get(url).send().await.map_err(|e| format!("{url}: {e}"))?;
                let response = response.error_for_status().map_err(|e| format!("{url}: {e}"))?;
                response.bytes().await.map_err(|e| format!("{url}: {e}"))?.to_vec()
            }
            Source::File(path) => {
                tokio::fs::read(path).await.map_err(|e| format!("{}: {e}", path.display()))?
            }
        };
        Jwks::parse(&bytes)
    }
}
