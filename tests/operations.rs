//! What operators and containers run: `edi-inbox config`, `edi-inbox probe`, the operator's
//! commands (`quarantine`, `outbox`, `sns`: the admin API's use cases), and the retention purge (in
//! batches during ingest, the key retention, one replica at a time, whole days on PostgreSQL).

mod common;

use common::partners::{admin, secured};
use common::{Backend, Harness, Reply, TestApp, count, database_config, numbered, process, server_config};
use edi_inbox::app;
use edi_inbox::jobs::purge::{self, Retention};
use edi_inbox::store::Purged;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Connection;

/// `edi-inbox config` prints every setting with its value and where it came from, never a secret.
#[test]
fn config_shows_each_value_and_its_source_without_secrets() {
    let output = process::command(
        "postgres://app:database-password@db.example/inbox",
        &[
            "config",
            "--rate-limit",
            "5",
            "--accounting-token",
            "accounting-secret",
            "--accounting-url",
            "https://relay:url-password@acct.example/book?api_key=url-key&region=eu",
        ],
    )
    .env("EDI_INBOX_ADMIN_TOKEN", "admin-secret")
    .output()
    .expect("edi-inbox config runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    for secret in ["database-password", "accounting-secret", "admin-secret", "url-password", "url-key"] {
        assert!(!text.contains(secret), "{secret} is shown:\n{text}");
    }
    let settings: Vec<Value> = serde_json::from_str(&text).unwrap();
    let setting = |name: &str| settings.iter().find(|s| s["name"] == name).cloned().unwrap_or_default();
    assert_eq!(
        setting("database-url"),
        json!({"name": "database-url", "env": "DATABASE_URL", "value": "postgres://app:***@db.example/inbox", "source": "env"})
    );
    assert_eq!(setting("rate-limit")["value"], "5");
    assert_eq!(setting("rate-limit")["source"], "flag");
    assert_eq!(
        (&setting("admin-token")["value"], &setting("admin-token")["source"]),
        (&json!("***"), &json!("env"))
    );
    assert_eq!(setting("accounting-token")["source"], "flag");
    assert_eq!(
        (&setting("retention-days")["value"], &setting("retention-days")["source"]),
        (&json!("90"), &json!("default"))
    );
    assert_eq!(
        (&setting("accounting-url")["value"], &setting("accounting-url")["source"]),
        (&json!("https://relay:***@acct.example/book?api_key=***&region=eu"), &json!("flag"))
    );
    assert!(settings.len() > 30, "every setting is listed: {}", settings.len());
}

/// A credential standing alone in the accounting URL (`https://TOKEN@host/`) is masked too, and an
/// accounting URL that does not parse is refused without quoting its credentials.
#[test]
fn a_url_credential_is_shown_neither_alone_nor_in_an_error() {
    let config = |url: &str| {
        process::command("sqlite::memory:", &["config", "--accounting-url", url])
            .output()
            .expect("edi-inbox config runs")
    };
    let shown = config("http://SECRET-TOKEN@acct.example/x");
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(!text.contains("SECRET-TOKEN") && text.contains("http://***@acct.example/x"), "{text}");
    let refused = config("http://user:SECRET-PASSWORD@[not-a-host/x");
    assert!(!refused.status.success());
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(error.contains("is not a URL") && !error.contains("SECRET-PASSWORD"), "{error}");
    assert!(error.contains("http://***@[not-a-host/x"), "{error}");
}

/// `edi-inbox probe`, the image's health check, passes against a ready server and fails once it is
/// gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_passes_while_the_server_is_ready() {
    let h = Harness::start(Backend::Sqlite).await;
    let url = h.app.url("/readyz");
    let probe = || process::command(&h.db.url, &["probe", &url]).output().expect("edi-inbox probe runs");
    assert!(probe().status.success(), "{}", String::from_utf8_lossy(&probe().stderr));
    let address = h.app.address;
    h.finish().await;
    let gone = process::command("sqlite::memory:", &["probe", &format!("http://{address}/readyz")])
        .output()
        .unwrap();
    assert!(!gone.status.success(), "a stopped server fails the probe");
}

fn retention(payloads: chrono::Duration, keys: Option<chrono::Duration>, batch: u32) -> Retention {
    Retention { payloads, keys, batch }
}

/// Purge goes on while deliveries keep arriving (in small batches on SQLite, whole days on
/// PostgreSQL): none of them waits for it or fails, every expired body goes, and a replay of a
/// purged interchange still answers its stored outcome.
async fn purge_runs_in_batches_while_ingest_goes_on(backend: Backend) {
    let h = Harness::start(backend).await;
    let first = h.app.post(numbered(1), "application/edi-x12").await;
    assert_eq!(first.status, 201);
    for n in 2..=200 {
        assert_eq!(h.app.post(numbered(n), "application/edi-x12").await.status, 201);
    }
    common::age_on_postgres(&h.db.url, 2).await;
    let store = app::open_store(&database_config(&h.db.url)).await.unwrap();
    let ingest = {
        let (client, url) = (h.app.client.clone(), h.app.url("/v1/interchanges"));
        tokio::spawn(async move {
            let mut statuses = Vec::new();
            for n in 201..=400 {
                let body = numbered(n);
                let reply =
                    Reply::send(client.post(&url).header("content-type", "application/edi-x12").body(body))
                        .await;
                statuses.push(reply.status);
            }
            statuses
        })
    };
    let purged = purge::purge(&store, retention(chrono::Duration::zero(), None, 7), false).await.unwrap();
    let statuses = ingest.await.unwrap();
    assert!(statuses.iter().all(|s| *s == 201), "ingest during the purge: {statuses:?}");
    assert!(purged.payloads >= 200, "{purged:?}");
    let without_payload =
        "SELECT COUNT(*) FROM inbox i WHERE NOT EXISTS (SELECT 1 FROM payloads p WHERE p.inbox_id = i.id)";
    assert!(count(&h.db.url, without_payload).await >= 200);
    assert_eq!(count(&h.db.url, "SELECT COUNT(*) FROM inbox").await, 400, "the keys stay");
    let replay = h.app.post(numbered(1), "application/edi-x12").await;
    assert_eq!((replay.status, replay.text), (200, first.text), "the outcome outlives the body");
    store.close().await;
    h.finish().await;
}

/// With a key retention, interchanges older than it go with their invoices; a resend after that is
/// processed again, as the operator chose.
async fn keys_go_after_the_key_retention(backend: Backend) {
    let h = Harness::start(backend).await;
    let first = h.app.post(numbered(1), "application/edi-x12").await;
    let invoice = first.json()["invoices"][0]["id"].as_str().unwrap().to_owned();
    let store = app::open_store(&database_config(&h.db.url)).await.unwrap();
    let forever = purge::purge(&store, retention(chrono::Duration::zero(), None, 10), true).await.unwrap();
    assert_eq!(forever.interchanges, 0, "keys stay forever by default");
    let horizon = retention(chrono::Duration::zero(), Some(chrono::Duration::zero()), 10);
    let counted = purge::purge(&store, horizon, true).await.unwrap();
    assert_eq!((counted.interchanges, counted.dry_run), (1, true));
    assert_eq!(h.app.get(&format!("/v1/invoices/{invoice}")).await.status, 200, "a dry run drops nothing");
    let purged = purge::purge(&store, horizon, false).await.unwrap();
    assert_eq!(purged.interchanges, 1, "{purged:?}");
    h.app.get(&format!("/v1/invoices/{invoice}")).await.assert_problem(404, "not-found");
    let left = "SELECT (SELECT COUNT(*) FROM documents) + (SELECT COUNT(*) FROM invoices) \
        + (SELECT COUNT(*) FROM invoice_lines) + (SELECT COUNT(*) FROM acks)";
    assert_eq!(count(&h.db.url, left).await, 0, "the interchange went with every row it booked");
    store.close().await;
    // A new instance (the replay cache of the old one still remembers the key).
    let again = TestApp::start(&database_config(&h.db.url), &server_config()).await;
    assert_eq!(again.post(numbered(1), "application/edi-x12").await.status, 201, "processed anew");
    again.stop().await;
    h.finish().await;
}

/// Runs `edi-inbox` with `args` on `db`: its JSON on success, its error message otherwise.
fn operator(h: &Harness, args: &[&str]) -> Result<Value, String> {
    let output = process::command(&h.db.url, args).output().expect("edi-inbox runs");
    match output.status.success() {
        true => Ok(serde_json::from_slice(&output.stdout).expect("JSON")),
        false => Err(String::from_utf8_lossy(&output.stderr).into_owned()),
    }
}

/// The command line resolves held deliveries as the admin API does (listed, released into a
/// booked interchange once, discarded), and says what is missing or in the wrong state, exiting 1.
async fn operators_resolve_held_deliveries_from_the_command_line(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let (_, conflict, invalid) = common::partners::holding_two(&h).await;
    let (conflict, invalid) = (conflict["id"].as_str().unwrap(), invalid["id"].as_str().unwrap());

    let held = operator(&h, &["quarantine", "list", "--status", "held", "--limit", "1"]).unwrap();
    assert_eq!(held["items"].as_array().unwrap().len(), 1, "{held}");
    let rest = held["next_cursor"].as_str().expect("a second page");
    let next = operator(&h, &["quarantine", "list", "--status", "held", "--cursor", rest]).unwrap();
    let mut ids: Vec<&str> =
        [&held, &next].iter().map(|page| page["items"][0]["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    let mut expected = vec![conflict, invalid];
    expected.sort_unstable();
    assert_eq!(ids, expected);

    // The conflicting resend re-uses INV-1042 with another quantity: a release must say what it
    // books it as.
    let undecided = operator(&h, &["quarantine", "release", conflict]).unwrap_err();
    assert!(undecided.contains("say what it is booked as"), "{undecided}");
    let released = operator(&h, &["quarantine", "release", conflict, "--as", "new"]).unwrap();
    assert_eq!(released["status"], "released", "{released}");
    let recorded = released["released_as"].as_str().unwrap();
    let interchange = admin(&h, Method::GET, &format!("/v1/interchanges/{recorded}"), None).await;
    assert_eq!((interchange.status, interchange.json()["status"].as_str()), (200, Some("processed")));
    let again = operator(&h, &["quarantine", "release", conflict]).unwrap_err();
    assert!(again.contains("the delivery is released; only held ones are resolved"), "{again}");
    let still_invalid = operator(&h, &["quarantine", "release", invalid]).unwrap_err();
    assert!(still_invalid.contains("still invalid"), "{still_invalid}");
    let discarded = operator(&h, &["quarantine", "discard", invalid]).unwrap();
    assert_eq!(discarded["status"], "discarded");
    let held = admin(&h, Method::GET, "/v1/admin/quarantine?status=held", None).await.json();
    assert_eq!(held["items"], json!([]), "the API sees what the command line did");

    let unknown = uuid::Uuid::now_v7().to_string();
    let missing = operator(&h, &["quarantine", "discard", &unknown]).unwrap_err();
    assert!(missing.contains(&format!("no quarantine entry {unknown}")), "{missing}");
    let missing = operator(&h, &["outbox", "retry", &unknown]).unwrap_err();
    assert!(missing.contains(&format!("no outbox message {unknown}")), "{missing}");
    let missing = operator(&h, &["sns", "confirm", &unknown]).unwrap_err();
    assert!(missing.contains(&format!("no SNS subscription message {unknown}")), "{missing}");
    assert_eq!(operator(&h, &["outbox", "list", "--status", "dead"]).unwrap()["items"], json!([]));
    assert_eq!(operator(&h, &["sns", "list"]).unwrap()["items"], json!([]));
    h.finish().await;
}

both_backends!(
    operators_resolve_held_deliveries_from_the_command_line,
    purge_runs_in_batches_while_ingest_goes_on,
    keys_go_after_the_key_retention,
    metrics_cover_requests_interchanges_and_the_database,
);

/// Only one replica purges at a time: while another session holds the purge lock, a run skips.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_purges_at_a_time() {
    let h = Harness::start(Backend::Postgres).await;
    assert_eq!(h.app.post(numbered(1), "application/edi-x12").await.status, 201);
    common::age_on_postgres(&h.db.url, 2).await;
    let store = app::open_store(&database_config(&h.db.url)).await.unwrap();
    let mut other = sqlx::PgConnection::connect(&h.db.url).await.unwrap();
    sqlx::query("SELECT pg_advisory_lock(x'6564692d696e626f'::bigint)").execute(&mut other).await.unwrap();
    let skipped = purge::purge(&store, retention(chrono::Duration::zero(), None, 10), false).await.unwrap();
    assert_eq!(skipped, Purged { skipped: true, ..Purged::default() });
    sqlx::query("SELECT pg_advisory_unlock_all()").execute(&mut other).await.unwrap();
    let purged = purge::purge(&store, retention(chrono::Duration::zero(), None, 10), false).await.unwrap();
    assert_eq!(purged.payloads, 1, "{purged:?}");
    store.close().await;
    h.finish().await;
}

/// On PostgreSQL an interchange's documents, invoices and lines reference their parents (checked
/// once per statement, migration 0021): a row naming no parent is refused with a foreign key's
/// violation, the whole statement, whether inserted or updated; an invoice's document must belong
/// to the invoice's interchange; a parent's id cannot change while a row names it; a row naming
/// its parent is taken; and removing an interchange removes what it booked, down to its lines, and
/// nothing of another interchange.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn booked_rows_reference_their_parents_on_postgres() {
    let h = Harness::start(Backend::Postgres).await;
    let first = h.app.post(numbered(1), "application/edi-x12").await.json();
    assert_eq!(h.app.post(numbered(2), "application/edi-x12").await.status, 201);
    let (interchange, invoice) =
        (first["id"].as_str().unwrap(), first["invoices"][0]["id"].as_str().unwrap());
    let mut db = sqlx::PgConnection::connect(&h.db.url).await.unwrap();
    let orphans = [
        "INSERT INTO documents (id, inbox_id, position, doc_type, control_number) \
            VALUES (gen_random_uuid(), gen_random_uuid(), 1, '810', '0001')",
        "INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, total, business_key) \
            SELECT gen_random_uuid(), inbox_id, gen_random_uuid(), 'X', '2026-01-01', 1, 'X' FROM invoices LIMIT 1",
        "INSERT INTO invoice_lines (invoice_id, line_number, quantity, amount) \
            SELECT id, 99, 1, 1 FROM invoices UNION ALL SELECT gen_random_uuid(), 1, 1, 1",
        // A new document of the other interchange, named by an invoice of this one.
        &format!(
            "WITH d AS (INSERT INTO documents (id, inbox_id, position, doc_type, control_number) \
                SELECT gen_random_uuid(), inbox_id, 99, '810', '0099' FROM invoices \
                WHERE inbox_id <> '{interchange}' RETURNING id) \
            INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, total, business_key) \
            SELECT gen_random_uuid(), '{interchange}', d.id, 'X', '2026-01-01', 1, 'Y' FROM d"
        ),
        "UPDATE invoice_lines SET invoice_id = gen_random_uuid() WHERE line_number = 1",
        "UPDATE invoices SET document_id = gen_random_uuid()",
        "UPDATE documents SET inbox_id = gen_random_uuid()",
        &format!("UPDATE inbox SET id = gen_random_uuid() WHERE id = '{interchange}'"),
        &format!("UPDATE documents SET id = gen_random_uuid() WHERE inbox_id = '{interchange}'"),
        &format!("UPDATE invoices SET id = gen_random_uuid() WHERE id = '{invoice}'"),
    ];
    for orphan in orphans {
        let error = sqlx::raw_sql(sqlx::AssertSqlSafe(orphan.to_owned())).execute(&mut db).await.unwrap_err();
        let code = error.as_database_error().and_then(|e| e.code()).map(|code| code.into_owned());
        assert_eq!(code.as_deref(), Some("23503"), "{orphan}: {error}");
    }
    let line = format!(
        "INSERT INTO invoice_lines (invoice_id, line_number, quantity, amount) VALUES ('{invoice}', 3, 1, 1)"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(line)).execute(&mut db).await.expect("a line of an invoice is taken");
    let rows = "SELECT (SELECT COUNT(*) FROM documents) * 100 + (SELECT COUNT(*) FROM invoices) * 10 \
        + (SELECT COUNT(*) FROM invoice_lines)";
    assert_eq!(
        count(&h.db.url, rows).await,
        200 + 20 + 5,
        "two interchanges: two lines each, and the one added"
    );
    let remove = format!("DELETE FROM inbox WHERE id = '{interchange}'");
    sqlx::raw_sql(sqlx::AssertSqlSafe(remove)).execute(&mut db).await.unwrap();
    assert_eq!(count(&h.db.url, rows).await, 100 + 10 + 2, "the other interchange's rows stay");
    h.finish().await;
}

/// On PostgreSQL the purge drops whole days: every partition of payloads and audit rows whose day
/// is past the retention goes with its rows counted (one an earlier run left detached too), the
/// coming week's partitions exist, an operator's own table is left alone, and the detach waits for
/// a reader of the old day without holding up a single delivery meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_purge_drops_expired_days_whole_without_holding_up_ingest() {
    let h = Harness::start(Backend::Postgres).await;
    assert_eq!(h.app.post(numbered(1), "application/edi-x12").await.status, 201);
    let mut db = sqlx::PgConnection::connect(&h.db.url).await.unwrap();
    sqlx::raw_sql(
        "SELECT edi_inbox_partition(t::regclass, current_date - d)
            FROM unnest(ARRAY['payloads', 'deliveries']) AS t, unnest(ARRAY[100, 99]) AS d;
        INSERT INTO payloads (inbox_id, received_at, body)
            SELECT gen_random_uuid(), now() - interval '100 days', '\\x00' FROM generate_series(1, 3);
        INSERT INTO payloads (inbox_id, received_at, body) VALUES (gen_random_uuid(), now() - interval '99 days', '\\x00');
        INSERT INTO deliveries (id, outcome, status, body_bytes, received_at)
            SELECT gen_random_uuid(), 'replayed', 200, 1, now() - interval '100 days' FROM generate_series(1, 2);
        CREATE TABLE payloads_archive (body bytea);",
    )
    .execute(&mut db)
    .await
    .unwrap();
    let day = |days_from_today: i32| {
        let today = chrono::Utc::now().date_naive();
        let day = today.checked_add_signed(chrono::Duration::days(days_from_today.into())).unwrap();
        day.format("%Y%m%d").to_string()
    };
    // An earlier run that detached a day and stopped before dropping it.
    let left = format!("payloads_p{}", day(-99));
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("ALTER TABLE payloads DETACH PARTITION {left}")))
        .execute(&mut db)
        .await
        .unwrap();
    // A reader of the oldest day: the detach must wait for it, and ingest must not wait for the detach.
    let mut reader = sqlx::PgConnection::connect(&h.db.url).await.unwrap();
    let oldest = format!("payloads_p{}", day(-100));
    sqlx::raw_sql(
        "BEGIN ISOLATION LEVEL REPEATABLE READ; \
        SELECT COUNT(*) FROM payloads WHERE received_at < now() - interval '50 days'",
    )
    .execute(&mut reader)
    .await
    .unwrap();
    let store = app::open_store(&database_config(&h.db.url)).await.unwrap();
    let purging = tokio::spawn(async move {
        let purged = purge::purge(&store, retention(chrono::Duration::days(30), None, 10), false).await;
        store.close().await;
        purged
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!purging.is_finished(), "the detach waits for the reader");
    for n in 2..=20 {
        let request =
            h.app.client.post(h.app.url("/v1/interchanges")).timeout(std::time::Duration::from_secs(3));
        let reply =
            Reply::send(request.header("content-type", "application/edi-x12").body(numbered(n))).await;
        assert_eq!(reply.status, 201, "delivery {n} while the purge waits: {}", reply.text);
    }
    sqlx::raw_sql("COMMIT").execute(&mut reader).await.unwrap();
    let purged = purging.await.unwrap().unwrap();
    assert_eq!((purged.payloads, purged.attempts), (4, 2), "{purged:?}");
    let url = h.db.url.clone();
    let exists = |name: String| {
        let (sql, url) = (format!("SELECT COUNT(*) FROM pg_class WHERE relname = '{name}'"), url.clone());
        async move { count(&url, &sql).await }
    };
    assert_eq!(exists(oldest).await, 0, "the oldest day was dropped");
    assert_eq!(exists(left).await, 0, "the day left detached was dropped");
    assert_eq!(exists(format!("deliveries_p{}", day(-100))).await, 0);
    assert_eq!(exists("payloads_archive".into()).await, 1, "not a day partition");
    assert_eq!(exists(format!("payloads_p{}", day(7))).await, 1, "a week ahead");
    assert_eq!(exists(format!("deliveries_p{}", day(7))).await, 1);
    assert_eq!(count(&h.db.url, "SELECT COUNT(*) FROM payloads").await, 20, "today's stay");
    h.finish().await;
}

/// A key retention shorter than the payload retention is refused at start.
#[test]
fn keys_cannot_go_before_their_payloads() {
    let output = process::command(
        "sqlite::memory:",
        &["purge", "--retention-days", "30", "--key-retention-days", "7"],
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the key retention (7 days) must be at least the retention (30 days)"),
        "{stderr}"
    );
}

/// `/metrics` counts requests by route and status, interchanges by partner, standard and outcome,
/// times replays since their first delivery, requests and database batches, and shows the pool and
/// what is stored.
async fn metrics_cover_requests_interchanges_and_the_database(backend: Backend) {
    let h = Harness::start(backend).await;
    assert_eq!(h.app.post(numbered(1), "application/edi-x12").await.status, 201);
    assert_eq!(h.app.post(numbered(1), "application/edi-x12").await.status, 200);
    assert_eq!(h.app.post(b"not edi".to_vec(), "application/edi-x12").await.status, 400);
    let text = h.app.get("/metrics").await.text;
    for expected in [
        "edi_inbox_interchanges_total{partner=\"-\",standard=\"x12\",outcome=\"recorded\"} 1",
        "edi_inbox_interchanges_total{partner=\"-\",standard=\"x12\",outcome=\"replayed\"} 1",
        "edi_inbox_interchanges_total{partner=\"-\",standard=\"-\",outcome=\"malformed\"} 1",
        "edi_inbox_http_requests_total{route=\"/v1/interchanges\",method=\"POST\",status=\"201\"} 1",
        "edi_inbox_http_requests_total{route=\"/v1/interchanges\",method=\"POST\",status=\"400\"} 1",
        "edi_inbox_replay_delay_seconds_count 1",
        "edi_inbox_http_request_duration_seconds_count{route=\"/v1/interchanges\",method=\"POST\"} 3",
        "edi_inbox_interchanges_stored ",
        "edi_inbox_oldest_payload_age_seconds ",
        "edi_inbox_db_connections{state=\"idle\"}",
        "# HELP edi_inbox_replay_delay_seconds ",
    ] {
        assert!(text.contains(expected), "{expected} in\n{text}");
    }
    let batches = format!(
        "edi_inbox_db_batch_duration_seconds_count{{backend=\"{}\"}}",
        match backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    );
    assert!(text.contains(&batches), "{batches} in\n{text}");
    if backend == Backend::Sqlite {
        assert!(text.contains("edi_inbox_interchanges_stored 1\n"), "{text}");
    }
    h.finish().await;
}
