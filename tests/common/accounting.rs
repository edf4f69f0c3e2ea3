//! A real accounting API for the tests: an axum app on port 0 that books each invoice once per
//! `Idempotency-Key` (a resend gets the first answer again), records every request it receives,
//! notices two requests with one key in progress at once, and can be told to fail, to hang past
//! the relay's timeout, to book and then drop the connection without answering, or to stop
//! listening altogether.
#![allow(dead_code)] // each test binary uses its own part of the harness

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

/// What the next requests get.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Book and answer 201 `{"id": …}` (200 with the same body for a key booked before).
    Book,
    /// Answer this status without booking.
    Fail(u16),
    /// Book, then close the connection without answering.
    BookThenDrop,
    /// Answer nothing for this long (past the relay's timeout), booking nothing.
    Hang(Duration),
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Received {
    pub key: String,
    pub invoice_id: String,
    pub authorization: Option<String>,
    pub at: Instant,
    pub body: serde_json::Value,
}

#[derive(Default)]
struct Books {
    /// Reference by idempotency key.
    booked: HashMap<String, String>,
    received: Vec<Received>,
    in_progress: HashMap<String, usize>,
    /// Keys seen in progress twice at once.
    overlapping: Vec<String>,
    /// Modes for the next requests, in order; `Book` once they are used up.
    script: Vec<Mode>,
    /// Runs on the next request, before it is answered (e.g. to kill the relay mid-call).
    on_next: Option<Box<dyn FnOnce() + Send>>,
    /// How long each request is held before it is answered.
    delay: Duration,
}

/// A running accounting API.
pub struct Accounting {
    pub address: SocketAddr,
    books: Arc<Mutex<Books>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

/// Marks a response whose connection is to be closed instead of answered.
#[derive(Clone, Copy)]
struct DropConnection;

impl Accounting {
    pub async fn start() -> Accounting {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the accounting API");
        let address = listener.local_addr().expect("address");
        // Long enough for a second relay to collide with the first, were it to send the same message.
        let books = Arc::new(Mutex::new(Books { delay: Duration::from_millis(5), ..Books::default() }));
        let server = Some(tokio::spawn(serve(listener, Arc::clone(&books))));
        Accounting { address, books, server }
    }

    pub fn url(&self) -> String {
        format!("http://{}/invoices", self.address)
    }

    /// The next requests get `modes`, one each, in order.
    pub fn script(&self, modes: impl IntoIterator<Item = Mode>) {
        self.books.lock().unwrap().script = modes.into_iter().collect();
    }

    /// Holds each request for `delay` before answering it.
    pub fn set_delay(&self, delay: Duration) {
        self.books.lock().unwrap().delay = delay;
    }

    /// Runs `action` when the next request arrives (after booking it), before answering it.
    pub fn on_next_request(&self, action: impl FnOnce() + Send + 'static) {
        self.books.lock().unwrap().on_next = Some(Box::new(action));
    }

    /// Stops listening: calls are refused until [`Accounting::resume`].
    pub fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }

    /// Listens again on the same address.
    pub async fn resume(&mut self) {
        self.stop();
        let listener = TcpListener::bind(self.address).await.expect("bind the accounting API again");
        self.server = Some(tokio::spawn(serve(listener, Arc::clone(&self.books))));
    }

    /// Every request received, in order.
    pub fn received(&self) -> Vec<Received> {
        self.books.lock().unwrap().received.clone()
    }

    /// Reference by idempotency key of everything booked.
    pub fn booked(&self) -> HashMap<String, String> {
        self.books.lock().unwrap().booked.clone()
    }

    /// Keys that had two requests in progress at once.
    pub fn overlapping(&self) -> Vec<String> {
        self.books.lock().unwrap().overlapping.clone()
    }

    /// Waits up to `within` for `count` bookings.
    pub async fn wait_for_bookings(&self, count: usize, within: Duration) -> HashMap<String, String> {
        let deadline = Instant::now() + within;
        loop {
            let booked = self.booked();
            if booked.len() >= count || Instant::now() > deadline {
                return booked;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Accounting {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn serve(listener: TcpListener, books: Arc<Mutex<Books>>) {
    let app = Router::new().route("/invoices", axum::routing::post(book)).with_state(books);
    // Dropping a connection is asked for by the handler and done here: a service error makes hyper
    // close the connection without writing a response.
    let service = tower::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        let mut app = app.clone();
        let request = request.map(axum::body::Body::new);
        async move {
            let response: Response =
                tower::Service::<axum::extract::Request>::call(&mut app, request).await.expect("infallible");
            if response.extensions().get::<DropConnection>().is_some() {
                return Err(std::io::Error::other("dropping the connection as scripted"));
            }
            Ok(response)
        }
    });
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let service = hyper::service::service_fn({
            let service = service.clone();
            move |request| tower::ServiceExt::oneshot(service.clone(), request)
        });
        tokio::spawn(async move {
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn book(State(books): State<Arc<Mutex<Books>>>, headers: HeaderMap, body: Bytes) -> Response {
    // The key is an RFC 8941 string: in double quotes.
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix('"')?.strip_suffix('"'))
        .map(str::to_owned);
    let Some(key) = key else {
        return (StatusCode::BAD_REQUEST, "an Idempotency-Key string is required").into_response();
    };
    let Ok(invoice) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "the body is not JSON").into_response();
    };
    let (mode, on_next, delay) = {
        let mut books = books.lock().unwrap();
        books.received.push(Received {
            key: key.clone(),
            invoice_id: invoice["id"].as_str().unwrap_or_default().to_owned(),
            authorization: headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned),
            at: Instant::now(),
            body: invoice,
        });
        let in_progress = books.in_progress.entry(key.clone()).or_default();
        *in_progress += 1;
        if *in_progress > 1 {
            books.overlapping.push(key.clone());
        }
        let mode = if books.script.is_empty() { Mode::Book } else { books.script.remove(0) };
        (mode, books.on_next.take(), books.delay)
    };
    let _in_progress = InProgress { books: Arc::clone(&books), key: key.clone() };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let answer = |books: &mut Books| {
        let fresh = !books.booked.contains_key(&key);
        let next = format!("ACC-{}", books.booked.len() + 1);
        let reference = books.booked.entry(key.clone()).or_insert(next).clone();
        let status = if fresh { StatusCode::CREATED } else { StatusCode::OK };
        (status, axum::Json(serde_json::json!({ "id": reference }))).into_response()
    };
    let response = match mode {
        Mode::Book => answer(&mut books.lock().unwrap()),
        Mode::Fail(status) => StatusCode::from_u16(status).expect("status").into_response(),
        Mode::BookThenDrop => {
            answer(&mut books.lock().unwrap());
            let mut dropped = StatusCode::OK.into_response();
            dropped.extensions_mut().insert(DropConnection);
            dropped
        }
        Mode::Hang(time) => {
            tokio::time::sleep(time).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
    };
    if let Some(action) = on_next {
        action();
    }
    response
}

/// A request in progress, until its handler ends or is dropped (the client went away).
struct InProgress {
    books: Arc<Mutex<Books>>,
    key: String,
}

impl Drop for InProgress {
    fn drop(&mut self) {
        if let Ok(mut books) = self.books.lock() {
            *books.in_progress.entry(self.key.clone()).or_default() -= 1;
        }
    }
}
