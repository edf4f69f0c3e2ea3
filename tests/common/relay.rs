//! A TCP relay that can be cut, standing between a process and the database it uses: an outage
//! without stopping the shared server.

/// A TCP relay to PostgreSQL that can be cut: every connection closed and new ones refused.
pub struct Relay {
    pub port: u16,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    cut: std::sync::Arc<tokio::sync::Notify>,
}

impl Relay {
    pub async fn start(upstream: std::net::SocketAddr) -> Relay {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let cut = std::sync::Arc::new(tokio::sync::Notify::new());
        let (up_flag, cut_signal) = (up.clone(), cut.clone());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !up_flag.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is closed at once
                }
                let cut_signal = cut_signal.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut_signal.notified() => {}
                    }
                });
            }
        });
        Relay { port, up, cut }
    }

    pub fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        self.cut.notify_waiters();
    }

    pub fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
