//! Finding interchanges as an operator does, over real HTTP on SQLite and PostgreSQL: the search
//! text (`q`, the console's search box and `GET /v1/interchanges`) by invoice number, purchase order,
//! the first digits of a control number, sender and total; arrival time to the minute; and what a
//! listed interchange shows of its partner and invoices.

mod common;

use common::partners::{ADMIN, admin, post_with_key, register, secured};
use common::{Backend, Harness, fixture, numbered, resent};
use reqwest::Method;
use serde_json::{Value, json};

/// The control numbers `GET /v1/interchanges?{query}` lists, sorted.
async fn found(h: &Harness, query: &str) -> Vec<String> {
    let listed = admin(h, Method::GET, &format!("/v1/interchanges?{query}"), None).await;
    assert_eq!(listed.status, 200, "{query}: {}", listed.text);
    let mut controls: Vec<String> = listed.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["control_number"].as_str().unwrap().to_owned())
        .collect();
    controls.sort();
    controls
}

async fn search_finds_interchanges_by_what_a_person_remembers(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"]})).await;
    for body in [
        fixture("x12/810-single.edi"),
        fixture("x12/810-two-invoices-00501.edi"),
        // The same invoice again in two more envelopes (duplicates, found like any invoice).
        resent(11_420),
        resent(5),
    ] {
        assert_eq!(post_with_key(&h, &acme.api_key, body).await.status, 201);
    }
    let all = ["000000005", "000001142", "000001143", "000011420"];
    for (q, expected) in [
        ("1142", vec!["000001142", "000011420"]),
        ("000001142", vec!["000001142", "000011420"]),
        ("11420", vec!["000011420"]),
        ("INV-2002", vec!["000001143"]),
        ("INV-1042", vec!["000000005", "000001142", "000011420"]),
        ("PO-2001", vec!["000001143"]),
        ("604.97", vec!["000001143"]),
        ("8000.00", vec!["000000005", "000001142", "000011420"]),
        ("ACMESUPPLY", all.to_vec()),
        ("777", vec![]),
        // One or two characters find a control number exactly, not a tenth of every interchange.
        ("5", vec!["000000005"]),
        ("1", vec![]),
        ("11", vec![]),
        ("114", vec!["000001142", "000001143", "000011420"]),
    ] {
        assert_eq!(found(&h, &format!("q={q}")).await, expected, "q={q}");
    }
    assert_eq!(
        found(&h, "q=1142&status=processed&partner=acme&standard=x12").await,
        ["000001142", "000011420"]
    );
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    assert!(found(&h, &format!("received_from={tomorrow}")).await.is_empty());
    assert_eq!(found(&h, &format!("received_before={tomorrow}")).await, all);
    admin(&h, Method::GET, "/v1/interchanges?q=", None).await.assert_problem(400, "invalid-request");
    admin(&h, Method::GET, "/v1/interchanges?order=sideways", None)
        .await
        .assert_problem(400, "invalid-request");

    // A listed interchange names its partner and its invoices.
    let listed = admin(&h, Method::GET, "/v1/interchanges?q=PO-2001", None).await.json();
    let item: &Value = &listed["items"][0];
    assert_eq!(
        (
            &item["partner_id"],
            &item["invoice_count"],
            &item["first_invoice_number"],
            &item["first_invoice_total"]
        ),
        (&json!("acme"), &json!(2), &json!("INV-2001"), &json!("309.21")),
        "{item}"
    );

    // The console's search box and its time of day.
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let signed_in =
        client.post(h.app.url("/console/sign-in")).form(&[("token", ADMIN)]).send().await.unwrap();
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let page = |query: String| {
        let request =
            client.get(h.app.url(&format!("/console/interchanges?{query}"))).header("cookie", &cookie);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let listed = page("q=1142".into()).await;
    assert!(
        listed.contains("000001142") && listed.contains("000011420") && !listed.contains("000001143"),
        "{listed}"
    );
    assert!(listed.contains(">acme<") && listed.contains("INV-1042"), "partner and invoice shown: {listed}");
    let now = chrono::Utc::now();
    let minute = |at: chrono::DateTime<chrono::Utc>| at.format("%Y-%m-%dT%H:%M").to_string();
    let later = page(format!("from={}", minute(now + chrono::Duration::minutes(2)))).await;
    assert!(!later.contains("000001142"), "nothing arrived after that minute: {later}");
    let around =
        page(format!("from={}&to={}", minute(now - chrono::Duration::minutes(5)), minute(now))).await;
    assert!(around.contains("000001142") && around.contains("000001143"), "{around}");
    for bad in ["from=noon", "order=sideways", "before=not-an-id"] {
        let answer = client
            .get(h.app.url(&format!("/console/interchanges?{bad}")))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "{bad}");
    }
    h.finish().await;
}

/// Every page of `GET /v1/interchanges?{query}&limit=2`, followed by `next_cursor`: the control
/// numbers in the order listed.
async fn walked(h: &Harness, query: &str) -> Vec<String> {
    let (mut controls, mut cursor) = (Vec::new(), String::new());
    loop {
        let page = admin(h, Method::GET, &format!("/v1/interchanges?{query}&limit=2{cursor}"), None).await;
        assert_eq!(page.status, 200, "{query}: {}", page.text);
        let page = page.json();
        controls
            .extend(page["items"].as_array().unwrap().iter().map(|item| item["control_number"].to_string()));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return controls,
        }
    }
}

/// A search pages like the plain list, both ways: each lookup stops at a page, and an interchange
/// two of whose invoices match fills one place of its page, not two.
async fn a_search_pages_through_every_match_once_both_ways(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    // Its sellers' re-used numbers are booked: `twice` holds INV-1042 twice, with other content.
    let acme = json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "on_duplicate_number": "book"});
    let acme = register(&h, acme).await;
    let twice =
        String::from_utf8(fixture("x12/810-two-invoices-00501.edi")).unwrap().replace("INV-200", "INV-104");
    let twice = twice.replace("INV-1041", "INV-1042").into_bytes();
    for body in [resent(1), resent(2), twice, resent(3), resent(4), resent(5)] {
        assert_eq!(post_with_key(&h, &acme.api_key, body).await.status, 201);
    }
    let newest = ["000000005", "000000004", "000000003", "000001143", "000000002", "000000001"]
        .map(|control| format!("\"{control}\""));
    for q in ["INV-1042", "ACMESUPPLY"] {
        assert_eq!(walked(&h, &format!("q={q}")).await, newest, "q={q}");
        let oldest: Vec<String> = newest.iter().rev().cloned().collect();
        assert_eq!(walked(&h, &format!("q={q}&order=oldest")).await, oldest, "q={q}, oldest first");
    }
    assert_eq!(walked(&h, "order=oldest").await.first().map(String::as_str), Some("\"000000001\""));
    h.finish().await;
}

/// The control numbers a console list page shows, in order, and where its pager's links go.
fn listed(page: &str) -> (Vec<u32>, Vec<(String, String)>) {
    let controls = page
        .split(r#"<a class="mono" href="/console/interchanges/"#)
        .skip(1)
        .map(|rest| rest[rest.find('>').unwrap() + 1..rest.find("</a>").unwrap()].parse().unwrap())
        .collect();
    let pager = &page[page.find(r#"<p class="pager">"#).expect("a pager")..];
    let links = pager[..pager.find("</p>").unwrap()]
        .split(r#"<a href=""#)
        .skip(1)
        .map(|link| {
            let (href, rest) = link.split_once('"').unwrap();
            (rest[1..rest.find("</a>").unwrap()].to_owned(), href.replace("&amp;", "&"))
        })
        .collect();
    (controls, links)
}

/// The console's list pages both ways from any page, counts what matches, and sorts either way.
async fn the_console_list_pages_back_and_forth_and_counts(backend: Backend) {
    let h = Harness::with_server(backend, secured()).await;
    let acme = register(&h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"]})).await;
    for control in 1..=120 {
        assert_eq!(post_with_key(&h, &acme.api_key, numbered(control)).await.status, 201);
    }
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let signed_in =
        client.post(h.app.url("/console/sign-in")).form(&[("token", ADMIN)]).send().await.unwrap();
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let get = |path: String| {
        let request = client.get(h.app.url(&path)).header("cookie", &cookie);
        async move {
            let page = request.send().await.unwrap().text().await.unwrap();
            (listed(&page), page)
        }
    };
    let follow = |links: &[(String, String)], label: &str| {
        links
            .iter()
            .find(|(text, _)| text == label)
            .unwrap_or_else(|| panic!("{label} in {links:?}"))
            .1
            .clone()
    };
    let labels = |links: &[(String, String)]| links.iter().map(|(text, _)| text.clone()).collect::<Vec<_>>();
    let ((first, links), page) = get("/console/interchanges?q=ACMESUPPLY".into()).await;
    assert!(page.contains(r#"<p id="matching">120 interchanges</p>"#), "{page}");
    assert_eq!(first, (71..=120).rev().collect::<Vec<_>>());
    assert_eq!(labels(&links), ["Older →"]);
    let ((second, links), _) = get(follow(&links, "Older →")).await;
    assert_eq!(second, (21..=70).rev().collect::<Vec<_>>());
    assert_eq!(labels(&links), ["← Newest", "← Newer", "Older →"]);
    let ((back, back_links), _) = get(follow(&links, "← Newer")).await;
    assert_eq!((back, labels(&back_links)), (first.clone(), vec!["Older →".to_owned()]), "back at the start");
    let ((third, links), _) = get(follow(&links, "Older →")).await;
    assert_eq!(
        (third, labels(&links)),
        ((1..=20).rev().collect(), vec!["← Newest".to_owned(), "← Newer".to_owned()])
    );
    let ((again, links), _) = get(follow(&links, "← Newer")).await;
    assert_eq!(
        (again, labels(&links)),
        (second, vec!["← Newest".into(), "← Newer".into(), "Older →".into()])
    );
    let ((oldest, links), _) = get("/console/interchanges?order=oldest".into()).await;
    assert_eq!((oldest, labels(&links)), ((1..=50).collect(), vec!["Newer →".to_owned()]));
    let (_, page) = get("/console/interchanges?q=120".into()).await;
    assert!(page.contains(r#"<p id="matching">1 interchange</p>"#), "{page}");
    h.finish().await;
}

both_backends!(
    search_finds_interchanges_by_what_a_person_remembers,
    a_search_pages_through_every_match_once_both_ways,
    the_console_list_pages_back_and_forth_and_counts
);
