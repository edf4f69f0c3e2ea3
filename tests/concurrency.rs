//! Exactly one effect under concurrency: many identical deliveries at once, through one instance or
//! through two instances sharing one PostgreSQL database, give one 201, replays for the rest, and one
//! set of invoices.

mod common;

use std::sync::Arc;

use common::{Backend, Harness, Reply, TestApp, TestDb, database_config, fixture, server_config};

const DELIVERIES: usize = 64;

/// Fires `DELIVERIES` identical POSTs at once, spread round-robin over `apps`.
async fn storm(apps: &[Arc<TestApp>], path: &str) -> Vec<Reply> {
    let body = bytes::Bytes::from(fixture(path));
    let start = Arc::new(tokio::sync::Barrier::new(DELIVERIES));
    let tasks: Vec<_> = (0..DELIVERIES)
        .map(|i| {
            let app = Arc::clone(&apps[i % apps.len()]);
            let (body, start) = (body.clone(), Arc::clone(&start));
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
