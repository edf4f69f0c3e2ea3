//! What is booked is what the invoice says: each file of `tests/fixtures/booking/` (a retail 810
//! whose seller is a vendor, a Canadian 810 with GST and no currency, an INVOIC with every party,
//! two tax rates, charges and allowances at header and line level, gross and invoice prices, and an
//! INVOIC that does not reconcile next to a credit note) is booked field by field as its
//! hand-verified `expected.json` says, in the 201, as read back from the database, and in the
//! replay, on SQLite and PostgreSQL.

mod common;

use common::partners::{admin, register, secured};
use common::{Backend, Harness, Reply, content_type_of, fixture};
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn expected() -> serde_json::Map<String, Value> {
    let text = String::from_utf8(fixture("booking/expected.json")).expect("utf-8");
    serde_json::from_str::<Value>(&text).expect("json").as_object().expect("object").clone()
}

/// Compares every field `want` lists with `got`, naming the field that differs (and fails on a
/// field the service books that `want` does not list).
fn assert_fields(context: &str, got: &Value, want: &Value) {
    let (Some(got_fields), Some(want_fields)) = (got.as_object(), want.as_object()) else {
        assert_eq!(got, want, "{context}");
        return;
    };
    for (field, value) in want_fields {
        let context = format!("{context}.{field}");
        match (got.get(field), value) {
            (Some(Value::Array(got)), Value::Array(want)) => {
                assert_eq!(got.len(), want.len(), "{context}: {got:?}");
                for (n, (got, want)) in got.iter().zip(want).enumerate() {
                    assert_fields(&format!("{context}[{n}]"), got, want);
                }
            }
            (got, want) => assert_fields(&context, got.unwrap_or(&Value::Null), want),
        }
    }
    let unlisted: Vec<_> = got_fields
        .keys()
        .filter(|k| !want_fields.contains_key(*k) && !matches!(k.as_str(), "id" | "interchange_id"))
        .collect();
    assert!(unlisted.is_empty(), "{context}: booked but not expected: {unlisted:?}");
}

/// `invoice` without its `original_invoice_id`, checked to be the id of the invoice of
/// `interchange` it names (a credit note naming an invoice earlier in its interchange is linked).
fn linked(interchange: &[Value], invoice: &Value) -> Value {
    let mut invoice = invoice.clone();
    if let Some(id) = invoice.as_object_mut().unwrap().remove("original_invoice_id") {
        let named = interchange.iter().find(|i| i["number"] == invoice["original_invoice"]);
        assert_eq!(Some(&id), named.map(|i| &i["id"]), "the invoice it names: {invoice}");
    }
    invoice
}

/// Marks each field under `path` (`lines[].taxes[].amount`) as filled when `value` holds something
/// there: a column written as NULL, or a list stored empty, by mistake would round-trip unnoticed
/// unless some fixture gives it a value.
fn mark_filled(path: &str, value: &Value, filled: &mut BTreeMap<String, bool>) {
    match value {
        Value::Object(fields) => {
            if !path.is_empty() {
                filled.insert(path.to_owned(), true);
            }
            for (name, value) in fields {
                let path = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                mark_filled(&path, value, filled);
            }
        }
        Value::Array(items) => {
            *filled.entry(path.to_owned()).or_default() |= !items.is_empty();
            for item in items {
                mark_filled(&format!("{path}[]"), item, filled);
            }
        }
        Value::Null => {
            filled.entry(path.to_owned()).or_default();
        }
        _ => *filled.entry(path.to_owned()).or_default() = true,
    }
}

/// Every column of the invoice tables is written and read back with a value (`filled`, over all
/// fixtures) and the interchange read back is the 201 byte for byte in meaning.
async fn every_booking_fixture_is_booked_as_it_says(backend: Backend) {
    let h = Harness::start(backend).await;
    let mut filled = BTreeMap::new();
    for (file, want) in expected() {
        let path = format!("booking/{file}");
        let created = h.app.post_fixture(&path).await;
        assert_eq!(created.status, 201, "{file}: {}", created.text);
        let body = created.json();
        let invoices = body["invoices"].as_array().expect("invoices");
        let wanted = want["invoices"].as_array().expect("expected invoices");
        assert_eq!(invoices.len(), wanted.len(), "{file}");
        for (n, (got, want)) in invoices.iter().zip(wanted).enumerate() {
            assert_fields(&format!("{file} invoice {n} (201)"), &linked(invoices, got), want);
            let stored = h.app.get(&format!("/v1/invoices/{}", got["id"].as_str().unwrap())).await;
            assert_eq!(stored.status, 200, "{file}");
            assert_fields(
                &format!("{file} invoice {n} (read back)"),
                &linked(invoices, &stored.json()),
                want,
            );
            mark_filled("", &stored.json(), &mut filled);
        }
        let stored = h.app.get(&format!("/v1/interchanges/{}", body["id"].as_str().unwrap())).await;
        assert_eq!(stored.json(), body, "{file}: the interchange as read back");
        assert_eq!(body["warnings"], want["warnings"], "{file}");
        let replay = h.app.post_fixture(&path).await;
        assert_eq!((replay.status, &replay.text), (200, &created.text), "{file}: a replay is the same bytes");
    }
    let empty: Vec<_> = filled.iter().filter(|(_, filled)| !**filled).map(|(path, _)| path).collect();
    assert!(empty.is_empty(), "no fixture gives these fields a value: {empty:?}");
    h.finish().await;
}

/// The sender of the INVOIC fixtures registered as partner `muster` with `on_mismatch`: its API key.
async fn muster(h: &Harness, on_mismatch: &str) -> String {
    let partner = json!({"id": "muster", "name": "Muster Elektro", "senders": ["edifact:14:4000001000005"],
        "on_mismatch": on_mismatch});
    register(h, partner).await.api_key
}

/// Posts `booking/{file}` with `key`.
async fn post_as(h: &Harness, key: &str, file: &str) -> Reply {
    let request = h.app.client.post(h.app.url("/v1/interchanges")).bearer_auth(key);
    let request = request.header("content-type", "application/edifact");
    Reply::send(request.body(fixture(&format!("booking/{file}")))).await
}

/// A partner registered with `on_mismatch: reject` gets 422 for an invoice whose total does not
/// reconcile, naming both figures at the segment that states the total (and the same 422 on a
/// replay); its invoices that reconcile are booked.
async fn a_partner_whose_invoices_must_reconcile_gets_422_for_a_mismatch(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let key = muster(&h, "reject").await;
    let post = async |file: &str| post_as(&h, &key, file).await;
    let refused = post("invoic-unreconciled-and-credit-note.edi").await;
    let problem = refused.assert_problem(422, "invalid-interchange");
    assert_eq!(problem["segment_position"], 22, "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "MOA 77 total 2137.58 differs from the lines plus charges less allowances plus tax (1612.58)"
        ),
        "{detail}"
    );
    let replay = post("invoic-unreconciled-and-credit-note.edi").await;
    assert_eq!((replay.status, &replay.text), (422, &refused.text), "a replay is the same refusal");
    assert_eq!(
        post("invoic-every-party-tax-and-charge.edi").await.status,
        201,
        "an invoice that reconciles books"
    );
    let listed = admin(&h, reqwest::Method::GET, "/v1/admin/partners/muster", None).await;
    assert_eq!(listed.json()["on_mismatch"], "reject", "{}", listed.text);
    h.finish().await;
}

/// A partner registered with `on_mismatch: quarantine` has an invoice that does not reconcile held
/// (202, reason `mismatch`, with the 422 it would have got; the same entry on a resend) instead of
/// refused; an operator's release books it as stated, field by field as `expected.json` says, with
/// its mismatch warning; its invoices that reconcile are booked at once.
async fn a_partner_holding_mismatches_gets_them_booked_when_an_operator_releases_them(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let key = muster(&h, "quarantine").await;
    let post = async |file: &str| post_as(&h, &key, file).await;
    let file = "invoic-unreconciled-and-credit-note.edi";
    let held = post(file).await;
    assert_eq!(held.status, 202, "{}", held.text);
    let entry = held.json();
    assert_eq!((&entry["status"], &entry["reason"]), (&json!("held"), &json!("mismatch")), "{entry}");
    assert_eq!(entry["problem"]["type"], "/problems/invalid-interchange");
    assert_eq!(entry["problem"]["segment_position"], 22);
    let detail = entry["problem"]["detail"].as_str().unwrap();
    assert!(detail.starts_with("MOA 77 total 2137.58 differs from the lines plus charges"), "{detail}");
    let again = post(file).await;
    assert_eq!((again.status, again.header("idempotent-replayed")), (202, Some("true")));
    assert_eq!(again.json()["id"], entry["id"]);

    let release = format!("/v1/admin/quarantine/{}/release", entry["id"].as_str().unwrap());
    let released = admin(&h, reqwest::Method::POST, &release, None).await;
    assert_eq!((released.status, &released.json()["status"]), (200, &json!("released")), "{}", released.text);
    let booked = format!("/v1/interchanges/{}", released.json()["released_as"].as_str().unwrap());
    let booked = admin(&h, reqwest::Method::GET, &booked, None).await.json();
    let want = &expected()[file];
    assert_eq!(booked["status"], "processed", "{booked}");
    assert_eq!(booked["warnings"], want["warnings"], "booked with its mismatch warning");
    let wanted = want["invoices"].as_array().unwrap();
    assert_eq!(booked["invoices"].as_array().map(Vec::len), Some(wanted.len()));
    let invoices = booked["invoices"].as_array().unwrap();
    for (n, (got, want)) in invoices.iter().zip(wanted).enumerate() {
        assert_fields(&format!("{file} invoice {n} (released)"), &linked(invoices, got), want);
    }
    assert_eq!(
        post("invoic-every-party-tax-and-charge.edi").await.status,
        201,
        "an invoice that reconciles books"
    );
    h.finish().await;
}

/// Every fixture file of the project that books invoices (X12 and EDIFACT, one to three invoices
/// each, including the booking fixtures' credit note).
const INVOICE_FILES: [&str; 10] = [
    "x12/810-single.edi",
    "x12/810-one-line.edi",
    "x12/810-two-invoices-00501.edi",
    "edifact/invoic-d96a.edi",
    "edifact/invoic-no-una.edi",
    "edifact/invoic-two-messages-decimal-comma.edi",
    "booking/810-gst-no-currency.edi",
    "booking/810-vendor-seller.edi",
    "booking/invoic-every-party-tax-and-charge.edi",
    "booking/invoic-unreconciled-and-credit-note.edi",
];

/// A control number for the `n`th resend: nine digits for X12, a reference for EDIFACT.
fn resend_control(file: &str, n: usize) -> String {
    match content_type_of(file) {
        "application/edifact" => format!("RESENT{n}"),
        _ => format!("{:09}", 700_000 + n),
    }
}

/// The invoices booked (not duplicates) now.
async fn booked(h: &Harness) -> Vec<Value> {
    h.app.all_invoices().await.into_iter().filter(|invoice| invoice.get("duplicate_of").is_none()).collect()
}

/// How many invoices are booked (not duplicates) now, read from the database.
async fn booked_count(h: &Harness) -> i64 {
    common::count(&h.db.url, "SELECT count(*) FROM invoices WHERE duplicate_of IS NULL").await
}

/// Every invoice file of the fixtures, sent again in a new envelope (as a translator regenerating
/// its control number or a VAN redelivering a mailbox does): its interchange is recorded under its
/// own key (201, then 200 with the same bytes), and each invoice is answered with `duplicate_of`
/// naming the invoice booked the first time, its interchange and when that was received, with a
/// warning; nothing new is booked.
async fn every_fixture_invoice_resent_under_a_new_control_number_books_nothing_new(backend: Backend) {
    let h = Harness::start(backend).await;
    let mut firsts = Vec::new();
    for file in INVOICE_FILES {
        let first = h.app.post_fixture(file).await;
        assert_eq!(first.status, 201, "{file}: {}", first.text);
        let first = first.json();
        let invoices = first["invoices"].as_array().expect("invoices");
        assert!(!invoices.is_empty(), "{file} books invoices");
        assert!(
            invoices.iter().all(|i| i.get("duplicate_of").is_none()),
            "{file}: no fixture repeats another"
        );
        firsts.push(first);
    }
    let originals = booked(&h).await;
    for (n, (file, first)) in INVOICE_FILES.iter().zip(&firsts).enumerate() {
        let body = common::reenveloped(&fixture(file), &resend_control(file, n));
        assert_ne!(body, fixture(file), "{file}: another envelope");
        let again = h.app.post(body.clone(), content_type_of(file)).await;
        assert_eq!(again.status, 201, "{file}: its own interchange key: {}", again.text);
        let resent = again.json();
        assert_ne!(resent["id"], first["id"], "{file}");
        let copies = resent["invoices"].as_array().expect("invoices");
        let earlier = first["invoices"].as_array().expect("invoices");
        assert_eq!(copies.len(), earlier.len(), "{file}");
        for (copy, original) in copies.iter().zip(earlier) {
            let duplicate_of = json!({"invoice_id": original["id"], "interchange_id": first["id"],
                "received_at": first["received_at"]});
            assert_eq!(copy["duplicate_of"], duplicate_of, "{file}: {copy}");
            assert_eq!(
                (&copy["number"], &copy["total"]),
                (&original["number"], &original["total"]),
                "{file}"
            );
            let id = original["id"].as_str().unwrap();
            let warned = resent["warnings"].as_array().unwrap().iter().any(|w| {
                w["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&format!("was booked before as invoice {id}")))
            });
            assert!(warned, "{file}: a warning names {id}: {}", resent["warnings"]);
            let stored = h.app.get(&format!("/v1/invoices/{}", copy["id"].as_str().unwrap())).await.json();
            assert_eq!(stored["duplicate_of"], duplicate_of, "{file}: read back");
        }
        let replay = h.app.post(body, content_type_of(file)).await;
        assert_eq!((replay.status, &replay.text), (200, &again.text), "{file}: a replay is the same bytes");
    }
    let copies: usize = firsts.iter().map(|first| first["invoices"].as_array().unwrap().len()).sum();
    let metrics = h.app.get("/metrics").await.text;
    let counted = format!("edi_inbox_duplicate_invoices_total{{partner=\"-\"}} {copies}");
    assert!(metrics.contains(&counted), "{counted} in {metrics}");
    assert_eq!(booked(&h).await, originals, "nothing new is booked");
    h.finish().await;
}

/// The README's 810 in a new envelope, with `edit` applied to its segments.
fn resent_with(control: u32, edit: impl Fn(String) -> String) -> Vec<u8> {
    let text = String::from_utf8(fixture("x12/810-single.edi")).unwrap();
    common::reenveloped(edit(text).as_bytes(), &format!("{control:09}"))
}

/// INV-1042 with line 1's price and the total changed: the same number, other content.
fn repriced(control: u32, price: &str, total: &str) -> Vec<u8> {
    resent_with(control, |text| {
        text.replace("IT1*1*500*EA*12.50", &format!("IT1*1*500*EA*{price}"))
            .replace("TDS*800000", &format!("TDS*{total}"))
    })
}

/// A harness with partner authentication and an accounting API configured (its relay off, so that
/// the outbox keeps what it would send), and partner acme registered with `settings`.
async fn acme_with(backend: Backend, settings: Value) -> (Harness, String) {
    let accounting =
        common::accounting_config(&["--accounting-url", "http://127.0.0.1:9/books", "--relay", "false"]);
    let h = Harness::with_accounting(backend, secured(), &accounting).await;
    let mut partner = json!({"id": "acme", "name": "ACME Supply", "senders": ["x12:ZZ:ACMESUPPLY"]});
    partner.as_object_mut().unwrap().extend(settings.as_object().unwrap().clone());
    let key = register(&h, partner).await.api_key;
    (h, key)
}

/// The outbox's messages: (invoice number, idempotency key), oldest first.
async fn outbox(h: &Harness) -> Vec<(String, String)> {
    let sql = "SELECT i.number || ' ' || o.idempotency_key FROM outbox o JOIN invoices i ON i.id = o.invoice_id \
        ORDER BY o.id";
    common::texts(&h.db.url, sql)
        .await
        .into_iter()
        .map(|row| {
            let (number, key) = row.split_once(' ').unwrap();
            (number.to_owned(), key.to_owned())
        })
        .collect()
}

/// A partner's invoice number booked before, arriving with other content, is held by default (202,
/// reason `duplicate-number`, the problem naming the earlier invoice and the fields that differ, the
/// same entry on a resend); an operator books one as a new invoice, another as the replacement of
/// the latest, and discards a third, each audited, each booking one outbox message under a key of
/// its own; a release that does not say how is refused.
async fn a_reused_number_with_other_content_is_held_and_each_decision_books_as_it_says(backend: Backend) {
    let (h, key) = acme_with(backend, json!({})).await;
    let post = async |body: Vec<u8>| common::partners::post_with_key(&h, &key, body).await;
    let original = post(fixture("x12/810-single.edi")).await;
    assert_eq!(original.status, 201, "{}", original.text);
    let original_id = original.json()["invoices"][0]["id"].as_str().unwrap().to_owned();
    let hold = async |body: Vec<u8>| {
        let held = post(body.clone()).await;
        assert_eq!(held.status, 202, "{}", held.text);
        let entry = held.json();
        assert_eq!(
            (&entry["reason"], &entry["status"]),
            (&json!("duplicate-number"), &json!("held")),
            "{entry}"
        );
        assert_eq!(entry["problem"]["type"], "/problems/duplicate-invoice-number", "{entry}");
        let again = post(body).await;
        assert_eq!((again.status, &again.json()["id"]), (202, &entry["id"]), "a resend is the same entry");
        entry
    };
    let as_new = hold(repriced(700_001, "12.52", "801000")).await;
    let detail = as_new["problem"]["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("as invoice {original_id}")), "{detail}");
    assert!(detail.contains("it differs in total (8000.00 → 8010.00), lines, stated_totals"), "{detail}");
    assert_eq!(as_new["problem"]["segment_position"], 4, "BIG, where the number is");

    let release = async |entry: &Value, how: &str| {
        let path = format!("/v1/admin/quarantine/{}/release{how}", entry["id"].as_str().unwrap());
        admin(&h, reqwest::Method::POST, &path, None).await
    };
    let refused = release(&as_new, "").await;
    let problem = refused.assert_problem(409, "wrong-state");
    assert!(problem["detail"].as_str().unwrap().contains("booked before with other content"), "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("say what it is booked as"), "{problem}");
    let booked_invoice = async |released: Reply| {
        assert_eq!(
            (released.status, &released.json()["status"]),
            (200, &json!("released")),
            "{}",
            released.text
        );
        let path = format!("/v1/interchanges/{}", released.json()["released_as"].as_str().unwrap());
        let interchange = admin(&h, reqwest::Method::GET, &path, None).await;
        assert_eq!(interchange.status, 200, "{}", interchange.text);
        interchange.json()["invoices"][0].clone()
    };
    let new = booked_invoice(release(&as_new, "?as=new").await).await;
    assert_eq!((&new["number"], &new["total"]), (&json!("INV-1042"), &json!("8010.00")), "{new}");
    assert!(new.get("duplicate_of").is_none() && new.get("replaces").is_none(), "{new}");

    let as_replacement = hold(repriced(700_002, "12.54", "802000")).await;
    let replacement = booked_invoice(release(&as_replacement, "?as=replacement").await).await;
    assert_eq!(replacement["total"], "8020.00");
    assert_eq!(replacement["replaces"], new["id"], "it replaces the latest revision");

    let discarded = hold(repriced(700_003, "12.56", "803000")).await;
    let path = format!("/v1/admin/quarantine/{}/discard", discarded["id"].as_str().unwrap());
    assert_eq!(admin(&h, reqwest::Method::POST, &path, None).await.status, 200);

    let sent = outbox(&h).await;
    assert_eq!(sent.len(), 3, "the original, the new invoice, the replacement: {sent:?}");
    assert!(sent.iter().all(|(number, _)| number == "INV-1042"));
    let keys: std::collections::HashSet<_> = sent.iter().map(|(_, key)| key).collect();
    assert_eq!(keys.len(), 3, "each revision its own Idempotency-Key: {sent:?}");
    assert_eq!(booked_count(&h).await, 3);
    for (action, times) in [
        ("quarantine.release-as-new", 1),
        ("quarantine.release-as-replacement", 1),
        ("quarantine.discard", 1),
    ] {
        let sql = format!("SELECT count(*) FROM operator_actions WHERE action = '{action}'");
        assert_eq!(common::count(&h.db.url, &sql).await, times, "{action} audited");
    }
    h.finish().await;
}

/// Under `on_duplicate_number: reject` a re-used number with other content is refused (422
/// `duplicate-invoice-number` naming the earlier invoice and what differs, the same bytes on a
/// resend, nothing booked); under `book` it is booked as a new invoice with a warning. The same
/// invoice resent is a duplicate under either.
async fn a_partner_refusing_or_booking_reused_numbers_gets_what_it_chose(backend: Backend) {
    for policy in ["reject", "book"] {
        let (h, key) = acme_with(backend, json!({"on_duplicate_number": policy})).await;
        let post = async |body: Vec<u8>| common::partners::post_with_key(&h, &key, body).await;
        let original = post(fixture("x12/810-single.edi")).await.json();
        let original_id = original["invoices"][0]["id"].as_str().unwrap();
        let resent = post(common::resent(700_010)).await;
        assert_eq!(resent.status, 201, "{policy}");
        assert_eq!(resent.json()["invoices"][0]["duplicate_of"]["invoice_id"], original_id, "{policy}");
        let changed = repriced(700_011, "12.52", "801000");
        let answer = post(changed.clone()).await;
        match policy {
            "reject" => {
                let problem = answer.assert_problem(422, "duplicate-invoice-number");
                let detail = problem["detail"].as_str().unwrap();
                assert!(
                    detail.contains(original_id) && detail.contains("total (8000.00 → 8010.00)"),
                    "{detail}"
                );
                let again = post(changed).await;
                assert_eq!((again.status, &again.text), (422, &answer.text), "the same refusal on a resend");
                assert_eq!(booked_count(&h).await, 1, "nothing booked");
            }
            _ => {
                assert_eq!(answer.status, 201, "{}", answer.text);
                let body = answer.json();
                assert!(body["invoices"][0].get("duplicate_of").is_none(), "{body}");
                let warning = body["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|w| w["message"].as_str())
                    .find(|m| m.contains("booked as a new invoice (revision 1)"));
                assert!(warning.is_some_and(|w| w.contains(original_id)), "{body}");
                assert_eq!(booked_count(&h).await, 2);
                assert_eq!(outbox(&h).await.len(), 2);
            }
        }
        h.finish().await;
    }
}

/// What is not a duplicate books: the same number as a credit note, the same number from another
/// seller, and, for a partner whose sellers number per year, the same number in the next year
/// (which, for a partner numbering once, is a re-used number: held).
async fn another_kind_another_seller_or_another_year_books(backend: Backend) {
    for numbers in ["per-year", "unique"] {
        let (h, key) = acme_with(backend, json!({"invoice_numbers": numbers})).await;
        let post = async |body: Vec<u8>| common::partners::post_with_key(&h, &key, body).await;
        assert_eq!(post(fixture("x12/810-single.edi")).await.status, 201);
        let credit = resent_with(700_020, |t| t.replace("PO-CB-1042~", "PO-CB-1042***CR~"));
        let seller =
            resent_with(700_021, |t| t.replace("ACME SUPPLY CO*92*ACME-001", "ACME WEST*92*ACME-002"));
        for (what, body) in [("a credit note", credit), ("another seller", seller)] {
            let booked = post(body).await;
            assert_eq!(booked.status, 201, "{what}: {}", booked.text);
            assert!(booked.json()["invoices"][0].get("duplicate_of").is_none(), "{what}: {}", booked.text);
        }
        let next_year = post(resent_with(700_022, |t| t.replace("BIG*20260317", "BIG*20270317"))).await;
        match numbers {
            "per-year" => assert_eq!(next_year.status, 201, "{}", next_year.text),
            _ => {
                assert_eq!((next_year.status, &next_year.json()["reason"]), (202, &json!("duplicate-number")))
            }
        }
        h.finish().await;
    }
}

/// A partner's settings change after registration, over the admin API and on the command line,
/// each change audited with what it was: a re-used number held by default is refused once the
/// partner says `reject`, and booked once it says `book`. An unknown setting, an identity that is
/// another partner's, an unknown partner and a numbering change after invoices were booked under
/// the old one change nothing.
async fn a_partners_settings_change_after_registration(backend: Backend) {
    let (h, key) = acme_with(backend, json!({})).await;
    let post = async |body: Vec<u8>| common::partners::post_with_key(&h, &key, body).await;
    assert_eq!(post(fixture("x12/810-single.edi")).await.status, 201);
    assert_eq!(post(repriced(700_030, "12.52", "801000")).await.status, 202, "held by default");

    let patch = async |id: &str, body: Value| {
        admin(&h, reqwest::Method::PATCH, &format!("/v1/admin/partners/{id}"), Some(body)).await
    };
    let settings = json!({"on_duplicate_number": "reject", "receivers": ["x12:ZZ:BUYERCO"], "requests_per_minute": 6000.0});
    let changed = patch("acme", settings).await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    assert_eq!(changed.json()["on_duplicate_number"], "reject");
    assert_eq!(changed.json()["requests_per_minute"], 6000, "a whole number written as a float");
    assert_eq!(changed.json()["senders"], json!(["x12:ZZ:ACMESUPPLY"]), "unchanged");
    post(repriced(700_031, "12.52", "801000")).await.assert_problem(422, "duplicate-invoice-number");

    register(&h, json!({"id": "globex", "name": "Globex", "senders": ["x12:ZZ:GLOBEX"]})).await;
    for (id, body, status, problem) in [
        ("acme", json!({"on_duplicate_numbers": "book"}), 400, "invalid-request"),
        ("acme", json!([null, null]), 400, "invalid-request"),
        ("acme", json!({"requests_per_minute": 1.5}), 400, "invalid-request"),
        ("acme", json!({"senders": []}), 400, "invalid-request"),
        ("acme", json!({"invoice_numbers": "per-year"}), 400, "invalid-request"),
        ("acme", json!({"senders": ["x12:ZZ:ACMESUPPLY", "x12:ZZ:GLOBEX"]}), 409, "already-exists"),
        ("nobody", json!({"name": "Nobody"}), 404, "not-found"),
    ] {
        patch(id, body.clone()).await.assert_problem(status, problem);
    }
    let acme = admin(&h, reqwest::Method::GET, "/v1/admin/partners/acme", None).await.json();
    assert_eq!(
        (&acme["senders"], &acme["invoice_numbers"], &acme["on_duplicate_number"]),
        (&json!(["x12:ZZ:ACMESUPPLY"]), &json!("unique"), &json!("reject")),
        "the refused changes changed nothing"
    );

    let cli = common::process::command(
        &h.db.url,
        &["partner", "update", "acme", "--on-duplicate-number", "book", "--receiver"],
    )
    .output()
    .expect("edi-inbox partner update");
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    let printed: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!((&printed["on_duplicate_number"], &printed["receivers"]), (&json!("book"), &json!([])));
    // The server reads its partner directory again within --partner-cache-ttl (5 s).
    let mut booked = None;
    for control in 700_040..700_100 {
        let answer = post(repriced(control, "12.52", "801000")).await;
        if answer.status == 201 {
            booked = Some(answer);
            break;
        }
        answer.assert_problem(422, "duplicate-invoice-number");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(booked.is_some(), "the command line's change reached the server");

    let sql = "SELECT actor || ' | ' || state_before || ' | ' || state_after FROM operator_actions \
        WHERE action = 'partner.update' ORDER BY at";
    let audited = common::texts(&h.db.url, sql).await;
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert!(audited[0].starts_with("admin-api |"), "{audited:?}");
    assert!(
        audited[0].ends_with(
            r#"| receivers=[] requests_per_minute=null on_duplicate_number="quarantine" | receivers=["x12:ZZ:BUYERCO"] requests_per_minute=6000 on_duplicate_number="reject""#
        ),
        "{audited:?}"
    );
    assert!(
        audited[1].ends_with(
            r#"| receivers=["x12:ZZ:BUYERCO"] on_duplicate_number="reject" | receivers=[] on_duplicate_number="book""#
        ),
        "{audited:?}"
    );
    h.finish().await;
}

/// A credit note, debit note or corrected invoice naming an earlier invoice (X12 REF*OI or REF*IV,
/// EDIFACT RFF+OI) is booked with the number it names and, when that invoice was booked, its id: in
/// the answer, the invoice resource and the accounting message. One naming an invoice never booked
/// keeps the number only, and an invoice's own REF*IV names no original.
async fn credit_notes_and_corrections_are_linked_to_the_invoice_they_name(backend: Backend) {
    let senders = json!({"senders": ["x12:ZZ:ACMESUPPLY", "edifact:14:4000001000005"]});
    let (h, key) = acme_with(backend, senders).await;
    let post = async |body: Vec<u8>| common::partners::post_with_key(&h, &key, body).await;
    let booked = async |body: Vec<u8>| {
        let answer = post(body).await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        answer.json()["invoices"][0].clone()
    };
    let original = booked(fixture("x12/810-single.edi")).await;
    let x12 = |control: u32, big: &str, reference: &str| {
        resent_with(control, |text| {
            text.replace("BIG*20260317*INV-1042*20260301*PO-CB-1042~", &format!("{big}~{reference}~"))
                .replace("SE*18*0001", "SE*19*0001")
        })
    };
    let credit = booked(x12(700_050, "BIG*20260320*CN-7*20260301*PO-CB-1042***CR", "REF*OI*INV-1042")).await;
    assert_eq!(
        (&credit["kind"], &credit["original_invoice"], &credit["original_invoice_id"]),
        (&json!("credit_note"), &json!("INV-1042"), &original["id"]),
        "{credit}"
    );
    assert_eq!(credit["sources"]["original_invoice"], 5, "the REF after BIG");
    let corrected =
        booked(x12(700_051, "BIG*20260321*INV-1042*20260301*PO-CB-1042***CO", "REF*IV*INV-0999")).await;
    assert_eq!(
        (&corrected["kind"], &corrected["original_invoice"]),
        (&json!("corrected_invoice"), &json!("INV-0999"))
    );
    assert!(corrected.get("original_invoice_id").is_none(), "INV-0999 was never booked: {corrected}");
    let invoice = booked(x12(700_052, "BIG*20260322*INV-2000*20260301*PO-CB-1042", "REF*IV*INV-2000")).await;
    assert_eq!(invoice["original_invoice"], Value::Null, "an invoice's REF*IV is its own number");

    let path = format!("/v1/invoices/{}", credit["id"].as_str().unwrap());
    let read = admin(&h, reqwest::Method::GET, &path, None).await.json();
    assert_eq!(
        (&read["original_invoice"], &read["original_invoice_id"]),
        (&json!("INV-1042"), &original["id"])
    );
    let sql = "SELECT o.payload FROM outbox o JOIN invoices i ON i.id = o.invoice_id WHERE i.number = 'CN-7'";
    let message: Value = serde_json::from_str(&common::texts(&h.db.url, sql).await[0]).unwrap();
    assert_eq!(
        (&message["original_invoice"], &message["original_invoice_id"]),
        (&json!("INV-1042"), &original["id"])
    );

    let edifact = String::from_utf8(fixture("edifact/invoic-d96a.edi")).unwrap();
    let edifact_original = booked(edifact.clone().into_bytes()).await;
    let edifact_credit = edifact
        .replace("BGM+380+RE-2026-0042+9'", "BGM+381+GS-2026-0007+9'")
        .replace("RFF+ON:PO-RE-2026-0042'", "RFF+ON:PO-RE-2026-0042'\nRFF+OI:RE-2026-0042'")
        .replace("UNT+24+M1'", "UNT+25+M1'");
    let edifact_credit = booked(common::reenveloped(edifact_credit.as_bytes(), "1043")).await;
    assert_eq!(
        (&edifact_credit["original_invoice"], &edifact_credit["original_invoice_id"]),
        (&json!("RE-2026-0042"), &edifact_original["id"]),
        "{edifact_credit}"
    );
    h.finish().await;
}

both_backends!(
    credit_notes_and_corrections_are_linked_to_the_invoice_they_name,
    a_partners_settings_change_after_registration,
    a_reused_number_with_other_content_is_held_and_each_decision_books_as_it_says,
    a_partner_refusing_or_booking_reused_numbers_gets_what_it_chose,
    another_kind_another_seller_or_another_year_books,
    every_fixture_invoice_resent_under_a_new_control_number_books_nothing_new,
    every_booking_fixture_is_booked_as_it_says,
    a_partner_whose_invoices_must_reconcile_gets_422_for_a_mismatch,
    a_partner_holding_mismatches_gets_them_booked_when_an_operator_releases_them
);
