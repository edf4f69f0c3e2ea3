//! Start-up wiring shared by the binary and the tests: connect, migrate, bind, serve.

use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::config::{DatabaseConfig, ServerConfig};
use crate::http::{self, ApiContext};
use crate::store::{Purged, Store, StoreError};

/// Connects to the configured database and applies pending migrations.
pub async fn open_store(database: &DatabaseConfig) -> Result<Store, StoreError> {
    let store = Store::connect(&database.database_url, &database.store_options()).await?;
    store.migrate().await?;
    Ok(store)
}

/// A bound, not yet serving application.
pub struct App {
    listener: TcpListener,
    router: axum::Router,
    limits: http::ConnectionLimits,
}

impl App {
    /// Binds the configured address; refuses open mode on a network address unless forced.
    pub async fn bind(store: Store, server: &ServerConfig) -> std::io::Result<App> {
        let partner_auth = server.partner_auth().map_err(std::io::Error::other)?;
        let limits = server.connection_limits().map_err(std::io::Error::other)?;
        let listener = TcpListener::bind(server.bind).await?;
        let router = http::router(ApiContext::new(store, server, partner_auth));
        Ok(App { listener, router, limits })
    }

    /// The bound address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        http::serve(self.listener, self.router, self.limits, shutdown).await
    }
}

/// How often `serve` purges expired payloads.
const PURGE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

/// Drops payloads and audit records older than `retention`; keys, fingerprints and outcomes stay.
pub async fn purge(store: &Store, retention: chrono::Duration) -> Result<Purged, StoreError> {
    let now = chrono::Utc::now();
    // A retention reaching before the calendar's start keeps everything.
    let Some(before) = now.checked_sub_signed(retention) else { return Ok(Purged::default()) };
    store.purge(before, now).await
}

/// Runs [`purge`] every hour for the life of the server; failures are logged and retried next time.
pub async fn purge_periodically(store: Store, retention: chrono::Duration) {
    let mut ticks = tokio::time::interval(PURGE_INTERVAL);
    loop {
        ticks.tick().await;
        match purge(&store, retention).await {
            Ok(purged) if purged == Purged::default() => {}
            Ok(purged) => tracing::info!(?purged, "retention purge"),
            Err(error) => tracing::warn!(%error, "purging stored payloads failed"),
        }
    }
}
