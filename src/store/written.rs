//! The PostgreSQL cluster and timeline this service last wrote to, remembered across restarts in
//! a file when one is given (`--timeline-file`). A host of that cluster on an older timeline is an
//! old primary (a zombie): never written to, also after a restart that finds only it.

use std::path::PathBuf;
use std::sync::Mutex;

use super::StoreError;

/// A cluster (its system identifier, when the role may read it) and a timeline of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Written {
    pub system: Option<i64>,
    pub timeline: u32,
}

impl Written {
    /// Whether a host of `system` on `timeline` is older than this: the same cluster (or one that
    /// cannot be told apart from it) on an older timeline.
    pub fn outdates(&self, system: Option<i64>, timeline: Option<u32>) -> bool {
        same_cluster(self.system, system) && timeline.is_some_and(|timeline| timeline < self.timeline)
    }

    /// The file's one line: `SYSTEM TIMELINE`, `unknown` for a system that could not be read.
    fn line(&self) -> String {
        let system = self.system.map_or("unknown".to_owned(), |system| system.to_string());
        format!("{system} {}\n", self.timeline)
    }

    fn read(text: &str) -> Option<Written> {
        let (system, timeline) = text.trim().split_once(' ')?;
        let system = match system {
            "unknown" => None,
            system => Some(system.parse().ok()?),
        };
        Some(Written { system, timeline: timeline.parse().ok()? })
    }
}

/// Two system identifiers name one cluster unless both are known and differ.
fn same_cluster(a: Option<i64>, b: Option<i64>) -> bool {
    !matches!((a, b), (Some(a), Some(b)) if a != b)
}

/// What was last written to, in memory and, when a file is given, on disk.
pub(super) struct WrittenMemory {
    file: Option<PathBuf>,
    written: Mutex<Option<Written>>,
}

impl WrittenMemory {
    /// Reads `file` when it exists; a file that cannot be read or understood stops the start (it
    /// may be all that tells an old primary from the new one).
    pub fn load(file: Option<PathBuf>) -> Result<WrittenMemory, StoreError> {
        let written = match &file {
            Some(path) => match std::fs::read_to_string(path) {
                Ok(text) => Some(Written::read(&text).ok_or_else(|| {
                    StoreError::TimelineFile(format!(
                        "{} does not hold `SYSTEM TIMELINE`: {:?}",
                        path.display(),
                        text.chars().take(80).collect::<String>()
                    ))
                })?),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
                Err(error) => return Err(StoreError::TimelineFile(format!("{}: {error}", path.display()))),
            },
            None => None,
        };
        Ok(WrittenMemory { file, written: Mutex::new(written) })
    }

    pub fn get(&self) -> Option<Written> {
        *self.written.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes a write to `now`: kept when it is a newer timeline or another cluster, and written to
    /// the file (a temporary file renamed over it). A file that cannot be written is logged as an
    /// error; the memory of this process still holds it.
    pub fn remember(&self, now: Written) {
        {
            let mut written = self.written.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match *written {
                Some(before)
                    if same_cluster(before.system, now.system) && before.timeline >= now.timeline =>
                {
                    return;
                }
                _ => *written = Some(now),
            }
        }
        let Some(path) = &self.file else { return };
        let temporary = path.with_extension("tmp");
        let saved = std::fs::write(&temporary, now.line()).and_then(|()| std::fs::rename(&temporary, path));
        if let Err(error) = saved {
            tracing::error!(
                file = %path.display(),
                %error,
                "the timeline written to could not be saved: after a restart an old primary could be written to"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_timeline_of_one_cluster_outdates_an_older_one_only() {
        let written = Written { system: Some(7), timeline: 3 };
        assert!(written.outdates(Some(7), Some(2)));
        assert!(written.outdates(None, Some(2)));
        assert!(!written.outdates(Some(7), Some(3)));
        assert!(!written.outdates(Some(8), Some(1)));
        assert!(!written.outdates(Some(7), None));
    }

    #[test]
    fn the_file_survives_the_process_and_keeps_the_newest() {
        let directory = std::env::temp_dir().join(format!("edi-inbox-written-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("timeline");
        let memory = WrittenMemory::load(Some(path.clone())).unwrap();
        assert_eq!(memory.get(), None);
        memory.remember(Written { system: Some(7), timeline: 2 });
        memory.remember(Written { system: Some(7), timeline: 1 });
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "7 2\n");
        let again = WrittenMemory::load(Some(path.clone())).unwrap();
        assert_eq!(again.get(), Some(Written { system: Some(7), timeline: 2 }));
        // Another cluster (the service moved to a new one) replaces it.
        again.remember(Written { system: Some(8), timeline: 1 });
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "8 1\n");
        std::fs::write(&path, "garbage").unwrap();
        assert!(WrittenMemory::load(Some(path)).is_err());
        std::fs::remove_dir_all(directory).unwrap();
    }
}
