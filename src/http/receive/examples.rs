//! The examples the API document offers for a delivery (what Swagger UI's "Try it out" sends), each
//! an X12 810 or EDIFACT INVOIC under an interchange control number of its own.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// An X12 810 with interchange control number `control`: each example in the API document has its
/// own, so that trying one after another in Swagger UI records each (201) before replaying it (200).
pub fn example_x12(control: u32) -> String {
    format!(
        "ISA*00*          *00*          *ZZ*ACMESUPPLY     *ZZ*BUYERCO        *260317*1015*U*00401*{control:09}*0*P*>~\
         GS*IN*ACMESUPPLY*BUYERCO*20260317*1015*1144*X*004010~ST*810*0001~BIG*20260317*INV-3001~CUR*SE*USD~\
         N1*SE*ACME SUPPLY CO*92*ACME-001~N1*BY*BUYERCO RETAIL*92*BUY-777~IT1*1*1*EA*1000**VP*SKU-X~TDS*100000~\
         CTT*1~SE*9*0001~GE*1*1144~IEA*1*{control:09}~"
    )
}

/// An EDIFACT INVOIC (D.96A) for the API document's `application/edifact` example.
pub const EXAMPLE_EDIFACT: &str = "UNB+UNOC:3+ACMESUPPLY:ZZ+BUYERCO:ZZ+260317:1015+1148'UNH+1+INVOIC:D:96A:UN'\
BGM+380+INV-3002+9'DTM+137:20260317:102'CUX+2:EUR:4'NAD+SU+ACME-001::92++ACME SUPPLY CO'\
NAD+BY+BUY-777::92++BUYERCO RETAIL'LIN+1++SKU-X:SA'QTY+47:1'MOA+203:1000.00'UNS+S'MOA+79:1000.00'\
MOA+77:1000.00'UNT+13+1'UNZ+1+1148'";

/// A structured CloudEvent carrying an X12 810 of its own.
pub fn example_cloud_event() -> Value {
    serde_json::json!({"specversion": "1.0", "id": "A234-1234-1234", "source": "/partners/acme/as2-gateway",
        "type": "org.x12.invoice.810", "datacontenttype": "application/edi-x12", "data": example_x12(9146)})
}

/// A Pub/Sub push request carrying an X12 810 of its own.
pub fn example_pubsub_push() -> Value {
    serde_json::json!({"message": {"data": STANDARD.encode(example_x12(9147)), "attributes": {"partner": "acme"},
        "messageId": "2070443601311540", "publishTime": "2026-12-03T10:00:00.123Z"},
        "subscription": "projects/acme-edi/subscriptions/edi-inbox-push", "deliveryAttempt": 1})
}
