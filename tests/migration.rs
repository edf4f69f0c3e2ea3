//! Migrations on a database that already holds rows, on SQLite and PostgreSQL. 0012 (the invoice
//! model): the rows survive (SQLite rebuilds `invoices`, which must not cascade to the lines), a
//! replay answers the stored bytes, and reading the invoice gives its tax as one entry of `taxes`
//! and its product id as one entry of `product_ids`. 0013 (holding mismatches): a partner's
//! identities and credentials survive SQLite's rebuild of `partners`, and its key still works.
//! 0015 (retention by day): stored payloads move out of `inbox` (on PostgreSQL into day partitions,
//! the audit trail too) with every byte, and the purge then drops them. 0021 (references checked
//! once per statement, PostgreSQL): rows booked under the foreign keys still go with their
//! interchange, and a row naming none is still refused. 0023 (business keys): invoices booked
//! before get theirs, and of two sharing one the later becomes the earlier's duplicate.

mod common;

use std::str::FromStr;

use common::{Backend, TestApp, TestDb, database_config, fixture, server_config};
use serde_json::{Value, json};
use sqlx::Connection;
use uuid::Uuid;

/// The previous model's answer, stored with the interchange: a replay must give it back unchanged.
const STORED_ANSWER: &str = r#"{"id":"stored","status":"processed","invoices":[{"number":"INV-1042","currency":"USD","total":"300.00"}],"warnings":[]}"#;

/// The rows the previous model wrote for one 810, as SQL literals of `backend`.
fn previous_rows(backend: Backend, payload: &[u8], fingerprint: &str, ids: [Uuid; 3]) -> String {
    let uuid = |id: Uuid| match backend {
        Backend::Sqlite => format!("X'{}'", id.simple()),
        Backend::Postgres => format!("'{id}'"),
    };
    let bytes = match backend {
        Backend::Sqlite => format!("X'{}'", hex(payload)),
        Backend::Postgres => format!("'\\x{}'::bytea", hex(payload)),
    };
    let [inbox, document, invoice] = ids.map(uuid);
    format!(
        "INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier, \
         receiver_id, control_number, payload_sha256, payload, content_type, status, response_body, received_at, \
         processed_at) VALUES ({inbox}, 'x12:ZZ:ACMESUPPLY', '000001142', 'x12', 'ZZ', 'ACMESUPPLY', 'ZZ', 'BUYERCO', \
         '000001142', '{fingerprint}', {bytes}, 'application/edi-x12', 'processed', '{STORED_ANSWER}', \
         '2026-03-17T10:15:00Z', '2026-03-17T10:15:00Z');
         INSERT INTO documents (id, inbox_id, position, doc_type, control_number) VALUES ({document}, {inbox}, 3, '810', '0001');
         INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, currency, total, tax_total, tax_rate, \
         seller_name, allowances_charges) VALUES ({invoice}, {inbox}, {document}, 'INV-1042', '2026-03-17', 'USD', \
         '300.00', '13.78', '5', 'Acme Supply', '[{{\"kind\":\"charge\",\"code\":\"D240\",\"amount\":\"27.99\"}}]');
         INSERT INTO invoice_lines (invoice_id, line_number, quantity, unit, unit_price, product_id, description, amount) \
         VALUES ({invoice}, 1, '2', 'EA', '150.00', 'P-1', 'Widget', '300.00');"
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Applies the migrations up to `version` and writes `rows` with them.
async fn migrated_to(version: i64, backend: Backend, url: &str, rows: String) {
    let rows = sqlx::AssertSqlSafe(rows);
    match backend {
        Backend::Sqlite => {
            let options = sqlx::sqlite::SqliteConnectOptions::from_str(url).unwrap().create_if_missing(true);
            let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
            sqlx::migrate!("migrations/sqlite").run_to(version, &pool).await.unwrap();
            sqlx::raw_sql(rows).execute(&pool).await.unwrap();
            pool.close().await;
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            sqlx::migrate!("migrations/postgres").run_to(version, &pool).await.unwrap();
            sqlx::raw_sql(rows).execute(&pool).await.unwrap();
            pool.close().await;
        }
    }
}

async fn an_invoice_booked_before_the_model_keeps_its_answer_and_its_figures(backend: Backend) {
    let db = TestDb::create(backend).await;
    let payload = fixture("x12/810-single.edi");
    let mut scratch = Vec::new();
    let interchange = edi_inbox::edi::parse(&payload, &mut scratch, Default::default()).unwrap();
    assert_eq!(interchange.envelope.control_number, "000001142", "the rows below are this fixture's");
    let ids = [Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7()];
    migrated_to(
        11,
        backend,
        &db.url,
        previous_rows(backend, &payload, interchange.fingerprint().as_str(), ids),
    )
    .await;

    let app = TestApp::start(&database_config(&db.url), &server_config()).await;
    let replay = app.post(payload, "application/edi-x12").await;
    assert_eq!((replay.status, replay.text.as_str()), (200, STORED_ANSWER), "a replay is the stored answer");
    let invoice = app.get(&format!("/v1/invoices/{}", ids[2])).await;
    assert_eq!(invoice.status, 200, "{}", invoice.text);
    let invoice = invoice.json();
    let booked = |field: &str| invoice[field].clone();
    assert_eq!(booked("kind"), "invoice");
    assert_eq!(booked("currency"), "USD");
    assert_eq!(
        (booked("total"), booked("tax_total"), booked("tax_rate")),
        (json!("300.00"), json!("13.78"), json!("5"))
    );
    assert_eq!(
        booked("taxes"),
        json!([{"tax_type": null, "category": null, "rate": "5", "taxable_amount": null, "amount": "13.78",
            "segment": null}])
    );
    assert_eq!(
        booked("allowances_charges"),
        json!([{"kind": "charge", "code": "D240", "amount": "27.99", "percentage": null, "segment": null}])
    );
    let unknown = json!({"number": null, "issue_date": null, "purchase_order": null, "original_invoice": null, "currency": null,
        "total": null, "tax_total": null, "seller": null, "buyer": null, "invoicee": null, "payee": null,
        "ship_to": null});
    assert_eq!(booked("sources"), unknown, "where its values were read is not known");
    assert_eq!(booked("seller")["name"], "Acme Supply");
    let lines = booked("lines");
    assert_eq!(lines.as_array().map(Vec::len), Some(1), "the line survived the migration: {lines}");
    let line = &lines[0];
    assert_eq!(line["product_ids"], json!([{"qualifier": null, "id": "P-1"}]));
    assert_eq!(
        (&line["product_id"], &line["amount"], &line["unit_price"]),
        (&json!("P-1"), &json!("300.00"), &json!("150.00"))
    );
    assert_eq!((&line["price_kind"], &line["allowances_charges"]), (&Value::Null, &json!([])));
    let unknown =
        json!({"line": null, "quantity": null, "unit_price": null, "amount": null, "description": null});
    assert_eq!(line["sources"], unknown);
    app.stop().await;
    db.remove().await;
}

async fn a_partner_registered_before_mismatches_could_be_held_keeps_its_senders_and_key(backend: Backend) {
    let db = TestDb::create(backend).await;
    let key = "a-partner-key-issued-before-migration-0013";
    let credential = match backend {
        Backend::Sqlite => format!("X'{}'", Uuid::now_v7().simple()),
        Backend::Postgres => format!("'{}'", Uuid::now_v7()),
    };
    let rows = format!(
        "INSERT INTO partners (id, name, status, created_at) VALUES ('acme', 'ACME', 'active', '2026-03-17T10:15:00Z');
         INSERT INTO partner_identities (partner_id, role, identity) VALUES ('acme', 'sender', 'x12:ZZ:ACMESUPPLY');
         INSERT INTO partner_credentials (id, partner_id, kind, key_sha256, created_at) \
         VALUES ({credential}, 'acme', 'api_key', '{}', '2026-03-17T10:15:00Z');",
        edi_inbox::partners::api_key_hash(key)
    );
    migrated_to(12, backend, &db.url, rows).await;

    let server =
        edi_inbox::config::ServerConfig { auth: edi_inbox::config::AuthMode::Partners, ..server_config() };
    let app = TestApp::start(&database_config(&db.url), &server).await;
    let request = app.client.post(app.url("/v1/interchanges")).bearer_auth(key);
    let request = request.header("content-type", "application/edi-x12").body(fixture("x12/810-single.edi"));
    let created = common::Reply::send(request).await;
    assert_eq!(created.status, 201, "the key and the sender identity survived: {}", created.text);
    app.stop().await;
    db.remove().await;
}

/// A database holding a payload and an audit row from March, upgraded: the payload reads back byte
/// for byte, the audit row is still there, a replay is the stored answer, and a purge with a 30-day
/// retention drops both (on PostgreSQL, their day partitions whole).
async fn payloads_and_the_audit_trail_stored_before_day_partitions_survive_and_expire(backend: Backend) {
    let db = TestDb::create(backend).await;
    let payload = fixture("x12/810-single.edi");
    let mut scratch = Vec::new();
    let interchange = edi_inbox::edi::parse(&payload, &mut scratch, Default::default()).unwrap();
    let ids = [Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7()];
    let attempt = match backend {
        Backend::Sqlite => format!("X'{}'", Uuid::now_v7().simple()),
        Backend::Postgres => format!("'{}'", Uuid::now_v7()),
    };
    let rows = format!(
        "{}
        INSERT INTO deliveries (id, source, message_id, outcome, status, body_bytes, received_at, door) \
        VALUES ({attempt}, 'x12:ZZ:ACMESUPPLY', '000001142', 'replayed', 200, {}, '2026-03-17T10:16:00Z', 'direct');",
        previous_rows(backend, &payload, interchange.fingerprint().as_str(), ids),
        payload.len()
    );
    migrated_to(14, backend, &db.url, rows).await;

    let store = edi_inbox::app::open_store(&database_config(&db.url)).await.unwrap();
    let stored = store.payload(ids[0]).await.unwrap().expect("the payload moved");
    assert_eq!((stored.0, stored.1.as_deref()), (payload.clone(), Some("application/edi-x12")));
    assert_eq!(common::count(&db.url, "SELECT COUNT(*) FROM deliveries").await, 1, "the audit row moved");
    let app = TestApp::start(&database_config(&db.url), &server_config()).await;
    let replay = app.post(payload.clone(), "application/edi-x12").await;
    assert_eq!((replay.status, replay.text.as_str()), (200, STORED_ANSWER));
    app.stop().await;

    let retention =
        edi_inbox::jobs::purge::Retention { payloads: chrono::Duration::days(30), keys: None, batch: 10 };
    let purged = edi_inbox::jobs::purge::purge(&store, retention, false).await.unwrap();
    assert_eq!((purged.payloads, purged.attempts), (1, 1), "{purged:?}");
    assert_eq!(store.payload(ids[0]).await.unwrap(), None);
    let march = "SELECT COUNT(*) FROM deliveries WHERE received_at < '2026-04-01'";
    assert_eq!(common::count(&db.url, march).await, 0);
    if backend == Backend::Postgres {
        let march =
            "SELECT COUNT(*) FROM pg_class WHERE relname IN ('payloads_p20260317', 'deliveries_p20260317')";
        assert_eq!(common::count(&db.url, march).await, 0, "March's partitions were dropped whole");
    }
    store.close().await;
    db.remove().await;
}

/// Two interchanges of one seller's INV-1042 booked before business keys (0023), the second a
/// resend of the first under another control number: after the migration the first stays booked,
/// the second is its duplicate (nothing deleted), and a new delivery of INV-1042 with other content
/// is caught as a re-used number.
async fn invoices_booked_before_business_keys_get_theirs_and_a_shared_one_marks_the_later(backend: Backend) {
    let db = TestDb::create(backend).await;
    let uuid = |id: Uuid| match backend {
        Backend::Sqlite => format!("X'{}'", id.simple()),
        Backend::Postgres => format!("'{id}'"),
    };
    let mut rows = String::new();
    let mut booked = Vec::new();
    for (n, control) in ["000000501", "000000502"].iter().enumerate() {
        let [inbox, document, invoice] = [Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7()];
        booked.push((inbox, invoice));
        let [inbox, document, invoice] = [inbox, document, invoice].map(uuid);
        rows.push_str(&format!(
            "INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier, \
             receiver_id, control_number, payload_sha256, content_type, status, response_body, received_at, \
             processed_at) VALUES ({inbox}, 'x12:ZZ:ACMESUPPLY', '{control}', 'x12', 'ZZ', 'ACMESUPPLY', 'ZZ', \
             'BUYERCO', '{control}', '{n:064}', 'application/edi-x12', 'processed', '{{}}', \
             '2026-03-1{n}T10:15:00Z', '2026-03-1{n}T10:15:00Z');
             INSERT INTO documents (id, inbox_id, position, doc_type, control_number) VALUES ({document}, {inbox}, 3, '810', '0001');
             INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, currency, total, seller_qualifier, \
             seller_id) VALUES ({invoice}, {inbox}, {document}, ' INV-1042', '2026-03-17', 'USD', '300.00', '92', 'ACME-001');"
        ));
    }
    migrated_to(22, backend, &db.url, rows).await;
    let app = TestApp::start(&database_config(&db.url), &server_config()).await;
    let first = app.get(&format!("/v1/invoices/{}", booked[0].1)).await.json();
    assert!(first.get("duplicate_of").is_none(), "the earliest stays booked: {first}");
    let second = app.get(&format!("/v1/invoices/{}", booked[1].1)).await.json();
    assert_eq!(second["duplicate_of"]["invoice_id"], booked[0].1.to_string(), "{second}");
    assert_eq!(second["duplicate_of"]["interchange_id"], booked[0].0.to_string(), "{second}");
    let refused = app.post(fixture("x12/810-single.edi"), "application/edi-x12").await;
    let problem = refused.assert_problem(422, "duplicate-invoice-number");
    assert!(problem["detail"].as_str().unwrap().contains(&booked[0].1.to_string()), "{problem}");
    app.stop().await;
    db.remove().await;
}

both_backends!(
    invoices_booked_before_business_keys_get_theirs_and_a_shared_one_marks_the_later,
    payloads_and_the_audit_trail_stored_before_day_partitions_survive_and_expire,
    an_invoice_booked_before_the_model_keeps_its_answer_and_its_figures,
    a_partner_registered_before_mismatches_could_be_held_keeps_its_senders_and_key
);

/// An interchange booked while foreign keys held its rows together, upgraded to the checks once per
/// statement: a line naming its invoice is taken, one naming no invoice is refused, and removing
/// the interchange removes its document, invoice and lines.
#[tokio::test]
async fn rows_booked_under_foreign_keys_go_with_their_interchange_on_postgres() {
    let db = TestDb::create(Backend::Postgres).await;
    let payload = fixture("x12/810-single.edi");
    let mut scratch = Vec::new();
    let interchange = edi_inbox::edi::parse(&payload, &mut scratch, Default::default()).unwrap();
    let ids = [Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7()];
    let rows = previous_rows(Backend::Postgres, &payload, interchange.fingerprint().as_str(), ids);
    migrated_to(11, Backend::Postgres, &db.url, rows).await;
    edi_inbox::app::open_store(&database_config(&db.url)).await.unwrap().close().await;

    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let line = |invoice: Uuid| {
        sqlx::AssertSqlSafe(format!(
            "INSERT INTO invoice_lines (invoice_id, line_number, quantity, amount) VALUES ('{invoice}', 2, 1, 1)"
        ))
    };
    let refused = sqlx::raw_sql(line(Uuid::now_v7())).execute(&mut conn).await.unwrap_err();
    let code = refused.as_database_error().and_then(|e| e.code()).map(|code| code.into_owned());
    assert_eq!(code.as_deref(), Some("23503"), "{refused}");
    sqlx::raw_sql(line(ids[2])).execute(&mut conn).await.expect("a line of the booked invoice is taken");
    let booked = "SELECT (SELECT COUNT(*) FROM documents) * 100 + (SELECT COUNT(*) FROM invoices) * 10 \
        + (SELECT COUNT(*) FROM invoice_lines)";
    assert_eq!(common::count(&db.url, booked).await, 100 + 10 + 2);
    let remove = sqlx::AssertSqlSafe(format!("DELETE FROM inbox WHERE id = '{}'", ids[0]));
    sqlx::raw_sql(remove).execute(&mut conn).await.unwrap();
    assert_eq!(common::count(&db.url, booked).await, 0, "the interchange went with all it booked");
    conn.close().await.unwrap();
    db.remove().await;
}
