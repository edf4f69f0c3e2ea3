//! A NUL character, wherever a request can put one, gets a 400 or 422 naming where it stands, the
//! same on both engines (PostgreSQL's text columns cannot hold it: before issue 28 these were 500s
//! that brokers retry forever, and a Pub/Sub message id with a NUL stopped the audit trail of every
//! partner). The audit trail goes on; and a record the database refuses never holds back the
//! others.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Utc;
use common::{Backend, Harness, Reply, numbered};
use edi_inbox::inbox::resource::IdempotencyKey;
use edi_inbox::store::{Attempt, AttemptFacts, Store, StoreOptions};
use serde_json::json;

async fn send(h: &Harness, content_type: &str, body: Vec<u8>) -> Reply {
    Reply::send(
        h.app.client.post(h.app.url("/v1/interchanges")).header("content-type", content_type).body(body),
    )
    .await
}

fn with(control: u32, from: &str, to: &str) -> Vec<u8> {
    String::from_utf8(numbered(control)).unwrap().replacen(from, to, 1).into_bytes()
}

async fn a_nul_is_refused_where_it_stands(backend: Backend) {
    let h = Harness::start(backend).await;
    let push = json!({"message": {"data": STANDARD.encode(numbered(28_101)), "messageId": "poison\u{0}"},
        "subscription": "projects/p/subscriptions/s"});
    let reply = send(&h, "application/json", push.to_string().into_bytes()).await;
    let problem = reply.assert_problem(400, "invalid-transport");
    assert!(
        problem["detail"].as_str().unwrap().starts_with("the body.message.messageId holds a NUL"),
        "{problem}"
    );
    let event = json!({"specversion": "1.0", "id": "e\u{0}", "source": "/acme", "type": "edi.x12",
        "data": String::from_utf8(numbered(28_102)).unwrap()});
    let reply = send(&h, "application/cloudevents+json", event.to_string().into_bytes()).await;
    assert!(
        reply.assert_problem(400, "invalid-transport")["detail"].as_str().unwrap().contains("the body.id")
    );

    let invalid = with(28_103, "INV-28003", "INV-28003\0");
    for _ in 0..2 {
        let reply = send(&h, "application/edi-x12", invalid.clone()).await;
        let problem = reply.assert_problem(422, "invalid-interchange");
        assert_eq!(
            (problem["segment"].as_str(), problem["element"].as_str()),
            (Some("BIG"), Some("BIG02")),
            "{problem}"
        );
    }
    let keyless = with(28_104, "000028104*0*P", "0000\u{0}8104*0*P");
    let problem = send(&h, "application/edi-x12", keyless).await.assert_problem(400, "malformed-interchange");
    assert_eq!(problem["element"], "ISA13", "{problem}");

    for path in [
        "/v1/interchanges?sender=%00",
        "/v1/interchanges?control_number=a%00b",
        "/v1/invoices?number=%00",
        "/v1/admin/partners/%00",
        "/console/interchanges?partner=%00",
    ] {
        let reply = h.app.get(path).await;
        let problem = reply.assert_problem(400, "invalid-request");
        assert!(problem["detail"].as_str().unwrap().contains("NUL"), "{path}: {problem}");
    }

    // The audit trail goes on: a delivery and its replay are both audited.
    let first = send(&h, "application/edi-x12", numbered(28_105)).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(send(&h, "application/edi-x12", numbered(28_105)).await.status, 200);
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let deliveries = format!("/v1/interchanges/{id}/deliveries");
    let audited = common::eventually(
        async || h.app.get(&deliveries).await.json()["items"].as_array().unwrap().len(),
        |&n| n == 2,
    )
    .await;
    assert_eq!(audited, 2);
    h.finish().await;
}

both_backends!(a_nul_is_refused_where_it_stands);

/// A record that PostgreSQL refuses (here a NUL that got past the edge) is dropped alone: the
/// records queued with it are written.
#[tokio::test]
async fn an_audit_record_the_database_refuses_holds_back_no_other() {
    let db = common::TestDb::create(Backend::Postgres).await;
    let options: StoreOptions = common::database_config(&db.url).store_options();
    let store = Store::connect(&db.url, &options).await.unwrap();
    store.migrate().await.unwrap();
    let attempt = |user_agent: &str, n: u32| Attempt {
        inbox_id: None,
        key: IdempotencyKey {
            source: "x12:ZZ:ACMESUPPLY".to_owned().try_into().unwrap(),
            message_id: format!("{n:09}"),
        },
        outcome: "bypassed",
        status: 200,
        facts: AttemptFacts::new(None, Some("192.0.2.1".into()), Some(user_agent), None),
        at: Utc::now(),
    };
    store.audit(attempt("good", 1));
    store.audit(attempt("bad\0", 2));
    store.audit(attempt("good", 3));
    store.refused(
        "unauthenticated",
        401,
        &AttemptFacts::new(None, Some("192.0.2.2".into()), None, None),
        Utc::now(),
    );
    let written = common::eventually(
        async || {
            common::count(&db.url, "SELECT COUNT(*) FROM deliveries").await
                + common::count(&db.url, "SELECT COUNT(*) FROM refusals").await
        },
        |&n| n == 3,
    )
    .await;
    assert_eq!(written, 3, "both good attempts and the refusal, without the bad one");
    store.close().await;
    db.remove().await;
}
