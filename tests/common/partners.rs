//! Partner-mode helpers: a server with partner authentication and an admin token, registering
//! partners through the admin API, and posting with an API key or a Standard Webhooks signature.

use serde_json::{Value, json};

use super::{Harness, Reply, server_config};
use edi_inbox::config::{AuthMode, ServerConfig};
use edi_inbox::partners::webhooks;

pub const ADMIN: &str = "admin-token-for-tests";

pub fn secured() -> ServerConfig {
    ServerConfig { auth: AuthMode::Partners, admin_token: Some(ADMIN.into()), ..server_config() }
}

pub struct Registered {
    pub api_key: String,
    pub webhook_secret: String,
}

pub async fn admin(h: &Harness, method: reqwest::Method, path: &str, body: Option<Value>) -> Reply {
    let mut request = h.app.client.request(method, h.app.url(path)).bearer_auth(ADMIN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    Reply::send(request).await
}

pub async fn register(h: &Harness, partner: Value) -> Registered {
    let created = admin(h, reqwest::Method::POST, "/v1/admin/partners", Some(partner)).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let secrets = created.json()["secrets"].clone();
    let secret = |kind: &str| {
        secrets.as_array().unwrap().iter().find(|s| s["kind"] == kind).unwrap()["secret"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    Registered { api_key: secret("api_key"), webhook_secret: secret("webhook_secret") }
}

pub async fn acme(h: &Harness) -> Registered {
    register(h, json!({"id": "acme", "name": "ACME Supply", "senders": ["x12:ZZ:ACMESUPPLY"], "receivers": ["x12:ZZ:BUYERCO"]})).await
}

/// Partner acme with `conflict_policy: quarantine`, an interchange of it recorded, and two more
/// held: a conflicting resend and an invalid interchange (their quarantine entries, in that order).
pub async fn holding_two(h: &Harness) -> (Registered, Value, Value) {
    let acme = register(h, json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "conflict_policy": "quarantine"})).await;
    let post = |body: Vec<u8>| post_with_key(h, &acme.api_key, body);
    assert_eq!(post(super::fixture("x12/810-single.edi")).await.status, 201);
    let conflict = post(super::fixture("x12/810-single-conflict.edi")).await;
    let invalid = post(super::fixture("x12/invalid-se-count.edi")).await;
    assert_eq!((conflict.status, invalid.status), (202, 202), "{} {}", conflict.text, invalid.text);
    (acme, conflict.json(), invalid.json())
}

pub async fn post_with_key(h: &Harness, key: &str, body: Vec<u8>) -> Reply {
    Reply::send(
        h.app
            .client
            .post(h.app.url("/v1/interchanges"))
            .bearer_auth(key)
            .header("content-type", "application/edi-x12")
            .body(body),
    )
    .await
}

pub async fn post_signed(h: &Harness, partner: &str, secret: &str, timestamp: i64, body: Vec<u8>) -> Reply {
    let id = format!("msg_{}", uuid::Uuid::now_v7().simple());
    let signature = webhooks::sign(secret, &id, timestamp, &body);
    Reply::send(
        h.app
            .client
            .post(h.app.url(&format!("/v1/interchanges?partner={partner}")))
            .header("content-type", "application/edi-x12")
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body),
    )
    .await
}

pub async fn stored_interchanges(h: &Harness) -> usize {
    let page = admin(h, reqwest::Method::GET, "/v1/interchanges?limit=500", None).await;
    assert_eq!(page.status, 200, "{}", page.text);
    page.json()["items"].as_array().unwrap().len()
}
