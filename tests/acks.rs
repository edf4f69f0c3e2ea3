//! Acknowledgements through HTTP: returned for `Accept: application/edi-x12|edifact`, stored with the
//! interchange so a replay returns the same one, numbered from one cycling sequence (unique, gaps allowed), on SQLite and PostgreSQL.

mod common;

use common::{Backend, Harness, Reply, content_type_of, fixture};

async fn post_for_ack(h: &Harness, path: &str) -> Reply {
    let accept = content_type_of(path);
    Reply::send(
        h.app
            .client
            .post(h.app.url("/v1/interchanges"))
            .header("content-type", accept)
            .header("accept", accept)
            .body(fixture(path)),
    )
    .await
}

/// The interchange control number (ISA13 / UNB 0020) of an acknowledgement.
fn ack_control_number(ack: &str) -> &str {
    if ack.starts_with("ISA") {
        ack.split('*').nth(13).unwrap()
    } else {
        ack.split("UNB+").nth(1).unwrap().split('\'').next().unwrap().rsplit('+').next().unwrap()
    }
}

async fn acknowledgements_are_returned_replayed_and_uniquely_numbered(backend: Backend) {
    let h = Harness::start(backend).await;
    let first = post_for_ack(&h, "x12/810-single.edi").await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.header("content-type"), Some("application/edi-x12"));
    assert!(first.header("location").is_some());
    assert!(first.text.starts_with("ISA*00*"), "{}", first.text);
    assert!(
        first.text.contains("AK1*IN*1142~")
            && first.text.contains("AK5*A~")
            && first.text.contains("AK9*A*1*1*1~")
    );
    assert_eq!(ack_control_number(&first.text), "000000001");

    let replay = post_for_ack(&h, "x12/810-single-rewrapped.edi").await;
    assert_eq!(replay.status, 200);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.text, first.text, "a replay returns the same acknowledgement");

    let location = first.header("location").unwrap().to_owned();
    let stored = h.app.get(&format!("{location}/ack")).await;
    assert_eq!((stored.status, stored.header("content-type")), (200, Some("application/edi-x12")));
    assert_eq!(stored.text, first.text);

    let second = post_for_ack(&h, "x12/810-two-invoices-00501.edi").await;
    assert_eq!(second.status, 201);
    assert!(second.text.contains("ST*999*0001*005010~"), "{}", second.text);
    assert_eq!(ack_control_number(&second.text), "000000002", "from one sequence, no lock held until COMMIT");

    let other_partner = post_for_ack(&h, "edifact/invoic-d96a.edi").await;
    assert_eq!(
        (other_partner.status, other_partner.header("content-type")),
        (201, Some("application/edifact"))
    );
    assert!(
        other_partner.text.contains("UCI+1042+4000001000005:14+4000002000004:14+7'"),
        "{}",
        other_partner.text
    );
    assert_eq!(
        ack_control_number(&other_partner.text),
        "000000003",
        "unique across partners, so per partner too"
    );

    // JSON clients still get the resource.
    assert_eq!(h.app.post_fixture("x12/810-single.edi").await.json()["control_number"], "000001142");
    h.finish().await;
}

async fn rejected_interchanges_get_negative_acknowledgements(backend: Backend) {
    let h = Harness::start(backend).await;
    let rejected = post_for_ack(&h, "x12/invalid-se-count.edi").await;
    assert_eq!(rejected.status, 422);
    assert!(rejected.text.contains("AK2*810*0001~\nAK5*R*4~\nAK9*R*1*1*0~"), "{}", rejected.text);
    let replay = post_for_ack(&h, "x12/invalid-se-count.edi").await;
    assert_eq!((replay.status, replay.text.as_str()), (422, rejected.text.as_str()));

    let envelope = post_for_ack(&h, "x12/invalid-iea-control.edi").await;
    assert_eq!(envelope.status, 422);
    assert!(envelope.text.contains("TA1*000001147*260317*1015*R*001~"), "{}", envelope.text);

    let contrl = post_for_ack(&h, "edifact/invalid-unz-reference.edi").await;
    assert_eq!(contrl.status, 422);
    assert!(
        contrl.text.contains("UCI+1046+4000001000005:14+4000002000004:14+4+28+UNZ+2'"),
        "{}",
        contrl.text
    );

    // A corrected resend replaces the rejected interchange and gets a new, positive acknowledgement.
    let corrected =
        String::from_utf8(fixture("x12/invalid-se-count.edi")).unwrap().replace("SE*15*0001", "SE*16*0001");
    let accepted = h.app.post(corrected, "application/edi-x12").await;
    assert_eq!(accepted.status, 201, "{}", accepted.text);
    let ack = h.app.get(&format!("/v1/interchanges/{}/ack", accepted.json()["id"].as_str().unwrap())).await;
    assert!(ack.text.contains("AK5*A~"), "{}", ack.text);
    assert_eq!(ack_control_number(&ack.text), "000000004", "after the three negative acknowledgements");
    h.app
        .get(&format!("/v1/interchanges/{}/ack", uuid::Uuid::now_v7()))
        .await
        .assert_problem(404, "not-found");
    h.finish().await;
}

both_backends!(
    acknowledgements_are_returned_replayed_and_uniquely_numbered,
    rejected_interchanges_get_negative_acknowledgements,
);
