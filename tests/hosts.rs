//! A libpq multi-host `DATABASE_URL`: hosts are tried in order, one that refuses connections is
//! passed over, the first writable primary is written to, and `/readyz` names it.
//! (`scripts/failover.py` loses the primary of a real primary and standby under load.)

mod common;

use common::{Backend, Reply, TestApp, TestDb, database_config, numbered, server_config};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_first_writable_host_of_a_multi_host_url_is_written_to() {
    let db = TestDb::create(Backend::Postgres).await;
    let (user, rest) = db.url.split_once('@').expect("postgres://USER@HOST:PORT/DATABASE");
    let (host, database) = rest.split_once('/').expect("a database");
    // Port 1 of loopback refuses connections: the first host is down.
    let url = format!("{user}@127.0.0.1:1,{host}/{database}?target_session_attrs=read-write");
    let app = TestApp::start(&database_config(&url), &server_config()).await;
    let ready = Reply::send(app.client.get(app.url("/readyz"))).await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert_eq!(ready.json()["primary"], host);
    let created = app.post(numbered(801), "application/edi-x12").await;
    assert_eq!(created.status, 201, "{}", created.text);
    app.stop().await;
    db.remove().await;
}

/// `--require-synchronous-standby` on a primary whose commits wait for no standby (the test
/// server's `synchronous_standby_names` is empty) is refused at start, naming the setting; on
/// SQLite, which has no standby, too. (`scripts/failover.py synchronous` runs it on a primary with a
/// streaming synchronous standby, where `/readyz` reports it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_whose_commits_wait_for_no_standby_is_refused_when_one_is_required() {
    let db = TestDb::create(Backend::Postgres).await;
    let mut database = database_config(&db.url);
    database.require_synchronous_standby = true;
    let Err(error) = edi_inbox::app::open_store(&database).await else {
        panic!("started on a primary without a synchronous standby");
    };
    let error = error.to_string();
    assert!(error.contains("synchronous_standby_names is empty"), "{error}");
    database.database_url = "sqlite::memory:".into();
    let Err(error) = edi_inbox::app::open_store(&database).await else { panic!("started on SQLite") };
    assert!(error.to_string().contains("needs PostgreSQL"), "{error}");
    db.remove().await;
}
