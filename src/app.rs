//! Start-up wiring shared by the binary and the tests: connect, migrate, bind, serve.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::{AccountingConfig, DatabaseConfig, ServerConfig};
use crate::http::{self, ApiContext};
use crate::ingest::{Ingest, IngestOptions};
use crate::jobs::export::{ScheduledExport, export_periodically};
use crate::jobs::relay::Relay;
use crate::store::{Store, StoreError};

/// Connects to the configured database and applies pending migrations.
pub async fn open_store(database: &DatabaseConfig) -> Result<Store, StoreError> {
    let store = Store::connect(&database.database_url, &database.store_options()).await?;
    store.migrate().await?;
    Ok(store)
}

/// The delivery use case with `options`, storing the HTTP API's answers.
pub fn ingest(store: Store, options: IngestOptions) -> Ingest {
    Ingest::new(store, options, http::problem::ANSWERS)
}

/// The relay to the configured accounting API; `None` without one.
pub fn relay(store: Store, accounting: &AccountingConfig) -> Result<Option<Relay>, String> {
    accounting.relay_options().map(|options| Relay::new(store, options)).transpose()
}

/// A bound, not yet serving application, with the background work it does while serving.
pub struct App {
    listener: TcpListener,
    router: axum::Router,
    limits: http::ConnectionLimits,
    relay: Option<Relay>,
    exports: Option<ScheduledExport>,
}

impl App {
    /// Binds the configured address; refuses open mode on a network address unless forced.
    pub async fn bind(
        store: Store,
        server: &ServerConfig,
        accounting: &AccountingConfig,
    ) -> std::io::Result<App> {
        let partner_auth = server.partner_auth().map_err(std::io::Error::other)?;
        let ingest =
            ingest(store.clone(), server.ingest_options(accounting.accounting_url.is_some(), partner_auth));
        let limits = http::ConnectionLimits::from_config(server).map_err(std::io::Error::other)?;
        let relay = match accounting.relay {
            true => relay(store.clone(), accounting).map_err(std::io::Error::other)?,
            false => None,
        };
        let exports = accounting.export_dir.clone().map(|dir| ScheduledExport {
            store: store.clone(),
            dir,
            interval: Duration::from_secs(accounting.export_interval),
            max_invoices: accounting.export_max_invoices,
        });
        let listener = TcpListener::bind(server.bind).await?;
        let ctx =
            ApiContext::new(ingest, server, console_key(&store).await?).map_err(std::io::Error::other)?;
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

/// The key that MACs console session cookies: the one stored, or a new random one stored now.
async fn console_key(store: &Store) -> std::io::Result<Vec<u8>> {
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).map_err(std::io::Error::other)?;
    store.console_key(&fresh).await.map_err(std::io::Error::other)
}
