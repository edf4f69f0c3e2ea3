//! Start-up wiring shared by the binary and the tests: connect, migrate, bind, serve.

use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::config::{DatabaseConfig, ServerConfig};
use crate::http::{self, ApiContext};
use crate::store::{Store, StoreError};

/// Connects to the configured database and applies pending migrations.
pub async fn open_store(database: &DatabaseConfig) -> Result<Store, StoreError> {
    let store = Store::connect(&database.database_url, &database.pool()).await?;
    store.migrate().await?;
    Ok(store)
}

/// A bound, not yet serving application.
pub struct App {
    listener: TcpListener,
    router: axum::Router,
    header_timeout: std::time::Duration,
}

impl App {
    /// Binds the configured address; refuses open mode on a network address unless forced.
    pub async fn bind(store: Store, server: &ServerConfig) -> std::io::Result<App> {
        let partner_auth = server.partner_auth().map_err(std::io::Error::other)?;
        let listener = TcpListener::bind(server.bind).await?;
        let router = http::router(ApiContext::new(store, server, partner_auth));
        Ok(App { listener, router, header_timeout: std::time::Duration::from_secs(server.header_timeout) })
    }

    /// The bound address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        http::serve(self.listener, self.router, self.header_timeout, shutdown).await
    }
}

/// How often `serve` purges expired payloads.
const PURGE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

/// Drops payloads older than `retention`; keys, fingerprints and outcomes stay.
pub async fn purge(store: &Store, retention: chrono::Duration) -> Result<u64, StoreError> {
    let now = chrono::Utc::now();
    store.purge_payloads(now - retention, now).await
}

/// Runs [`purge`] every hour for the life of the server; failures are logged and retried next time.
pub async fn purge_periodically(store: Store, retention: chrono::Duration) {
    let mut ticks = tokio::time::interval(PURGE_INTERVAL);
    loop {
        ticks.tick().await;
        match purge(&store, retention).await {
            Ok(0) => {}
            Ok(purged) => tracing::info!(purged, "stored payloads purged"),
            Err(error) => tracing::warn!(%error, "purging stored payloads failed"),
        }
    }
}
