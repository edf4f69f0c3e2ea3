//! The relay: leases due outbox messages, POSTs each to the accounting API with its
//! `Idempotency-Key`, and settles it by what came back: delivered (with the API's reference),
//! retried later (exponential backoff with jitter), or dead-lettered when the API refuses it for
//! good or the attempts run out. A lease outlives the call's timeout, so no two relays send one
//! message at the same time; a relay that dies mid-call leaves the lease to expire and the message
//! is sent again, which the `Idempotency-Key` makes harmless.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::accounting::Settlement;
use crate::accounting::retry::{Answer, RetryPolicy, classify, shortened};
use crate::inbox::Logged;
use crate::store::{Leased, Settled, Store};

/// The most of an answer's body the relay reads (for the reference and the error).
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Attempts settled in one transaction at most.
const MAX_SETTLED: usize = 256;

/// Query parameter names that carry a credential (compared in lower case, as parts of the name).
const SECRET_PARAMETERS: [&str; 7] = ["key", "token", "secret", "password", "sig", "auth", "credential"];

/// The accounting API's URL fit for logs and `edi-inbox config`: its password (or a user name
/// standing alone, which is then the credential: `https://TOKEN@host/`) and the values of query
/// parameters named like credentials (`api_key`, `access_token`, …) as `***`.
pub fn shown(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    if url.password().is_some() {
        let _ = shown.set_password(Some("***"));
    } else if !url.username().is_empty() {
        let _ = shown.set_username("***");
    }
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(name, value)| {
                let lower = name.to_ascii_lowercase();
                let secret = SECRET_PARAMETERS.iter().any(|part| lower.contains(part));
                (name.into_owned(), if secret { "***".to_owned() } else { value.into_owned() })
            })
            .collect();
        shown.query_pairs_mut().clear().extend_pairs(pairs);
    }
    shown.to_string().replace("%2A%2A%2A", "***")
}

/// What a relay is configured with.
#[derive(Debug, Clone)]
pub struct RelayOptions {
    /// The accounting API each invoice is POSTed to.
    pub url: reqwest::Url,
    /// Sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// How long one call may take.
    pub timeout: Duration,
    pub policy: RetryPolicy,
    /// Calls at once.
    pub concurrency: usize,
    /// How often to look for due messages written elsewhere.
    pub poll: Duration,
}

/// A relay to one accounting API.
pub struct Relay {
    store: Store,
    client: reqwest::Client,
    url: reqwest::Url,
    authorization: Option<HeaderValue>,
    policy: RetryPolicy,
    concurrency: usize,
    poll: Duration,
    lease: Duration,
}

impl Relay {
    /// A relay to `options.url`.
    pub fn new(store: Store, options: RelayOptions) -> Result<Relay, String> {
        let RelayOptions { url, token, timeout, policy, concurrency, poll } = options;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the accounting API client cannot be built: {e}"))?;
        let authorization = match &token {
            Some(token) => {
                let mut value = HeaderValue::try_from(format!("Bearer {token}"))
                    .map_err(|_| "the accounting token is not a valid header value".to_owned())?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(Relay {
            store,
            client,
            url,
            authorization,
            policy,
            concurrency: concurrency.max(1),
            poll,
            // Longer than any call can take, so that a lease never expires under a call in progress.
            lease: timeout * 2 + Duration::from_secs(1),
        })
    }

    /// Relays until `stop` turns true, then waits for the calls in progress (each bounded by the
    /// timeout) and settles them. Leases are taken for half the calls at a time, and the attempts
    /// that ended meanwhile are settled together in one transaction, so that the database work per
    /// message stays a fraction of a commit.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let relay = Arc::new(self);
        let (ended, endings) = mpsc::unbounded_channel();
        let settler = tokio::spawn(Arc::clone(&relay).settle(endings));
        let mut calls = JoinSet::new();
        let refill = (relay.concurrency / 2).max(1);
        tracing::info!(url = %shown(&relay.url), concurrency = relay.concurrency, "relaying to the accounting API");
        while !*stop.borrow() {
            let free = relay.concurrency - calls.len();
            let mut leased = 0;
            if free >= refill {
                let now = Utc::now();
                let token = Uuid::now_v7();
                let until = now + chrono::Duration::from_std(relay.lease).unwrap_or(chrono::Duration::MAX);
                match relay.store.lease_outbox(free, now, until, token).await {
                    Ok(messages) => {
                        leased = messages.len();
                        for message in messages {
                            let (relay, ended) = (Arc::clone(&relay), ended.clone());
                            calls.spawn(async move {
                                let invoice_id = message.invoice_id;
                                let _ = ended.send((invoice_id, relay.attempt(message, token).await));
                            });
                        }
                    }
                    Err(error) => tracing::warn!(%error, "leasing outbox messages failed; retrying"),
                }
            }
            if free >= refill && leased == free {
                continue; // more may be due
            }
            tokio::select! {
                () = relay.store.outbox_written() => {}
                () = tokio::time::sleep(relay.poll) => {}
                Some(_) = calls.join_next(), if !calls.is_empty() => {}
                _ = stop.changed() => {}
            }
        }
        while calls.join_next().await.is_some() {}
        drop(ended);
        let _ = settler.await;
        tracing::info!("relay stopped");
    }

    /// Settles ended attempts as they come, whatever is waiting at once in one transaction.
    async fn settle(self: Arc<Relay>, mut endings: mpsc::UnboundedReceiver<(Uuid, Settled)>) {
        let mut batch = Vec::new();
        while endings.recv_many(&mut batch, MAX_SETTLED).await > 0 {
            let attempts: Vec<Settled> = batch.iter().map(|(_, settled)| settled.clone()).collect();
            match self.store.settle_outbox(&attempts).await {
                Ok(held) => {
                    for ((invoice_id, settled), held) in batch.iter().zip(held) {
                        self.record(*invoice_id, &settled.settlement, held);
                    }
                }
                // The leases expire and the messages are sent again; the Idempotency-Key makes that harmless.
                Err(error) => tracing::warn!(%error, attempts = attempts.len(), "settling attempts failed"),
            }
            batch.clear();
        }
    }

    /// Counts (`edi_inbox_relay_attempts_total`) and logs a settled attempt.
    fn record(&self, invoice_id: Uuid, settlement: &Settlement, held: bool) {
        let result = match (held, settlement) {
            (false, _) => {
                tracing::warn!(%invoice_id, "the lease expired during the attempt");
                "lost_lease"
            }
            (true, Settlement::Delivered { .. }) => {
                tracing::debug!(%invoice_id, "booked with the accounting API");
                "delivered"
            }
            (true, Settlement::Retry { at, error }) => {
                tracing::info!(%invoice_id, %at, error = %Logged(error), "accounting API attempt failed");
                "retried"
            }
            (true, Settlement::Dead { error }) => {
                tracing::warn!(%invoice_id, error = %Logged(error), "outbox message dead-lettered");
                "dead"
            }
        };
        metrics::counter!("edi_inbox_relay_attempts_total", "result" => result).increment(1);
    }

    /// One attempt to deliver `message`, and how it is to be settled under the lease `token`.
    async fn attempt(&self, message: Leased, token: Uuid) -> Settled {
        let answer = self.call(&message).await;
        let at = Utc::now();
        let settlement = match answer {
            Answer::Booked { reference } => Settlement::Delivered { reference },
            Answer::Refused(error) => Settlement::Dead { error: shortened(error) },
            Answer::Transient(error) => {
                let random = getrandom::u64().unwrap_or_default();
                self.policy.after_failure(message.attempts, shortened(error), at, random)
            }
        };
        Settled { id: message.id, token, settlement, at }
    }

    /// POSTs the message and reads the answer.
    async fn call(&self, message: &Leased) -> Answer {
        let mut request = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            // An RFC 8941 string, as the IETF Idempotency-Key draft has it.
            .header("idempotency-key", format!("\"{}\"", message.idempotency_key))
            .body(message.payload.clone());
        if let Some(authorization) = &self.authorization {
            request = request.header(reqwest::header::AUTHORIZATION, authorization.clone());
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Answer::Transient(error.without_url().to_string()),
        };
        let status = response.status();
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if body.len() < MAX_ANSWER_BYTES => body.extend_from_slice(&chunk),
                Ok(Some(_)) => {}
                Ok(None) => break,
                // The answer never arrived whole: whether it was booked is unknown, so ask again.
                Err(error) => return Answer::Transient(error.without_url().to_string()),
            }
        }
        body.truncate(MAX_ANSWER_BYTES);
        classify(status, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_the_url_are_not_shown() {
        let url = reqwest::Url::parse(
            "https://relay:pw-1@acct.example/book?api_key=k-1&region=eu&Access_Token=t-1",
        )
        .unwrap();
        assert_eq!(shown(&url), "https://relay:***@acct.example/book?api_key=***&region=eu&Access_Token=***");
        let plain = reqwest::Url::parse("http://127.0.0.1:9000/invoices").unwrap();
        assert_eq!(shown(&plain), "http://127.0.0.1:9000/invoices");
        let token_only = reqwest::Url::parse("http://SECRET@host/x").unwrap();
        assert_eq!(shown(&token_only), "http://***@host/x");
    }
}
