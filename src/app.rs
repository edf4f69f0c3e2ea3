//! Start-up wiring shared by the binary and the tests: connect, migrate, bind, serve.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::accounting::{export, relay::Relay};
use crate::config::{AccountingConfig, DatabaseConfig, ServerConfig};
use crate::http::{self, ApiContext};
use crate::store::{PurgeRun, Purged, Store, StoreError};

/// Connects to the configured database and applies pending migrations.
pub async fn open_store(database: &DatabaseConfig) -> Result<Store, StoreError> {
    let store = Store::connect(&database.database_url, &database.store_options()).await?;
    store.migrate().await?;
    Ok(store)
}

/// A bound, not yet serving application, with the background work it does while serving.
pub struct App {
    listener: TcpListener,
    router: axum::Router,
    limits: http::ConnectionLimits,
    relay: Option<Relay>,
    exports: Option<ScheduledExport>,
}

/// The CSV export `serve` runs every `interval`.
pub struct ScheduledExport {
    pub store: Store,
    pub dir: PathBuf,
    pub interval: Duration,
    pub max_invoices: u32,
}

impl App {
    /// Binds the configured address; refuses open mode on a network address unless forced.
    pub async fn bind(
        store: Store,
        server: &ServerConfig,
        accounting: &AccountingConfig,
    ) -> std::io::Result<App> {
        let partner_auth = server.partner_auth().map_err(std::io::Error::other)?;
        let limits = server.connection_limits().map_err(std::io::Error::other)?;
        let relay = match accounting.relay {
            true => Relay::new(store.clone(), accounting).map_err(std::io::Error::other)?,
            false => None,
        };
        let exports = accounting.export_dir.clone().map(|dir| ScheduledExport {
            store: store.clone(),
            dir,
            interval: Duration::from_secs(accounting.export_interval),
            max_invoices: accounting.export_max_invoices,
        });
        let listener = TcpListener::bind(server.bind).await?;
        let ctx = ApiContext::new(store, server, partner_auth, accounting.accounting_url.is_some());
        let router = http::router(ctx);
        Ok(App { listener, router, limits, relay, exports })
    }

    /// The bound address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves (relaying and exporting alongside, when configured) until `shutdown` resolves; then
    /// finishes the requests in flight, and after them the relay's calls in flight.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        let (stop, stopped) = watch::channel(false);
        let relay = self.relay.map(|relay| tokio::spawn(relay.run(stopped.clone())));
        let exports = self.exports.map(|scheduled| tokio::spawn(export_periodically(scheduled, stopped)));
        let served = http::serve(self.listener, self.router, self.limits, shutdown).await;
        let _ = stop.send(true);
        for task in [relay, exports].into_iter().flatten() {
            let _ = task.await;
        }
        served
    }
}

/// Runs the CSV export every `interval` until `stop`; failures are logged and retried next time.
pub async fn export_periodically(scheduled: ScheduledExport, mut stop: watch::Receiver<bool>) {
    let mut ticks = tokio::time::interval(scheduled.interval);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.changed() => return,
        }
        match export::export(&scheduled.store, &scheduled.dir, scheduled.max_invoices).await {
            Ok(exported) if exported.files > 0 => tracing::info!(?exported, "accounting export"),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "the accounting export failed; retrying at the next interval")
            }
        }
    }
}

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
