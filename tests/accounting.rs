//! The accounting side effect through the transactional outbox, against a real HTTP accounting
//! API (tests/common/accounting.rs): each invoice booked exactly once through failures, timeouts,
//! dropped connections, a relay killed mid-call and two replicas relaying at once; dead letters
//! listed, retried and discarded through the admin API.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::accounting::{Accounting, Mode};
use common::partners::ADMIN;
use common::process::{self, Process};
use common::{
    Backend, Harness, Reply, TestDb, accounting_config, count, eventually, numbered, server_config,
};
use edi_inbox::config::{AccountingConfig, ServerConfig};
use serde_json::{Value, json};

const TOKEN: &str = "accounting-token-for-tests";

/// Relays to `accounting` quickly: 1 s timeout (so a 3 s lease), 20 ms first backoff, 50 ms polls.
fn relaying(accounting: &Accounting, extra: &[&str]) -> AccountingConfig {
    let url = accounting.url();
    let mut args = vec![
        "--accounting-url",
        &url,
        "--accounting-token",
        TOKEN,
        "--accounting-timeout",
        "1",
        "--relay-backoff-ms",
        "20",
        "--relay-poll-ms",
        "50",
    ];
    args.extend_from_slice(extra);
    accounting_config(&args)
}

fn with_admin() -> ServerConfig {
    ServerConfig { admin_token: Some(ADMIN.into()), ..server_config() }
}

async fn admin_post(h: &Harness, path: &str) -> Reply {
    Reply::send(h.app.client.post(h.app.url(path)).bearer_auth(ADMIN)).await
}

async fn admin_get(h: &Harness, path: &str) -> Reply {
    Reply::send(h.app.client.get(h.app.url(path)).bearer_auth(ADMIN)).await
}

/// The invoice's accounting state once `ready` holds of it (as found after 5 s otherwise).
async fn accounting_state(h: &Harness, invoice_id: &str, ready: impl Fn(&Value) -> bool) -> Value {
    eventually(
        async || h.app.get(&format!("/v1/invoices/{invoice_id}")).await.json()["accounting"].clone(),
        ready,
    )
    .await
}

fn invoice_ids(reply: &Reply) -> Vec<String> {
    reply.json()["invoices"]
        .as_array()
        .expect("invoices")
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The Idempotency-Key of the README's INV-1042, worked out here as docs/edi-mapping.md says: the
/// first 16 bytes of the SHA-256 of `{business key}#{revision}` as a UUID of version 8.
fn key_of_inv_1042() -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest("x12:ZZ:ACMESUPPLY 92 ACME-001 invoice INV-1042 *#0");
    let mut bytes: [u8; 16] = digest[..16].try_into().unwrap();
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(bytes).to_string()
}

/// First deliveries book each invoice once, with the invoice JSON and an Idempotency-Key derived
/// from its business key; replays and conflicts queue nothing; the invoice shows what accounting said.
async fn every_invoice_is_booked_once(backend: Backend) {
    let accounting = Accounting::start().await;
    let h = Harness::with_accounting(backend, with_admin(), &relaying(&accounting, &[])).await;
    let two = h.app.post_fixture("x12/810-two-invoices-00501.edi").await;
    assert_eq!(two.status, 201, "{}", two.text);
    assert!(!two.text.contains("accounting"), "the interchange response never changes: {}", two.text);
    let single = h.app.post_fixture("x12/810-single.edi").await;
    assert_eq!(single.status, 201);
    assert_eq!(h.app.post_fixture("x12/810-single.edi").await.status, 200);
    assert_eq!(h.app.post_fixture("x12/810-single-conflict.edi").await.status, 409);

    let booked = accounting.wait_for_bookings(3, Duration::from_secs(10)).await;
    let mut expected: Vec<Value> = two.json()["invoices"].as_array().unwrap().clone();
    expected.extend(single.json()["invoices"].as_array().unwrap().iter().cloned());
    assert_eq!(booked.len(), 3, "{booked:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let received = accounting.received();
    assert_eq!(received.len(), 3, "each invoice is sent once: {received:?}");
    for invoice in &expected {
        let id = invoice["id"].as_str().unwrap();
        let key = &received.iter().find(|r| r.invoice_id == id).expect("sent").key;
        let state = accounting_state(&h, id, |s| s["status"] == "delivered").await;
        assert_eq!(
            state,
            json!({"status": "delivered", "reference": booked[key], "attempts": 1, "last_error": null})
        );
    }
    let single_id = single.json()["invoices"][0]["id"].as_str().unwrap().to_owned();
    let single_key = &received.iter().find(|r| r.invoice_id == single_id).unwrap().key;
    assert_eq!(single_key, &key_of_inv_1042(), "derived from the business key");
    for request in &received {
        assert_eq!(request.authorization.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
        assert!(
            expected.contains(&request.body),
            "the body is the invoice as the API shows it: {}",
            request.body
        );
    }
    assert_eq!(
        count(&h.db.url, "SELECT COUNT(*) FROM outbox").await,
        3,
        "replays and conflicts queue nothing"
    );
    let delivered = h.app.get("/v1/invoices?accounting_status=delivered").await.json();
    assert_eq!(delivered["items"].as_array().unwrap().len(), 3);
    let pending = h.app.get("/v1/invoices?accounting_status=pending").await.json();
    assert_eq!(pending["items"], json!([]));
    let ready = h.app.get("/readyz").await.json();
    assert_eq!(ready["outbox"], json!({"pending": 0, "dead": 0, "relay_lag_seconds": 0.0}));
    let metrics = h.app.get("/metrics").await.text;
    assert!(metrics.contains("edi_inbox_relay_attempts_total{result=\"delivered\"} 3"), "{metrics}");
    assert!(metrics.contains("edi_inbox_outbox_messages{status=\"pending\"} 0"), "{metrics}");
    h.finish().await;
}

/// Without an accounting API nothing is queued and invoices carry no accounting state.
async fn without_an_accounting_api_nothing_is_queued(backend: Backend) {
    let h = Harness::start(backend).await;
    let reply = h.app.post_fixture("x12/810-single.edi").await;
    assert_eq!(reply.status, 201);
    let invoice = h.app.get(&format!("/v1/invoices/{}", invoice_ids(&reply)[0])).await.json();
    assert!(invoice.get("accounting").is_none(), "{invoice}");
    assert_eq!(count(&h.db.url, "SELECT COUNT(*) FROM outbox").await, 0);
    h.finish().await;
}

/// A 503, a booking whose answer is lost with its connection, and a call that outlives the timeout
/// are all retried; the Idempotency-Key keeps it one booking.
async fn failures_are_retried_and_booked_once(backend: Backend) {
    let accounting = Accounting::start().await;
    accounting.script([Mode::Fail(503), Mode::BookThenDrop, Mode::Hang(Duration::from_millis(2500))]);
    let h = Harness::with_accounting(backend, with_admin(), &relaying(&accounting, &[])).await;
    let reply = h.app.post_fixture("x12/810-single.edi").await;
    assert_eq!(reply.status, 201);
    let id = &invoice_ids(&reply)[0];
    let state = eventually(
        async || accounting_state(&h, id, |s| s["status"] == "delivered").await,
        |s| s["status"] == "delivered",
    )
    .await;
    assert_eq!(
        state,
        json!({"status": "delivered", "reference": "ACC-1", "attempts": 4, "last_error": null})
    );
    let received = accounting.received();
    assert_eq!(received.len(), 4, "{received:?}");
    assert!(received.iter().all(|r| &r.invoice_id == id && r.key == key_of_inv_1042()), "{received:?}");
    assert_eq!(accounting.booked().len(), 1, "booked once");
    h.finish().await;
}

/// An accounting API down for longer than the attempts dead-letters the message; the admin API lists
/// it, sends it again once the API is back, and discards one the API refuses for good.
async fn dead_letters_are_listed_retried_and_discarded(backend: Backend) {
    let mut accounting = Accounting::start().await;
    accounting.stop();
    let config = relaying(&accounting, &["--relay-max-attempts", "3"]);
    let h = Harness::with_accounting(backend, with_admin(), &config).await;
    let reply = h.app.post_fixture("x12/810-single.edi").await;
    let id = invoice_ids(&reply)[0].clone();
    let state = accounting_state(&h, &id, |s| s["status"] == "dead").await;
    assert_eq!((&state["status"], &state["attempts"]), (&json!("dead"), &json!(3)), "{state}");
    assert!(
        state["last_error"].as_str().is_some_and(|e| e.ends_with("(gave up after 3 attempts)")),
        "{state}"
    );

    let dead = admin_get(&h, "/v1/admin/outbox?status=dead").await.json();
    let items = dead["items"].as_array().unwrap();
    assert_eq!((items.len(), items[0]["invoice_id"].as_str()), (1, Some(id.as_str())), "{dead}");
    let message = items[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(items[0]["idempotency_key"], json!(key_of_inv_1042()));
    let listed = h.app.get("/v1/invoices?accounting_status=dead").await.json();
    assert_eq!(listed["items"][0]["id"], json!(id));
    assert_eq!(h.app.get("/readyz").await.json()["outbox"]["dead"], 1);
    assert!(h.app.get("/metrics").await.text.contains("edi_inbox_outbox_messages{status=\"dead\"} 1"));

    let anonymous =
        Reply::send(h.app.client.post(h.app.url(&format!("/v1/admin/outbox/{message}/retry")))).await;
    anonymous.assert_problem(401, "unauthorized");
    admin_post(&h, &format!("/v1/admin/outbox/{}/retry", uuid::Uuid::now_v7()))
        .await
        .assert_problem(404, "not-found");
    admin_post(&h, "/v1/admin/outbox/not-a-uuid/retry").await.assert_problem(400, "invalid-request");
    admin_get(&h, "/v1/admin/outbox?status=lost").await.assert_problem(400, "invalid-request");
    h.app.get("/v1/invoices?accounting_status=lost").await.assert_problem(400, "invalid-request");

    accounting.resume().await;
    let retried = admin_post(&h, &format!("/v1/admin/outbox/{message}/retry")).await;
    assert_eq!(retried.status, 200, "{}", retried.text);
    assert_eq!((&retried.json()["status"], &retried.json()["attempts"]), (&json!("pending"), &json!(0)));
    let state = accounting_state(&h, &id, |s| s["status"] == "delivered").await;
    assert_eq!((&state["status"], &state["attempts"]), (&json!("delivered"), &json!(1)), "{state}");
    assert_eq!(accounting.booked().len(), 1);
    admin_post(&h, &format!("/v1/admin/outbox/{message}/retry")).await.assert_problem(409, "wrong-state");
    admin_post(&h, &format!("/v1/admin/outbox/{message}/discard")).await.assert_problem(409, "wrong-state");

    accounting.script([Mode::Fail(422)]);
    let refused = h.app.post_fixture("x12/810-one-line.edi").await;
    let refused_id = invoice_ids(&refused)[0].clone();
    let state = accounting_state(&h, &refused_id, |s| s["status"] == "dead").await;
    assert_eq!(
        (&state["status"], &state["attempts"]),
        (&json!("dead"), &json!(1)),
        "refused for good: {state}"
    );
    assert!(state["last_error"].as_str().is_some_and(|e| e.starts_with("HTTP 422")), "{state}");
    let dead = admin_get(&h, "/v1/admin/outbox?status=dead").await.json();
    let message = dead["items"][0]["id"].as_str().unwrap().to_owned();
    let discarded = admin_post(&h, &format!("/v1/admin/outbox/{message}/discard")).await;
    assert_eq!(
        (discarded.status, &discarded.json()["status"]),
        (200, &json!("discarded")),
        "{}",
        discarded.text
    );
    admin_post(&h, &format!("/v1/admin/outbox/{message}/discard")).await.assert_problem(409, "wrong-state");
    assert_eq!(accounting.booked().len(), 1, "the refused invoice is not booked");
    h.finish().await;
}

/// The relay process is killed (SIGKILL) after the accounting API booked the invoice and before
/// the relay could mark it delivered: the next relay sends it again once the lease expires, and
/// the Idempotency-Key makes that the same booking.
async fn a_relay_killed_mid_call_books_once(backend: Backend) {
    let accounting = Accounting::start().await;
    let h =
        Harness::with_accounting(backend, with_admin(), &relaying(&accounting, &["--relay", "false"])).await;
    let reply = h.app.post_fixture("x12/810-single.edi").await;
    let id = invoice_ids(&reply)[0].clone();
    let url = accounting.url();
    let relay_args =
        ["relay", "--accounting-url", &url, "--accounting-timeout", "1", "--relay-poll-ms", "50"];
    let first = Process::start(process::command(&h.db.url, &relay_args), false);
    accounting.on_next_request(first.killer());
    assert!(first.wait(Duration::from_secs(20)).is_some(), "the relay is killed:\n{}", first.log());
    assert_eq!(accounting.booked().len(), 1, "booked before the relay died");
    let state = accounting_state(&h, &id, |_| true).await;
    assert_eq!(state["status"], "pending", "the relay died before settling: {state}");

    let second = Process::start(process::command(&h.db.url, &relay_args), false);
    let state = eventually(
        async || accounting_state(&h, &id, |s| s["status"] == "delivered").await,
        |s| s["status"] == "delivered",
    )
    .await;
    assert_eq!(
        state,
        json!({"status": "delivered", "reference": "ACC-1", "attempts": 2, "last_error": null}),
        "{}",
        second.log()
    );
    let received = accounting.received();
    assert_eq!(received.len(), 2, "sent again after the lease expired: {received:?}");
    assert_eq!(accounting.booked().len(), 1, "one booking in accounting");
    drop(second);
    h.finish().await;
}

/// `/readyz` is public; the backlog it reports is not: with partner authentication only the
/// admin token shows it.
async fn the_backlog_is_shown_to_operators_only(backend: Backend) {
    let h = Harness::with_server(backend, common::partners::secured()).await;
    let anonymous = h.app.get("/readyz").await;
    assert_eq!((anonymous.status, anonymous.json()), (200, json!({"status": "ready"})));
    let wrong = Reply::send(h.app.client.get(h.app.url("/readyz")).bearer_auth("not-the-token")).await;
    assert_eq!(wrong.json(), json!({"status": "ready"}));
    let operator = admin_get(&h, "/readyz").await.json();
    assert_eq!(operator["outbox"], json!({"pending": 0, "dead": 0, "relay_lag_seconds": 0.0}));
    h.finish().await;
}

/// The dead letters of `h`, as the admin API lists them.
async fn dead_letters(h: &Harness) -> Vec<Value> {
    admin_get(h, "/v1/admin/outbox?status=dead&limit=500").await.json()["items"].as_array().unwrap().clone()
}

/// Fifty invoices the accounting API refused are retried at once from the console, by their shared
/// error; a bulk discard waits on a confirmation page listing what it drops; each action is in the
/// audit under the session's actor.
async fn the_console_retries_fifty_dead_letters_at_once_and_confirms_a_discard(backend: Backend) {
    let accounting = Accounting::start().await;
    accounting.script(std::iter::repeat_n(Mode::Fail(422), 50));
    let h = Harness::with_accounting(backend, with_admin(), &relaying(&accounting, &[])).await;
    for n in 0..50 {
        assert_eq!(h.app.post(numbered(3_000 + n), "application/edi-x12").await.status, 201);
    }
    let dead = eventually(async || dead_letters(&h).await, |dead| dead.len() == 50).await;
    assert_eq!(dead.len(), 50);
    let error = dead[0]["last_error"].as_str().unwrap().to_owned();
    assert!(dead.iter().all(|letter| letter["last_error"] == json!(error)), "one error: {dead:?}");

    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let signed_in =
        client.post(h.app.url("/console/sign-in")).form(&[("token", ADMIN)]).send().await.unwrap();
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let get = async |path: &str| {
        let answer = client.get(h.app.url(path)).header("cookie", &cookie).send().await.unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    };
    let post = async |path: &str, form: &[(&str, &str)]| {
        let answer = client.post(h.app.url(path)).header("cookie", &cookie).form(form).send().await.unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    };
    let (_, page) = get("/console/accounting").await;
    assert!(page.contains(r#"<td class="num">50</td>"#), "the group of 50: {page}");
    let start = page.find(r#"name="csrf" value=""#).unwrap() + r#"name="csrf" value=""#.len();
    let csrf = page[start..start + 64].to_owned();
    let (status, _) = post("/console/bulk/dead-letters/retry", &[("group", error.as_str())]).await;
    assert_eq!(status, 403, "no CSRF token: forged");
    for (form, why) in [
        (vec![("csrf", csrf.as_str())], "nothing was selected"),
        (vec![("csrf", csrf.as_str()), ("id", "not-a-uuid")], "an id is not a UUID"),
    ] {
        let (status, page) = post("/console/bulk/dead-letters/retry", &form).await;
        assert!(status == 400 && page.contains(why), "{status} {page}");
    }
    let (status, _) = post("/console/bulk/held/retry", &[("csrf", &csrf), ("id", &error)]).await;
    assert_eq!(status, 404, "held deliveries are released, not retried");
    let (status, results) =
        post("/console/bulk/dead-letters/retry", &[("csrf", &csrf), ("group", &error)]).await;
    assert_eq!(status, 200, "{results}");
    assert!(results.contains("Retry: 50 of 50 dead letters"), "{results}");
    assert_eq!(results.matches(r#"class="status-pending""#).count(), 50, "one result per letter");
    let booked = accounting.wait_for_bookings(50, Duration::from_secs(30)).await;
    assert_eq!(booked.len(), 50, "every retried letter delivered");
    let audit = admin_get(&h, "/v1/admin/audit?actor=console:admin-token&limit=500").await.json();
    let retried =
        audit["items"].as_array().unwrap().iter().filter(|row| row["action"] == "outbox.retry").count();
    assert_eq!(retried, 50);

    accounting.script([Mode::Fail(422), Mode::Fail(422)]);
    for n in 0..2 {
        assert_eq!(h.app.post(numbered(4_000 + n), "application/edi-x12").await.status, 201);
    }
    let dead = eventually(async || dead_letters(&h).await, |dead| dead.len() == 2).await;
    let ids: Vec<String> = dead.iter().map(|letter| letter["id"].as_str().unwrap().to_owned()).collect();
    let chosen = [("csrf", csrf.as_str()), ("id", &ids[0]), ("id", &ids[1])];
    let (status, asked) = post("/console/bulk/dead-letters/discard", &chosen).await;
    assert_eq!(status, 200);
    assert!(
        asked.contains("Discard 2 dead letters?") && asked.contains(&ids[0]) && asked.contains(&ids[1]),
        "{asked}"
    );
    assert_eq!(dead_letters(&h).await.len(), 2, "nothing is discarded before it is confirmed");
    let confirmed = [chosen.as_slice(), &[("confirmed", "yes")]].concat();
    let (status, results) = post("/console/bulk/dead-letters/discard", &confirmed).await;
    assert!(status == 200 && results.contains("Discard: 2 of 2 dead letters"), "{results}");
    assert!(dead_letters(&h).await.is_empty());
    h.finish().await;
}

both_backends!(
    the_console_retries_fifty_dead_letters_at_once_and_confirms_a_discard,
    the_backlog_is_shown_to_operators_only,
    every_invoice_is_booked_once,
    without_an_accounting_api_nothing_is_queued,
    failures_are_retried_and_booked_once,
    dead_letters_are_listed_retried_and_discarded,
    a_relay_killed_mid_call_books_once,
);

/// Two `serve` processes on one PostgreSQL database, each relaying, book 1,000 invoices: every one
/// once, none sent by both at the same time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_relay_a_thousand_invoices_without_overlap() {
    const INVOICES: u32 = 1000;
    let accounting = Accounting::start().await;
    let db = TestDb::create(Backend::Postgres).await;
    let url = accounting.url();
    let args = ["serve", "--bind", "127.0.0.1:0", "--accounting-url", &url, "--relay-poll-ms", "50"];
    let replicas = Arc::new([
        Process::start(process::command(&db.url, &args), true),
        Process::start(process::command(&db.url, &args), true),
    ]);
    let client = reqwest::Client::new();
    let next = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut posters = Vec::new();
    for _ in 0..16 {
        let (client, replicas, next) = (client.clone(), Arc::clone(&replicas), Arc::clone(&next));
        posters.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= INVOICES {
                    return;
                }
                let replica = &replicas[usize::try_from(n % 2).unwrap()];
                let reply = Reply::send(
                    client
                        .post(replica.url("/v1/interchanges"))
                        .header("content-type", "application/edi-x12")
                        .body(numbered(n + 1)),
                )
                .await;
                assert_eq!(reply.status, 201, "{}", reply.text);
            }
        }));
    }
    for poster in posters {
        poster.await.expect("poster");
    }
    let booked = accounting.wait_for_bookings(1000, Duration::from_secs(60)).await;
    assert_eq!(booked.len(), 1000, "{}\n{}", replicas[0].log(), replicas[1].log());
    let delivered = eventually(
        async || count(&db.url, "SELECT COUNT(*) FROM outbox WHERE status = 'delivered'").await,
        |n| *n == 1000,
    )
    .await;
    assert_eq!(delivered, 1000);
    assert_eq!(accounting.overlapping(), Vec::<String>::new(), "no message sent twice at the same time");
    let received = accounting.received();
    let keys: HashSet<&str> = received.iter().map(|r| r.key.as_str()).collect();
    assert_eq!((received.len(), keys.len()), (1000, 1000), "with nothing failing, each is sent exactly once");
    let relayed_by_both = replicas.iter().all(|r| r.log().contains("relaying to the accounting API"));
    assert!(relayed_by_both);
    drop(replicas);
    db.remove().await;
}
