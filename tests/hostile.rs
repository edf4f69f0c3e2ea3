//! Hostile inputs: each gets its exact 4xx (and problem type), and none changes the inbox or the
//! invoices. With partner authentication, on SQLite and PostgreSQL. (Every attempt is still
//! audited: that is the one table that grows, by design.)

mod common;

use common::{Backend, Harness, fixture, server_config};
use edi_inbox::config::{AuthMode, ServerConfig};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ADMIN: &str = "hostile-admin-token";

/// One hostile request: what is sent, and the status and problem type it must get.
struct Case {
    name: &'static str,
    key: Key,
    content_type: Option<&'static [u8]>,
    extra: Vec<(&'static str, Vec<u8>)>,
    query: &'static str,
    body: Vec<u8>,
    status: u16,
    kind: &'static str,
}

enum Key {
    None,
    Valid,
    Raw(Vec<u8>),
}

fn case(name: &'static str, body: impl Into<Vec<u8>>, status: u16, kind: &'static str) -> Case {
    Case {
        name,
        key: Key::Valid,
        content_type: Some(b"application/edi-x12"),
        extra: Vec::new(),
        query: "",
        body: body.into(),
        status,
        kind,
    }
}

fn isa(sender: &str, control: &str) -> String {
    format!(
        "ISA*00*          *00*          *ZZ*{sender:<15}*ZZ*BUYERCO        *260317*1015*U*00401*{control}*0*P*>~"
    )
}

fn cases() -> Vec<Case> {
    let single = fixture("x12/810-single.edi");
    let text = String::from_utf8(single.clone()).unwrap();
    let mut cases = vec![
        Case { key: Key::None, ..case("no credentials", single.clone(), 401, "unauthorized") },
        Case {
            key: Key::Raw(b"Basic YWNtZTpzZWNyZXQ=".to_vec()),
            ..case("basic auth", single.clone(), 401, "unauthorized")
        },
        Case {
            key: Key::Raw(b"Bearer".to_vec()),
            ..case("bearer without a key", single.clone(), 401, "unauthorized")
        },
        Case {
            key: Key::Raw([b"Bearer ".as_slice(), &[b'x'; 8192]].concat()),
            ..case("8 KiB key", single.clone(), 401, "unauthorized")
        },
        Case {
            key: Key::Raw(b"Bearer \xff\xfe\xfd".to_vec()),
            ..case("non-UTF-8 key", single.clone(), 401, "unauthorized")
        },
        Case {
            key: Key::Raw(b"Bearer ' OR '1'='1".to_vec()),
            ..case("SQL in the key", single.clone(), 401, "unauthorized")
        },
        Case {
            key: Key::None,
            extra: vec![
                ("webhook-id", b"msg_1".to_vec()),
                ("webhook-timestamp", b"1".to_vec()),
                ("webhook-signature", b"v1,AAAA".to_vec()),
            ],
            ..case("signature without partner", single.clone(), 401, "unauthorized")
        },
        Case {
            key: Key::None,
            query: "?partner=acme",
            extra: vec![
                ("webhook-id", b"msg_1".to_vec()),
                ("webhook-timestamp", b"now".to_vec()),
                ("webhook-signature", b"v1,AAAA".to_vec()),
            ],
            ..case("timestamp not a number", single.clone(), 401, "unauthorized")
        },
        Case {
            key: Key::None,
            query: "?partner=acme%27%20OR%20%271%27%3D%271",
            extra: vec![
                ("webhook-id", b"msg_1".to_vec()),
                ("webhook-timestamp", b"1".to_vec()),
                ("webhook-signature", b"v1,AAAA".to_vec()),
            ],
            ..case("SQL in the partner", single.clone(), 401, "unauthorized")
        },
        Case {
            content_type: Some(b"application/json"),
            ..case("JSON that is no Pub/Sub push", br#"{"a":1}"#.to_vec(), 400, "invalid-transport")
        },
        Case {
            content_type: Some(b"text/html"),
            ..case("HTML media type", single.clone(), 415, "unsupported-media-type")
        },
        Case {
            content_type: Some(b"multipart/form-data; boundary=x"),
            ..case("multipart", single.clone(), 415, "unsupported-media-type")
        },
        Case {
            content_type: Some(b"application/edi-x12\xff"),
            ..case("non-UTF-8 media type", single.clone(), 415, "unsupported-media-type")
        },
        case("empty body", Vec::new(), 400, "malformed-interchange"),
        case("NUL bytes", vec![0; 1024], 400, "malformed-interchange"),
        case(
            "invalid UTF-8",
            (0..=255u8).rev().cycle().take(4096).collect::<Vec<_>>(),
            400,
            "malformed-interchange",
        ),
        // A leading byte order mark is skipped (tests/samples.rs); one anywhere else is no EDI.
        case(
            "byte order mark after a blank line",
            [b"\n\xef\xbb\xbf".as_slice(), &single].concat(),
            400,
            "malformed-interchange",
        ),
        case(
            "two byte order marks",
            [b"\xef\xbb\xbf\xef\xbb\xbf".as_slice(), &single].concat(),
            400,
            "malformed-interchange",
        ),
        case("ISA alone", b"ISA".to_vec(), 400, "malformed-interchange"),
        case("truncated ISA", fixture("x12/malformed-truncated-isa.edi"), 400, "malformed-interchange"),
        case(
            "letter as separator",
            text.replacen("ISA*", "ISAA", 1).replace('*', "A"),
            400,
            "malformed-interchange",
        ),
        case("ISA without sender", isa("", "000000001"), 400, "malformed-interchange"),
        case("ISA without control number", isa("ACMESUPPLY", "         "), 400, "malformed-interchange"),
        case(
            "UNB without sender",
            b"UNB+UNOC:3++BUYER:14+260317:1015+1'UNZ+0+1'".to_vec(),
            400,
            "malformed-interchange",
        ),
        case("UNA cut short", b"UNA:+".to_vec(), 400, "malformed-interchange"),
        case("UNA then garbage", b"UNA:+.? 'XYZ+1'".to_vec(), 400, "malformed-interchange"),
        case("XML", br#"<?xml version="1.0"?><Invoice/>"#.to_vec(), 400, "malformed-interchange"),
        case("shell", b"$(rm -rf /)".to_vec(), 400, "malformed-interchange"),
        case(
            "over the partner's body limit",
            [single.clone(), vec![b' '; 70_000]].concat(),
            413,
            "payload-too-large",
        ),
        case("forged sender", text.replace("ACMESUPPLY", "OTHERCO   "), 403, "forbidden-sender"),
        case(
            "other receiver",
            text.replace("*ZZ*BUYERCO        *", "*ZZ*ELSEWHERE      *"),
            403,
            "forbidden-sender",
        ),
    ];
    for (name, header, value) in [
        ("header folded onto a second line", "x-note", b"a\r\n folded: value".to_vec()),
        ("NUL in a header value", "x-note", b"a\x00b".to_vec()),
        ("bare CR in a header value", "x-note", b"a\rb".to_vec()),
    ] {
        // Transports refuse these before any handler runs: nothing to store, nothing to parse.
        cases.push(Case { extra: vec![(header, value)], ..case(name, single.clone(), 400, "") });
    }
    cases
}

/// Sends a case as raw bytes over TCP (so that even malformed headers go out as written).
async fn send(address: std::net::SocketAddr, case: &Case, key: &str) -> (u16, String) {
    let mut head =
        format!("POST /v1/interchanges{} HTTP/1.1\r\nHost: inbox\r\nConnection: close\r\n", case.query)
            .into_bytes();
    let mut header = |name: &str, value: &[u8]| {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    };
    match &case.key {
        Key::None => {}
        Key::Valid => header("authorization", format!("Bearer {key}").as_bytes()),
        Key::Raw(value) => header("authorization", value),
    }
    if let Some(content_type) = case.content_type {
        header("content-type", content_type);
    }
    for (name, value) in &case.extra {
        header(name, value);
    }
    header("content-length", case.body.len().to_string().as_bytes());
    head.extend_from_slice(b"\r\n");
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
    stream.write_all(&head).await.expect("head");
    // The server may answer (and close) before reading a refused body.
    let _ = stream.write_all(&case.body).await;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    (status, body)
}

async fn hostile_inputs_get_exact_errors_and_change_nothing(backend: Backend) {
    let server =
        ServerConfig { auth: AuthMode::Partners, admin_token: Some(ADMIN.into()), ..server_config() };
    let h = Harness::with_server(backend, server).await;
    let registered = h
        .app
        .client
        .post(h.app.url("/v1/admin/partners"))
        .bearer_auth(ADMIN)
        .json(&json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "receivers": ["x12:ZZ:BUYERCO"], "max_body_bytes": 65536}))
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    let key = registered["secrets"][0]["secret"].as_str().unwrap().to_owned();
    let cases = cases();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    for case in &cases {
        let (status, body) = send(h.app.address, case, &key).await;
        assert_eq!(status, case.status, "{}: {body}", case.name);
        if !case.kind.is_empty() {
            let problem: serde_json::Value =
                serde_json::from_str(&body).unwrap_or_else(|e| panic!("{}: {e}: {body}", case.name));
            assert_eq!(problem["type"], format!("/problems/{}", case.kind), "{}", case.name);
        }
    }
    let read = |path: &'static str| {
        let request = h.app.client.get(h.app.url(path)).bearer_auth(ADMIN);
        async move { request.send().await.unwrap().json::<serde_json::Value>().await.unwrap() }
    };
    assert_eq!(read("/v1/interchanges").await["items"], json!([]), "no interchange stored");
    assert_eq!(read("/v1/invoices").await["items"], json!([]), "no invoice booked");
    // The genuine delivery still goes through afterwards.
    let genuine = h
        .app
        .client
        .post(h.app.url("/v1/interchanges"))
        .bearer_auth(&key)
        .header("content-type", "application/edi-x12")
        .body(fixture("x12/810-single.edi"))
        .send()
        .await
        .unwrap();
    assert_eq!(genuine.status(), 201);
    h.finish().await;
}

/// Inputs with a readable key that break the parser's limits are refused as invalid (422): stored as
/// rejected, no invoice booked.
async fn parser_limits_refuse_huge_segment_counts_and_elements(backend: Backend) {
    let server = ServerConfig { max_segments: 100, max_element_length: 256, ..server_config() };
    let h = Harness::with_server(backend, server).await;
    let text = String::from_utf8(fixture("x12/810-single.edi")).unwrap();
    let many = text.replace("PID*F****BLUE WIDGET~\n", &"PID*F****BLUE WIDGET~\n".repeat(200));
    let problem = h.app.post(many, "application/edi-x12").await.assert_problem(422, "invalid-interchange");
    assert_eq!(problem["segment_position"], 101, "reading stops at the first segment over the limit");
    let long = text.replace("BLUE WIDGET", &"W".repeat(300)).replace("000001142", "000001149");
    let problem = h.app.post(long, "application/edi-x12").await.assert_problem(422, "invalid-interchange");
    assert_eq!(problem["element"], "PID05");
    assert!(h.app.all_invoices().await.is_empty());
    h.finish().await;
}

/// `n` letters and digits that do not compress (a generator's, not a repeated letter: PostgreSQL
/// compresses an index row before it measures it).
fn noise(n: usize) -> String {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[(state >> 33) as usize % 36])
        })
        .collect()
}

/// Every value the store indexes is held to its standard's maximum at the edge: a longer invoice,
/// order or document number is a stored 422 naming the element and its limit, a longer part of the
/// envelope's key a 400; nothing is booked. Before, PostgreSQL answered 500 every time (an index
/// row over btree's size limit, which the queue consumers retried forever) and SQLite booked them.
async fn long_indexed_values_are_refused_naming_their_limit(backend: Backend) {
    let h = Harness::with_server(backend, server_config()).await;
    let x12 = String::from_utf8(fixture("x12/810-single.edi")).unwrap();
    let edifact = String::from_utf8(fixture("edifact/invoic-d96a.edi")).unwrap();
    let cases = [
        (x12.replace("INV-1042", &noise(3000)).replace("000001142", "000004901"), "BIG02", "at most 22"),
        (x12.replace("PO-CB-1042", &noise(3000)).replace("000001142", "000004902"), "BIG04", "at most 22"),
        (x12.replace("INV-1042", &noise(23)).replace("000001142", "000004903"), "BIG02", "at most 22"),
        (
            edifact
                .replace("BGM+380+RE-2026-0042", &format!("BGM+380+{}", noise(36)))
                .replace("+1042'", "+4904'"),
            "BGM02",
            "at most 35",
        ),
        (
            edifact
                .replace("RFF+ON:PO-RE-2026-0042", &format!("RFF+ON:{}", noise(3000)))
                .replace("+1042'", "+4905'"),
            "RFF01",
            "at most 70",
        ),
    ];
    for (body, element, limit) in cases {
        let content_type =
            if body.starts_with("ISA") { "application/edi-x12" } else { "application/edifact" };
        let problem = h.app.post(body, content_type).await.assert_problem(422, "invalid-interchange");
        assert_eq!(problem["element"], element, "{problem}");
        assert!(problem["detail"].as_str().unwrap().contains(limit), "{problem}");
    }
    let keys = [
        (edifact.replace("4000001000005:14+4000002", &format!("{}:14+4000002", noise(3000))), "UNB02"),
        (edifact.replace("+1042'", &format!("+{}'", noise(15))), "UNB05"),
        (x12.replace("ACMESUPPLY     ", &noise(3000)), "ISA06"),
        (x12.replace("000001142", "0000011420"), "ISA13"),
    ];
    for (body, element) in keys {
        let content_type =
            if body.starts_with("ISA") { "application/edi-x12" } else { "application/edifact" };
        let problem = h.app.post(body, content_type).await.assert_problem(400, "malformed-interchange");
        assert_eq!(problem["element"], element, "{problem}");
    }
    assert!(h.app.all_invoices().await.is_empty(), "nothing booked");
    h.finish().await;
}

both_backends!(
    hostile_inputs_get_exact_errors_and_change_nothing,
    parser_limits_refuse_huge_segment_counts_and_elements,
    long_indexed_values_are_refused_naming_their_limit,
);

/// A value PostgreSQL can never index (a row over btree's size limit, SQLSTATE 54000) is the
/// request's fault, refused as such, never a transient failure a queue consumer retries forever.
#[tokio::test]
async fn an_index_row_over_its_limit_is_refused_not_retried_on_postgres() {
    use sqlx::Connection;
    let db = common::TestDb::create(Backend::Postgres).await;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql("CREATE TABLE wide (v text); CREATE INDEX wide_v ON wide (v)")
        .execute(&mut conn)
        .await
        .unwrap();
    let error =
        sqlx::query("INSERT INTO wide VALUES ($1)").bind(noise(9000)).execute(&mut conn).await.unwrap_err();
    let refused = edi_inbox::store::StoreError::from(error);
    assert!(matches!(refused, edi_inbox::store::StoreError::Refused(_)), "{refused:?}");
    conn.close().await.unwrap();
    db.remove().await;
}

/// A client that trickles its request headers is disconnected after the header timeout.
#[tokio::test]
async fn slow_headers_are_cut_off() {
    let server = ServerConfig { header_timeout: 1, ..server_config() };
    let h = Harness::with_server(Backend::Sqlite, server).await;
    let mut stream = tokio::net::TcpStream::connect(h.app.address).await.unwrap();
    stream.write_all(b"POST /v1/interchanges HTTP/1.1\r\nHost: inbox\r\n").await.unwrap();
    let started = std::time::Instant::now();
    let mut response = Vec::new();
    let closed =
        tokio::time::timeout(std::time::Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    assert!(closed.is_ok(), "the server closes the connection");
    assert!(started.elapsed() >= std::time::Duration::from_millis(900), "{:?}", started.elapsed());
    let response = String::from_utf8_lossy(&response);
    assert!(response.is_empty() || response.starts_with("HTTP/1.1 408"), "{response}");
    h.finish().await;
}

/// Every label an unauthenticated request can choose comes from a fixed set: 10,000 requests with
/// made-up methods (up to 2,000 bytes long) on real and unknown paths leave `/metrics` under 100 KB,
/// with no made-up method in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_methods_and_paths_add_no_metric_series() {
    use futures_util::StreamExt;
    let h = Harness::start(Backend::Sqlite).await;
    let client = reqwest::Client::new();
    let paths = ["/healthz", "/v1/interchanges", "/metrics", "/v1/invoices/x", "/nowhere"];
    let statuses: Vec<u16> = futures_util::stream::iter(0..10_000usize)
        .map(|n| {
            let method = format!("X{n}{}", "M".repeat(n % 2_000));
            let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            let path = format!(
                "{}{}",
                paths[n % paths.len()],
                if n % 7 == 0 { format!("/{n}") } else { String::new() }
            );
            let request = client.request(method, h.app.url(&path));
            async move { request.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(statuses.iter().all(|status| (400..500).contains(status)), "every made-up method is refused");
    let metrics = h.app.get("/metrics").await.text;
    assert!(metrics.len() < 100 * 1024, "/metrics is {} bytes", metrics.len());
    assert!(!metrics.contains("method=\"X"), "a made-up method became a label");
    assert!(metrics.contains("method=\"other\""), "made-up methods are counted as `other`");
    h.finish().await;
}

/// What a request says reaches the log escaped and cut, in the default (`pretty`) format too: an
/// SNS `TopicArn` with a line break and terminal escapes cannot start a forged line or colour the
/// terminal, an envelope sender with escapes reaches the forged-sender warning as text, and a long
/// field is cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_text_cannot_forge_or_flood_log_lines() {
    let dir = std::env::temp_dir().join(format!("edi_inbox_logs_{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let address = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let database = format!("sqlite://{}", dir.join("inbox.db").display());
    let mut command = common::process::command(
        &database,
        &["serve", "--bind", &address, "--auth", "partners", "--admin-token", "log-admin"],
    );
    command.env("EDI_INBOX_LOG_FORMAT", "pretty");
    let server = common::process::Process::start(command, false);
    let url = |path: &str| format!("http://{address}{path}");
    let client = reqwest::Client::new();
    common::eventually(
        async || client.get(url("/healthz")).send().await.map(|r| r.status().as_u16()).unwrap_or(0),
        |status| *status == 200,
    )
    .await;
    let created = client
        .post(url("/v1/admin/partners"))
        .bearer_auth("log-admin")
        .json(&json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: serde_json::Value = created.json().await.unwrap();
    let key =
        created["secrets"].as_array().unwrap().iter().find(|s| s["kind"] == "api_key").unwrap()["secret"]
            .as_str()
            .unwrap()
            .to_owned();

    let forged = String::from_utf8(fixture("x12/810-single.edi"))
        .unwrap()
        .replace("ZZ*ACMESUPPLY     *", "ZZ*\x1b[31mEVIL      *");
    let refused = client
        .post(url("/v1/interchanges"))
        .bearer_auth(&key)
        .header("content-type", "application/edi-x12")
        .body(forged)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let arn =
        format!("arn:aws:sns:x\nFORGED-LINE  INFO edi_inbox: all is well\x1b[31mRED{}TAIL", "a".repeat(900));
    let confirmation = json!({"Type": "SubscriptionConfirmation", "MessageId": "m-1", "Token": "t",
        "TopicArn": arn, "Message": "m", "SubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription",
        "Timestamp": "2026-12-03T10:00:00.000Z", "SignatureVersion": "1", "Signature": "c2ln",
        "SigningCertURL": "https://sns.eu-west-1.amazonaws.com/x.pem"});
    let kept = client
        .post(url("/v1/interchanges"))
        .bearer_auth(&key)
        .header("content-type", "text/plain; charset=UTF-8")
        .header("x-amz-sns-message-type", "SubscriptionConfirmation")
        .body(confirmation.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 200);
    let long_path = format!("/v1/interchanges/{}", "p".repeat(60_000));
    let unproven = client.get(url(&long_path)).bearer_auth("a-guess").send().await.unwrap();
    assert_eq!(unproven.status(), 401);
    // Both requests are logged (the security lines come before each request's delivery line).
    let log = common::eventually(
        async || server.log(),
        |log: &String| log.matches("sns-subscription").count() >= 1 && log.contains("forged-sender"),
    )
    .await;
    assert!(log.lines().all(|line| !line.starts_with("FORGED-LINE")), "a forged line:\n{log}");
    assert!(!log.contains("\x1b[31mRED") && !log.contains("\x1b[31mEVIL"), "a request coloured the log");
    assert!(log.contains("\\u{1b}[31mEVIL"), "the forged sender is shown, escaped");
    assert!(!log.contains("aTAIL"), "a field is logged whole");
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 4096, "a {longest}-byte log line: the request span cuts its path");
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// JSON fields of the push doors cost about their size: a Pub/Sub message whose 9 MB
/// `attributes` hold an array, and a structured CloudEvent whose `data` is a 9 MB array, are
/// read without building a tree of values (they peaked at 712 MB and 308 MB). Measured as the
/// server process's peak RSS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_json_fields_cost_about_their_size() {
    let dir = std::env::temp_dir().join(format!("edi_inbox_json_{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let database = format!("sqlite://{}", dir.join("inbox.db").display());
    let server = common::process::Process::start(
        common::process::command(&database, &["serve", "--bind", "127.0.0.1:0"]),
        true,
    );
    let client = reqwest::Client::new();
    let zeros = format!("[{}0]", "0,".repeat(4_500_000));
    let interchange =
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, fixture("x12/810-single.edi"));
    let push = format!(
        r#"{{"message":{{"data":"{interchange}","messageId":"m-1","attributes":{{"a":{zeros}}}}},"subscription":"projects/p/subscriptions/s"}}"#
    );
    let event = format!(r#"{{"specversion":"1.0","id":"e-1","source":"/x","type":"t","data":{zeros}}}"#);
    let before = server.peak_rss();
    for (body, content_type, status) in
        [(push, "application/json", 201), (event, "application/cloudevents+json", 400)]
    {
        let answer = client
            .post(server.url("/v1/interchanges"))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), status, "{}", answer.text().await.unwrap());
    }
    let peak = server.peak_rss();
    let grown = peak.saturating_sub(before);
    assert!(grown < 120 * 1024 * 1024, "9 MB bodies grew the peak RSS by {} MiB", grown >> 20);
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}
