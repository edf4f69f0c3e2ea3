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
