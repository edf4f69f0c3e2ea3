//! The API around the inbox: OpenAPI document and Swagger UI, probes, reading back, pagination,
//! request ids, every refused input with its exact status and problem type (and nothing stored),
//! and 503 + Retry-After (never a 2xx) when the database goes away.

mod common;

use std::time::Duration;

use common::{Backend, Harness, TestApp, TestDb, database_config, fixture, server_config};
use edi_inbox::jobs::purge::Retention;
use edi_inbox::store::Purged;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

async fn openapi_document_is_served_and_matches_the_committed_file(backend: Backend) {
    let h = Harness::start(backend).await;
    let served = h.app.get("/openapi.json").await;
    assert_eq!(served.status, 200);
    let committed = String::from_utf8(fixture("../../openapi/openapi.json")).unwrap();
    assert!(
        served.text == committed,
        "openapi/openapi.json is out of date: run `cargo run -- openapi > openapi/openapi.json`"
    );
    let spec = served.json();
    assert_eq!(spec["openapi"], "3.1.0");
    for path in [
        "/v1/interchanges",
        "/v1/interchanges/{id}",
        "/v1/invoices",
        "/v1/invoices/{id}",
        "/healthz",
        "/readyz",
    ] {
        assert!(spec["paths"][path].is_object(), "{path} is documented");
    }
    // Every reference resolves: a schema named by a parameter only is not collected by itself.
    let mut references = Vec::new();
    collect_references(&spec, &mut references);
    for reference in references {
        let name = reference.strip_prefix("#/components/schemas/").unwrap_or(&reference);
        assert!(spec["components"]["schemas"][name].is_object(), "{reference} resolves");
    }
    h.finish().await;
}

/// Every `$ref` in `value`.
fn collect_references(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value.as_str()) {
                    ("$ref", Some(reference)) => into.push(reference.to_owned()),
                    _ => collect_references(value, into),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| collect_references(item, into)),
        _ => {}
    }
}

async fn swagger_ui_is_served_offline(backend: Backend) {
    let h = Harness::start(backend).await;
    let page = h.app.get("/swagger-ui/").await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("swagger-ui"), "{}", page.text);
    let bundle = h.app.get("/swagger-ui/swagger-ui-bundle.js").await;
    assert_eq!(bundle.status, 200);
    assert!(bundle.text.len() > 100_000, "the vendored bundle is served by the binary");
    let initializer = h.app.get("/swagger-ui/swagger-initializer.js").await;
    assert!(initializer.text.contains("/openapi.json"), "{}", initializer.text);
    h.finish().await;
}

async fn probes_answer(backend: Backend) {
    let h = Harness::start(backend).await;
    let live = h.app.get("/healthz").await;
    assert_eq!((live.status, live.text.as_str()), (200, "ok"));
    let ready = h.app.get("/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    let mut expected =
        serde_json::json!({"status": "ready", "outbox": {"pending": 0, "dead": 0, "relay_lag_seconds": 0.0}});
    if backend == Backend::Postgres {
        // The PostgreSQL server written to, as `host:port`.
        let server: sqlx::postgres::PgConnectOptions = common::postgres_admin_url().parse().unwrap();
        expected["primary"] = format!("{}:{}", server.get_host(), server.get_port()).into();
    }
    assert_eq!(ready.json(), expected);
    assert!(live.header("x-request-id").is_some_and(|id| id.len() == 36), "a request id on every response");
    h.finish().await;
}

async fn invoices_and_interchanges_read_back_with_pagination(backend: Backend) {
    let h = Harness::start(backend).await;
    let mut created = Vec::new();
    for path in [
        "x12/810-single.edi",
        "x12/810-two-invoices-00501.edi",
        "edifact/invoic-two-messages-decimal-comma.edi",
    ] {
        let reply = h.app.post_fixture(path).await;
        assert_eq!(reply.status, 201, "{path}: {}", reply.text);
        created.push(reply.json());
    }
    // Every invoice of every POST body reads back identically.
    for interchange in &created {
        for invoice in interchange["invoices"].as_array().unwrap() {
            let stored = h.app.get(&format!("/v1/invoices/{}", invoice["id"].as_str().unwrap())).await;
            assert_eq!(stored.status, 200);
            assert_eq!(&stored.json(), invoice);
        }
    }
    let first = h.app.get("/v1/interchanges?limit=2").await.json();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["items"][0]["id"], created[2]["id"], "newest first");
    let cursor = first["next_cursor"].as_str().expect("a full page has a cursor");
    let second = h.app.get(&format!("/v1/interchanges?limit=2&cursor={cursor}")).await.json();
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert_eq!(second["items"][0]["id"], created[0]["id"]);
    assert!(second["next_cursor"].is_null());

    let by_sender = h.app.get("/v1/interchanges?sender=4000001000005").await.json();
    assert_eq!(by_sender["items"].as_array().unwrap().len(), 1);
    let rejected = h.app.get("/v1/interchanges?status=rejected").await.json();
    assert!(rejected["items"].as_array().unwrap().is_empty());

    let interchange_id = created[1]["id"].as_str().unwrap();
    let of_interchange = h.app.get(&format!("/v1/invoices?interchange_id={interchange_id}")).await.json();
    let numbers: Vec<_> =
        of_interchange["items"].as_array().unwrap().iter().map(|i| i["number"].clone()).collect();
    assert_eq!(numbers, ["INV-2002", "INV-2001"]);
    let by_number = h.app.get("/v1/invoices?number=RE-2026-0045").await.json();
    assert_eq!(by_number["items"][0]["total"], "34.51");
    assert_eq!(by_number["items"][0]["lines"][0]["unit_price"], "7.25");
    assert_eq!(h.app.all_invoices().await.len(), 5);
    h.finish().await;
}

async fn bad_reads_get_problems(backend: Backend) {
    let h = Harness::start(backend).await;
    let unknown = uuid::Uuid::now_v7();
    h.app.get(&format!("/v1/interchanges/{unknown}")).await.assert_problem(404, "not-found");
    h.app.get(&format!("/v1/invoices/{unknown}")).await.assert_problem(404, "not-found");
    h.app.get("/v1/interchanges/not-a-uuid").await.assert_problem(400, "invalid-request");
    h.app.get("/v1/invoices/42").await.assert_problem(400, "invalid-request");
    h.app.get("/v1/interchanges?limit=0").await.assert_problem(400, "invalid-request");
    h.app.get("/v1/interchanges?limit=501").await.assert_problem(400, "invalid-request");
    h.app.get("/v1/interchanges?status=pending").await.assert_problem(400, "invalid-request");
    h.app.get("/v1/invoices?cursor=nope").await.assert_problem(400, "invalid-request");
    h.finish().await;
}

/// Each refused delivery gets its exact status and problem type, and nothing is stored.
async fn refused_deliveries_store_nothing(backend: Backend) {
    let mut server = server_config();
    server.body_limit = 4096;
    let h = Harness::with_server(backend, server).await;
    let single = fixture("x12/810-single.edi");
    let oversized = [single.clone(), vec![b'\n'; 4096]].concat();
    let cases: Vec<(&str, Vec<u8>, &str, u16, &str)> = vec![
        ("empty body", Vec::new(), "application/edi-x12", 400, "malformed-interchange"),
        ("garbage", b"hello world".to_vec(), "text/plain", 400, "malformed-interchange"),
        ("NUL bytes", vec![0; 64], "application/octet-stream", 400, "malformed-interchange"),
        (
            "invalid UTF-8",
            vec![0xff, 0xfe, 0x00, 0x41],
            "application/octet-stream",
            400,
            "malformed-interchange",
        ),
        (
            "truncated ISA",
            fixture("x12/malformed-truncated-isa.edi"),
            "application/edi-x12",
            400,
            "malformed-interchange",
        ),
        (
            "UNB without sender",
            b"UNB+UNOC:3++R:14+260317:1015+1'UNZ+0+1'".to_vec(),
            "application/edifact",
            400,
            "malformed-interchange",
        ),
        (
            "JSON that is no Pub/Sub push",
            br#"{"isa": 1}"#.to_vec(),
            "application/json",
            400,
            "invalid-transport",
        ),
        ("XML", b"<isa/>".to_vec(), "application/xml", 415, "unsupported-media-type"),
        ("form", single.clone(), "application/x-www-form-urlencoded", 415, "unsupported-media-type"),
        ("over the body limit", oversized, "application/edi-x12", 413, "payload-too-large"),
    ];
    for (what, body, content_type, status, kind) in cases {
        let reply = h.app.post(body, content_type).await;
        assert_eq!(reply.status, status, "{what}: {}", reply.text);
        reply.assert_problem(status, kind);
    }
    assert!(h.app.all_interchanges().await.is_empty(), "nothing stored");
    assert!(h.app.all_invoices().await.is_empty());
    // No content type at all is taken as application/octet-stream.
    let untyped = h.app.client.post(h.app.url("/v1/interchanges")).body(single).send().await.unwrap();
    assert_eq!(untyped.status(), 201);
    h.finish().await;
}

both_backends!(
    openapi_document_is_served_and_matches_the_committed_file,
    swagger_ui_is_served_offline,
    probes_answer,
    invoices_and_interchanges_read_back_with_pagination,
    bad_reads_get_problems,
    refused_deliveries_store_nothing,
    purge_drops_payloads_but_keeps_the_dedup_memory,
);

/// A TCP relay in front of PostgreSQL that can be cut, like a network partition or a database crash.
struct Relay {
    port: u16,
    tasks: JoinSet<()>,
}

impl Relay {
    async fn start(upstream: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                connections.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        Relay { port, tasks }
    }

    /// Closes the listener and every relayed connection.
    async fn cut(mut self) {
        self.tasks.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn database_outage_answers_503_with_retry_after_and_never_2xx() {
    let db = TestDb::create(Backend::Postgres).await;
    let url = url_parts(&db.url);
    let relay = Relay::start(url.host_port.clone()).await;
    let relayed = format!("{}127.0.0.1:{}/{}", url.prefix, relay.port, url.database);
    let app = TestApp::start(&database_config(&relayed), &server_config()).await;
    assert_eq!(app.post_fixture("x12/810-single.edi").await.status, 201);

    relay.cut().await;
    for path in ["x12/810-two-invoices-00501.edi", "edifact/invoic-d96a.edi"] {
        let reply = app.post_fixture(path).await;
        let problem = reply.assert_problem(503, "unavailable");
        assert_eq!(reply.header("retry-after"), Some("5"));
        assert!(!problem["detail"].as_str().unwrap().contains("sqlx"), "no internals: {}", reply.text);
    }
    // A resend of what was committed before the outage is a replay, answered from memory.
    let replay = app.post_fixture("x12/810-single.edi").await;
    assert_eq!((replay.status, replay.header("idempotent-replayed")), (200, Some("true")), "{}", replay.text);
    app.get("/readyz").await.assert_problem(503, "unavailable");
    app.get("/v1/invoices").await.assert_problem(503, "unavailable");
    tokio::time::timeout(Duration::from_secs(15), app.stop()).await.expect("stops");

    // Nothing was half-written: the database holds exactly the first interchange.
    let direct = TestApp::start(&database_config(&db.url), &server_config()).await;
    assert_eq!(direct.all_interchanges().await.len(), 1);
    assert_eq!(direct.all_invoices().await.len(), 1);
    direct.stop().await;
    db.remove().await;
}

struct UrlParts {
    prefix: String,
    host_port: String,
    database: String,
}

/// Splits `postgres://user@host:port/db` into its parts.
fn url_parts(url: &str) -> UrlParts {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, database) = rest.split_once('/').unwrap();
    let (user, host_port) = authority.rsplit_once('@').map_or(("", authority), |(u, h)| (u, h));
    let prefix = if user.is_empty() { format!("{scheme}://") } else { format!("{scheme}://{user}@") };
    UrlParts { prefix, host_port: host_port.to_owned(), database: database.to_owned() }
}

/// The retention purge drops stored bodies but keeps keys, fingerprints and outcomes: a late resend
/// is still a replay, and a late reuse of the control number still a conflict.
async fn purge_drops_payloads_but_keeps_the_dedup_memory(backend: Backend) {
    let h = Harness::start(backend).await;
    let first = h.app.post_fixture("x12/810-single.edi").await;
    assert_eq!(first.status, 201);
    common::age_on_postgres(&h.db.url, 2).await;
    let store = edi_inbox::app::open_store(&database_config(&h.db.url)).await.unwrap();
    let nothing = Purged::default();
    let keep = |payloads| Retention { payloads, keys: None, batch: 1 };
    let purge =
        async |retention, dry_run| edi_inbox::jobs::purge::purge(&store, retention, dry_run).await.unwrap();
    assert_eq!(purge(keep(chrono::Duration::days(3)), false).await, nothing, "not expired yet");
    let expired = Purged { payloads: 1, attempts: 1, ..Purged::default() };
    assert_eq!(
        purge(keep(chrono::Duration::zero()), true).await,
        Purged { dry_run: true, ..expired },
        "a dry run counts"
    );
    assert_eq!(
        purge(keep(chrono::Duration::zero()), false).await,
        expired,
        "the body and the audit trail go"
    );
    assert_eq!(purge(keep(chrono::Duration::zero()), false).await, nothing, "purged once");
    let far = purge(keep(chrono::Duration::days(100_000_000)), false).await;
    assert_eq!(far, nothing, "a retention beyond the calendar keeps everything instead of panicking");
    store.close().await;

    let replay = h.app.post_fixture("x12/810-single-rewrapped.edi").await;
    assert_eq!((replay.status, replay.text), (200, first.text.clone()));
    h.app.post_fixture("x12/810-single-conflict.edi").await.assert_problem(409, "control-number-conflict");
    let id = first.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(h.app.get(&format!("/v1/interchanges/{id}")).await.text, first.text);
    h.finish().await;
}
