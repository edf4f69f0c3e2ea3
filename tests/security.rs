//! Only the real sender can claim its keys: partner authentication (API keys, Standard Webhooks
//! signatures), sender and receiver binding, rotation, suspension, limits, the admin API and the
//! audit trail — through HTTP, on SQLite and PostgreSQL.

mod common;

use chrono::Utc;
use common::partners::{acme, admin, post_signed, post_with_key, register, secured, stored_interchanges};
use common::{Backend, Harness, Reply, fixture, server_config};
use edi_inbox::config::{AuthMode, ServerConfig};
use edi_inbox::partners::webhooks;
use serde_json::json;

async fn a_forged_sender_cannot_claim_another_partners_key(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = acme(&h).await;
    let other = register(&h, json!({"id": "other", "name": "Other", "senders": ["x12:ZZ:OTHERCO"]})).await;

    let forged = post_with_key(&h, &other.api_key, fixture("x12/810-single.edi")).await;
    let problem = forged.assert_problem(403, "forbidden-sender");
    assert!(problem["detail"].as_str().unwrap().contains("x12:ZZ:ACMESUPPLY"), "{}", forged.text);
    assert_eq!(stored_interchanges(&h).await, 0, "nothing stored for a forged sender");

    // The real sender's first delivery is still a first delivery, not a replay or a conflict.
    let real = post_with_key(&h, &acme.api_key, fixture("x12/810-single.edi")).await;
    assert_eq!(real.status, 201, "{}", real.text);
    let metrics = admin(&h, reqwest::Method::GET, "/metrics", None).await.text;
    assert!(metrics.contains("edi_inbox_security_events_total{reason=\"forged-sender\"} 1"), "{metrics}");
    h.finish().await;
}

async fn requests_without_valid_credentials_are_refused(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = acme(&h).await;
    let anonymous = h.app.post_fixture("x12/810-single.edi").await;
    anonymous.assert_problem(401, "unauthorized");
    assert_eq!(anonymous.header("www-authenticate"), Some("Bearer"));
    post_with_key(&h, "eik_not-a-key", fixture("x12/810-single.edi"))
        .await
        .assert_problem(401, "unauthorized");
    post_with_key(&h, &acme.webhook_secret, fixture("x12/810-single.edi"))
        .await
        .assert_problem(401, "unauthorized");
    // Basic carries the partner and its key: a key under another partner's name is no credential.
    let basic = |user: &str| {
        Reply::send(
            h.app
                .client
                .post(h.app.url("/v1/interchanges"))
                .basic_auth(user, Some(&acme.api_key))
                .header("content-type", "application/edi-x12")
                .body(fixture("x12/810-single.edi")),
        )
    };
    basic("globex").await.assert_problem(401, "unauthorized");
    basic("").await.assert_problem(401, "unauthorized");
    // Wrong receiver: the partner may only send to BUYERCO.
    let elsewhere = String::from_utf8(fixture("x12/810-single.edi"))
        .unwrap()
        .replace("*ZZ*BUYERCO        *", "*ZZ*SOMEONEELSE    *");
    post_with_key(&h, &acme.api_key, elsewhere.into_bytes()).await.assert_problem(403, "forbidden-sender");
    // Reads need the admin token once partners authenticate.
    h.app.get("/v1/interchanges").await.assert_problem(401, "unauthorized");
    Reply::send(h.app.client.get(h.app.url("/v1/invoices")).bearer_auth(&acme.api_key))
        .await
        .assert_problem(401, "unauthorized");
    Reply::send(h.app.client.get(h.app.url("/v1/admin/partners")).bearer_auth("wrong"))
        .await
        .assert_problem(401, "unauthorized");
    assert_eq!(h.app.get("/healthz").await.status, 200, "probes stay public");
    assert_eq!(stored_interchanges(&h).await, 0);
    h.finish().await;
}

async fn standard_webhooks_signatures_are_verified(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = acme(&h).await;
    let now = Utc::now().timestamp();
    let body = fixture("x12/810-single.edi");

    let wrong_secret = webhooks::sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "x", now, &body);
    assert!(!wrong_secret.is_empty());
    post_signed(&h, "acme", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", now, body.clone())
        .await
        .assert_problem(401, "unauthorized");
    let stale = post_signed(&h, "acme", &acme.webhook_secret, now - 600, body.clone()).await;
    let problem = stale.assert_problem(401, "unauthorized");
    assert!(problem["detail"].as_str().unwrap().contains("five minutes"), "{}", stale.text);
    post_signed(&h, "acme", &acme.webhook_secret, now + 600, body.clone())
        .await
        .assert_problem(401, "unauthorized");
    post_signed(&h, "nobody", &acme.webhook_secret, now, body.clone())
        .await
        .assert_problem(401, "unauthorized");
    assert_eq!(stored_interchanges(&h).await, 0);

    let signed = post_signed(&h, "acme", &acme.webhook_secret, now, body.clone()).await;
    assert_eq!(signed.status, 201, "{}", signed.text);
    // A signature over other bytes does not carry over to a tampered body.
    let id = "msg_fixed";
    let signature = webhooks::sign(&acme.webhook_secret, id, now, &body);
    let tampered = String::from_utf8(body).unwrap().replace("500*EA", "900*EA");
    let refused = Reply::send(
        h.app
            .client
            .post(h.app.url("/v1/interchanges?partner=acme"))
            .header("webhook-id", id)
            .header("webhook-timestamp", now.to_string())
            .header("webhook-signature", signature)
            .body(tampered),
    )
    .await;
    refused.assert_problem(401, "unauthorized");
    h.finish().await;
}

async fn rotated_credentials_work_during_the_overlap(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let old = acme(&h).await;
    let issued = admin(
        &h,
        reqwest::Method::POST,
        "/v1/admin/partners/acme/credentials",
        Some(json!({"kind": "api_key"})),
    )
    .await;
    assert_eq!(issued.status, 201, "{}", issued.text);
    let new_key = issued.json()["secret"].as_str().unwrap().to_owned();
    let secret = admin(
        &h,
        reqwest::Method::POST,
        "/v1/admin/partners/acme/credentials",
        Some(json!({"kind": "webhook_secret"})),
    )
    .await;
    let new_secret = secret.json()["secret"].as_str().unwrap().to_owned();

    assert_eq!(post_with_key(&h, &old.api_key, fixture("x12/810-single.edi")).await.status, 201);
    assert_eq!(post_with_key(&h, &new_key, fixture("x12/810-single.edi")).await.status, 200);
    let now = Utc::now().timestamp();
    assert_eq!(
        post_signed(&h, "acme", &old.webhook_secret, now, fixture("x12/810-single.edi")).await.status,
        200
    );
    assert_eq!(post_signed(&h, "acme", &new_secret, now, fixture("x12/810-one-line.edi")).await.status, 201);

    // Revoking the old key ends the overlap.
    let partner = admin(&h, reqwest::Method::GET, "/v1/admin/partners/acme", None).await.json();
    let old_id = partner["credentials"].as_array().unwrap().iter().find(|c| c["kind"] == "api_key").unwrap()
        ["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let revoked =
        admin(&h, reqwest::Method::DELETE, &format!("/v1/admin/partners/acme/credentials/{old_id}"), None)
            .await;
    assert_eq!(revoked.status, 204, "{}", revoked.text);
    post_with_key(&h, &old.api_key, fixture("x12/810-single.edi")).await.assert_problem(401, "unauthorized");
    assert_eq!(post_with_key(&h, &new_key, fixture("x12/810-single.edi")).await.status, 200);
    assert!(!partner.to_string().contains(&new_key), "secrets are never listed");

    // Suspension refuses every credential; reactivation restores them.
    let suspended = admin(
        &h,
        reqwest::Method::PUT,
        "/v1/admin/partners/acme/status",
        Some(json!({"status": "suspended"})),
    )
    .await;
    assert_eq!(suspended.json()["status"], "suspended");
    post_with_key(&h, &new_key, fixture("x12/810-single.edi")).await.assert_problem(403, "forbidden-sender");
    let signed =
        post_signed(&h, "acme", &new_secret, Utc::now().timestamp(), fixture("x12/810-single.edi")).await;
    signed.assert_problem(403, "forbidden-sender");
    let unsigned = post_signed(
        &h,
        "acme",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        Utc::now().timestamp(),
        fixture("x12/810-single.edi"),
    )
    .await;
    unsigned.assert_problem(401, "unauthorized");
    admin(&h, reqwest::Method::PUT, "/v1/admin/partners/acme/status", Some(json!({"status": "active"})))
        .await;
    assert_eq!(post_with_key(&h, &new_key, fixture("x12/810-single.edi")).await.status, 200);
    h.finish().await;
}

async fn every_attempt_is_audited_without_secrets(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = acme(&h).await;
    let created = post_with_key(&h, &acme.api_key, fixture("x12/810-single.edi")).await;
    post_with_key(&h, &acme.api_key, fixture("x12/810-single-rewrapped.edi")).await;
    post_with_key(&h, &acme.api_key, fixture("x12/810-single-conflict.edi")).await;
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/interchanges/{id}/deliveries");
    let trail = common::eventually(
        async || admin(&h, reqwest::Method::GET, &path, None).await,
        |trail| trail.json()["items"].as_array().is_some_and(|attempts| attempts.len() == 3),
    )
    .await;
    assert_eq!(trail.status, 200, "{}", trail.text);
    let attempts = trail.json()["items"].clone();
    let outcomes: Vec<_> =
        attempts.as_array().unwrap().iter().map(|a| (a["outcome"].clone(), a["status"].clone())).collect();
    assert_eq!(
        outcomes,
        [(json!("recorded"), json!(201)), (json!("replayed"), json!(200)), (json!("conflict"), json!(409))]
    );
    for attempt in attempts.as_array().unwrap() {
        assert_eq!(attempt["partner_id"], "acme");
        assert_eq!(
            attempt["remote_addr"], "127.0.0.1",
            "the address without the port, so that attempts aggregate"
        );
        assert!(attempt["request_id"].as_str().is_some());
    }
    assert!(!trail.text.contains(&acme.api_key) && !trail.text.contains(&acme.webhook_secret));
    let metrics = admin(&h, reqwest::Method::GET, "/metrics", None).await.text;
    assert!(metrics.contains("edi_inbox_deliveries_total{outcome=\"conflict\"} 1"), "{metrics}");
    h.finish().await;
}

async fn partner_limits_apply(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let small = register(
        &h,
        json!({"id": "small", "name": "Small", "senders": ["x12:ZZ:ACMESUPPLY"], "max_body_bytes": 200, "requests_per_minute": 2}),
    )
    .await;
    post_with_key(&h, &small.api_key, fixture("x12/810-single.edi"))
        .await
        .assert_problem(413, "payload-too-large");
    post_with_key(&h, &small.api_key, b"ISA".to_vec()).await.assert_problem(400, "malformed-interchange");
    let limited = post_with_key(&h, &small.api_key, b"ISA".to_vec()).await;
    limited.assert_problem(429, "rate-limited");
    let wait: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    h.finish().await;
}

/// A partner registered with `response: minimal` is answered with the minimal interchange unless a
/// request prefers the whole one (`Prefer: return=representation`).
async fn a_partner_can_be_answered_minimally_by_default(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let partner =
        json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "response": "minimal"});
    let acme = register(&h, partner).await;
    let shown = admin(&h, reqwest::Method::GET, "/v1/admin/partners/acme", None).await.json();
    assert_eq!(shown["response"], "minimal");
    let created = post_with_key(&h, &acme.api_key, fixture("x12/810-single.edi")).await;
    assert_eq!((created.status, created.header("preference-applied")), (201, Some("return=minimal")));
    assert_eq!(created.json()["invoice_count"], 1, "{}", created.text);
    assert!(created.json().get("invoices").is_none(), "{}", created.text);
    let whole = Reply::send(
        h.app
            .client
            .post(h.app.url("/v1/interchanges"))
            .bearer_auth(&acme.api_key)
            .header("content-type", "application/edi-x12")
            .header("prefer", "return=representation")
            .body(fixture("x12/810-single.edi")),
    )
    .await;
    assert_eq!((whole.status, whole.header("preference-applied")), (200, None));
    assert_eq!(whole.json()["invoices"][0]["lines"].as_array().map(Vec::len), Some(2), "{}", whole.text);
    h.finish().await;
}

async fn per_partner_validation_and_conflict_policy(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let strict =
        register(&h, json!({"id": "strict", "name": "Strict", "senders": ["x12:ZZ:ACMESUPPLY"]})).await;
    let lenient = register(
        &h,
        json!({"id": "lenient", "name": "Lenient", "senders": ["x12:ZZ:LATIN"], "validation": "lenient", "conflict_policy": "process"}),
    )
    .await;
    // A Latin-1 byte in an X12 name: strict rejects it where it stands, lenient reads it as ISO-8859-1.
    let latin = |sender: &str, control: &str| {
        let text = String::from_utf8(fixture("x12/810-single.edi"))
            .unwrap()
            .replace("ACMESUPPLY     ", &format!("{sender:<15}"))
            .replace("000001142", control);
        text.replace("ACME SUPPLY CO", "ACME SUPPLY \u{e9}")
    };
    let to_latin1 =
        |text: String| text.chars().map(|c| u8::try_from(u32::from(c)).unwrap()).collect::<Vec<u8>>();
    let refused = post_with_key(&h, &strict.api_key, to_latin1(latin("ACMESUPPLY", "000000001"))).await;
    let problem = refused.assert_problem(422, "invalid-interchange");
    assert_eq!((problem["segment"].as_str(), problem["element"].as_str()), (Some("N1"), Some("N102")));
    let accepted = post_with_key(&h, &lenient.api_key, to_latin1(latin("LATIN", "000000001"))).await;
    assert_eq!(accepted.status, 201, "{}", accepted.text);
    assert_eq!(accepted.json()["invoices"][0]["seller"]["name"], "ACME SUPPLY \u{e9}");

    // Conflict policy: `reject` answers 409; `process` records the other content under a distinct key.
    let original = to_latin1(latin("LATIN", "000000002"));
    // Another invoice under the reused control number (the same invoice number with other content
    // would be a re-used number, held by default: tests/booking.rs).
    let changed =
        to_latin1(latin("LATIN", "000000002").replace("500*EA", "501*EA").replace("INV-1042", "INV-1043"));
    assert_eq!(post_with_key(&h, &lenient.api_key, original).await.status, 201);
    let processed = post_with_key(&h, &lenient.api_key, changed.clone()).await;
    assert_eq!(processed.status, 201, "{}", processed.text);
    let message_id = processed.json()["idempotency_key"]["message_id"].as_str().unwrap().to_owned();
    assert!(message_id.starts_with("000000002#") && message_id.len() == 26, "{message_id}");
    let again = post_with_key(&h, &lenient.api_key, changed).await;
    assert_eq!((again.status, again.text), (200, processed.text), "the distinguished key replays");
    post_with_key(&h, &strict.api_key, fixture("x12/810-single.edi")).await;
    post_with_key(&h, &strict.api_key, fixture("x12/810-single-conflict.edi"))
        .await
        .assert_problem(409, "control-number-conflict");
    h.finish().await;
}

/// Every raw EDI example the OpenAPI document offers (what Swagger UI's "Try it out" sends) is
/// booked as offered for the sample partner of docs/partners/authentication.md, with its API key: 201, each under a key of its
/// own.
async fn the_documents_examples_are_booked_for_the_readme_partner(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(
        &h,
        json!({"id": "acme", "name": "ACME Supply", "senders": ["x12:ZZ:ACMESUPPLY", "edifact:ZZ:ACMESUPPLY"],
            "receivers": ["x12:ZZ:BUYERCO", "edifact:ZZ:BUYERCO"]}),
    )
    .await;
    let document = serde_json::to_value(edi_inbox::http::openapi_document()).unwrap();
    let offered =
        document["paths"]["/v1/interchanges"]["post"]["requestBody"]["content"].as_object().unwrap();
    let mut booked = 0;
    for (media_type, content) in offered {
        let Some(example) = content["example"].as_str() else { continue };
        let reply = Reply::send(
            h.app
                .client
                .post(h.app.url("/v1/interchanges"))
                .bearer_auth(&acme.api_key)
                .header("content-type", media_type.as_str())
                .body(example.to_owned()),
        )
        .await;
        assert_eq!(reply.status, 201, "{media_type}: {}", reply.text);
        booked += 1;
    }
    assert_eq!(booked, 5, "the raw EDI examples: X12 four ways and EDIFACT");
    h.finish().await;
}

/// The SQLite database holds the console's cookie key, operators' password hashes and partners'
/// secrets: the file and its `-wal` and `-shm` are created readable by their owner only (before:
/// 0644, anyone on the machine could read them).
#[tokio::test]
async fn the_sqlite_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::with_server(Backend::Sqlite, secured()).await;
    acme(&h).await;
    let file = h.db.url.strip_prefix("sqlite://").unwrap().to_owned();
    for suffix in ["", "-wal", "-shm"] {
        let mode = std::fs::metadata(format!("{file}{suffix}")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}{suffix}: {mode:o}");
    }
    h.finish().await;
}

both_backends!(
    the_documents_examples_are_booked_for_the_readme_partner,
    per_partner_validation_and_conflict_policy,
    a_partner_can_be_answered_minimally_by_default,
    a_forged_sender_cannot_claim_another_partners_key,
    requests_without_valid_credentials_are_refused,
    standard_webhooks_signatures_are_verified,
    rotated_credentials_work_during_the_overlap,
    every_attempt_is_audited_without_secrets,
    partner_limits_apply,
);

#[tokio::test]
async fn open_mode_is_refused_on_a_network_address() {
    let db = common::TestDb::create(Backend::Sqlite).await;
    let store = edi_inbox::app::open_store(&common::database_config(&db.url)).await.unwrap();
    let network =
        ServerConfig { bind: "0.0.0.0:0".parse().unwrap(), auth: AuthMode::Open, ..server_config() };
    let refused = edi_inbox::app::App::bind(store.clone(), &network, &common::accounting_config(&[]))
        .await
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("refusing to serve without authentication"), "{refused}");
    assert_eq!(network.partner_auth(), Err(refused.to_string()));
    let forced = ServerConfig { allow_open_on_network: true, ..network.clone() };
    assert_eq!(forced.partner_auth(), Ok(false));
    let auto = ServerConfig { auth: AuthMode::Auto, ..network };
    assert_eq!(auto.partner_auth(), Ok(true), "auto authenticates partners off loopback");
    assert_eq!(server_config().partner_auth(), Ok(false), "auto is open on loopback");
    db.remove().await;
}
