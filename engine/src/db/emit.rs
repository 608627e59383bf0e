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

/// What this process last wrote, or found already written, at each
/// generated path: the bytes (the emission's own allocation, which an
/// unchanged emission hands again) and the file's modification time then.
/// A file whose emission is that very allocation and whose time has not
/// moved holds those bytes: it is not read again to be compared (a warm
/// run would otherwise read every generated file). A file edited by hand
/// since has moved its time and is compared and rewritten as before.
/// Within one pass ([`Seen::new_pass`]: one run's generation) a file is
/// looked at once: `run --explain` asks before the write step asks again.
#[derive(Debug, Default)]
pub struct Seen {
    /// By the path's bytes, hashed with foldhash: a warm run asks for
    /// every generated file (18,000 in a large tree), and hashing a
    /// `Path` component by component with SipHash was a tenth of it.
    files:
        std::sync::Mutex<std::collections::HashMap<Box<[u8]>, Stamp, foldhash::fast::RandomState>>,
    pass: std::sync::atomic::AtomicU64,
}

/// The key [`Seen`] holds a path under.
fn seen_key(path: &Path) -> &[u8] {
    path.as_os_str().as_encoded_bytes()
}

#[derive(Debug)]
struct Stamp {
    bytes: Arc<[u8]>,
    modified: std::time::SystemTime,
    /// The pass in which the file was last found to hold `bytes`.
    pass: u64,
}

impl Seen {
    /// A new pass: what earlier passes found is looked at again.
    pub fn new_pass(&self) {
        self.pass.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn current(&self) -> u64 {
        self.pass.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether `path` holds `bytes` as far as this process knows, without
    /// reading it.
    pub fn holds(&self, system: &dyn System, path: &Path, bytes: &Arc<[u8]>) -> bool {
        let pass = self.current();
        let key = seen_key(path);
        let known = {
            let files = self.files.lock().unwrap_or_else(|e| e.into_inner());
            match files.get(key).filter(|s| Arc::ptr_eq(&s.bytes, bytes)) {
                Some(s) if s.pass == pass => return true,
                Some(s) => s.modified,
                None => return false,
            }
        };
        if system.modified(path).ok().flatten() != Some(known) {
            return false;
        }
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = files.get_mut(key) {
            s.pass = pass;
        }
        true
    }

    fn record(&self, system: &dyn System, path: &Path, bytes: &Arc<[u8]>) {
        let pass = self.current();
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        match system.modified(path) {
            Ok(Some(modified)) => {
                let bytes = bytes.clone();
                let stamp = Stamp {
                    bytes,
                    modified,
                    pass,
                };
                files.insert(seen_key(path).into(), stamp);
            }
            _ => {
                files.remove(seen_key(path));
            }
        }
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
/// `seen` is what this process knows it left there.
pub fn sync_dir(
    system: &dyn System,
    dir: &Path,
    files: &BTreeMap<String, Arc<[u8]>>,
    executables: &[String],
    frozen: &dyn Fn(&str) -> bool,
    seen: &Seen,
) -> io::Result<SyncReport> {
    let mut report = SyncReport::default();
    for existing in system.list_files(dir)? {
        let rel = existing.strip_prefix(dir).unwrap_or(&existing);
        // Borrowed unless it must change: every generated file is looked
        // at on every run.
        let mut rel = rel.to_string_lossy();
        if rel.contains('\\') {
            rel = rel.replace('\\', "/").into();
        }
        if !files.contains_key(rel.as_ref()) && !frozen(&rel) {
            system.remove_file(&existing)?;
            report.removed.push(rel.into_owned());
        }
    }
    for (rel, bytes) in files {
        if frozen(rel) {
            continue;
        }
        let path = dir.join(rel);
        if seen.holds(system, &path, bytes) {
            report.unchanged += 1;
            continue;
        }
        if write_if_changed(system, &path, bytes, executables.contains(rel))? {
            report.written.push(rel.clone());
        } else {
            report.unchanged += 1;
        }
        seen.record(system, &path, bytes);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::MemorySystem;

    fn files(texts: &[(&str, &str)]) -> BTreeMap<String, Arc<[u8]>> {
        texts
            .iter()
            .map(|(p, t)| (p.to_string(), Arc::from(t.as_bytes())))
            .collect()
    }

    #[test]
    fn a_file_this_process_left_is_not_read_again_until_its_time_moves() {
        let sys = MemorySystem::new();
        let dir = Path::new("/t/generated/lc");
        sys.write(&dir.join("stale.txt"), "old");
        let seen = Seen::default();
        let never = |_: &str| false;
        let want = files(&[("a.txt", "A"), ("b.txt", "B")]);

        let first = sync_dir(&sys, dir, &want, &[], &never, &seen).unwrap();
        assert_eq!(first.written, ["a.txt", "b.txt"]);
        assert_eq!(first.removed, ["stale.txt"]);

        // The same emission again: nothing read, nothing written.
        seen.new_pass();
        let reads = sys.reads();
        let again = sync_dir(&sys, dir, &want, &[], &never, &seen).unwrap();
        assert_eq!((again.written.len(), again.unchanged), (0, 2));
        assert_eq!(sys.reads(), reads);

        // Edited by hand: its time moved, so it is read, and restored.
        sys.write(&dir.join("b.txt"), "edited");
        seen.new_pass();
        let restored = sync_dir(&sys, dir, &want, &[], &never, &seen).unwrap();
        assert_eq!(restored.written, ["b.txt"]);
        assert_eq!(sys.read(&dir.join("b.txt")), "B");
        assert_eq!(sys.reads(), reads + 1);

        // The same bytes in another allocation are compared, not trusted,
        // and not rewritten.
        seen.new_pass();
        let copy = files(&[("a.txt", "A"), ("b.txt", "B")]);
        let compared = sync_dir(&sys, dir, &copy, &[], &never, &seen).unwrap();
        assert_eq!((compared.written.len(), compared.unchanged), (0, 2));
        assert_eq!(sys.reads(), reads + 3);
    }
}
