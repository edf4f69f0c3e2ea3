//! What is booked is what the invoice says: each file of `tests/fixtures/booking/` (a retail 810
//! whose seller is a vendor, a Canadian 810 with GST and no currency, an INVOIC with every party,
//! two tax rates, charges and allowances at header and line level, gross and invoice prices, and an
//! INVOIC that does not reconcile next to a credit note) is booked field by field as its
//! hand-verified `expected.json` says, in the 201, as read back from the database, and in the
//! replay, on SQLite and PostgreSQL.

mod common;

use common::partners::{admin, register, secured};
use common::{Backend, Harness, Reply, fixture};
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
            assert_fields(&format!("{file} invoice {n} (201)"), got, want);
            let stored = h.app.get(&format!("/v1/invoices/{}", got["id"].as_str().unwrap())).await;
            assert_eq!(stored.status, 200, "{file}");
            assert_fields(&format!("{file} invoice {n} (read back)"), &stored.json(), want);
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
    for (n, (got, want)) in booked["invoices"].as_array().unwrap().iter().zip(wanted).enumerate() {
        assert_fields(&format!("{file} invoice {n} (released)"), got, want);
    }
    assert_eq!(
        post("invoic-every-party-tax-and-charge.edi").await.status,
        201,
        "an invoice that reconciles books"
    );
    h.finish().await;
}

both_backends!(
    every_booking_fixture_is_booked_as_it_says,
    a_partner_whose_invoices_must_reconcile_gets_422_for_a_mismatch,
    a_partner_holding_mismatches_gets_them_booked_when_an_operator_releases_them
);
