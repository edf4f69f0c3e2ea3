//! The certificates SNS signs with, fetched from a message's `SigningCertURL` only when it is a
//! trusted address (AWS's SNS hosts over HTTPS by default) and kept: SNS signs with one certificate
//! per region for months. Messages that prove nothing cost at most [`MAX_FETCHES_PER_MINUTE`]
//! fetches a minute (of trusted URLs only, no redirects followed), and the cache holds at most
//! [`MAX_KEPT`] certificates.

use std::sync::Arc;
use std::time::{Duration, Instant};

/// Certificates kept; past this many the oldest URL's is dropped.
const MAX_KEPT: usize = 16;

/// The largest certificate read (AWS's are about 2 KB).
const MAX_CERTIFICATE_BYTES: usize = 16 * 1024;

/// Certificates fetched a minute at most, whatever the messages name.
const MAX_FETCHES_PER_MINUTE: usize = 10;

/// Time allowed to fetch one.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Trusted certificate URLs and the certificates fetched from them.
pub struct SnsCertificates {
    /// URL prefixes trusted (see `partners::sns::url_trusted`).
    pub trusted: Vec<String>,
    client: reqwest::Client,
    cache: tokio::sync::Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    kept: Vec<(String, Arc<Vec<u8>>)>,
    fetched: Vec<Instant>,
}

impl SnsCertificates {
    pub fn new(trusted: Vec<String>) -> SnsCertificates {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        SnsCertificates { trusted, client, cache: tokio::sync::Mutex::default() }
    }

    /// The PEM certificate at `url` (already checked to be trusted), fetched once.
    pub async fn get(&self, url: &str) -> Result<Arc<Vec<u8>>, String> {
        let mut cache = self.cache.lock().await;
        if let Some((_, certificate)) = cache.kept.iter().find(|(kept, _)| kept == url) {
            return Ok(Arc::clone(certificate));
        }
        cache.fetched.retain(|at| at.elapsed() < Duration::from_secs(60));
        if cache.fetched.len() >= MAX_FETCHES_PER_MINUTE {
            return Err(format!(
                "{MAX_FETCHES_PER_MINUTE} certificates were fetched in the last minute already"
            ));
        }
        cache.fetched.push(Instant::now());
        let certificate = Arc::new(self.fetch(url).await?);
        if cache.kept.len() >= MAX_KEPT {
            cache.kept.remove(0);
        }
        cache.kept.push((url.to_owned(), Arc::clone(&certificate)));
        Ok(certificate)
    }

    async fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
        let mut response = self
            .client
            .get(url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| e.to_string())?;
        let mut certificate = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if certificate.len() + chunk.len() > MAX_CERTIFICATE_BYTES {
                return Err(format!("more than {MAX_CERTIFICATE_BYTES} bytes"));
            }
            certificate.extend_from_slice(&chunk);
        }
        Ok(certificate)
    }
}
