//! The retention purge: drops payloads and audit records past the retention, and interchanges past
//! the key retention, in batches; `serve` and `consume` run it every hour, `edi-inbox purge` once.

use crate::store::{PurgeRun, Purged, Store, StoreError};

/// How often `serve` purges expired payloads.
const PURGE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

/// How long what is kept: payloads (and the audit trail), keys (`None`: forever), and the purge's
/// batch size.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub payloads: chrono::Duration,
    pub keys: Option<chrono::Duration>,
    pub batch: u32,
}

/// Drops (or, in a dry run, counts) payloads and audit records older than the retention, and
/// interchanges older than the key retention; a horizon before the calendar's start keeps
/// everything.
pub async fn purge(store: &Store, retention: Retention, dry_run: bool) -> Result<Purged, StoreError> {
    let now = chrono::Utc::now();
    let Some(payloads_before) = now.checked_sub_signed(retention.payloads) else {
        return Ok(Purged { dry_run, ..Purged::default() });
    };
    let keys_before = retention.keys.and_then(|keys| now.checked_sub_signed(keys));
    let purged =
        store.purge(PurgeRun { payloads_before, keys_before, now, batch: retention.batch, dry_run }).await?;
    if !purged.dry_run && !purged.skipped {
        for (kind, rows) in [
            ("payloads", purged.payloads),
            ("attempts", purged.attempts),
            ("refusals", purged.refusals),
            ("outbox_payloads", purged.outbox_payloads),
            ("quarantine", purged.quarantine),
            ("sns_messages", purged.sns_messages),
            ("console_sessions", purged.console_sessions),
            ("console_devices", purged.console_devices),
            ("operator_actions", purged.operator_actions),
            ("interchanges", purged.interchanges),
        ] {
            metrics::counter!("edi_inbox_purged_rows_total", "kind" => kind).increment(rows);
        }
        metrics::gauge!("edi_inbox_purge_last_success_timestamp_seconds").set(now.timestamp() as f64);
    }
    Ok(purged)
}

/// Runs [`purge`] every hour for the life of the server; failures are logged and retried next time.
pub async fn purge_periodically(store: Store, retention: Retention) {
    let mut ticks = tokio::time::interval(PURGE_INTERVAL);
    loop {
        ticks.tick().await;
        match purge(&store, retention, false).await {
            Ok(purged) if purged == Purged::default() => {}
            Ok(purged) => tracing::info!(?purged, "retention purge"),
            Err(error) => tracing::warn!(%error, "purging stored payloads failed"),
        }
    }
}
