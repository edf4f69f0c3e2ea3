//! Exactly one effect under concurrency: many identical deliveries at once, through one instance or
//! through two instances sharing one PostgreSQL database, give one 201, replays for the rest, and one
//! set of invoices.

mod common;

use std::sync::Arc;

use common::{
    Backend, Harness, Reply, TestApp, TestDb, accounting_config, count, database_config, fixture,
    reenveloped, server_config,
};

const DELIVERIES: usize = 64;

/// Fires `DELIVERIES` identical POSTs at once, spread round-robin over `apps`.
async fn storm(apps: &[Arc<TestApp>], path: &str) -> Vec<Reply> {
    let body = bytes::Bytes::from(fixture(path));
    storm_of(apps, |_| body.clone()).await
}

/// Fires `DELIVERIES` POSTs at once, the `i`th `body(i)`, spread round-robin over `apps`.
async fn storm_of(apps: &[Arc<TestApp>], body: impl Fn(usize) -> bytes::Bytes) -> Vec<Reply> {
    let start = Arc::new(tokio::sync::Barrier::new(DELIVERIES));
    let tasks: Vec<_> = (0..DELIVERIES)
        .map(|i| {
            let app = Arc::clone(&apps[i % apps.len()]);
            let (body, start) = (body(i), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                app.post(body, "application/edi-x12").await
            })
        })
        .collect();
    let mut replies = Vec::with_capacity(DELIVERIES);
    for task in tasks {
        replies.push(task.await.expect("delivery task"));
    }
    replies
}

fn assert_exactly_once(replies: &[Reply]) {
    let created: Vec<_> = replies.iter().filter(|r| r.status == 201).collect();
    let replayed: Vec<_> = replies.iter().filter(|r| r.status == 200).collect();
    assert_eq!(
        created.len(),
        1,
        "statuses: {:?}",
        replies.iter().map(|r| (r.status, &r.text)).collect::<Vec<_>>()
    );
    assert_eq!(replayed.len(), DELIVERIES - 1);
    for replay in replayed {
        assert_eq!(replay.header("idempotent-replayed"), Some("true"));
        assert_eq!(replay.text, created[0].text);
    }
}

async fn parallel_identical_posts_create_one_invoice(backend: Backend) {
    let h = Harness::start(backend).await;
    let app = Arc::new(h.app);
    let replies = storm(std::slice::from_ref(&app), "x12/810-two-invoices-00501.edi").await;
    assert_exactly_once(&replies);
    assert_eq!(app.all_invoices().await.len(), 2, "one interchange with two invoices");
    let interchanges = app.interchanges_audited(DELIVERIES as i64).await;
    assert_eq!(interchanges.len(), 1);
    assert_eq!(interchanges[0]["deliveries"], DELIVERIES);
    Arc::into_inner(app).expect("sole owner").stop().await;
    h.db.remove().await;
}

both_backends!(parallel_identical_posts_create_one_invoice);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_sharing_postgres_create_one_invoice() {
    let db = TestDb::create(Backend::Postgres).await;
    let config = database_config(&db.url);
    let apps = [
        Arc::new(TestApp::start(&config, &server_config()).await),
        Arc::new(TestApp::start(&config, &server_config()).await),
    ];
    assert_ne!(apps[0].address, apps[1].address);
    let replies = storm(&apps, "x12/810-single.edi").await;
    assert_exactly_once(&replies);
    for app in &apps {
        assert_eq!(app.all_invoices().await.len(), 1);
    }
    for app in apps {
        Arc::into_inner(app).expect("sole owner").stop().await;
    }
    db.remove().await;
}

/// One interchange's two invoices sent under 64 different control numbers at once, through two
/// instances sharing one PostgreSQL database (so through different batches, connections and
/// processes): 64 interchanges recorded (201 each), each invoice booked once, every other copy
/// `duplicate_of` it, and exactly one outbox message per invoice for the accounting API.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_interchange_under_64_control_numbers_books_each_invoice_once() {
    let db = TestDb::create(Backend::Postgres).await;
    let config = database_config(&db.url);
    let accounting = accounting_config(&["--accounting-url", "http://127.0.0.1:9/books", "--relay", "false"]);
    let apps = [
        Arc::new(TestApp::with_accounting(&config, &server_config(), &accounting).await),
        Arc::new(TestApp::with_accounting(&config, &server_config(), &accounting).await),
    ];
    let original = fixture("x12/810-two-invoices-00501.edi");
    let replies = storm_of(&apps, |i| reenveloped(&original, &format!("{:09}", 500_000 + i)).into()).await;
    let statuses: Vec<_> = replies.iter().map(|r| r.status).collect();
    assert!(statuses.iter().all(|&s| s == 201), "each its own interchange: {statuses:?}");
    let invoices: Vec<_> =
        replies.iter().flat_map(|r| r.json()["invoices"].as_array().unwrap().clone()).collect();
    assert_eq!(invoices.len(), 2 * DELIVERIES);
    let booked: Vec<_> = invoices.iter().filter(|i| i.get("duplicate_of").is_none()).collect();
    let mut numbers: Vec<_> = booked.iter().map(|i| i["number"].as_str().unwrap()).collect();
    numbers.sort_unstable();
    assert_eq!(numbers.len(), 2, "each invoice booked once: {numbers:?}");
    assert_ne!(numbers[0], numbers[1]);
    for copy in invoices.iter().filter(|i| i.get("duplicate_of").is_some()) {
        let of = booked.iter().find(|b| b["number"] == copy["number"]).expect("its booked invoice");
        assert_eq!(copy["duplicate_of"]["invoice_id"], of["id"], "{copy}");
        assert_eq!(copy["duplicate_of"]["interchange_id"], of["interchange_id"], "{copy}");
    }
    assert_eq!(apps[0].all_invoices().await.len(), 2 * DELIVERIES, "every copy is kept with its interchange");
    let outbox = count(&db.url, "SELECT count(*) FROM outbox").await;
    let sent = count(
        &db.url,
        "SELECT count(DISTINCT invoice_id) FROM outbox JOIN invoices i ON i.id = invoice_id \
        WHERE i.duplicate_of IS NULL",
    )
    .await;
    assert_eq!((outbox, sent), (2, 2), "one outbox message per booked invoice");
    for app in apps {
        Arc::into_inner(app).expect("sole owner").stop().await;
    }
    db.remove().await;
}
