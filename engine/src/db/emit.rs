//! Writing a generated directory: the tree left behind equals a wipe and a
//! full regeneration, but a file whose bytes did not change is not
//! rewritten (its mtime stays), a stale file is removed, and every write is
//! atomic (a temporary file, then a rename) but not synced on its own: the
//! run syncs the file system once at its end ([`System::sync_tree`]).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::db::system::System;

/// The generated files the public-safe gate passed in this process, each
/// with the bytes it passed (shared with the emission that made them: an
/// unchanged emission hands the same bytes again), under the gate's
/// configuration then. A file passed with these very bytes under the same
/// configuration is not scanned again.
#[derive(Debug, Default)]
pub struct Passed {
    config: String,
    files: std::collections::HashMap<String, Arc<[u8]>>,
}

impl Passed {
    /// Whether `path` passed with exactly these bytes (the same
    /// allocation) under `config`; forgets everything when the
    /// configuration changed.
    pub fn has(&mut self, config: &str, path: &str, bytes: &Arc<[u8]>) -> bool {
        if self.config != config {
            self.config = config.to_string();
            self.files.clear();
        }
        self.files.get(path).is_some_and(|b| Arc::ptr_eq(b, bytes))
    }

    pub fn insert(&mut self, path: String, bytes: Arc<[u8]>) {
        self.files.insert(path, bytes);
    }
}

/// What a sync did, by path relative to the directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    pub written: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: usize,
}

/// Make `dir` hold exactly `files`, except paths `frozen` says to leave as
/// they are (a runtime scope keeps other runtimes' builder directories).
pub fn sync_dir(
    system: &dyn System,
    dir: &Path,
    files: &BTreeMap<String, Arc<[u8]>>,
    executables: &[String],
    frozen: &dyn Fn(&str) -> bool,
) -> io::Result<SyncReport> {
    let mut report = SyncReport::default();
    for existing in system.list_files(dir)? {
        let rel = existing
            .strip_prefix(dir)
            .unwrap_or(&existing)
            .to_string_lossy()
            .replace('\\', "/");
        if !files.contains_key(&rel) && !frozen(&rel) {
            system.remove_file(&existing)?;
            report.removed.push(rel);
        }
    }
    for (rel, bytes) in files {
        if frozen(rel) {
            continue;
        }
        if write_if_changed(system, &dir.join(rel), bytes, executables.contains(rel))? {
            report.written.push(rel.clone());
        } else {
            report.unchanged += 1;
        }
    }
    system.remove_empty_dirs(dir)?;
    Ok(report)
}

/// Write one file if its bytes changed; whether it was written.
pub fn write_if_changed(
    system: &dyn System,
    path: &Path,
    bytes: &[u8],
    executable: bool,
) -> io::Result<bool> {
    if system.read_bytes(path)?.as_deref() == Some(bytes) {
        return Ok(false);
    }
    system.write_replace(path, bytes, executable)?;
    Ok(true)
}
