//! What operators and containers run: `edi-inbox config`, `edi-inbox probe`.

mod common;

use common::{Backend, Harness, process};
use serde_json::{Value, json};

/// `edi-inbox config` prints every setting with its value and where it came from, never a secret.
#[test]
fn config_shows_each_value_and_its_source_without_secrets() {
    let output = process::command(
        "postgres://app:database-password@db.example/inbox",
        &["config", "--rate-limit", "5", "--accounting-token", "accounting-secret"],
    )
    .env("EDI_INBOX_ADMIN_TOKEN", "admin-secret")
    .output()
    .expect("edi-inbox config runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    for secret in ["database-password", "accounting-secret", "admin-secret"] {
        assert!(!text.contains(secret), "{secret} is shown:\n{text}");
    }
    let settings: Vec<Value> = serde_json::from_str(&text).unwrap();
    let setting = |name: &str| settings.iter().find(|s| s["name"] == name).cloned().unwrap_or_default();
    assert_eq!(
        setting("database-url"),
        json!({"name": "database-url", "env": "DATABASE_URL", "value": "postgres://app:***@db.example/inbox", "source": "env"})
    );
    assert_eq!(setting("rate-limit")["value"], "5");
    assert_eq!(setting("rate-limit")["source"], "flag");
    assert_eq!(
        (&setting("admin-token")["value"], &setting("admin-token")["source"]),
        (&json!("***"), &json!("env"))
    );
    assert_eq!(setting("accounting-token")["source"], "flag");
    assert_eq!(
        (&setting("retention-days")["value"], &setting("retention-days")["source"]),
        (&json!("90"), &json!("default"))
    );
    assert_eq!(
        (&setting("accounting-url")["value"], &setting("accounting-url")["source"]),
        (&Value::Null, &json!("unset"))
    );
    assert!(settings.len() > 30, "every setting is listed: {}", settings.len());
}

/// `edi-inbox probe`, the image's health check, passes against a ready server and fails once it is
/// gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_passes_while_the_server_is_ready() {
    let h = Harness::start(Backend::Sqlite).await;
    let url = h.app.url("/readyz");
    let probe = || process::command(&h.db.url, &["probe", &url]).output().expect("edi-inbox probe runs");
    assert!(probe().status.success(), "{}", String::from_utf8_lossy(&probe().stderr));
    let address = h.app.address;
    h.finish().await;
    let gone = process::command("sqlite::memory:", &["probe", &format!("http://{address}/readyz")])
        .output()
        .unwrap();
    assert!(!gone.status.success(), "a stopped server fails the probe");
}
