//! The accounting file export through the real binary: files read back with Python's csv module
//! (tests/export/check_csv.py) match the invoices API, each invoice in exactly one file, also when
//! the export crashes between writing and renaming a file or between renaming and confirming it,
//! and when several exporters run at once.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::process;
use common::{Backend, Harness, accounting_config, eventually, numbered, server_config};
use serde_json::Value;

/// Runs `edi-inbox export` into `dir`; `crash_at` names the crash point to abort at.
fn export(h: &Harness, dir: &Path, max_invoices: u32, crash_at: Option<&str>) -> Output {
    let max = max_invoices.to_string();
    let args = ["export", "--export-dir", dir.to_str().unwrap(), "--export-max-invoices", &max];
    let mut command = process::command(&h.db.url, &args);
    if let Some(point) = crash_at {
        command.env("EDI_INBOX_CRASH_AT", point);
    }
    command.output().expect("edi-inbox export runs")
}

fn succeeded(output: &Output) -> Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("a JSON summary")
}

/// Checks `dirs` against every invoice the API lists, with Python's csv module.
async fn check(h: &Harness, dirs: &[&Path]) -> Value {
    let invoices = h.app.all_invoices().await;
    let listing = dirs[0].parent().unwrap().join(format!("invoices-{}.json", uuid::Uuid::now_v7()));
    std::fs::write(&listing, serde_json::to_vec(&invoices).unwrap()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/export/check_csv.py");
    let output =
        std::process::Command::new("python3").arg(script).arg(&listing).args(dirs).output().expect("python3");
    let _ = std::fs::remove_file(&listing);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("edi_inbox_export_{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn csv_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".csv"))
        .collect();
    names.sort();
    names
}

async fn files_match_the_invoices_api(backend: Backend) {
    let h = Harness::start(backend).await;
    for path in [
        "x12/810-two-invoices-00501.edi",
        "x12/810-single.edi",
        "x12/810-one-line.edi",
        "edifact/invoic-two-messages-decimal-comma.edi",
        "edifact/invoic-d96a.edi",
    ] {
        assert_eq!(h.app.post_fixture(path).await.status, 201, "{path}");
    }
    // A seller named like a spreadsheet formula: check_csv.py expects it behind a `'`.
    let formula = String::from_utf8(numbered(9)).unwrap().replace("ACME SUPPLY CO", "=HYPERLINK(1)");
    assert_eq!(h.app.post(formula, "application/edi-x12").await.status, 201);
    // The same invoice again under a new control number: listed as a duplicate, never exported.
    let resent = h.app.post(common::resent(700_001), "application/edi-x12").await;
    assert!(resent.json()["invoices"][0]["duplicate_of"].is_object(), "{}", resent.text);
    let listed = h.app.all_invoices().await;
    let invoices = listed.iter().filter(|invoice| invoice.get("duplicate_of").is_none()).count();
    assert_eq!(invoices + 1, listed.len());
    let root = scratch();
    let dir = root.join("out");
    let summary = succeeded(&export(&h, &dir, 2, None));
    assert_eq!(summary["invoices"], invoices, "{summary}");
    assert_eq!(summary["files"], invoices.div_ceil(2), "at most 2 invoices a file: {summary}");
    assert_eq!(check(&h, &[&dir]).await["invoices"], invoices);

    let again = succeeded(&export(&h, &dir, 2, None));
    assert_eq!((again["files"].as_u64(), again["invoices"].as_u64()), (Some(0), Some(0)), "nothing twice");
    assert_eq!(h.app.post(numbered(7), "application/edi-x12").await.status, 201);
    let more = succeeded(&export(&h, &dir, 2, None));
    assert_eq!((more["files"].as_u64(), more["invoices"].as_u64()), (Some(1), Some(1)));
    assert_eq!(check(&h, &[&dir]).await["invoices"], invoices + 1);
    let _ = std::fs::remove_dir_all(root);
    h.finish().await;
}

/// An export killed after writing a file but before renaming it, then one killed after renaming
/// but before confirming it in the database: the next run writes the same files again, and every
/// invoice ends up in exactly one file.
async fn a_crashed_export_still_exports_each_invoice_once(backend: Backend) {
    let h = Harness::start(backend).await;
    for n in 1..=5 {
        assert_eq!(h.app.post(numbered(n), "application/edi-x12").await.status, 201);
    }
    let root = scratch();
    let dir = root.join("out");
    let crashed = export(&h, &dir, 2, Some("export-before-rename"));
    assert!(!crashed.status.success(), "aborted");
    assert_eq!(csv_files(&dir), Vec::<String>::new(), "nothing in place yet");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.ends_with(".tmp")), "the written, unrenamed file is left: {names:?}");

    // Somebody else's temporary file in the same directory is not the exporter's to remove.
    std::fs::write(dir.join(".someone-else.tmp"), b"not ours").unwrap();
    for n in 6..=7 {
        assert_eq!(h.app.post(numbered(n), "application/edi-x12").await.status, 201);
    }
    let crashed = export(&h, &dir, 2, Some("export-before-confirm"));
    assert!(!crashed.status.success(), "aborted");
    let renamed = csv_files(&dir);
    assert_eq!(renamed.len(), 1, "the unconfirmed export's file is in place: {renamed:?}");
    let first = std::fs::read(dir.join(&renamed[0])).unwrap();

    let summary = succeeded(&export(&h, &dir, 2, None));
    assert_eq!(summary["invoices"], 7, "{summary}");
    assert_eq!(std::fs::read(dir.join(&renamed[0])).unwrap(), first, "written again with the same content");
    let checked = check(&h, &[&dir]).await;
    assert_eq!((checked["invoices"].as_u64(), checked["files"].as_u64()), (Some(7), Some(4)), "{checked}");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert_eq!(left, [".someone-else.tmp"], "its own leftovers removed, nobody else's");
    for name in csv_files(&dir).iter().chain([&"manifest.json".to_owned(), &".export.lock".to_owned()]) {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join(name)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "{name} is {mode:o}");
    }
    let _ = std::fs::remove_dir_all(root);
    h.finish().await;
}

/// Four exporters at once, two per directory: the directory lock lets one of each pair write, the
/// database gives the two directories disjoint invoices; together they hold each invoice once.
async fn exporters_running_at_once_export_each_invoice_once(backend: Backend) {
    let h = Harness::start(backend).await;
    for n in 1..=30 {
        assert_eq!(h.app.post(numbered(n), "application/edi-x12").await.status, 201);
    }
    let root = scratch();
    let (a, b) = (root.join("a"), root.join("b"));
    let runs: Vec<_> = [&a, &a, &b, &b]
        .into_iter()
        .map(|dir| {
            let max = "1".to_owned();
            let args = ["export", "--export-dir", dir.to_str().unwrap(), "--export-max-invoices", &max];
            process::command(&h.db.url, &args).spawn().expect("spawn")
        })
        .collect();
    for run in runs {
        let output = run.wait_with_output().expect("export ends");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let checked = check(&h, &[&a, &b]).await;
    assert_eq!(checked["invoices"], 30, "{checked}");
    let _ = std::fs::remove_dir_all(root);
    h.finish().await;
}

/// `serve --export-dir` exports on its own, every `--export-interval`.
async fn serve_exports_on_a_schedule(backend: Backend) {
    let root = scratch();
    let dir = root.join("scheduled");
    let config = accounting_config(&["--export-dir", dir.to_str().unwrap(), "--export-interval", "1"]);
    let h = Harness::with_accounting(backend, server_config(), &config).await;
    for n in 1..=2 {
        assert_eq!(h.app.post(numbered(n), "application/edi-x12").await.status, 201);
    }
    let exported = |dir: &Path| -> u64 {
        let Ok(manifest) = std::fs::read(dir.join("manifest.json")) else { return 0 };
        let manifest: Vec<Value> = serde_json::from_slice(&manifest).unwrap_or_default();
        manifest.iter().filter_map(|e| e["invoices"].as_u64()).sum()
    };
    assert_eq!(eventually(async || exported(&dir), |n| *n == 2).await, 2);
    assert_eq!(check(&h, &[&dir]).await["invoices"], 2);
    h.finish().await;
    let _ = std::fs::remove_dir_all(root);
}

both_backends!(
    serve_exports_on_a_schedule,
    files_match_the_invoices_api,
    a_crashed_export_still_exports_each_invoice_once,
    exporters_running_at_once_export_each_invoice_once,
);
