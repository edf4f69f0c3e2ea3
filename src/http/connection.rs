//! One accepted connection's guard: a connection that sends no byte within the first-byte timeout,
//! or stays silent (no byte either way) for the idle timeout, is closed — HTTP/1 and HTTP/2 alike,
//! including after the HTTP/2 preface. Activity is counted on the socket itself, below hyper.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use crate::config::ServerConfig;

/// The timeouts and the cap on open connections of the server.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    pub first_byte: Duration,
    pub idle: Duration,
    pub max_connections: usize,
    pub max_per_address: usize,
}

impl ConnectionLimits {
    /// The server's configured timeouts, checked against each other.
    pub fn from_config(server: &ServerConfig) -> Result<ConnectionLimits, String> {
        if server.idle_timeout <= server.request_timeout {
            return Err(format!(
                "the idle timeout ({} s) must exceed the request timeout ({} s)",
                server.idle_timeout, server.request_timeout
            ));
        }
        Ok(ConnectionLimits {
            first_byte: Duration::from_secs(server.header_timeout),
            idle: Duration::from_secs(server.idle_timeout),
            max_connections: server.max_connections,
            max_per_address: server.max_connections_per_address,
        })
    }
}

/// When a connection last moved a byte, in milliseconds since it was accepted (0: never).
pub struct Activity {
    accepted: Instant,
    last_millis: AtomicU64,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity { accepted: Instant::now(), last_millis: AtomicU64::new(0) })
    }

    fn touch(&self) {
        let millis = u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX).max(1);
        self.last_millis.store(millis, Ordering::Relaxed);
    }

    /// Resolves once the connection has been silent for too long.
    pub async fn silent(&self, limits: ConnectionLimits) {
        loop {
            let last = self.last_millis.load(Ordering::Relaxed);
            let deadline = if last == 0 {
                self.accepted + limits.first_byte
            } else {
                self.accepted + Duration::from_millis(last) + limits.idle
            };
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// A socket that records its activity.
pub struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Watched<S> {
        Watched { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
