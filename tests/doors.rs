//! The front doors: the same interchange through a plain POST, CloudEvents (binary and
//! structured), Pub/Sub push, SNS and an AS2 gateway is one interchange (201, then 200s), each
//! attempt audited with its door and transport id; bad wrappings get their exact problem; SNS
//! confirmations are kept for operators; the CloudEvents webhook handshake; AS2 names checked;
//! quarantine and the inbox bypass per partner. On SQLite and PostgreSQL.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::partners::{ADMIN, admin, register, secured};
use common::{Backend, Harness, Reply, fixture, numbered, server_config};
use edi_inbox::config::ServerConfig;
use reqwest::Method;
use serde_json::{Value, json};

fn pubsub(message_id: &str, edi: &[u8]) -> Value {
    json!({
        "message": {"data": STANDARD.encode(edi), "messageId": message_id, "message_id": message_id,
            "publishTime": "2026-12-03T10:00:00.123Z", "attributes": {"partner": "acme"}},
        "subscription": "projects/edi/subscriptions/inbox-push",
        "deliveryAttempt": 1
    })
}

fn sns_notification(message_id: &str, edi: &[u8]) -> Value {
    json!({
        "Type": "Notification", "MessageId": message_id, "TopicArn": "arn:aws:sns:eu-west-1:123456789012:edi",
        "Subject": "invoice", "Message": String::from_utf8(edi.to_vec()).unwrap(),
        "Timestamp": "2026-12-03T10:00:00.000Z", "SignatureVersion": "2", "Signature": "c2lnbmF0dXJl",
        "SigningCertURL": "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0000.pem",
        "UnsubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe"
    })
}

fn sns_confirmation(message_id: &str) -> Value {
    json!({"Type": "SubscriptionConfirmation", "MessageId": message_id, "Token": "2336412f37fb687f5d51e6e2425",
        "TopicArn": "arn:aws:sns:eu-west-1:123456789012:edi", "Message": "You have chosen to subscribe to the topic",
        "SubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=2336412f37fb687f5d51e6e2425",
        "Timestamp": "2026-12-03T10:00:00.000Z", "SignatureVersion": "1", "Signature": "c2ln",
        "SigningCertURL": "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0000.pem"})
}

async fn send(h: &Harness, headers: &[(&str, &str)], body: impl Into<reqwest::Body>) -> Reply {
    let mut request = h.app.client.post(h.app.url("/v1/interchanges"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    Reply::send(request.body(body)).await
}

async fn deliveries(h: &Harness, id: &str) -> Vec<Value> {
    let reply = Reply::send(
        h.app.client.get(h.app.url(&format!("/v1/interchanges/{id}/deliveries"))).bearer_auth(ADMIN),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json()["items"].as_array().unwrap().clone()
}

/// One interchange through six doors: 201 once, 200 with the same id and invoice five times; one
/// invoice; every attempt audited with its door and transport id.
async fn every_door_delivers_the_same_interchange_once(backend: Backend) {
    let h = Harness::start(backend).await;
    let edi = fixture("x12/810-single.edi");
    let first = send(&h, &[("content-type", "application/edi-x12")], edi.clone()).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let structured = json!({"specversion": "1.0", "id": "ce-structured-1", "source": "/partners/acme",
        "type": "org.x12.810", "datacontenttype": "application/edi-x12", "data": String::from_utf8(edi.clone()).unwrap()});
    let base64_event = json!({"specversion": "1.0", "id": "ce-structured-2", "source": "/partners/acme",
        "type": "org.x12.810", "data_base64": STANDARD.encode(&edi)});
    let replays = [
        send(
            &h,
            &[
                ("content-type", "application/edi-x12"),
                ("ce-specversion", "1.0"),
                ("ce-id", "ce-binary-1"),
                ("ce-source", "/partners/acme"),
                ("ce-type", "org.x12.810"),
            ],
            edi.clone(),
        )
        .await,
        send(&h, &[("content-type", "application/cloudevents+json")], structured.to_string()).await,
        send(&h, &[("content-type", "application/cloudevents+json")], base64_event.to_string()).await,
        send(&h, &[("content-type", "application/json")], pubsub("pubsub-1", &edi).to_string()).await,
        send(
            &h,
            &[
                ("content-type", "text/plain; charset=UTF-8"),
                ("x-amz-sns-message-type", "Notification"),
                ("x-amz-sns-message-id", "sns-1"),
            ],
            sns_notification("sns-1", &edi).to_string(),
        )
        .await,
        send(
            &h,
            &[
                ("content-type", "application/edi-x12"),
                ("as2-from", "ACME-AS2"),
                ("as2-to", "BUYERCO-AS2"),
                ("message-id", "<as2-1@acme.example>"),
            ],
            edi.clone(),
        )
        .await,
    ];
    for reply in &replays {
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.header("idempotent-replayed"), Some("true"));
        assert_eq!(reply.json()["id"], id.as_str());
        assert_eq!(reply.json()["invoices"], first.json()["invoices"]);
    }
    assert_eq!(h.app.all_invoices().await.len(), 1);
    let audited = common::eventually(async || deliveries(&h, &id).await, |rows| rows.len() == 7).await;
    let doors: Vec<(&str, Option<&str>)> =
        audited.iter().map(|row| (row["door"].as_str().unwrap(), row["transport_id"].as_str())).collect();
    assert_eq!(
        doors,
        [
            ("direct", None),
            ("cloudevents", Some("ce-binary-1")),
            ("cloudevents", Some("ce-structured-1")),
            ("cloudevents", Some("ce-structured-2")),
            ("pubsub", Some("pubsub-1")),
            ("sns", Some("sns-1")),
            ("as2", Some("<as2-1@acme.example>")),
        ]
    );
    let by_door = |door: &str| audited.iter().find(|row| row["door"] == door).unwrap()["transport"].clone();
    assert_eq!(by_door("pubsub")["subscription"], "projects/edi/subscriptions/inbox-push");
    assert_eq!(by_door("sns")["signature"], "c2lnbmF0dXJl");
    assert_eq!(by_door("sns")["topic_arn"], "arn:aws:sns:eu-west-1:123456789012:edi");
    assert_eq!(by_door("as2")["as2_to"], "BUYERCO-AS2");
    assert!(audited.iter().all(|row| row["transport_reused"] == false));
    h.finish().await;
}

/// A transport id that comes back with a different interchange is flagged, for the first
/// delivery (written with the claim) and for a replay (written in the background) alike.
async fn a_transport_id_reused_for_another_interchange_is_flagged(backend: Backend) {
    let h = Harness::start(backend).await;
    let pubsub_post = |message_id: &'static str, edi: Vec<u8>| {
        let h = &h;
        async move { send(h, &[("content-type", "application/json")], pubsub(message_id, &edi).to_string()).await }
    };
    let a = pubsub_post("m-1", numbered(1)).await;
    assert_eq!(a.status, 201, "{}", a.text);
    let b = pubsub_post("m-1", numbered(2)).await;
    assert_eq!(b.status, 201, "{}", b.text);
    let replay = pubsub_post("m-2", numbered(2)).await;
    assert_eq!(replay.status, 200);
    let again = pubsub_post("m-1", numbered(2)).await;
    assert_eq!(again.status, 200);
    let b_rows = common::eventually(
        async || deliveries(&h, b.json()["id"].as_str().unwrap()).await,
        |rows| rows.len() == 3,
    )
    .await;
    let flags: Vec<(&str, bool)> = b_rows
        .iter()
        .map(|r| (r["transport_id"].as_str().unwrap(), r["transport_reused"].as_bool().unwrap()))
        .collect();
    assert_eq!(flags, [("m-1", true), ("m-2", false), ("m-1", true)]);
    let a_rows = deliveries(&h, a.json()["id"].as_str().unwrap()).await;
    assert_eq!(a_rows[0]["transport_reused"], false);
    h.finish().await;
}

/// Two first deliveries that share a transport id and commit in one group commit: the later one
/// is flagged too, though the claim statement cannot see the rows it writes itself. A lock on the
/// audit table holds the writer on a third delivery while the two queue up behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_transport_id_reused_within_one_group_commit_is_flagged() {
    use sqlx::Connection;
    let h = Harness::start(Backend::Postgres).await;
    let mut locker = sqlx::PgConnection::connect(&h.db.url).await.unwrap();
    sqlx::raw_sql("BEGIN; LOCK TABLE deliveries IN SHARE MODE").execute(&mut locker).await.unwrap();
    let post = |message_id: &'static str, n: u32| {
        let (client, url) = (h.app.client.clone(), h.app.url("/v1/interchanges"));
        tokio::spawn(async move {
            Reply::send(
                client
                    .post(url)
                    .header("content-type", "application/json")
                    .body(pubsub(message_id, &numbered(n)).to_string()),
            )
            .await
        })
    };
    let blocker = post("m-0", 1);
    let waiting = common::eventually(
        async || {
            common::count(&h.db.url, "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")
                .await
        },
        |waiting| *waiting == 1,
    )
    .await;
    assert_eq!(waiting, 1, "the writer waits for the lock");
    let pair = [post("m-1", 2), post("m-1", 3)];
    // Both requests are parsed and queued long before this; the writer then takes them together.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    sqlx::raw_sql("ROLLBACK").execute(&mut locker).await.unwrap();
    assert_eq!(blocker.await.unwrap().status, 201);
    let mut flags = Vec::new();
    for reply in pair {
        let reply = reply.await.unwrap();
        assert_eq!(reply.status, 201, "{}", reply.text);
        let rows = deliveries(&h, reply.json()["id"].as_str().unwrap()).await;
        flags.push(rows[0]["transport_reused"].as_bool().unwrap());
    }
    flags.sort();
    assert_eq!(flags, [false, true], "exactly the later of the two is flagged");
    h.finish().await;
}

/// Each bad wrapping gets its exact status and problem type, and nothing is stored.
async fn bad_wrappings_get_their_problem(backend: Backend) {
    let h = Harness::start(backend).await;
    let edi = fixture("x12/810-single.edi");
    let json_type = [("content-type", "application/json")];
    let events = [("content-type", "application/cloudevents+json")];
    let sns = |kind| [("content-type", "text/plain"), ("x-amz-sns-message-type", kind)];
    let attributes = |value: Value| {
        let mut message = pubsub("1", &edi);
        message["message"]["attributes"] = value;
        message.to_string()
    };
    let cases: Vec<(&str, Reply, u16, &str)> = vec![
        ("pubsub without data", send(&h, &json_type, r#"{"message":{"messageId":"1"},"subscription":"s"}"#).await, 400, "invalid-transport"),
        ("pubsub data not base64", send(&h, &json_type, r#"{"message":{"data":"%%%","messageId":"1"},"subscription":"s"}"#).await, 400, "invalid-transport"),
        ("pubsub not json", send(&h, &json_type, "ISA*").await, 400, "invalid-transport"),
        ("pubsub attributes not an object", send(&h, &json_type, attributes(json!(["partner", "acme"]))).await, 400, "invalid-transport"),
        ("pubsub attributes null", send(&h, &json_type, attributes(Value::Null)).await, 400, "invalid-transport"),
        ("pubsub data not EDI", send(&h, &json_type, pubsub("1", b"hello").to_string()).await, 400, "malformed-interchange"),
        ("event without id", send(&h, &events, r#"{"specversion":"1.0","source":"/a","type":"t","data":"ISA"}"#).await, 400, "invalid-transport"),
        ("event of version 0.3", send(&h, &events, r#"{"specversion":"0.3","id":"1","source":"/a","type":"t","data":"ISA"}"#).await, 400, "invalid-transport"),
        ("event with XML data", send(&h, &events, r#"{"specversion":"1.0","id":"1","source":"/a","type":"t","datacontenttype":"application/xml","data":"<a/>"}"#).await, 415, "unsupported-media-type"),
        ("binary event without ce-type", send(&h, &[("content-type", "application/edi-x12"), ("ce-specversion", "1.0"), ("ce-id", "1"), ("ce-source", "/a")], edi.clone()).await, 400, "invalid-transport"),
        ("sns type mismatch", send(&h, &sns("SubscriptionConfirmation"), sns_notification("n", &edi).to_string()).await, 400, "invalid-transport"),
        ("sns unknown type", send(&h, &sns("Gossip"), "{}").await, 400, "invalid-transport"),
        ("batch of events", send(&h, &[("content-type", "application/cloudevents-batch+json")], "[]").await, 415, "unsupported-media-type"),
    ];
    for (name, reply, status, kind) in cases {
        assert_eq!(reply.status, status, "{name}: {}", reply.text);
        reply.assert_problem(status, kind);
    }
    // A `partner` parameter that names nobody is a mistake, not an absent one.
    for query in ["?partner=", "?partner"] {
        let url = h.app.url(&format!("/v1/interchanges{query}"));
        let reply = Reply::send(
            h.app.client.post(url).header("content-type", "application/edi-x12").body(edi.clone()),
        )
        .await;
        reply.assert_problem(400, "invalid-request");
    }
    assert!(h.app.all_interchanges().await.is_empty());
    h.finish().await;
}

/// SNS subscription and unsubscribe confirmations are answered 200, kept once however often SNS
/// resends them, listed and confirmed by an operator; nothing is booked.
async fn sns_confirmations_wait_for_an_operator(backend: Backend) {
    let h =
        Harness::with_server(backend, ServerConfig { admin_token: Some(ADMIN.into()), ..server_config() })
            .await;
    let confirmation = sns_confirmation("c-1");
    let headers = [
        ("content-type", "text/plain; charset=UTF-8"),
        ("x-amz-sns-message-type", "SubscriptionConfirmation"),
    ];
    for _ in 0..2 {
        let kept = send(&h, &headers, confirmation.to_string()).await;
        assert_eq!(kept.status, 200, "{}", kept.text);
        assert_eq!(kept.json()["status"], "pending");
    }
    let listed = admin(&h, Method::GET, "/v1/admin/sns-subscriptions", None).await.json()["items"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["subscribe_url"], confirmation["SubscribeURL"]);
    assert_eq!(listed[0]["signature"], "c2ln");
    let id = listed[0]["id"].as_str().unwrap();
    let confirmed = admin(&h, Method::POST, &format!("/v1/admin/sns-subscriptions/{id}/confirm"), None).await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.text);
    assert_eq!(confirmed.json()["status"], "confirmed");
    let missing = admin(
        &h,
        Method::POST,
        &format!("/v1/admin/sns-subscriptions/{}/confirm", uuid::Uuid::now_v7()),
        None,
    )
    .await;
    missing.assert_problem(404, "not-found");
    assert!(h.app.all_interchanges().await.is_empty());
    h.finish().await;
}

/// The CloudEvents webhook validation handshake: a configured origin gets `WebHook-Allowed-Origin`,
/// another 403; without the handshake header, OPTIONS stays guarded in partners mode.
async fn the_webhook_handshake_allows_configured_origins(backend: Backend) {
    let server = ServerConfig { webhook_allowed_origins: vec!["eventgrid.azure.net".into()], ..secured() };
    let h = Harness::with_server(backend, server).await;
    let handshake = |origin: &'static str| {
        let h = &h;
        async move {
            Reply::send(
                h.app
                    .client
                    .request(Method::OPTIONS, h.app.url("/v1/interchanges"))
                    .header("WebHook-Request-Origin", origin)
                    .header("WebHook-Request-Rate", "120"),
            )
            .await
        }
    };
    let allowed = handshake("eventgrid.azure.net").await;
    assert_eq!(allowed.status, 200, "{}", allowed.text);
    assert_eq!(allowed.header("webhook-allowed-origin"), Some("eventgrid.azure.net"));
    assert_eq!(allowed.header("webhook-allowed-rate"), Some("600"));
    handshake("attacker.example").await.assert_problem(403, "forbidden-sender");
    let plain = Reply::send(h.app.client.request(Method::OPTIONS, h.app.url("/v1/interchanges"))).await;
    assert_eq!(plain.status, 401);
    h.finish().await;
}

/// An AS2 delivery must name one of its partner's AS2 names in `AS2-From` and, with
/// `--as2-receiver-ids`, one of ours in `AS2-To` (403 otherwise, nothing stored); the AS2 headers
/// are kept with the attempt.
async fn as2_names_are_checked_against_the_partner(backend: Backend) {
    let server = ServerConfig { as2_receiver_ids: vec!["BUYERCO-AS2".into()], ..secured() };
    let h = Harness::with_server(backend, server).await;
    let acme = register(
        &h,
        json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "as2_ids": ["ACME-AS2"]}),
    )
    .await;
    let as2 = |from: &'static str, to: Option<&'static str>, body: Vec<u8>| {
        let (h, key) = (&h, acme.api_key.clone());
        async move {
            let request = h
                .app
                .client
                .post(h.app.url("/v1/interchanges"))
                .bearer_auth(key)
                .header("content-type", "application/edi-x12")
                .header("as2-from", from)
                .header("message-id", format!("<{from}@gateway>"));
            let request = match to {
                Some(to) => request.header("as2-to", to),
                None => request,
            };
            Reply::send(request.body(body)).await
        }
    };
    let refused = as2("GLOBEX-AS2", Some("BUYERCO-AS2"), numbered(1)).await;
    refused.assert_problem(403, "forbidden-sender");
    for to in [Some("OTHERCO-AS2"), Some("buyerco-as2"), None] {
        let misaddressed = as2("ACME-AS2", to, numbered(1)).await;
        misaddressed.assert_problem(403, "forbidden-sender");
        assert!(misaddressed.text.contains("does not receive as AS2 name"), "{}", misaddressed.text);
    }
    let accepted = as2("ACME-AS2", Some("BUYERCO-AS2"), numbered(1)).await;
    assert_eq!(accepted.status, 201, "{}", accepted.text);
    let rows = deliveries(&h, accepted.json()["id"].as_str().unwrap()).await;
    assert_eq!(
        (rows[0]["door"].as_str(), rows[0]["transport"]["as2_from"].as_str()),
        (Some("as2"), Some("ACME-AS2"))
    );
    let unregistered =
        register(&h, json!({"id": "globex", "name": "Globex", "senders": ["x12:ZZ:GLOBEX"]})).await;
    let no_names = Reply::send(
        h.app
            .client
            .post(h.app.url("/v1/interchanges"))
            .bearer_auth(&unregistered.api_key)
            .header("content-type", "application/edi-x12")
            .header("as2-from", "GLOBEX-AS2")
            .body(numbered(2)),
    )
    .await;
    no_names.assert_problem(403, "forbidden-sender");
    assert_eq!(common::partners::stored_interchanges(&h).await, 1);
    h.finish().await;
}

/// `conflict_policy = quarantine`: a conflict and an invalid interchange are answered 202
/// `quarantined` (the same entry on every redelivery), listed, and released or discarded once.
async fn quarantine_holds_what_a_broker_would_retry_for_days(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "conflict_policy": "quarantine"})).await;
    let post = |body: Vec<u8>| common::partners::post_with_key(&h, &acme.api_key, body);
    let original = post(fixture("x12/810-single.edi")).await;
    assert_eq!(original.status, 201);
    let mut held = Vec::new();
    for body in [fixture("x12/810-single-conflict.edi"), fixture("x12/invalid-se-count.edi")] {
        let first = post(body.clone()).await;
        assert_eq!(first.status, 202, "{}", first.text);
        assert_eq!(
            (first.json()["outcome"].as_str(), first.json()["status"].as_str()),
            (Some("quarantined"), Some("held"))
        );
        let again = post(body).await;
        assert_eq!(again.status, 202);
        assert_eq!(again.header("idempotent-replayed"), Some("true"));
        assert_eq!(again.json()["id"], first.json()["id"]);
        held.push(first.json());
    }
    assert_eq!((held[0]["reason"].as_str(), held[1]["reason"].as_str()), (Some("conflict"), Some("invalid")));
    assert_eq!(held[0]["interchange_id"], original.json()["id"]);
    assert_eq!(held[0]["problem"]["type"], "/problems/control-number-conflict");
    // The held invalid delivery is audited as the sender was answered: quarantined, 202 (the
    // console's overview counted it as rejected).
    let audited = deliveries(&h, held[1]["interchange_id"].as_str().unwrap()).await;
    assert_eq!(
        (audited[0]["outcome"].as_str(), audited[0]["status"].as_u64()),
        (Some("quarantined"), Some(202))
    );
    let listed = admin(&h, Method::GET, "/v1/admin/quarantine?status=held", None).await.json();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
    let path = |entry: &Value, action: &str| {
        format!("/v1/admin/quarantine/{}/{action}", entry["id"].as_str().unwrap())
    };
    // The conflicting resend re-uses INV-1042 with another quantity: released as a new invoice.
    let released = admin(&h, Method::POST, &format!("{}?as=new", path(&held[0], "release")), None).await;
    assert_eq!(released.status, 200, "{}", released.text);
    assert_eq!(released.json()["status"], "released");
    let recorded = released.json()["released_as"].as_str().unwrap().to_owned();
    let interchange = admin(&h, Method::GET, &format!("/v1/interchanges/{recorded}"), None).await.json();
    assert!(interchange["idempotency_key"]["message_id"].as_str().unwrap().starts_with("000001142#"));
    admin(&h, Method::POST, &path(&held[0], "release"), None).await.assert_problem(409, "wrong-state");
    let still_invalid = admin(&h, Method::POST, &path(&held[1], "release"), None).await;
    still_invalid.assert_problem(409, "wrong-state");
    let discarded = admin(&h, Method::POST, &path(&held[1], "discard"), None).await;
    assert_eq!(discarded.json()["status"], "discarded");
    // Each action is logged with who did it, what, to which, and where it stands now.
    for (action, entry, now) in
        [("quarantine.release-as-new", &held[0], "released"), ("quarantine.discard", &held[1], "discarded")]
    {
        let subject = format!(r#""subject":"{}""#, entry["id"].as_str().unwrap());
        let lines =
            common::logged_lines(&[r#""actor":"admin-api""#, &format!(r#""action":"{action}""#), &subject]);
        assert_eq!(lines.len(), 1, "{action}: {lines:?}");
        assert!(lines[0].contains(&format!(r#""now":"{now}""#)), "{}", lines[0]);
    }
    let redelivered = post(fixture("x12/810-single-conflict.edi")).await;
    assert_eq!((redelivered.status, redelivered.json()["status"].as_str()), (202, Some("released")));
    let invoices = admin(&h, Method::GET, "/v1/invoices?limit=500", None).await.json();
    assert_eq!(invoices["items"].as_array().unwrap().len(), 2, "the original and the released one");
    h.finish().await;
}

/// SNS confirmation messages are a partner's own and bounded: another partner's message with the
/// same MessageId neither reads acme's row back nor keeps acme's from being stored; an oversized
/// field is refused; past 100 pending messages a partner gets 429; the list and an interchange's
/// delivery attempts come a page at a time.
async fn sns_confirmations_are_scoped_bounded_and_paged(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"]})).await;
    let globex = register(&h, json!({"id": "globex", "name": "Globex", "senders": ["x12:ZZ:GLOBEX"]})).await;
    let confirm = |key: &str, body: Value| {
        Reply::send(
            h.app
                .client
                .post(h.app.url("/v1/interchanges"))
                .bearer_auth(key)
                .header("content-type", "text/plain; charset=UTF-8")
                .header("x-amz-sns-message-type", "SubscriptionConfirmation")
                .body(body.to_string()),
        )
    };
    let mut squatted = sns_confirmation("shared-id");
    squatted["Token"] = json!("globex-token");
    let squat = confirm(&globex.api_key, squatted).await;
    assert_eq!((squat.status, squat.json()["token"].as_str()), (200, Some("globex-token")), "{}", squat.text);
    let real = confirm(&acme.api_key, sns_confirmation("shared-id")).await;
    assert_eq!(real.status, 200, "{}", real.text);
    assert_eq!(
        (real.json()["partner_id"].as_str(), real.json()["token"].as_str()),
        (Some("acme"), Some("2336412f37fb687f5d51e6e2425"))
    );
    let again = confirm(&globex.api_key, sns_confirmation("shared-id")).await;
    assert_eq!(again.json()["token"], "globex-token", "globex gets its own row back, never acme's");

    let mut huge = sns_confirmation("huge");
    huge["Token"] = json!("t".repeat(5 * 1024 * 1024));
    confirm(&acme.api_key, huge).await.assert_problem(400, "invalid-transport");
    for n in 1..100 {
        assert_eq!(confirm(&acme.api_key, sns_confirmation(&format!("m-{n}"))).await.status, 200, "{n}");
    }
    let over = confirm(&acme.api_key, sns_confirmation("m-100")).await;
    over.assert_problem(429, "rate-limited");
    assert!(over.header("retry-after").is_some());
    assert_eq!(confirm(&acme.api_key, sns_confirmation("m-1")).await.status, 200, "a resend of a kept one");

    let page = admin(&h, Method::GET, "/v1/admin/sns-subscriptions?limit=2", None).await.json();
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    let cursor = page["next_cursor"].as_str().unwrap();
    let next =
        admin(&h, Method::GET, &format!("/v1/admin/sns-subscriptions?limit=500&cursor={cursor}"), None).await;
    assert_eq!(next.json()["items"].as_array().unwrap().len(), 101 - 2, "acme's 100 and globex's one");

    let post = |body: Vec<u8>| common::partners::post_with_key(&h, &acme.api_key, body);
    let first = post(fixture("x12/810-single.edi")).await.json();
    for _ in 0..2 {
        assert_eq!(post(fixture("x12/810-single.edi")).await.status, 200);
    }
    let id = first["id"].as_str().unwrap();
    let all = format!("/v1/interchanges/{id}/deliveries");
    common::eventually(
        async || admin(&h, Method::GET, &all, None).await.json(),
        |page| page["items"].as_array().is_some_and(|items| items.len() == 3),
    )
    .await;
    let attempts = admin(&h, Method::GET, &format!("{all}?limit=2"), None).await.json();
    assert_eq!(attempts["items"][0]["outcome"], "recorded", "oldest first");
    let cursor = attempts["next_cursor"].as_str().unwrap();
    let rest = admin(&h, Method::GET, &format!("/v1/interchanges/{id}/deliveries?cursor={cursor}"), None)
        .await
        .json();
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);
    h.finish().await;
}

/// An operator's release racing another's discard of the same held delivery: exactly one wins, and
/// a discarded delivery is never booked.
async fn a_release_racing_a_discard_never_books_a_discarded_delivery(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "conflict_policy": "quarantine"})).await;
    let post = |body: Vec<u8>| common::partners::post_with_key(&h, &acme.api_key, body);
    let conflicting = |n: u32| {
        String::from_utf8(fixture("x12/810-single-conflict.edi"))
            .unwrap()
            .replace("000001142", &format!("{n:09}"))
    };
    let trials = 12;
    let mut released = 0;
    for n in 1..=trials {
        assert_eq!(post(numbered(n)).await.status, 201);
        let held = post(conflicting(n).into_bytes()).await;
        assert_eq!(held.status, 202, "{}", held.text);
        let id = held.json()["id"].as_str().unwrap().to_owned();
        let (release_path, discard_path) =
            (format!("/v1/admin/quarantine/{id}/release"), format!("/v1/admin/quarantine/{id}/discard"));
        let (release, discard) = tokio::join!(
            admin(&h, Method::POST, &release_path, None),
            admin(&h, Method::POST, &discard_path, None)
        );
        let statuses = (release.status, discard.status);
        assert!(
            statuses == (200, 409) || statuses == (409, 200),
            "one wins: {statuses:?} {} {}",
            release.text,
            discard.text
        );
        released += usize::from(release.status == 200);
        let invoices = admin(&h, Method::GET, "/v1/invoices?limit=500", None).await.json();
        let booked = invoices["items"].as_array().unwrap().len();
        assert_eq!(booked, n as usize + released, "trial {n}: a discarded delivery was booked");
    }
    h.finish().await;
}

/// The retention purge drops resolved quarantine entries and SNS confirmation messages (whose
/// tokens expire after three days anyway) like the rest of the audit trail; a held entry stays.
async fn the_purge_drops_resolved_holds_and_sns_messages(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let (acme, conflict, invalid) = common::partners::holding_two(&h).await;
    let discard = format!("/v1/admin/quarantine/{}/discard", conflict["id"].as_str().unwrap());
    assert_eq!(admin(&h, Method::POST, &discard, None).await.status, 200);
    let confirmation = Reply::send(
        h.app
            .client
            .post(h.app.url("/v1/interchanges"))
            .basic_auth("acme", Some(&acme.api_key))
            .header("content-type", "text/plain; charset=UTF-8")
            .header("x-amz-sns-message-type", "SubscriptionConfirmation")
            .body(sns_confirmation("c-1").to_string()),
    )
    .await;
    assert_eq!(confirmation.status, 200, "{}", confirmation.text);

    let store = edi_inbox::app::open_store(&common::database_config(&h.db.url)).await.unwrap();
    let retention =
        edi_inbox::jobs::purge::Retention { payloads: chrono::Duration::zero(), keys: None, batch: 1 };
    let purged = edi_inbox::jobs::purge::purge(&store, retention, false).await.unwrap();
    store.close().await;
    assert_eq!((purged.quarantine, purged.sns_messages), (1, 1), "{purged:?}");
    let left = admin(&h, Method::GET, "/v1/admin/quarantine", None).await.json();
    let ids: Vec<&Value> = left["items"].as_array().unwrap().iter().map(|entry| &entry["id"]).collect();
    assert_eq!(ids, [&invalid["id"]], "the held entry stays");
    let sns = admin(&h, Method::GET, "/v1/admin/sns-subscriptions", None).await.json();
    assert_eq!(sns["items"].as_array().map(Vec::len), Some(0));
    h.finish().await;
}

/// A partner's naturally idempotent document type bypasses the inbox: answered 200 `bypassed`
/// every time, audited, never stored; its invoices still go through the inbox; invoices can never
/// be declared bypassing.
async fn naturally_idempotent_documents_bypass_the_inbox(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(
        &h,
        json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "bypass_documents": ["997"]}),
    )
    .await;
    for _ in 0..2 {
        let ack = common::partners::post_with_key(&h, &acme.api_key, fixture("x12/997-accepted.edi")).await;
        assert_eq!(ack.status, 200, "{}", ack.text);
        assert_eq!(
            (ack.json()["status"].as_str(), ack.json()["documents"][0]["type"].as_str()),
            (Some("bypassed"), Some("997"))
        );
        assert_eq!(ack.header("idempotent-replayed"), None);
    }
    let invoice = common::partners::post_with_key(&h, &acme.api_key, fixture("x12/810-single.edi")).await;
    assert_eq!(invoice.status, 201);
    assert_eq!(common::partners::stored_interchanges(&h).await, 1);
    let invoices_bypass = admin(
        &h,
        Method::POST,
        "/v1/admin/partners",
        Some(json!({"id": "globex", "name": "Globex",
        "senders": ["x12:ZZ:GLOBEX"], "bypass_documents": ["810"]})),
    )
    .await;
    invoices_bypass.assert_problem(400, "invalid-request");
    h.finish().await;
}

both_backends!(
    every_door_delivers_the_same_interchange_once,
    a_transport_id_reused_for_another_interchange_is_flagged,
    bad_wrappings_get_their_problem,
    sns_confirmations_wait_for_an_operator,
    the_webhook_handshake_allows_configured_origins,
    as2_names_are_checked_against_the_partner,
    quarantine_holds_what_a_broker_would_retry_for_days,
    a_release_racing_a_discard_never_books_a_discarded_delivery,
    sns_confirmations_are_scoped_bounded_and_paged,
    the_purge_drops_resolved_holds_and_sns_messages,
    naturally_idempotent_documents_bypass_the_inbox,
);
