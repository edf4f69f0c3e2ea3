//! The hot path's shape, proved where it can be observed: a first delivery is one transaction (all
//! of its rows carry one transaction id), a replay writes nothing to its inbox row and takes no lock
//! on it, one failing delivery of a group commit fails only itself, partner changes made elsewhere
//! reach this instance within the directory's time to live, and a refusal sent before the body is
//! read still reaches a client that writes its whole body first.

mod common;

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use common::partners::{post_with_key, register, secured};
use common::{Backend, Harness, TestApp, count, database_config, fixture, server_config};
use edi_inbox::edi;
use edi_inbox::inbox::{Delivery, Ledger, Outcome, Received};
use edi_inbox::store::{AttemptFacts, FirstAttempt, Store, StoreError};
use serde_json::json;
use sqlx::Connection;

/// Every row a first delivery writes (inbox, documents, invoices, lines, acknowledgement, audit) was
/// written by one transaction, and replays leave the inbox row as it was (no `UPDATE`: the same
/// row version, so no lock and no write per replay).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_first_delivery_is_one_transaction_and_replays_write_nothing_to_its_row() {
    let h = Harness::start(Backend::Postgres).await;
    let created = h.app.post_fixture("x12/810-single.edi").await.json();
    let id = created["id"].as_str().unwrap();
    let transactions = format!(
        "SELECT COUNT(DISTINCT xid) FROM (
            SELECT xmin::text AS xid FROM inbox WHERE id = '{id}'
            UNION ALL SELECT xmin::text FROM documents WHERE inbox_id = '{id}'
            UNION ALL SELECT xmin::text FROM invoices WHERE inbox_id = '{id}'
            UNION ALL SELECT l.xmin::text FROM invoice_lines l JOIN invoices i ON i.id = l.invoice_id
                WHERE i.inbox_id = '{id}'
            UNION ALL SELECT xmin::text FROM acks WHERE inbox_id = '{id}'
            UNION ALL SELECT xmin::text FROM deliveries WHERE inbox_id = '{id}') AS written"
    );
    assert_eq!(count(&h.db.url, &transactions).await, 1, "one transaction wrote every row");
    let rows = "SELECT (SELECT COUNT(*) FROM invoice_lines) + (SELECT COUNT(*) FROM deliveries)";
    assert_eq!(count(&h.db.url, rows).await, 3, "two lines and the audit row");
    let version = format!("SELECT CAST(CAST(xmin AS text) AS bigint) FROM inbox WHERE id = '{id}'");
    let before = count(&h.db.url, &version).await;

    // A second instance has nothing cached, so its replays read the database.
    let other = TestApp::start(&database_config(&h.db.url), &server_config()).await;
    for _ in 0..5 {
        let replay = other.post_fixture("x12/810-single-rewrapped.edi").await;
        assert_eq!(replay.status, 200, "{}", replay.text);
    }
    assert_eq!(count(&h.db.url, &version).await, before, "the inbox row was not rewritten");
    let audited = h.app.interchanges_audited(6).await;
    assert_eq!(audited[0]["deliveries"], 6, "the replays are in the audit trail");
    other.stop().await;
    h.finish().await;
}

/// A replay is answered while another transaction holds the inbox row locked (replays used to
/// update the row, so they queued behind any lock on it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_completes_while_the_inbox_row_is_locked() {
    let h = Harness::start(Backend::Postgres).await;
    let created = h.app.post_fixture("x12/810-single.edi").await;
    assert_eq!(created.status, 201);
    let mut locker = sqlx::PgConnection::connect(&h.db.url).await.unwrap();
    sqlx::raw_sql("BEGIN; SELECT id FROM inbox FOR UPDATE").execute(&mut locker).await.unwrap();

    let other = TestApp::start(&database_config(&h.db.url), &server_config()).await;
    let request = other
        .client
        .post(other.url("/v1/interchanges"))
        .timeout(Duration::from_secs(5))
        .header("content-type", "application/edi-x12")
        .body(fixture("x12/810-single.edi"));
    let replay = request.send().await.expect("answered while the row is locked");
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.text().await.unwrap(), created.text);
    sqlx::raw_sql("ROLLBACK").execute(&mut locker).await.unwrap();
    other.stop().await;
    h.finish().await;
}

/// The delivery of an invoice of its own with `control` as its interchange control number
/// ([`common::numbered`]), as the HTTP layer builds it.
fn delivery(control: u32) -> Delivery {
    let body = bytes::Bytes::from(common::numbered(control));
    let mut scratch = Vec::new();
    let interchange = edi::parse(&body, &mut scratch, edi::Limits::default()).unwrap();
    Delivery::processed(
        &interchange,
        Received { payload: body.clone(), content_type: None, received_at: Utc::now() },
        &Ledger::default(),
    )
    .unwrap()
}

/// Deliveries recorded at once share commits (SQLite: one group commit), yet one that cannot be
/// written fails alone: the others are recorded, and nothing of the failed one remains.
async fn one_failing_delivery_fails_only_itself(backend: Backend) {
    let db = common::TestDb::create(backend).await;
    let store = edi_inbox::app::open_store(&database_config(&db.url)).await.unwrap();
    let first = FirstAttempt { facts: AttemptFacts::default(), outcome: "recorded", status: 201 };
    let earlier = Arc::new(delivery(1));
    assert!(matches!(store.record(&earlier, &first).await, Ok(Outcome::Recorded { .. })));
    let poisoned = delivery(99);
    // Its document's id taken already (by a row under the earlier delivery): its INSERT violates
    // the primary key.
    take_id(&db.url, poisoned.held_documents()[0].id, earlier.id()).await;
    let mut batch: Vec<Delivery> = (2..=9).map(delivery).collect();
    batch.insert(4, poisoned);
    let batch: Vec<Arc<Delivery>> = batch.into_iter().map(Arc::new).collect();
    let recorded = record_together(&store, &batch, &first).await;
    for (n, outcome) in recorded.iter().enumerate() {
        if n == 4 {
            assert!(matches!(outcome, Err(StoreError::Database(_))), "{outcome:?}");
        } else {
            assert!(matches!(outcome, Ok(Outcome::Recorded { .. })), "{n}: {outcome:?}");
        }
    }
    let stored = count(&db.url, "SELECT COUNT(*) FROM inbox").await;
    assert_eq!(stored, 9, "the failed delivery left no row");
    assert_eq!(count(&db.url, "SELECT COUNT(*) FROM invoices").await, 9);
    store.close().await;
    db.remove().await;
}

/// A `documents` row with `id` under the interchange `inbox_id`.
async fn take_id(url: &str, id: uuid::Uuid, inbox_id: uuid::Uuid) {
    let sql = "INSERT INTO documents (id, inbox_id, position, doc_type, control_number) \
               VALUES ($1, $2, 99, '810', 'TAKEN')";
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("sqlite");
        sqlx::query(sql).bind(id).bind(inbox_id).execute(&pool).await.expect(sql);
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("postgres");
        sqlx::query(sql).bind(id).bind(inbox_id).execute(&pool).await.expect(sql);
        pool.close().await;
    }
}

/// Records every delivery concurrently, so that the writer sees them queued together.
async fn record_together(
    store: &Store,
    deliveries: &[Arc<Delivery>],
    first: &FirstAttempt,
) -> Vec<Result<Outcome, StoreError>> {
    let tasks: Vec<_> = deliveries
        .iter()
        .map(|delivery| {
            let (store, delivery, first) = (store.clone(), Arc::clone(delivery), first.clone());
            tokio::spawn(async move { store.record(&delivery, &first).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

/// A key revoked by another replica (here: directly in the database) stops working once this
/// instance's partner directory has expired; changes through this instance apply at once.
async fn partner_changes_reach_every_instance_within_the_directory_ttl(backend: Backend) {
    let db = common::TestDb::create(backend).await;
    let database = edi_inbox::config::DatabaseConfig { partner_cache_ttl: 1, ..database_config(&db.url) };
    let app = TestApp::start(&database, &secured()).await;
    let h = Harness { app, db };
    let partner = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"]})).await;
    assert_eq!(post_with_key(&h, &partner.api_key, fixture("x12/810-single.edi")).await.status, 201);
    revoke_everything(&h.db.url).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    post_with_key(&h, &partner.api_key, fixture("x12/810-single.edi"))
        .await
        .assert_problem(401, "unauthorized");
    h.finish().await;
}

/// Revokes every credential behind the service's back, as another replica's admin call would.
async fn revoke_everything(url: &str) {
    const SQL: &str = "UPDATE partner_credentials SET revoked_at = created_at";
    if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query(SQL).execute(&mut conn).await.unwrap();
    } else {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query(SQL).execute(&mut conn).await.unwrap();
    }
}

/// A client that writes its whole body before reading (urllib, requests, Java) gets the 413 sent
/// for its declared length, and the 415 sent for its media type, instead of a reset connection.
async fn early_refusals_reach_clients_that_write_before_reading(backend: Backend) {
    let server = edi_inbox::config::ServerConfig { body_limit: 1024 * 1024, ..server_config() };
    let h = Harness::with_server(backend, server).await;
    for (content_type, length) in [("application/edi-x12", 4 * 1024 * 1024), ("text/html", 512 * 1024)] {
        let address = h.app.address;
        let answer = tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(address).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let head = format!(
                "POST /v1/interchanges HTTP/1.1\r\nhost: x\r\ncontent-type: {content_type}\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(&vec![b'x'; length]).expect("the whole body is taken");
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            answer
        })
        .await
        .unwrap();
        let expected = if content_type == "text/html" { "HTTP/1.1 415" } else { "HTTP/1.1 413" };
        assert!(answer.starts_with(expected), "{content_type}: {answer:?}");
    }
    h.finish().await;
}

both_backends!(
    one_failing_delivery_fails_only_itself,
    partner_changes_reach_every_instance_within_the_directory_ttl,
    early_refusals_reach_clients_that_write_before_reading,
);
