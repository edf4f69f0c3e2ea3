//! The operator console over real HTTP, on SQLite and PostgreSQL: signing in with the admin token
//! (cookie flags, strict headers), the CSRF defence of every action (a cross-site POST changes
//! nothing), hostile values from payloads and partners rendered as text, and an action going
//! through the admin API's use case. The browser flows are in tests/browser/console.py.

mod common;

use common::partners::{ADMIN, admin, post_with_key, register, secured};
use common::{Backend, Harness, TestApp, database_config, fixture, logged_lines};
use edi_inbox::config::ServerConfig;
use reqwest::redirect::Policy;
use serde_json::json;

/// A browser without a cookie jar: the session cookie is carried by hand.
struct Browser {
    client: reqwest::Client,
    base: String,
    cookie: Option<String>,
}

impl Browser {
    fn new(h: &Harness) -> Browser {
        Browser::on(&h.app, None)
    }

    /// A browser at `app` holding `cookie`: the same session, on another instance.
    fn on(app: &TestApp, cookie: Option<String>) -> Browser {
        let client = reqwest::Client::builder().redirect(Policy::none()).build().unwrap();
        Browser { client, base: app.url(""), cookie }
    }

    fn with_cookie(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.cookie {
            Some(cookie) => request.header("cookie", cookie),
            None => request,
        }
    }

    async fn sign_in(&mut self, token: &str) -> reqwest::Response {
        let answer = self
            .client
            .post(format!("{}/console/sign-in", self.base))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap();
        self.keep_cookies(&answer);
        answer
    }

    /// Signs in by name and password, going back to `next` (a console path, or empty), with the
    /// cookies it holds (its device cookie among them).
    async fn sign_in_as(&mut self, name: &str, password: &str, next: &str) -> reqwest::Response {
        let form = [("name", name), ("password", password), ("next", next)];
        let request = self.client.post(format!("{}/console/sign-in", self.base)).form(&form);
        let answer = self.with_cookie(request).send().await.unwrap();
        self.keep_cookies(&answer);
        answer
    }

    /// Keeps every cookie an answer sets, in place of the one of the same name.
    fn keep_cookies(&mut self, answer: &reqwest::Response) {
        for set in answer.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            let name = format!("{}=", pair.split('=').next().unwrap());
            let held = self.cookie.iter().flat_map(|cookie| cookie.split("; "));
            let mut kept: Vec<&str> = held.filter(|cookie| !cookie.starts_with(&name)).collect();
            kept.push(pair);
            self.cookie = Some(kept.join("; "));
        }
    }

    async fn get(&self, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
        let answer = self.with_cookie(self.client.get(format!("{}{path}", self.base))).send().await.unwrap();
        let (status, headers) = (answer.status().as_u16(), answer.headers().clone());
        (status, headers, answer.text().await.unwrap())
    }

    async fn post(&self, path: &str, form: &[(&str, &str)], headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.with_cookie(self.client.post(format!("{}{path}", self.base))).form(form);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }
}

/// A form field or a header.
type Pair<'a> = (&'a str, &'a str);

/// The CSRF token a console page's forms carry.
fn csrf(page: &str) -> String {
    let start = page.find(r#"name="csrf" value=""#).expect("a form with a CSRF token")
        + r#"name="csrf" value=""#.len();
    page[start..start + page[start..].find('"').unwrap()].to_owned()
}

async fn sign_in_gives_a_strict_session_and_every_page_strict_headers(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let mut browser = Browser::new(&h);
    let (status, headers, _) = browser.get("/console/").await;
    assert_eq!((status, headers["location"].to_str().unwrap()), (303, "/console/sign-in"));
    let wrong = browser.sign_in("not-the-token").await;
    assert_eq!(wrong.status(), 401);
    // The right token in a form past the 8 KiB limit: refused unread (413, or the connection closed
    // on the rest of the body), never a session.
    let padded = format!("token={ADMIN}&pad={}", "x".repeat(20_000));
    let oversized = browser
        .client
        .post(format!("{}/console/sign-in", browser.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(padded)
        .send()
        .await;
    if let Ok(answer) = oversized {
        assert_eq!(answer.status(), 413, "a sign-in form is small; a large one is not read");
        assert!(answer.headers().get("set-cookie").is_none());
    }
    assert!(wrong.headers().get("set-cookie").is_none());
    let signed_in = browser.sign_in(ADMIN).await;
    assert_eq!(
        (signed_in.status().as_u16(), signed_in.headers()["location"].to_str().unwrap()),
        (303, "/console/")
    );
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().to_owned();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=43200"] {
        assert!(cookie.contains(flag), "{flag} in {cookie}");
    }
    assert!(!cookie.contains("Secure"), "reached on 127.0.0.1, where there is no TLS: {cookie}");
    assert!(!cookie.contains(ADMIN), "the cookie is not the token");
    for path in [
        "/console/",
        "/console/interchanges",
        "/console/quarantine",
        "/console/accounting",
        "/console/partners",
        "/console/refusals",
    ] {
        let (status, headers, body) = browser.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "{policy}");
        assert!(policy.contains("frame-ancestors 'none'"));
        assert_eq!(headers["x-frame-options"], "DENY");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert!(!body.contains("<script>") && !body.contains(" onclick="), "{path} has no inline script");
    }
    let tampered = format!("{}0", browser.cookie.clone().unwrap());
    let forged = Browser { cookie: Some(tampered), ..Browser::new(&h) };
    assert_eq!(forged.get("/console/partners").await.0, 303, "a changed cookie is no session");
    for bad in [
        "/console/interchanges?status=bogus",
        "/console/interchanges?standard=x13",
        "/console/interchanges?from=yesterday",
        "/console/interchanges?cursor=not-a-uuid",
        "/console/quarantine?status=nope",
        "/console/accounting?status=lost",
        "/console/interchanges/not-a-uuid",
    ] {
        let (status, headers, body) = browser.get(bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            headers["content-type"].to_str().unwrap().starts_with("text/html"),
            "{bad}: a page, not JSON"
        );
        assert!(headers.contains_key("content-security-policy"), "{bad}");
    }
    // A notice word that is not one the console writes shows no notice, and never the text.
    let (status, _, body) = browser.get("/console/?done=%3Cb%3Eowned%3C%2Fb%3E").await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("owned"), "{body}");
    let (status, _, body) = browser.get("/console/?done=discarded").await;
    assert!(status == 200 && body.contains("Discarded."), "{body}");
    // A path that is no page: the console's 404 page, with its headers.
    for unknown in ["/console/nothing-here", "/console/interchanges/a/b/c"] {
        let (status, headers, body) = browser.get(unknown).await;
        assert_eq!(status, 404, "{unknown}: {body}");
        assert!(headers["content-type"].to_str().unwrap().starts_with("text/html"), "{unknown}");
        assert!(headers.contains_key("content-security-policy") && headers["x-frame-options"] == "DENY");
    }
    // Every page names its icon, and it is served (no 404 on every page).
    let (_, _, page) = browser.get("/console/").await;
    assert!(page.contains(r#"<link rel="icon" type="image/svg+xml" href="/console/assets/favicon.svg">"#));
    let (status, headers, _) = browser.get("/console/assets/favicon.svg").await;
    assert_eq!((status, headers["content-type"].to_str().unwrap()), (200, "image/svg+xml"));
    h.finish().await;
}

async fn a_cross_site_post_changes_nothing(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "conflict_policy": "quarantine"})).await;
    let original = post_with_key(&h, &acme.api_key, fixture("x12/810-single.edi")).await;
    assert_eq!(original.status, 201);
    let held = post_with_key(&h, &acme.api_key, fixture("x12/810-single-conflict.edi")).await;
    assert_eq!(held.status, 202);
    let id = held.json()["id"].as_str().unwrap().to_owned();
    let mut browser = Browser::new(&h);
    browser.sign_in(ADMIN).await;
    let (_, _, page) = browser.get(&format!("/console/quarantine/{id}")).await;
    // Its invoice re-uses INV-1042: shown field by field against the one booked, linked.
    let booked = original.json()["invoices"][0]["id"].as_str().unwrap().to_owned();
    assert!(page.contains(&format!(r#"href="/console/invoices/{booked}""#)), "{page}");
    for shown in ["<th>total</th><td>8000.00</td><td>8008.75</td>", "<th>lines</th>"] {
        assert!(page.contains(shown), "{shown}: {page}");
    }
    // The held payload is there to download, as it arrived, beside the stored one.
    assert!(page.contains(&format!(r#"href="/console/quarantine/{id}/payload""#)), "{page}");
    let (status, headers, downloaded) = browser.get(&format!("/console/quarantine/{id}/payload")).await;
    assert_eq!(
        (status, headers["content-disposition"].to_str().unwrap()),
        (200, format!("attachment; filename=\"{id}.edi\"").as_str())
    );
    assert_eq!(downloaded.as_bytes(), fixture("x12/810-single-conflict.edi"));
    let token = csrf(&page);
    let discard = format!("/console/quarantine/{id}/discard");
    let attempts: [(&str, Vec<Pair>, Vec<Pair>); 5] = [
        ("no token", vec![], vec![]),
        ("another token", vec![("csrf", "0123456789abcdef")], vec![]),
        ("another site's origin", vec![("csrf", &token)], vec![("origin", "https://evil.example")]),
        ("a cross-site fetch", vec![("csrf", &token)], vec![("sec-fetch-site", "cross-site")]),
        ("a sibling subdomain's fetch", vec![("csrf", &token)], vec![("sec-fetch-site", "same-site")]),
    ];
    for (what, form, headers) in &attempts {
        let answer = browser.post(&discard, form, headers).await;
        assert_eq!(answer.status(), 403, "{what}");
    }
    let anonymous = Browser::new(&h).post(&discard, &[("csrf", &token)], &[]).await;
    assert_eq!(anonymous.status(), 303, "without the session cookie: sign in first");
    let (_, _, still) = browser.get("/console/quarantine?status=held").await;
    assert!(still.contains(&id), "still held after every forged request");
    let discarded = browser.post(&discard, &[("csrf", &token)], &[("origin", &h.app.url(""))]).await;
    assert_eq!(discarded.status(), 303);
    assert_eq!(discarded.headers()["location"], "/console/quarantine?done=discarded");
    let logged =
        common::logged_lines(&[r#""actor":"console:admin-token""#, r#""action":"quarantine.discard""#, &id]);
    assert_eq!(logged.len(), 1, "the console's discard is logged with its actor: {logged:?}");
    let listed =
        common::partners::admin(&h, reqwest::Method::GET, "/v1/admin/quarantine?status=discarded", None)
            .await;
    assert_eq!(listed.json()["items"][0]["id"], id.as_str(), "the admin API sees the console's discard");
    browser.post("/console/sign-out", &[("csrf", &token)], &[]).await;
    assert_eq!(browser.get("/console/").await.0, 303, "signed out: the cookie no longer opens a page");
    h.finish().await;
}

async fn a_viewer_sees_every_page_and_changes_nothing(backend: Backend) {
    let server = ServerConfig { console_viewer_token: Some("viewer-token".into()), ..secured() };
    let h = Harness::with_server(backend, server).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "conflict_policy": "quarantine"})).await;
    assert_eq!(post_with_key(&h, &acme.api_key, fixture("x12/810-single.edi")).await.status, 201);
    let held = post_with_key(&h, &acme.api_key, fixture("x12/810-single-conflict.edi")).await;
    let id = held.json()["id"].as_str().unwrap().to_owned();
    let mut viewer = Browser::new(&h);
    assert_eq!(viewer.sign_in("viewer-token").await.status(), 303);
    let (status, _, page) = viewer.get(&format!("/console/quarantine/{id}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("TDS*800875~"), "a viewer sees the comparison");
    assert!(!page.contains("/release") && !page.contains("/discard"), "and no button");
    let (_, _, partners) = viewer.get("/console/partners").await;
    assert!(!partners.contains("/suspend"));
    let token = csrf(&page); // the sign-out form's
    for path in [format!("/console/quarantine/{id}/release"), "/console/partners/acme/suspend".to_owned()] {
        assert_eq!(viewer.post(&path, &[("csrf", &token)], &[]).await.status(), 403, "{path}");
    }
    let (_, _, still) = viewer.get("/console/quarantine?status=held").await;
    assert!(still.contains(&id));
    let (_, _, partners) = viewer.get("/console/partners").await;
    assert!(partners.contains("status-active"), "the partner was not suspended");
    assert_eq!(viewer.post("/console/sign-out", &[("csrf", &token)], &[]).await.status(), 303);
    h.finish().await;
}

async fn hostile_values_render_as_text(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let topic = "arn:aws:sns:eu-west-1:123456789012:<script>alert('topic')</script>";
    let acme = register(
        &h,
        json!({"id": "acme", "name": "<img src=x onerror=alert('name')>",
        "senders": ["x12:ZZ:ACMESUPPLY", "edifact:14:4000001000005"], "sns_topics": [topic]}),
    )
    .await;
    let n1 = String::from_utf8(fixture("x12/810-single.edi"))
        .unwrap()
        .replace("ACME SUPPLY CO", "<script>alert(\"n1\")</script>");
    let x12 = post_with_key(&h, &acme.api_key, n1.into_bytes()).await;
    assert_eq!(x12.status, 201, "{}", x12.text);
    let edifact =
        String::from_utf8(fixture("edifact/invoic-d96a.edi")).unwrap().replace("+1042'", "+<script>x'");
    let control = post_with_key(&h, &acme.api_key, edifact.into_bytes()).await;
    assert_eq!(control.status, 201, "{}", control.text);
    let mut browser = Browser::new(&h);
    browser.sign_in(ADMIN).await;
    let pages = [
        format!("/console/interchanges/{}", x12.json()["id"].as_str().unwrap()),
        format!("/console/interchanges/{}", control.json()["id"].as_str().unwrap()),
        "/console/interchanges".to_owned(),
        "/console/".to_owned(),
        "/console/partners".to_owned(),
    ];
    for path in &pages {
        let (status, _, body) = browser.get(path).await;
        assert_eq!(status, 200);
        for raw in ["<script>", "<img"] {
            assert!(!body.contains(raw), "{path} renders {raw} as markup");
        }
    }
    let (_, _, invoice) = browser.get(&pages[0]).await;
    assert!(
        invoice.contains("&lt;script&gt;alert(&quot;n1&quot;)&lt;/script&gt;"),
        "the N1 name is shown as text"
    );
    let (_, _, listed) = browser.get("/console/interchanges").await;
    assert!(listed.contains("&lt;script&gt;x"), "the control number is shown as text");
    let (_, _, partners) = browser.get("/console/partners").await;
    assert!(
        partners.contains("&lt;script&gt;alert('topic')&lt;/script&gt;"),
        "the topic ARN is shown as text"
    );
    assert!(partners.contains("&lt;img src=x onerror=alert('name')&gt;"));
    let (status, headers, _) = browser.get(&format!("{}/payload", pages[0])).await;
    assert_eq!((status, headers["content-type"].to_str().unwrap()), (200, "application/octet-stream"));
    assert!(
        headers["content-disposition"].to_str().unwrap().starts_with("attachment;"),
        "a payload is saved, never rendered"
    );
    h.finish().await;
}

/// `edi-inbox operator …` on the test's database, the password on standard input.
fn operator_command(db: &str, args: &[&str], password: Option<&str>) -> std::process::Output {
    use std::io::Write;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_edi-inbox"));
    command.args(["--database-url", db, "operator"]).args(args);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("the binary runs");
    if let Some(password) = password {
        writeln!(child.stdin.as_mut().unwrap(), "{password}").unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn location(answer: &reqwest::Response) -> &str {
    answer.headers().get("location").map(|l| l.to_str().unwrap()).unwrap_or_default()
}

/// Named operators: added on the command line, signed in by name and password, their actions
/// recorded under their names, and their sessions held by the database: a sign-out or a disabled
/// operator ends a session on another replica at once and after a restart.
async fn named_operators_sign_in_and_their_sessions_end_everywhere(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let added =
        operator_command(&h.db.url, &["add", "alice", "--password-stdin"], Some("alice's long password"));
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&added.stdout).unwrap();
    assert_eq!((listed["name"].as_str(), listed["role"].as_str()), (Some("alice"), Some("operator")));
    assert!(!String::from_utf8_lossy(&added.stdout).contains("argon2"), "never the hash");
    let viewer = ["add", "vera", "--role", "viewer", "--password-stdin"];
    assert!(operator_command(&h.db.url, &viewer, Some("vera's long password")).status.success());
    let short = operator_command(&h.db.url, &["add", "sam", "--password-stdin"], Some("short"));
    assert!(!short.status.success() && String::from_utf8_lossy(&short.stderr).contains("12 to 1024"));
    register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"]})).await;

    // Signed out, a page sends the browser to sign in and back to it afterwards.
    let mut alice = Browser::new(&h);
    let (status, headers, _) = alice.get("/console/partners?x=1").await;
    let sent_to = headers["location"].to_str().unwrap().to_owned();
    assert_eq!((status, sent_to.as_str()), (303, "/console/sign-in?next=%2Fconsole%2Fpartners%3Fx%3D1"));
    let wrong = alice.sign_in_as("alice", "not her password", "/console/partners?x=1").await;
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    let unknown = alice.sign_in_as("mallory", "not her password", "").await;
    assert_eq!(unknown.status(), 401, "an unknown name is answered as a wrong password");
    let elsewhere = alice.sign_in_as("alice", "alice's long password", "https://evil.example/").await;
    assert_eq!((elsewhere.status().as_u16(), location(&elsewhere)), (303, "/console/"), "only console pages");
    let back = alice.sign_in_as("alice", "alice's long password", "/console/partners?x=1").await;
    assert_eq!((back.status().as_u16(), location(&back)), (303, "/console/partners?x=1"));
    // A control character cannot stand in a redirect: refused as a place to go back to (was a 500).
    let (status, headers, _) = alice.get("/console/sign-in?next=%2Fconsole%2F%0B").await;
    assert_eq!((status, headers["location"].to_str().unwrap()), (303, "/console/"));
    let (status, _, page) = alice.get("/console/%0B").await;
    assert!(status < 500, "{status}: {page}");

    // Her action is hers.
    let (_, _, page) = alice.get("/console/partners").await;
    let suspended = alice.post("/console/partners/acme/suspend", &[("csrf", &csrf(&page))], &[]).await;
    assert_eq!(suspended.status(), 303);
    let lines = logged_lines(&["operator action", "console:alice", "partner.status", "suspended"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let audit = admin(&h, reqwest::Method::GET, "/v1/admin/audit?actor=console:alice", None).await;
    assert_eq!(audit.status, 200, "{}", audit.text);
    let recorded = &audit.json()["items"];
    assert_eq!(recorded.as_array().unwrap().len(), 1, "{recorded}");
    let expected = ("console:alice", "partner.status", "acme", "active", "suspended");
    let fields = |row: &serde_json::Value| {
        let text = |name: &str| row[name].as_str().unwrap_or_default().to_owned();
        (text("actor"), text("action"), text("subject"), text("before"), text("after"))
    };
    let (actor, action, subject, before, after) = fields(&recorded[0]);
    assert_eq!((&*actor, &*action, &*subject, &*before, &*after), expected);
    let everyone = admin(&h, reqwest::Method::GET, "/v1/admin/audit", None).await.json();
    let register =
        everyone["items"].as_array().unwrap().iter().find(|row| row["action"] == "partner.register");
    let register = fields(register.expect("the registration is recorded too"));
    assert_eq!(
        (&*register.0, &*register.2, register.3.is_empty(), &*register.4),
        ("admin-api", "acme", true, "active")
    );
    admin(&h, reqwest::Method::GET, "/v1/admin/audit?actor=", None)
        .await
        .assert_problem(400, "invalid-request");
    let (status, _, page) = alice.get("/console/audit").await;
    assert!(status == 200 && page.contains("console:alice") && page.contains("partner.status"), "{page}");

    // A viewer by name sees and cannot act.
    let mut vera = Browser::new(&h);
    assert_eq!(vera.sign_in_as("vera", "vera's long password", "").await.status(), 303);
    let (_, _, page) = vera.get("/console/partners").await;
    assert_eq!(
        vera.post("/console/partners/acme/activate", &[("csrf", &csrf(&page))], &[]).await.status(),
        403
    );

    // Signing out ends the session on a second replica and after a restart too.
    let replica = TestApp::start(&database_config(&h.db.url), &secured()).await;
    let on = |app: &TestApp, browser: &Browser| Browser::on(app, browser.cookie.clone());
    assert_eq!(on(&replica, &alice).get("/console/partners").await.0, 200, "any replica knows the session");
    let (_, _, page) = alice.get("/console/").await;
    assert_eq!(alice.post("/console/sign-out", &[("csrf", &csrf(&page))], &[]).await.status(), 303);
    assert_eq!(on(&replica, &alice).get("/console/partners").await.0, 303, "signed out on the other replica");
    // An action posted after that is not done; signing in goes back to the page it came from.
    let from = format!("{}/console/partners?q=acme", alice.base);
    let lost =
        alice.post("/console/partners/acme/activate", &[("csrf", &csrf(&page))], &[("referer", &from)]).await;
    assert_eq!(
        (lost.status().as_u16(), location(&lost)),
        (303, "/console/sign-in?next=%2Fconsole%2Fpartners%3Fq%3Dacme&lost=true")
    );
    let (_, _, sign_in) = alice.get("/console/sign-in?next=%2Fconsole%2Fpartners%3Fq%3Dacme&lost=true").await;
    assert!(
        sign_in.contains("so that action was not done: nothing changed")
            && sign_in.contains(r#"value="/console/partners?q=acme""#),
        "{sign_in}"
    );
    let partner = admin(&h, reqwest::Method::GET, "/v1/admin/partners/acme", None).await.json();
    assert_eq!(partner["status"], "suspended", "{partner}");
    let Harness { app, db } = h;
    app.stop().await;
    let h = Harness { app: TestApp::start(&database_config(&db.url), &secured()).await, db };
    assert_eq!(on(&h.app, &alice).get("/console/partners").await.0, 303, "and after a restart");

    // Disabling an operator ends her sessions at once; she cannot sign in until enabled again.
    let mut alice = Browser::new(&h);
    assert_eq!(alice.sign_in_as("alice", "alice's long password", "").await.status(), 303);
    assert_eq!(on(&replica, &alice).get("/console/").await.0, 200);
    assert!(operator_command(&h.db.url, &["disable", "alice"], None).status.success());
    assert_eq!(on(&replica, &alice).get("/console/").await.0, 303, "disabled: the session is over");
    assert_eq!(alice.sign_in_as("alice", "alice's long password", "").await.status(), 401);
    assert!(operator_command(&h.db.url, &["enable", "alice"], None).status.success());
    assert_eq!(alice.sign_in_as("alice", "alice's long password", "").await.status(), 303);
    replica.stop().await;
    h.finish().await;
}

/// Five wrong passwords in a row lock a name on every replica: the right one is refused too, the
/// same way, until the lock passes or the password is reset.
async fn wrong_passwords_lock_the_name_until_reset(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    assert!(
        operator_command(&h.db.url, &["add", "bob", "--password-stdin"], Some("bob's long password"))
            .status
            .success()
    );
    let mut bob = Browser::new(&h);
    for _ in 0..5 {
        assert_eq!(bob.sign_in_as("bob", "a wrong guess here", "").await.status(), 401);
    }
    let refused = bob.sign_in_as("bob", "bob's long password", "").await;
    assert_eq!(refused.status(), 401, "locked: even the right password");
    assert!(refused.headers().get("set-cookie").is_none());
    let listed = operator_command(&h.db.url, &["list"], None);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["failed_sign_ins"], 5);
    assert!(listed[0]["locked_until"].is_string(), "{listed}");
    let reset = ["reset", "bob", "--password-stdin"];
    assert!(operator_command(&h.db.url, &reset, Some("bob's new long password")).status.success());
    assert_eq!(bob.sign_in_as("bob", "bob's long password", "").await.status(), 401, "the old one is gone");
    assert_eq!(bob.sign_in_as("bob", "bob's new long password", "").await.status(), 303);
    h.finish().await;
}

/// Thirty wrong passwords sent at once are each counted before any is checked: five are checked,
/// the name is locked, and the right password is refused after them (before, the counter was read
/// before each check and written back as one more: it ended at 1, and the right one signed in).
async fn guesses_sent_at_once_are_counted_each(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let carol = ["add", "carol", "--password-stdin"];
    assert!(operator_command(&h.db.url, &carol, Some("carol's long password")).status.success());
    let guesses: Vec<_> = (0..30)
        .map(|_| {
            let mut stranger = Browser::new(&h);
            tokio::spawn(async move { stranger.sign_in_as("carol", "a wrong guess here", "").await.status() })
        })
        .collect();
    let mut answers = Vec::new();
    for guess in guesses {
        answers.push(guess.await.unwrap().as_u16());
    }
    assert!(answers.iter().all(|status| *status == 401), "{answers:?}");
    let listed = operator_command(&h.db.url, &["list"], None);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["failed_sign_ins"], 5, "five counted, the rest refused unchecked: {listed}");
    let right = Browser::new(&h).sign_in_as("carol", "carol's long password", "").await;
    assert_eq!(right.status(), 401, "locked: the right password is refused too");
    h.finish().await;
}

/// A stranger's wrong passwords lock the name for every browser that never signed in under it, but
/// not the operator's own: its device cookie counts its guesses apart, so she still signs in (and
/// five wrong ones of her own lock her device). Before, one guess a minute kept her out for good.
async fn a_strangers_guesses_do_not_lock_out_the_operators_browser(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let dana = ["add", "dana", "--password-stdin"];
    assert!(operator_command(&h.db.url, &dana, Some("dana's long password")).status.success());
    let mut own = Browser::new(&h);
    let first = own.sign_in_as("dana", "dana's long password", "").await;
    let cookies: Vec<&str> =
        first.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(cookies.len(), 2, "{cookies:?}");
    assert!(cookies[0].starts_with("edi_inbox_console="), "the session first: {cookies:?}");
    assert!(
        cookies[1].starts_with("edi_inbox_device=")
            && cookies[1].contains("Path=/console/sign-in; HttpOnly; SameSite=Strict"),
        "{cookies:?}"
    );
    let mut stranger = Browser::new(&h);
    for _ in 0..6 {
        assert_eq!(stranger.sign_in_as("dana", "a wrong guess here", "").await.status(), 401);
    }
    assert_eq!(stranger.sign_in_as("dana", "dana's long password", "").await.status(), 401, "locked name");
    let mut forged = Browser::new(&h);
    forged.cookie =
        own.cookie.as_ref().map(|cookie| cookie.replace("edi_inbox_device=", "edi_inbox_device=00"));
    assert_eq!(forged.sign_in_as("dana", "dana's long password", "").await.status(), 401, "a made-up device");
    assert_eq!(
        own.sign_in_as("dana", "dana's long password", "").await.status(),
        303,
        "her browser signs in"
    );
    for _ in 0..5 {
        assert_eq!(own.sign_in_as("dana", "a wrong guess here", "").await.status(), 401);
    }
    assert_eq!(own.sign_in_as("dana", "dana's long password", "").await.status(), 401, "her device locked");
    h.finish().await;
}

/// Behind plain HTTP off loopback the browser would drop the `Secure` cookie and loop back to the
/// sign-in page without a word: the sign-in says why instead, and `--console-cookie-secure never`
/// is the way out on a trusted network.
async fn a_plain_http_console_says_why_instead_of_looping(backend: Backend) {
    use edi_inbox::config::CookieSecure;
    let h = Harness::with_server(backend, secured()).await;
    let browser = Browser::new(&h);
    let sign_in = |host: &'static str| {
        browser
            .client
            .post(format!("{}/console/sign-in", browser.base))
            .header("host", host)
            .header("origin", format!("http://{host}"))
            .form(&[("token", ADMIN)])
    };
    let refused = sign_in("edi.example.com:8080").send().await.unwrap();
    assert_eq!(refused.status(), 400);
    assert!(refused.headers().get("set-cookie").is_none());
    let page = refused.text().await.unwrap();
    assert!(
        page.contains("plain HTTP (http://edi.example.com:8080)")
            && page.contains("--console-cookie-secure never"),
        "{page}"
    );
    let local = sign_in("localhost:8080").send().await.unwrap();
    assert_eq!(local.status(), 303, "on a loopback name the cookie is not Secure: no mismatch");
    h.finish().await;

    let server = ServerConfig { console_cookie_secure: CookieSecure::Never, ..secured() };
    let h = Harness::with_server(backend, server).await;
    let browser = Browser::new(&h);
    let answer = browser
        .client
        .post(format!("{}/console/sign-in", browser.base))
        .header("host", "edi.example.com:8080")
        .header("origin", "http://edi.example.com:8080")
        .form(&[("token", ADMIN)])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 303);
    let cookie = answer.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("HttpOnly") && !cookie.contains("Secure"), "{cookie}");
    h.finish().await;
}

/// An invoice's page, as an accountant checks a booking: every figure of the hand-verified EDIFACT
/// sample with the segment it was read from, its parties, tax, lines, and links from its
/// interchange.
async fn an_invoice_page_shows_each_booked_value_with_its_segment(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let partner = json!({"id": "mueller", "name": "Mueller", "senders": ["edifact:14:4000001000005"]});
    let mueller = register(&h, partner).await;
    let booked = post_with_key(&h, &mueller.api_key, fixture("edifact/invoic-d96a.edi")).await;
    assert_eq!(booked.status, 201, "{}", booked.text);
    let (interchange, invoice) = (booked.json()["id"].clone(), booked.json()["invoices"][0]["id"].clone());
    let (interchange, invoice) = (interchange.as_str().unwrap(), invoice.as_str().unwrap());
    let mut browser = Browser::new(&h);
    browser.sign_in(ADMIN).await;
    let (status, _, page) = browser.get(&format!("/console/invoices/{invoice}")).await;
    assert_eq!(status, 200, "{page}");
    // Segment positions count from UNB (1): BGM 3, DTM 4, RFF 5, NAD 6 and 7, CUX 8, LIN 9 and 14,
    // IMD 10 and 15, QTY 11 and 16, MOA+203 12 and 17, PRI 13 and 18, MOA+77 23, TAX 24.
    for expected in [
        r#"<tr><th>Number</th><td class="mono">RE-2026-0042</td><td class="num">3</td></tr>"#,
        r#"<tr><th>Issue date</th><td class="mono">2026-03-17</td><td class="num">4</td></tr>"#,
        r#"<tr><th>Purchase order</th><td class="mono">PO-RE-2026-0042</td><td class="num">5</td></tr>"#,
        r#"<tr><th>Currency</th><td class="mono">EUR</td><td class="num">8</td></tr>"#,
        r#"<tr><th>Total</th><td class="mono">86.28</td><td class="num">23</td></tr>"#,
        r#"<tr><th>Tax total</th><td class="mono">13.78</td><td class="num">22</td></tr>"#,
        r#"<tr><th>Document</th><td class="mono">M1</td><td class="num">2</td></tr>"#,
        r#"<tr><th>Seller</th><td>Mueller + Soehne GmbH</td><td class="mono">9</td><td class="mono">4000001000005</td><td class="num">6</td></tr>"#,
        r#"<tr><th>Buyer</th><td>O'Brien Handel</td><td class="mono">9</td><td class="mono">4000002000004</td><td class="num">7</td></tr>"#,
        r#"<td>VAT</td><td>—</td><td class="num">19</td><td class="num">72.50</td><td class="num">13.78</td><td class="num">24</td>"#,
        r#"<td class="num">1</td><td class="mono">EN:4012345000009 </td><td>Rohstoff</td><td class="num">10</td><td>—</td><td class="num">3.25 net</td><td class="num">32.50</td>"#,
        "line 9, quantity 11, price 13, amount 12, description 10",
        "line 14, quantity 16, price 18, amount 17, description 15",
        &format!(r#"href="/console/interchanges/{interchange}""#),
    ] {
        assert!(page.contains(expected), "{expected} in {page}");
    }
    let (_, _, detail) = browser.get(&format!("/console/interchanges/{interchange}")).await;
    assert!(
        detail.contains(&format!(r#"<a href="/console/invoices/{invoice}">RE-2026-0042</a>"#)),
        "{detail}"
    );
    assert_eq!(browser.get("/console/invoices/not-a-uuid").await.0, 400);
    assert_eq!(browser.get(&format!("/console/invoices/{interchange}")).await.0, 404, "no such invoice");
    h.finish().await;
}

/// The overview's figures count what arrived, per partner and outcome, in the last hour and day.
async fn the_overview_counts_what_arrived_per_partner_and_outcome(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"]})).await;
    for body in [common::numbered(1), common::numbered(2), common::numbered(1)] {
        post_with_key(&h, &acme.api_key, body).await;
    }
    let mut browser = Browser::new(&h);
    browser.sign_in(ADMIN).await;
    let card = |figure: &str, label: &str| {
        format!(
            r#"<div class="card"><div class="figure">{figure}</div><div class="label">{label}</div></div>"#
        )
    };
    let row = |outcome: &str, count: u32| {
        format!(r#"<td>acme</td><td>{outcome}</td><td class="num">{count}</td><td class="num">{count}</td>"#)
    };
    // The replay's audit row is written in the background: within a few flushes.
    let mut page = String::new();
    for _ in 0..50 {
        page = browser.get("/console/").await.2;
        if page.contains(&card("3", "deliveries, last hour")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for expected in [
        card("3", "deliveries, last hour"),
        card("3", "deliveries, last 24 h"),
        card("33.3 %", "replay ratio, 24 h"),
        row("recorded", 2),
        row("replayed", 1),
    ] {
        assert!(page.contains(&expected), "{expected} in {page}");
    }
    h.finish().await;
}

/// The interchanges holding a duplicate invoice (one booked before, kept and not booked again)
/// are one filter away.
async fn the_interchanges_holding_duplicates_are_one_filter_away(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"]})).await;
    let mut ids = Vec::new();
    for body in [fixture("x12/810-single.edi"), common::resent(700_001), common::numbered(700_002)] {
        let answer = post_with_key(&h, &acme.api_key, body).await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        ids.push(answer.json()["id"].as_str().unwrap().to_owned());
    }
    let mut browser = Browser::new(&h);
    browser.sign_in(ADMIN).await;
    let link = |id: &str| format!(r#"href="/console/interchanges/{id}""#);
    let (status, _, all) = browser.get("/console/interchanges").await;
    assert_eq!(status, 200, "{all}");
    assert!(ids.iter().all(|id| all.contains(&link(id))), "{all}");
    let (status, _, holding) = browser.get("/console/interchanges?holding=duplicates").await;
    assert_eq!(status, 200, "{holding}");
    assert!(holding.contains(&link(&ids[1])), "the resend holds the duplicate: {holding}");
    assert!(!holding.contains(&link(&ids[0])) && !holding.contains(&link(&ids[2])), "{holding}");
    assert!(holding.contains(r#"<option value="duplicates" selected>"#), "{holding}");
    assert_eq!(browser.get("/console/interchanges?holding=everything").await.0, 400);
    let listed = admin(&h, reqwest::Method::GET, "/v1/interchanges?holding_duplicates=true", None).await;
    let items: Vec<_> = listed.json()["items"].as_array().unwrap().iter().map(|i| i["id"].clone()).collect();
    assert_eq!(items, [json!(ids[1])], "the API's filter: {}", listed.text);
    h.finish().await;
}

both_backends!(
    the_interchanges_holding_duplicates_are_one_filter_away,
    the_overview_counts_what_arrived_per_partner_and_outcome,
    an_invoice_page_shows_each_booked_value_with_its_segment,
    a_plain_http_console_says_why_instead_of_looping,
    named_operators_sign_in_and_their_sessions_end_everywhere,
    wrong_passwords_lock_the_name_until_reset,
    guesses_sent_at_once_are_counted_each,
    a_strangers_guesses_do_not_lock_out_the_operators_browser,
    sign_in_gives_a_strict_session_and_every_page_strict_headers,
    a_cross_site_post_changes_nothing,
    a_viewer_sees_every_page_and_changes_nothing,
    hostile_values_render_as_text,
);
