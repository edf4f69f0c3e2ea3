//! Test harness: spawns the real application on port 0 against a fresh database (a new SQLite file,
//! or a new PostgreSQL database on the server named by `EDI_INBOX_TEST_POSTGRES`), and talks to it
//! over HTTP like a partner would.
#![allow(dead_code)] // each test binary uses its own part of the harness

pub mod accounting;
pub mod partners;
pub mod process;
pub mod relay;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};
use edi_inbox::app::{self, App};
use edi_inbox::config::{AccountingConfig, Cli, DatabaseConfig, ServerConfig};
use serde_json::Value;
use sqlx::Connection;
use tokio::sync::oneshot;
use uuid::Uuid;

/// The PostgreSQL server the tests create their databases on.
pub fn postgres_admin_url() -> String {
    std::env::var("EDI_INBOX_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh, empty database; dropped (PostgreSQL) or deleted (SQLite) by [`TestDb::remove`].
pub struct TestDb {
    pub url: String,
    backend: Backend,
    name: String,
    dir: Option<PathBuf>,
}

impl TestDb {
    pub async fn create(backend: Backend) -> TestDb {
        let name = format!("edi_inbox_test_{}", Uuid::now_v7().simple());
        match backend {
            Backend::Sqlite => {
                let dir = std::env::temp_dir().join(&name);
                std::fs::create_dir_all(&dir).expect("temp dir");
                let url = format!("sqlite://{}", dir.join("inbox.db").display());
                TestDb { url, backend, name, dir: Some(dir) }
            }
            Backend::Postgres => {
                let admin = postgres_admin_url();
                let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap_or_else(|e| {
                    panic!(
                        "PostgreSQL at {admin} is required for these tests (start it with scripts/test): {e}"
                    )
                });
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&mut conn)
                    .await
                    .expect("create test database");
                let url = match admin.rsplit_once('/') {
                    Some((server, _)) => format!("{server}/{name}"),
                    None => panic!("EDI_INBOX_TEST_POSTGRES must end with /DATABASE"),
                };
                TestDb { url, backend, name, dir: None }
            }
        }
    }

    pub async fn remove(self) {
        match self.backend {
            Backend::Sqlite => {
                if let Some(dir) = self.dir {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            Backend::Postgres => {
                if let Ok(mut conn) = sqlx::PgConnection::connect(&postgres_admin_url()).await {
                    let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
                    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await;
                }
            }
        }
    }
}

/// The settings `args` (command-line flags) give, read by the binary's own parser with its
/// documented defaults, so that the tests copy none of them; the environment of whoever runs the
/// tests is not read.
fn loaded(args: &[&str]) -> Cli {
    let args = std::iter::once("edi-inbox").chain(args.iter().copied());
    let matches = Cli::command().mut_args(|arg| arg.env(None)).try_get_matches_from(args);
    Cli::from_arg_matches(&matches.unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"))
}

/// The database settings for `url`: a smaller pool and a shorter wait than the defaults.
pub fn database_config(url: &str) -> DatabaseConfig {
    loaded(&["--database-url", url, "--db-max-connections", "8", "--db-timeout", "2"]).database
}

/// The server's default settings on an ephemeral loopback port.
pub fn server_config() -> ServerConfig {
    loaded(&["--bind", "127.0.0.1:0"]).server
}

/// Where the tests' server logs go (JSON, one file per test process), for `scripts/check-logs`,
/// which fails the run when a log holds a credential.
pub fn log_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("logs")
}

/// This test process's log file in [`log_dir`].
fn process_log_path() -> PathBuf {
    let test = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.file_stem().map(|s| s.to_string_lossy().into_owned()));
    log_dir().join(format!("{}-{}.log", test.unwrap_or_default(), std::process::id()))
}

/// The lines logged so far by this test process's servers that hold every one of `parts`.
pub fn logged_lines(parts: &[&str]) -> Vec<String> {
    let log = std::fs::read_to_string(process_log_path()).unwrap_or_default();
    log.lines().filter(|line| parts.iter().all(|part| line.contains(part))).map(str::to_owned).collect()
}

/// Sends this test process's server logs (JSON, `edi_inbox` at debug) to a file of its own in
/// [`log_dir`], once.
fn capture_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = std::fs::create_dir_all(log_dir());
        if let Ok(file) = std::fs::File::create(process_log_path()) {
            let _ = tracing_subscriber::fmt()
                .json()
                .with_env_filter(tracing_subscriber::EnvFilter::new("info,sqlx=warn,edi_inbox=debug"))
                .with_writer(std::sync::Mutex::new(file))
                .try_init();
        }
    });
}

/// The accounting settings `args` (command-line flags) give.
pub fn accounting_config(args: &[&str]) -> AccountingConfig {
    loaded(args).accounting
}

/// One running application instance.
pub struct TestApp {
    pub address: SocketAddr,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestApp {
    /// Starts an instance on `database_url` (migrating it) with `server`.
    pub async fn start(database: &DatabaseConfig, server: &ServerConfig) -> TestApp {
        TestApp::with_accounting(database, server, &accounting_config(&[])).await
    }

    /// Starts an instance that also relays and exports as `accounting` says.
    pub async fn with_accounting(
        database: &DatabaseConfig,
        server: &ServerConfig,
        accounting: &AccountingConfig,
    ) -> TestApp {
        capture_logs();
        let store = app::open_store(database).await.expect("database opens and migrates");
        let app = App::bind(store, server, accounting).await.expect("bind");
        let address = app.local_addr().expect("address");
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(app.serve(async move {
            let _ = stopped.await;
        }));
        TestApp { address, client: reqwest::Client::new(), stop: Some(stop), served: Some(served) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// POSTs `body` as `content_type` to the inbox.
    pub async fn post(&self, body: impl Into<reqwest::Body>, content_type: &str) -> Reply {
        Reply::send(
            self.client.post(self.url("/v1/interchanges")).header("content-type", content_type).body(body),
        )
        .await
    }

    /// POSTs a fixture file (path under tests/fixtures).
    pub async fn post_fixture(&self, path: &str) -> Reply {
        self.post(fixture(path), content_type_of(path)).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        Reply::send(self.client.get(self.url(path))).await
    }

    /// Every invoice currently booked, following the pagination.
    pub async fn all_invoices(&self) -> Vec<Value> {
        self.all_pages("/v1/invoices").await
    }

    /// Every interchange once the first one's delivery count (from the audit trail, where replays
    /// arrive in the background) reaches `deliveries`; as found after 5 s otherwise.
    pub async fn interchanges_audited(&self, deliveries: i64) -> Vec<Value> {
        eventually(
            async || self.all_interchanges().await,
            |items| items.first().is_some_and(|i| i["deliveries"] == deliveries),
        )
        .await
    }

    /// Every interchange currently stored, following the pagination.
    pub async fn all_interchanges(&self) -> Vec<Value> {
        self.all_pages("/v1/interchanges").await
    }

    async fn all_pages(&self, path: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page_path = match &cursor {
                Some(c) => format!("{path}?limit=500&cursor={c}"),
                None => format!("{path}?limit=500"),
            };
            let page = self.get(&page_path).await;
            assert_eq!(page.status, 200, "{}", page.text);
            let json = page.json();
            items.extend(json["items"].as_array().expect("items").iter().cloned());
            match json["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return items,
            }
        }
    }

    /// Stops serving (finishing requests in flight) and waits for it.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), served).await;
        }
    }
}

/// An application on a fresh database of its own.
pub struct Harness {
    pub app: TestApp,
    pub db: TestDb,
}

impl Harness {
    pub async fn start(backend: Backend) -> Harness {
        Harness::with_server(backend, server_config()).await
    }

    pub async fn with_server(backend: Backend, server: ServerConfig) -> Harness {
        Harness::with_accounting(backend, server, &accounting_config(&[])).await
    }

    pub async fn with_accounting(
        backend: Backend,
        server: ServerConfig,
        accounting: &AccountingConfig,
    ) -> Harness {
        let db = TestDb::create(backend).await;
        let app = TestApp::with_accounting(&database_config(&db.url), &server, accounting).await;
        Harness { app, db }
    }

    pub async fn finish(self) {
        self.app.stop().await;
        self.db.remove().await;
    }
}

/// A response, read completely.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    /// Sends a request built by a test and reads the whole response.
    pub async fn send(request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.expect("the request reaches the server");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("response body");
        Reply { status, headers, text }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts an RFC 9457 problem of the given status and type.
    pub fn assert_problem(&self, status: u16, kind: &str) -> Value {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(self.header("content-type"), Some("application/problem+json"), "{}", self.text);
        let problem = self.json();
        assert_eq!(problem["type"], format!("/problems/{kind}"), "{}", self.text);
        assert_eq!(problem["status"], status);
        assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()));
        problem
    }
}

/// What `probe` returns once `ready` holds of it, polled for up to 5 s (for what the server writes
/// in the background, such as the audit rows of replays); the last answer otherwise.
pub async fn eventually<T>(probe: impl AsyncFn() -> T, ready: impl Fn(&T) -> bool) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let found = probe().await;
        if ready(&found) || std::time::Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits up to 30 s for `probe` to return `want`.
pub async fn settles<T: PartialEq + std::fmt::Debug>(what: &str, want: T, probe: impl AsyncFn() -> T) {
    let mut last = probe().await;
    for _ in 0..300 {
        if last == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        last = probe().await;
    }
    assert_eq!(last, want, "{what}");
}

/// A fresh database with the schema (`edi-inbox migrate`), so that it can be counted before the
/// process that uses it has started.
pub async fn migrated(backend: Backend) -> TestDb {
    let db = TestDb::create(backend).await;
    let status = process::command(&db.url, &["migrate"]).status().expect("edi-inbox migrate runs");
    assert!(status.success(), "edi-inbox migrate");
    db
}

pub async fn invoices(db: &TestDb) -> i64 {
    count(&db.url, "SELECT COUNT(*) FROM invoices").await
}

/// One integer from the test database (either engine), for what the API does not show: how many
/// rows a table holds, how long a stored value is.
/// Moves every interchange, stored payload and audit row `days` back in time, on PostgreSQL, into
/// day partitions made for them: its purge drops whole expired days only, so a test's rows of
/// today must be made older. SQLite's purge is exact to the microsecond and needs none of it.
pub async fn age_on_postgres(url: &str, days: u32) {
    if url.starts_with("sqlite:") {
        return;
    }
    let pool = sqlx::PgPool::connect(url).await.expect("postgres");
    let sql = format!(
        "SELECT edi_inbox_partition(t::regclass, d::date)
            FROM unnest(ARRAY['payloads', 'deliveries']) AS t,
                generate_series((now() AT TIME ZONE 'UTC')::date - {days} - 1,
                    (now() AT TIME ZONE 'UTC')::date - {days}, interval '1 day') AS d;
        UPDATE inbox SET received_at = received_at - interval '{days} days';
        UPDATE payloads SET received_at = received_at - interval '{days} days';
        UPDATE deliveries SET received_at = received_at - interval '{days} days';"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&pool).await.expect("aged");
    pool.close().await;
}

pub async fn count(url: &str, sql: &str) -> i64 {
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("sqlite");
        let n = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&pool).await.expect(sql);
        pool.close().await;
        n
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("postgres");
        let n = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&pool).await.expect(sql);
        pool.close().await;
        n
    }
}

/// The one text column of every row `sql` returns.
pub async fn texts(url: &str, sql: &str) -> Vec<String> {
    let query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql));
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("sqlite");
        let rows = query.fetch_all(&pool).await.expect(sql);
        pool.close().await;
        rows
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("postgres");
        let rows = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_all(&pool).await.expect(sql);
        pool.close().await;
        rows
    }
}

pub fn fixture(path: &str) -> Vec<u8> {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// An X12 810 of its own: the single-invoice fixture under another interchange control number,
/// its invoice numbered after it (`INV-{control}`; 1142 is the fixture itself) so that it is an
/// invoice of its own too. [`resent`] is the same invoice under another control number.
pub fn numbered(control: u32) -> Vec<u8> {
    let text = String::from_utf8(resent(control)).expect("UTF-8");
    text.replace("INV-1042", &format!("INV-{}", control.wrapping_sub(100))).into_bytes()
}

/// The single-invoice fixture (its invoice `INV-1042`) under another interchange control number.
pub fn resent(control: u32) -> Vec<u8> {
    let text = String::from_utf8(fixture("x12/810-single.edi")).expect("UTF-8");
    text.replace("000001142", &format!("{control:09}")).into_bytes()
}

pub fn content_type_of(path: &str) -> &'static str {
    if path.starts_with("edifact") || path.contains("/invoic") {
        "application/edifact"
    } else {
        "application/edi-x12"
    }
}

/// Runs an async test body once per backend, each as its own test.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name($crate::common::Backend::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name($crate::common::Backend::Postgres).await;
                }
            )*
        }
    };
}

/// An interchange sent again in a new envelope, as a partner's translator regenerating its control
/// number or a VAN redelivering a mailbox sends it: ISA13 and IEA02 (X12) or UNB 0020 and UNZ 0002
/// (EDIFACT) replaced by `control`, every document as it was.
pub fn reenveloped(body: &[u8], control: &str) -> Vec<u8> {
    let text = std::str::from_utf8(body).expect("UTF-8");
    let start = text.len() - text.trim_start().len();
    let ((header, at_header), (trailer, at_trailer), element, terminator) =
        if text[start..].starts_with("ISA") {
            let isa: Vec<char> = text[start..].chars().take(106).collect();
            (("ISA", 13), ("IEA", 2), isa[3], isa[105])
        } else {
            let (element, terminator) = match text[start..].strip_prefix("UNA") {
                Some(una) => (una.chars().nth(1).expect("UNA"), una.chars().nth(5).expect("UNA")),
                None => ('+', '\''),
            };
            (("UNB", 5), ("UNZ", 2), element, terminator)
        };
    let mut out = String::with_capacity(text.len() + control.len());
    for segment in text.split_inclusive(terminator) {
        let body = segment.trim_start();
        let tag = body.split(element).next().unwrap_or_default();
        let at = match tag {
            tag if tag == header => at_header,
            tag if tag == trailer => at_trailer,
            _ => {
                out.push_str(segment);
                continue;
            }
        };
        out.push_str(&segment[..segment.len() - body.len()]);
        let mut elements: Vec<&str> = body.split(element).collect();
        let last = elements.len() - 1;
        let ending =
            if at == last { elements[last].strip_suffix(terminator).map(|_| terminator) } else { None };
        elements[at] = control;
        out.push_str(&elements.join(&element.to_string()));
        if let Some(terminator) = ending {
            out.push(terminator);
        }
    }
    out.into_bytes()
}
