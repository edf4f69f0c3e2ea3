//! A 10 MiB interchange with 20,000 invoices is recorded in one transaction and replayed, on SQLite
//! and PostgreSQL; the body limit is what the configuration says; a large interchange (streamed
//! with COPY on PostgreSQL) books what each of its messages books alone.

mod common;

#[path = "../benches/corpus.rs"]
#[allow(dead_code)] // the EDIFACT generator serves the benchmarks
mod corpus;

use common::accounting::Accounting;
use common::{Backend, Harness, Reply, accounting_config, server_config};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MIB: usize = 1024 * 1024;

async fn ten_mib_interchange_is_recorded_in_one_transaction(backend: Backend) {
    let mut server = server_config();
    server.body_limit = 12 * MIB;
    // A debug build on a loaded two-core CI machine needs more than the default 30 s for 20,000 invoices.
    server.request_timeout = 300;
    server.idle_timeout = 301;
    let h = Harness::with_server(backend, server).await;
    let body = corpus::x12_810(10 * MIB - 4096);
    assert!(body.len() > 10 * MIB - 4096 && body.len() <= 10 * MIB, "{}", body.len());

    let created = h.app.post(body.clone(), "application/edi-x12").await;
    assert_eq!(created.status, 201, "{}", &created.text[..created.text.len().min(500)]);
    let resource = created.json();
    let invoices = resource["invoices"].as_array().unwrap().len();
    assert!(invoices >= 20_000, "{invoices} invoices");
    let id = resource["id"].as_str().unwrap().to_owned();
    assert_eq!(h.app.all_invoices().await.len(), invoices, "every invoice committed");

    let replay = h.app.post(body, "application/edi-x12").await;
    assert_eq!(replay.status, 200);
    assert!(replay.text == created.text, "the replay is the stored body");
    let listed = h.app.interchanges_audited(2).await;
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["deliveries"], 2);

    // Over the limit, the declared length alone is refused: the client is not made to upload it.
    let mut stream = tokio::net::TcpStream::connect(h.app.address).await.unwrap();
    let head = format!(
        "POST /v1/interchanges HTTP/1.1\r\nHost: inbox\r\nContent-Type: application/edi-x12\r\nContent-Length: {}\r\n\r\n",
        13 * MIB
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = vec![0; 4096];
    let read = stream.read(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response[..read]);
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(response.contains("/problems/payload-too-large"), "{response}");
    h.finish().await;
}

/// `Prefer: return=minimal` (RFC 7240) answers an interchange with its envelope, counts and links —
/// on the first delivery, on replays and on `GET` — whatever its size; without it the answer is the
/// stored body, byte for byte.
async fn a_minimal_answer_leaves_out_the_lines(backend: Backend) {
    let h = Harness::start(backend).await;
    let body = corpus::x12_810(256 * 1024);
    let send = |prefer: Option<&'static str>| {
        let mut request =
            h.app.client.post(h.app.url("/v1/interchanges")).header("content-type", "application/edi-x12");
        if let Some(prefer) = prefer {
            request = request.header("prefer", prefer);
        }
        common::Reply::send(request.body(body.clone()))
    };
    let minimal = send(Some("return=minimal")).await;
    assert_eq!(minimal.status, 201, "{}", minimal.text);
    assert_eq!(minimal.header("preference-applied"), Some("return=minimal"));
    let resource = minimal.json();
    let id = resource["id"].as_str().unwrap();
    let invoices = resource["invoice_count"].as_u64().unwrap();
    assert!(invoices > 100, "{invoices} invoices");
    assert_eq!(resource["document_count"], invoices);
    assert_eq!(resource["href"], format!("/v1/interchanges/{id}"));
    assert_eq!(resource["invoices_href"], format!("/v1/invoices?interchange_id={id}"));
    assert!(resource.get("invoices").is_none() && resource.get("documents").is_none(), "{resource}");
    assert!(minimal.text.len() < 1024, "{} bytes for {invoices} invoices", minimal.text.len());
    let full = send(None).await;
    assert_eq!((full.status, full.header("preference-applied")), (200, None));
    assert_eq!(full.json()["id"], resource["id"]);
    let count = |list: &str| full.json()[list].as_array().unwrap().len() as u64;
    assert_eq!(count("invoices"), invoices);
    assert_eq!(count("documents"), resource["document_count"].as_u64().unwrap());
    assert_eq!(count("warnings"), resource["warning_count"].as_u64().unwrap());
    let listed = common::Reply::send(
        h.app.client.get(h.app.url(&format!("/v1/invoices?interchange_id={id}&limit=1"))),
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.json()["items"][0]["interchange_id"], id, "{}", listed.text);
    let replayed = send(Some("return=minimal")).await;
    assert_eq!((replayed.status, replayed.header("idempotent-replayed")), (200, Some("true")));
    assert_eq!(replayed.text, minimal.text, "a replay's minimal answer is the first one's");
    let read = common::Reply::send(
        h.app.client.get(h.app.url(&format!("/v1/interchanges/{id}"))).header("prefer", "return=minimal"),
    )
    .await;
    assert_eq!(read.text, minimal.text);
    h.finish().await;
}

/// Stopping the server (SIGTERM/SIGINT in the binary) lets a delivery in flight finish and commit.
async fn shutdown_finishes_deliveries_in_flight(backend: Backend) {
    let h = Harness::start(backend).await;
    let (client, url) = (h.app.client.clone(), h.app.url("/v1/interchanges"));
    let body = corpus::x12_810(2 * MIB);
    let in_flight = tokio::spawn(async move {
        client.post(url).header("content-type", "application/edi-x12").body(body).send().await
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let db = h.db;
    h.app.stop().await;
    let response = in_flight.await.unwrap().expect("the delivery in flight is answered");
    assert_eq!(response.status(), 201);
    let restarted = common::TestApp::start(&common::database_config(&db.url), &server_config()).await;
    assert_eq!(restarted.all_interchanges().await.len(), 1, "and committed");
    restarted.stop().await;
    db.remove().await;
}

/// The memory budget charges what recording an interchange costs once it is parsed, not only what
/// reading its body held: 1.5 MiB of invoices fits the read reservation of a 4 MiB budget (twice
/// the body) but needs more to record (its body, the acknowledgement written while its documents
/// are walked, their ids, and the documents mapped at a time), so it is refused whole (413),
/// nothing written.
async fn an_interchange_costing_more_than_the_whole_budget_is_refused(backend: Backend) {
    let mut server = server_config();
    server.buffer_bytes = 4 * MIB;
    let h = Harness::with_server(backend, server).await;
    let refused = h.app.post(corpus::x12_810(3 * MIB / 2), "application/edi-x12").await;
    assert_eq!(refused.status, 413, "{}", refused.text);
    let problem = refused.json();
    assert_eq!(problem["type"], "/problems/payload-too-large");
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("documents") && detail.contains("EDI_INBOX_BUFFER_BYTES"), "{detail}");
    assert!(h.app.all_interchanges().await.is_empty() && h.app.all_invoices().await.is_empty());
    h.finish().await;
}

/// A delivery whose recording needs more of the budget than is free answers 429 with Retry-After
/// at once, naming the budget (it never waits while holding a reservation, so two deliveries
/// cannot wait on each other), and is booked once the budget is free again. A body is charged as
/// it arrives: one that only declares its length holds nothing.
async fn a_delivery_is_asked_to_retry_while_the_budget_is_held(backend: Backend) {
    let mut server = server_config();
    server.buffer_bytes = 4 * MIB;
    let h = Harness::with_server(backend, server).await;
    let body = corpus::x12_810(32 * 1024);
    let declared = 1792 * 1024;
    let head = format!(
        "POST /v1/interchanges HTTP/1.1\r\nHost: inbox\r\nContent-Type: application/edi-x12\r\nContent-Length: {declared}\r\n\r\nISA"
    );
    let mut declaring = tokio::net::TcpStream::connect(h.app.address).await.unwrap();
    declaring.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(
        h.app.post(body.clone(), "application/edi-x12").await.status,
        201,
        "a declared length holds nothing"
    );
    drop(declaring);
    // A slow upload sends all but its last byte of 1,792 KiB: reading it holds 3.5 MiB until it is
    // done.
    let mut slow = tokio::net::TcpStream::connect(h.app.address).await.unwrap();
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&vec![b' '; declared - 4]).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let body = String::from_utf8(body).unwrap().replace("*000000001", "*000000002").into_bytes();
    let busy = h.app.post(body.clone(), "application/edi-x12").await;
    assert_eq!(busy.status, 429, "{}", busy.text);
    let problem = busy.json();
    assert_eq!(problem["type"], "/problems/rate-limited");
    assert!(problem["detail"].as_str().unwrap().contains("EDI_INBOX_BUFFER_BYTES"), "{problem}");
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert_eq!(h.app.all_interchanges().await.len(), 1, "only the first");
    drop(slow);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(h.app.post(body, "application/edi-x12").await.status, 201);
    h.finish().await;
}

/// The messages of the EDIFACT booking fixture (every party, tax and charge) as one interchange of
/// `count` messages under control reference `reference`, message `n` numbered invoice `RE-n`; the
/// seller's name holds a backslash and a `\N`, which the COPY text format must escape.
fn interchange_of(count: usize, reference: &str) -> Vec<u8> {
    let fixture =
        String::from_utf8(common::fixture("booking/invoic-every-party-tax-and-charge.edi")).unwrap();
    let fixture = fixture.replace("Muster Elektro GmbH", "Muster\\Elektro GmbH \\N");
    let (start, end) = (fixture.find("UNH+").unwrap(), fixture.find("UNZ+").unwrap());
    let head = fixture[..start].replace("+INV4711'", &format!("+{reference}'"));
    let message = &fixture[start..end];
    let messages: String = (1..=count)
        .map(|n| {
            message
                .replace("UNH+1+", &format!("UNH+{n}+"))
                .replace("UNT+48+1'", &format!("UNT+48+{n}'"))
                .replace("BGM+380+RE-2026-4711+", &format!("BGM+380+RE-{n}+"))
        })
        .collect();
    format!("{head}{messages}UNZ+{count}+{reference}'\n").into_bytes()
}

/// An invoice as booked, without what differs between two bookings of it (its ids).
fn booked(mut invoice: Value) -> Value {
    for id in ["id", "interchange_id", "duplicate_of", "accounting"] {
        invoice.as_object_mut().unwrap().remove(id);
    }
    invoice
}

/// A 70-message interchange, sent six times at once with an accounting API configured: one 201,
/// five replays of its answer, its payload, and 70 invoices each with its outbox message (all
/// streamed with COPY on PostgreSQL). Its first invoice is, field by field, the invoice
/// the same message sent alone books (bound as arrays), text escapes included — the same invoice, so
/// that one is its duplicate, found against the streamed rows — and its last is there.
/// The replays and `GET` list its documents and invoices from their rows (a large interchange's
/// stored answer leaves them out) and answer the 201's bytes, its warning included.
async fn a_large_interchange_books_what_each_message_books_alone(backend: Backend) {
    let accounting = Accounting::start().await;
    let config = accounting_config(&["--accounting-url", &accounting.url(), "--relay", "false"]);
    let h = Harness::with_accounting(backend, server_config(), &config).await;
    let large = String::from_utf8(interchange_of(70, "LARGE")).unwrap();
    // The second invoice states a total its lines do not make: a warning in the answer.
    let (second, stated) = large.match_indices("MOA+77:5767.10").nth(1).unwrap();
    let large = format!("{}MOA+77:5767.11{}", &large[..second], &large[second + stated.len()..]).into_bytes();
    let racing: Vec<_> = (0..6)
        .map(|_| {
            let request = h
                .app
                .client
                .post(h.app.url("/v1/interchanges"))
                .header("content-type", "application/edifact");
            tokio::spawn(Reply::send(request.body(large.clone())))
        })
        .collect();
    let mut replies = Vec::new();
    for reply in racing {
        let reply = reply.await.unwrap();
        replies.push((reply.status, reply.text));
    }
    replies.sort_unstable();
    let statuses: Vec<u16> = replies.iter().map(|(status, _)| *status).collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 201], "one first delivery, the rest replays");
    let answer = &replies[5].1;
    assert!(
        replies.iter().all(|(_, text)| text == answer),
        "each replay is the stored answer, byte for byte"
    );
    let resource = serde_json::from_str::<Value>(answer).unwrap();
    assert_eq!(resource["warnings"].as_array().map(Vec::len), Some(1), "{}", resource["warnings"]);
    assert_eq!(resource["documents"].as_array().map(Vec::len), Some(70));
    let id = resource["id"].as_str().unwrap().parse().unwrap();
    let read = Reply::send(h.app.client.get(h.app.url(&format!("/v1/interchanges/{id}")))).await;
    assert!(read.text == *answer, "GET answers the 201's bytes");
    let store = edi_inbox::app::open_store(&common::database_config(&h.db.url)).await.unwrap();
    let (payload, _) = store.payload(id).await.unwrap().expect("the payload is stored");
    assert!(payload == large, "the payload is stored byte for byte");
    store.close().await;
    let alone = h.app.post(interchange_of(1, "ALONE"), "application/edifact").await;
    assert_eq!(alone.status, 201, "{}", alone.text);

    let invoices = h.app.all_invoices().await;
    assert_eq!(invoices.len(), 71, "70 streamed once, and the one alone");
    let numbered = |number: &str| -> Vec<Value> {
        invoices.iter().filter(|invoice| invoice["number"] == number).cloned().collect()
    };
    let first = numbered("RE-1");
    assert_eq!(first.len(), 2);
    assert_eq!(booked(first[0].clone()), booked(first[1].clone()), "streamed and bound book alike");
    let (copy, streamed) = (&first[0], &first[1]);
    assert_eq!(copy["duplicate_of"]["invoice_id"], streamed["id"], "sent alone, it is the same invoice");
    assert!(copy.get("accounting").is_none(), "a duplicate is not sent to accounting: {copy}");
    assert_eq!(streamed["seller"]["name"], "Muster\\Elektro GmbH \\N");
    assert_eq!(streamed["accounting"]["status"], "pending", "its outbox message is there");
    assert_eq!(first[0]["lines"].as_array().map(Vec::len), Some(2));
    let last = numbered("RE-70");
    assert_eq!((last.len(), &last[0]["total"]), (1, &Value::from("5767.10")));
    let sent = invoices.iter().filter(|invoice| invoice["accounting"]["status"] == "pending").count();
    assert_eq!(sent, 70, "each of the 70 has its outbox message, the duplicate none");

    // The whole interchange again in a new envelope: recorded (201), its 70 invoices duplicates of
    // the streamed ones (found a page at a time), none booked or queued again.
    let resent = h.app.post(common::reenveloped(&large, "RESENT"), "application/edifact").await;
    assert_eq!(resent.status, 201, "{}", resent.text);
    let copies = resent.json()["invoices"].as_array().unwrap().clone();
    assert_eq!(copies.len(), 70, "listed from their rows");
    for copy in &copies {
        let original =
            invoices.iter().find(|i| i["number"] == copy["number"] && i.get("duplicate_of").is_none());
        assert_eq!(copy["duplicate_of"]["invoice_id"], original.expect("booked")["id"], "{copy}");
    }
    let all = h.app.all_invoices().await;
    assert_eq!(all.len(), 141);
    assert_eq!(
        all.iter().filter(|i| i["accounting"]["status"] == "pending").count(),
        70,
        "nothing queued again"
    );
    h.finish().await;
}

/// A large interchange whose sender wrapped its segments at 80 columns is read from a copy without
/// the line breaks, and walked again from that copy (not from the payload) when its documents are
/// written: all 1,200 invoices are booked, and the payload (1.2 MB, written a piece at a time on
/// SQLite) is kept as received.
async fn a_wrapped_large_interchange_is_walked_from_its_unwrapped_copy(backend: Backend) {
    let h = Harness::start(backend).await;
    let plain = interchange_of(1200, "WRAPPED");
    let wrapped: Vec<u8> = plain.chunks(80).flat_map(|line| [line, b"\r\n"]).flatten().copied().collect();
    let created = h.app.post(wrapped.clone(), "application/edifact").await;
    assert_eq!(created.status, 201, "{}", created.text);
    let resource = created.json();
    assert_eq!(resource["documents"].as_array().map(Vec::len), Some(1200));
    let invoices = h.app.all_invoices().await;
    let mut numbers: Vec<&str> = invoices.iter().map(|invoice| invoice["number"].as_str().unwrap()).collect();
    numbers.sort_unstable_by_key(|number| number[3..].parse::<u32>().unwrap());
    let expected: Vec<String> = (1..=1200).map(|n| format!("RE-{n}")).collect();
    assert_eq!(numbers, expected);
    assert!(invoices.iter().all(|invoice| invoice["lines"].as_array().map(Vec::len) == Some(2)));
    let id = resource["id"].as_str().unwrap().parse().unwrap();
    let store = edi_inbox::app::open_store(&common::database_config(&h.db.url)).await.unwrap();
    let (payload, _) = store.payload(id).await.unwrap().expect("the payload is stored");
    assert!(payload == wrapped, "the payload is kept as received, line breaks and all");
    store.close().await;
    h.finish().await;
}

both_backends!(
    a_wrapped_large_interchange_is_walked_from_its_unwrapped_copy,
    a_large_interchange_books_what_each_message_books_alone,
    ten_mib_interchange_is_recorded_in_one_transaction,
    a_minimal_answer_leaves_out_the_lines,
    shutdown_finishes_deliveries_in_flight,
    an_interchange_costing_more_than_the_whole_budget_is_refused,
    a_delivery_is_asked_to_retry_while_the_budget_is_held
);
