//! The AS2 identity a server has when none is configured: generated once into a PEM file (mode
//! 0600) beside the SQLite database, or where `--as2-generated-key` says, and used as if it were
//! given with `--as2-keys`, so that MDNs are signed and partners can encrypt from the first start.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{DatabaseConfig, ServerConfig};
use crate::as2::Identity;

/// The generated key's file name beside a SQLite database.
const FILE_NAME: &str = "as2-key.pem";

impl ServerConfig {
    /// When `--as2-keys` names no key: the generated identity's file (created when missing) becomes
    /// this server's one key. With PostgreSQL and no `--as2-generated-key`, nothing (every replica
    /// needs the same key): a warning says what is missing.
    pub fn adopt_generated_as2_key(&mut self, database: &DatabaseConfig) -> Result<(), String> {
        if self.as2_keys.iter().any(|path| !path.as_os_str().is_empty()) {
            return Ok(());
        }
        let beside_database = || {
            crate::store::sqlite_file(&database.database_url).map(|file| match file.parent() {
                Some(directory) if !directory.as_os_str().is_empty() => directory.join(FILE_NAME),
                _ => PathBuf::from(FILE_NAME),
            })
        };
        let Some(path) = self.as2_generated_key.clone().or_else(beside_database) else {
            tracing::warn!(
                "no AS2 key: encrypted AS2 messages are refused and MDNs go unsigned; set --as2-keys, \
                 or --as2-generated-key to a file every replica shares"
            );
            return Ok(());
        };
        if !path.exists() {
            generate(&path, self.as2_receiver_ids.first().map_or("edi-inbox", |id| id.trim()))?;
        }
        self.as2_keys = vec![path];
        Ok(())
    }
}

/// Writes a new identity named `name` to `path`, readable by its owner only; a file another
/// process created meanwhile is kept (the new one is written aside, then linked without clobbering).
fn generate(path: &Path, name: &str) -> Result<(), String> {
    let failed = |error: &dyn std::fmt::Display| format!("AS2 key {}: {error}", path.display());
    let identity = Identity::generate(name).map_err(|e| failed(&e))?;
    let pem = identity.to_pem().map_err(|e| failed(&e))?;
    let aside = path.with_extension(format!("pem.{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&aside)
        .and_then(|mut file| file.write_all(&pem).and_then(|()| file.sync_all()));
    let linked = written.and_then(|()| std::fs::hard_link(&aside, path));
    let _ = std::fs::remove_file(&aside);
    match linked {
        Ok(()) => {
            tracing::info!(
                file = %path.display(),
                fingerprint = identity.fingerprint(),
                "AS2 key generated (RSA 3072, self-signed): partners download its certificate from \
                 /v1/as2/certificate; configure --as2-keys to replace it"
            );
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(failed(&error)),
    }
}
