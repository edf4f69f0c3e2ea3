//! The accounting file export. A run takes the directory's lock file (one exporter per directory at
//! a time; the lock dies with its process), rewrites the files of exports into this directory that
//! a crash left unconfirmed,
//! then assigns invoices not exported yet to new exports, each written as
//! `invoices-{time}-{export id}.csv`: into a temporary file, synced, renamed into place, the
//! directory synced, and only then confirmed in the database. `manifest.json` lists every
//! confirmed export. An invoice is assigned to one export only, and an unconfirmed export is
//! written again with the same name and content, so each invoice is in exactly one file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;
use sha2::{Digest, Sha256};

use tokio::sync::watch;

use crate::accounting::csv;
use crate::store::{Export, Store, StoreError};

/// Name of the lock file in the export directory.
const LOCK_FILE: &str = ".export.lock";
/// Name of the manifest in the export directory.
pub const MANIFEST: &str = "manifest.json";

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("export directory {0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
}

/// What a run wrote.
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Exported {
    /// Files written (recovered ones included).
    pub files: usize,
    pub invoices: usize,
    /// Another exporter held the directory's lock: this run wrote nothing.
    pub skipped: bool,
}

/// Exports every invoice not exported yet into `dir`, at most `max_invoices` per file.
pub async fn export(store: &Store, dir: &Path, max_invoices: u32) -> Result<Exported, ExportError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |error| ExportError::Io(dir.to_owned(), error);
    std::fs::create_dir_all(dir).map_err(io)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(FILE_MODE)
        .open(dir.join(LOCK_FILE))
        .map_err(io)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Ok(Exported { skipped: true, ..Exported::default() });
        }
        Err(std::fs::TryLockError::Error(error)) => return Err(io(error)),
    }
    remove_temporary_files(dir)?;
    // The directory by its absolute path: replicas that share it mount it at the same path.
    let canonical = std::fs::canonicalize(dir).map_err(io)?;
    let target = canonical.to_string_lossy();
    let mut exported = Exported::default();
    let mut pending = store.unfinished_exports(&target).await?;
    if !pending.is_empty() {
        tracing::info!(exports = pending.len(), "writing the files of unconfirmed exports again");
    }
    loop {
        let export = match pending.pop() {
            Some(export) => export,
            None => match store.start_export(&target, max_invoices, Utc::now(), file_name).await? {
                Some(export) => export,
                None => break,
            },
        };
        write(store, dir, &export).await?;
        exported.files += 1;
        exported.invoices += usize::try_from(export.invoices).unwrap_or(0);
    }
    write_manifest(store, dir, &target).await?;
    drop(lock);
    Ok(exported)
}

/// The file name of export `id`: sortable by time, unique by id.
fn file_name(id: uuid::Uuid) -> String {
    format!("invoices-{}-{id}.csv", Utc::now().format("%Y%m%dT%H%M%SZ"))
}

/// Writes one export's file in place, then confirms it.
async fn write(store: &Store, dir: &Path, export: &Export) -> Result<(), ExportError> {
    let invoices = store.export_invoices(export).await?;
    let (text, lines) = csv::render(&invoices);
    let sha256 = format!("{:x}", Sha256::digest(text.as_bytes()));
    put_file(dir, &export.file_name, text.into_bytes()).await?;
    crate::crash_point("export-before-confirm");
    store.finish_export(export, lines, &sha256, Utc::now()).await?;
    tracing::info!(file = export.file_name, invoices = export.invoices, lines, "accounting file written");
    Ok(())
}

/// Rewrites the manifest from the confirmed exports into this directory.
async fn write_manifest(store: &Store, dir: &Path, target: &str) -> Result<(), ExportError> {
    let finished = store.finished_exports(target).await?;
    let json = serde_json::to_vec_pretty(&finished).unwrap_or_default();
    put_file(dir, MANIFEST, json).await
}

/// [`replace_file`] on the blocking pool: writing and syncing a large file must not hold up the
/// async workers that serve requests.
async fn put_file(dir: &Path, name: &str, bytes: Vec<u8>) -> Result<(), ExportError> {
    let (dir, name) = (dir.to_owned(), name.to_owned());
    let failed = dir.clone();
    tokio::task::spawn_blocking(move || replace_file(&dir, &name, &bytes))
        .await
        .map_err(|error| ExportError::Io(failed, std::io::Error::other(error)))?
}

/// How this exporter's temporary files start: the only ones it removes.
const TEMPORARY_PREFIX: &str = ".edi-inbox.";
/// Export files and the manifest are readable by the owner's group (the accounting import), not by
/// everybody.
const FILE_MODE: u32 = 0o640;

/// Removes what this exporter's crashed writes left behind (only a lock holder writes here, so none
/// is in use); anybody else's files stay.
fn remove_temporary_files(dir: &Path) -> Result<(), ExportError> {
    let io = |error| ExportError::Io(dir.to_owned(), error);
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let name = entry.map_err(io)?.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(TEMPORARY_PREFIX) && name.ends_with(".tmp") {
            std::fs::remove_file(dir.join(&*name)).map_err(io)?;
        }
    }
    Ok(())
}

/// Puts `bytes` at `dir/name` atomically: a synced temporary file (mode [`FILE_MODE`]) renamed over
/// it, then the directory synced so that the rename survives a power loss.
fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ExportError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |error| ExportError::Io(dir.to_owned(), error);
    let temporary = dir.join(format!("{TEMPORARY_PREFIX}{name}.{}.tmp", uuid::Uuid::now_v7().simple()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(&temporary)
        .map_err(io)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(io)?;
    drop(file);
    crate::crash_point("export-before-rename");
    std::fs::rename(&temporary, dir.join(name)).map_err(io)?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
    Ok(())
}

/// The CSV export `serve` runs every `interval`.
pub struct ScheduledExport {
    pub store: Store,
    pub dir: PathBuf,
    pub interval: Duration,
    pub max_invoices: u32,
}

/// Runs the CSV export every `interval` until `stop`; failures are logged and retried next time.
pub async fn export_periodically(scheduled: ScheduledExport, mut stop: watch::Receiver<bool>) {
    let mut ticks = tokio::time::interval(scheduled.interval);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.changed() => return,
        }
        match export(&scheduled.store, &scheduled.dir, scheduled.max_invoices).await {
            Ok(exported) if exported.files > 0 => tracing::info!(?exported, "accounting export"),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "the accounting export failed; retrying at the next interval")
            }
        }
    }
}
