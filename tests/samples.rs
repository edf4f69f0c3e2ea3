//! Every sample interchange in tests/fixtures gives the outcome its `expected.json` states, and the
//! inbox guarantees (replay, conflict, rejected-then-corrected) hold, on SQLite and PostgreSQL.

mod common;

use common::{Backend, Harness, Reply, fixture};
use serde_json::Value;

fn expected() -> serde_json::Map<String, Value> {
    let text = String::from_utf8(fixture("expected.json")).expect("utf-8");
    serde_json::from_str::<Value>(&text).expect("json").as_object().expect("object").clone()
}

fn path_of(file: &str) -> String {
    let dir =
        if file.starts_with("invoic") || file == "invalid-unz-reference.edi" { "edifact" } else { "x12" };
    format!("{dir}/{file}")
}

/// Checks the facts `expected.json` lists for a 201 against the interchange resource.
fn check_created(file: &str, expected: &Value, reply: &Reply) {
    assert_eq!(reply.status, 201, "{file}: {}", reply.text);
    let body = reply.json();
    assert_eq!(
        reply.header("location"),
        Some(format!("/v1/interchanges/{}", body["id"].as_str().unwrap()).as_str())
    );
    assert_eq!(body["status"], "processed", "{file}");
    if let Some(standard) = expected.get("standard") {
        assert_eq!(&body["standard"], standard, "{file}");
    }
    for party in ["sender", "receiver"] {
        if let Some(ids) = expected.get(party) {
            assert_eq!(body[party]["qualifier"], ids[0], "{file} {party}");
            assert_eq!(body[party]["id"], ids[1], "{file} {party}");
        }
    }
    if let Some(control) = expected.get("control_number") {
        assert_eq!(&body["control_number"], control, "{file}");
        assert_eq!(&body["idempotency_key"]["message_id"], control, "{file}");
    }
    let invoices = body["invoices"].as_array().expect("invoices");
    let want = expected["invoices"].as_array().expect("expected invoices");
    assert_eq!(invoices.len(), want.len(), "{file}");
    for (got, want) in invoices.iter().zip(want) {
        assert_eq!(got["number"], want["number"], "{file}");
        assert_eq!(got["total"], want["total"], "{file}");
        if let Some(currency) = want.get("currency") {
            assert_eq!(&got["currency"], currency, "{file}");
        }
        if let Some(lines) = want.get("lines") {
            assert_eq!(got["lines"].as_array().unwrap().len() as u64, lines.as_u64().unwrap(), "{file}");
        }
        if let Some(name) = want.get("seller_name") {
            assert_eq!(&got["seller"]["name"], name, "{file}");
        }
        if let Some(name) = want.get("buyer_name") {
            assert_eq!(&got["buyer"]["name"], name, "{file}");
        }
    }
}

async fn every_sample_gives_its_expected_outcome(backend: Backend) {
    for (file, expected) in expected() {
        // Each sample on its own database, so that "after X" means exactly that.
        let h = Harness::start(backend).await;
        let outcome = expected["expect"].as_str().unwrap();
        let path = path_of(&file);
        match outcome.split_once(" after ") {
            Some((status, first)) => {
                let original = h.app.post_fixture(&path_of(first)).await;
                assert_eq!(original.status, 201, "{first}: {}", original.text);
                let original_id = original.json()["id"].clone();
                let reply = h.app.post_fixture(&path).await;
                match status {
                    "200" => {
                        assert_eq!(reply.status, 200, "{file}: {}", reply.text);
                        assert_eq!(reply.header("idempotent-replayed"), Some("true"));
                        assert_eq!(reply.text, original.text, "{file}: a replay returns the original body");
                    }
                    "409" => {
                        let problem = reply.assert_problem(409, "control-number-conflict");
                        assert_eq!(problem["interchange_id"], original_id, "{file}");
                    }
                    other => panic!("unknown expectation {other}"),
                }
                assert_eq!(
                    h.app.all_invoices().await.len(),
                    original.json()["invoices"].as_array().unwrap().len()
                );
            }
            None => {
                let reply = h.app.post_fixture(&path).await;
                match outcome {
                    "201" => check_created(&file, &expected, &reply),
                    "422" => {
                        let problem = reply.assert_problem(422, "invalid-interchange");
                        assert_eq!(problem["segment"], expected["segment"], "{file}: {}", reply.text);
                        assert!(problem["segment_position"].as_u64().is_some(), "{file}");
                        assert!(problem["interchange_id"].as_str().is_some(), "{file}");
                        assert_eq!(h.app.all_interchanges().await.len(), 1, "{file}: stored as rejected");
                        assert!(h.app.all_invoices().await.is_empty(), "{file}");
                    }
                    "400" => {
                        reply.assert_problem(400, "malformed-interchange");
                        assert!(h.app.all_interchanges().await.is_empty(), "{file}: nothing stored");
                    }
                    other => panic!("unknown expectation {other}"),
                }
            }
        }
        h.finish().await;
    }
}

async fn replay_is_byte_identical_and_counted(backend: Backend) {
    let h = Harness::start(backend).await;
    let first = h.app.post_fixture("edifact/invoic-d96a.edi").await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.header("idempotent-replayed"), None);
    for _ in 0..2 {
        let again = h.app.post_fixture("edifact/invoic-d96a.edi").await;
        assert_eq!(again.status, 200);
        assert_eq!(again.header("idempotent-replayed"), Some("true"));
        assert_eq!(again.text, first.text);
    }
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let stored = h.app.get(&format!("/v1/interchanges/{id}")).await;
    assert_eq!(stored.status, 200);
    assert_eq!(stored.text, first.text, "GET returns the same resource");
    let listed = h.app.interchanges_audited(3).await;
    assert_eq!(listed[0]["control_number"], "1042");
    assert_eq!(listed[0]["deliveries"], 3);
    assert_eq!(h.app.all_invoices().await.len(), 1);
    h.finish().await;
}

async fn conflict_creates_nothing(backend: Backend) {
    let h = Harness::start(backend).await;
    let original = h.app.post_fixture("x12/810-single.edi").await;
    assert_eq!(original.status, 201);
    let before = h.app.all_invoices().await;
    let conflict = h.app.post_fixture("x12/810-single-conflict.edi").await;
    conflict.assert_problem(409, "control-number-conflict");
    assert_eq!(h.app.all_invoices().await, before);
    assert_eq!(h.app.all_interchanges().await.len(), 1);
    // The original is untouched and still replays.
    let replay = h.app.post_fixture("x12/810-single.edi").await;
    assert_eq!((replay.status, replay.text), (200, original.text));
    h.finish().await;
}

async fn rejected_interchange_replays_then_a_corrected_resend_replaces_it(backend: Backend) {
    let h = Harness::start(backend).await;
    let rejected = h.app.post_fixture("x12/invalid-iea-count.edi").await;
    let problem = rejected.assert_problem(422, "invalid-interchange");
    assert_eq!(problem["segment"], "IEA");
    assert_eq!(problem["element"], "IEA01");
    assert_eq!(problem["segment_position"], 20);
    let replay = h.app.post_fixture("x12/invalid-iea-count.edi").await;
    assert_eq!(replay.status, 422);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.text, rejected.text);

    let id = problem["interchange_id"].as_str().unwrap();
    let resource = h.app.get(&format!("/v1/interchanges/{id}")).await.json();
    assert_eq!(resource["status"], "rejected");
    assert_eq!(resource["error"], problem);
    assert_eq!(resource["control_number"], "000001145");
    assert!(h.app.all_invoices().await.is_empty());

    let corrected =
        String::from_utf8(fixture("x12/invalid-iea-count.edi")).unwrap().replace("IEA*2*", "IEA*1*");
    let accepted = h.app.post(corrected.clone(), "application/edi-x12").await;
    assert_eq!(accepted.status, 201, "{}", accepted.text);
    assert_eq!(h.app.all_invoices().await.len(), 1);
    let replay = h.app.post(corrected, "application/edi-x12").await;
    assert_eq!((replay.status, replay.text), (200, accepted.text));
    // The rejected delivery now conflicts with the booked content.
    h.app.post_fixture("x12/invalid-iea-count.edi").await.assert_problem(409, "control-number-conflict");
    let listed = h.app.interchanges_audited(5).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["deliveries"], 5);
    h.finish().await;
}

/// A transaction set that is not an invoice is recorded as a document without an invoice.
async fn other_documents_are_recorded_without_invoices(backend: Backend) {
    let h = Harness::start(backend).await;
    let text = String::from_utf8(fixture("x12/810-two-invoices-00501.edi")).unwrap();
    let mixed = text.replacen("ST*810*0002", "ST*850*0002", 1);
    let reply = h.app.post(mixed, "application/edi-x12").await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    let body = reply.json();
    let documents = body["documents"].as_array().unwrap();
    assert_eq!((documents[0]["type"].as_str(), documents[1]["type"].as_str()), (Some("810"), Some("850")));
    assert!(documents[0]["invoice_id"].is_string() && documents[1]["invoice_id"].is_null());
    assert_eq!(body["invoices"].as_array().unwrap().len(), 1);
    assert_eq!(h.app.all_invoices().await.len(), 1);
    h.finish().await;
}

/// Windows tools start text files with a UTF-8 byte order mark: an interchange behind one (and
/// leading blank lines) books with a warning, under the fingerprint it has without them, so that the
/// same interchange sent without the mark is a replay; the same mark before a CloudEvent body's
/// EDI gets a 400 that says which content type to send.
async fn a_byte_order_mark_is_ignored_with_a_warning(backend: Backend) {
    let h = Harness::start(backend).await;
    let plain = fixture("edifact/invoic-d96a.edi");
    let marked = [b"\xEF\xBB\xBF\r\n".as_slice(), &plain].concat();
    let created = h.app.post(marked, "application/edifact").await;
    assert_eq!(created.status, 201, "{}", created.text);
    let warnings = created.json()["warnings"].clone();
    assert!(warnings.to_string().contains("byte order mark"), "{warnings}");
    let again = h.app.post(plain.clone(), "application/edifact").await;
    assert_eq!(again.status, 200, "the same interchange without the mark is a replay: {}", again.text);
    let wrong_door = h.app.post(plain, "application/json").await;
    assert_eq!(wrong_door.status, 400);
    let detail = wrong_door.json()["detail"].as_str().unwrap().to_owned();
    assert!(detail.contains("raw EDIFACT interchange") && detail.contains("application/edifact"), "{detail}");
    h.finish().await;
}

/// Public interchanges of other projects (tests/fixtures/README.md says where from), unchanged: each
/// gives its expected outcome on a fresh database — the document type booked (and how many
/// invoices), or the problem, with a word of its detail.
async fn public_files_give_their_expected_outcome(backend: Backend) {
    let booked = |kind: &'static str, invoices: usize| (201, kind, invoices);
    let refused = |status: u16, detail: &'static str| (status, detail, 0);
    let cases = [
        ("x12-types-004010_850.edi", booked("850", 0)),
        ("x12-types-004060_856.edi", booked("856", 0)),
        ("x12-types-004010_310.edi", refused(422, "SE01 declares 49 segments")),
        // Each 00501 file of x12-types has ISA11 `U`, the pre-00402 standards identifier, where
        // 00501 puts the repetition separator.
        ("x12-types-005010_810.edi", refused(422, "ISA11 is the repetition separator")),
        ("x12-types-005010_856.edi", refused(422, "ISA11 is the repetition separator")),
        ("x12-types-005010_846.edi", refused(422, "ISA11 is the repetition separator")),
        ("x12-types-005010_860.edi", refused(422, "ISA11 is the repetition separator")),
        ("x12-types-005010_997.edi", refused(422, "ISA11 is the repetition separator")),
        ("x12-types-005010_204.edi", refused(422, "ISA11 is the repetition separator")),
        ("x12-types-005010_940.edi", refused(422, "ISA11 is the repetition separator")),
        ("x12-types-005010_945.edi", refused(422, "ISA11 is the repetition separator")),
        ("edifact-types-d04b_baplie.edi", booked("BAPLIE", 0)),
        ("edifact-types-d00b_iftsta.edi", refused(422, "UNZ02")),
        ("edifact-types-d95b_coprar.edi", refused(400, "not an EDI interchange")),
    ];
    for (file, (status, expected, invoices)) in cases {
        let h = Harness::start(backend).await;
        let reply = h.app.post(fixture(&format!("public/{file}")), "application/octet-stream").await;
        assert_eq!(reply.status, status, "{file}: {}", reply.text);
        let body = reply.json();
        if status == 201 {
            assert_eq!(body["documents"][0]["type"], expected, "{file}");
            assert_eq!(body["invoices"].as_array().map(Vec::len), Some(invoices), "{file}");
        } else {
            assert!(body["detail"].as_str().unwrap().contains(expected), "{file}: {}", body["detail"]);
        }
        h.finish().await;
    }
}

both_backends!(
    public_files_give_their_expected_outcome,
    a_byte_order_mark_is_ignored_with_a_warning,
    other_documents_are_recorded_without_invoices,
    every_sample_gives_its_expected_outcome,
    replay_is_byte_identical_and_counted,
    conflict_creates_nothing,
    rejected_interchange_replays_then_a_corrected_resend_replaces_it,
);
