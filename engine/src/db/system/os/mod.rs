//! The real machine's side of the door: [`OsSystem`], its answers read
//! from the file system, the process environment and the clock. Reading a
//! source under the limits, replacing a file, running a process and
//! taking a lock each have their own file below.
//!
//! The only code of the engine allowed the `std::fs` and `std::env` calls
//! clippy's `disallowed-methods` refuses; each function that makes one
//! says so with its own `allow`.

mod lock;
mod mapped;
mod process;
mod source;
mod write;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use super::{HeldLock, LimitedRun, Process, ProcessOutput, RunLimits, SourceRead, Stream, System};
use write::{Keep, os_replace};

/// The real machine.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsSystem;

/// A path's bytes with the separator lowest: compared, the order of
/// `Path`'s components for a path without `.`, `..` or doubled separators.
fn path_order(p: &Path) -> impl Iterator<Item = u8> + '_ {
    let bytes = p.as_os_str().as_encoded_bytes();
    bytes.iter().map(|&c| if c == b'/' { 0 } else { c })
}

/// Every file below `dir` (a symlink is a file here, not followed), the
/// subdirectories listed on every core: a tree of image chains is
/// hundreds of directories, and listing them one after the other kept
/// the other cores idle at the start of every load.
#[allow(clippy::disallowed_methods)] // part of OsSystem
fn files_below(dir: &Path) -> io::Result<Vec<PathBuf>> {
    use rayon::prelude::*;
    // An error names the directory, not only the root.
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", dir.display()));
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(named)? {
        let entry = entry.map_err(named)?;
        if entry.file_type().map_err(named)?.is_dir() {
            dirs.push(entry.path());
        } else {
            files.push(entry.path());
        }
    }
    let below: Vec<io::Result<Vec<PathBuf>>> = dirs.par_iter().map(|d| files_below(d)).collect();
    for listed in below {
        files.extend(listed?);
    }
    Ok(files)
}

impl System for OsSystem {
    #[allow(clippy::disallowed_methods)]
    fn read_to_string(&self, path: &Path) -> io::Result<Option<String>> {
        match std::fs::read_to_string(path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn read_source(&self, path: &Path, max_bytes: u64) -> SourceRead {
        source::read_source(path, max_bytes)
    }

    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn list_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        if !dir.is_dir() {
            return Ok(Vec::new());
        }
        let mut out = files_below(dir)?;
        // In `Path` order (component by component), compared as bytes
        // with the separator lowest: the same order for the normal paths
        // a listing makes, at a fraction of the cost (the sort was a
        // sixth of what a cold plan's main thread does alone).
        out.sort_by_cached_key(|p| path_order(p).collect::<Vec<u8>>());
        Ok(out)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    #[allow(clippy::disallowed_methods)]
    fn env(&self) -> BTreeMap<String, String> {
        std::env::vars().collect()
    }

    /// `CSIS_NOW` (seconds since the epoch) pins the run's start, for
    /// reproducible runs and tests.
    #[allow(clippy::disallowed_methods)]
    fn now_unix(&self) -> i64 {
        if let Some(t) = std::env::var("CSIS_NOW").ok().and_then(|v| v.parse().ok()) {
            return t;
        }
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn map_bytes(&self, path: &Path) -> io::Result<Option<bytes::Bytes>> {
        mapped::map_file(path)
    }

    /// Read in pieces: a root tarball is hundreds of megabytes.
    fn digest(&self, path: &Path) -> io::Result<Option<String>> {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut hasher = blake3::Hasher::new();
        hasher.update_reader(file)?;
        Ok(Some(hasher.finalize().to_hex().to_string()))
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        os_replace(path, &mut |w| w.write_all(bytes), executable, Keep::Durable)
    }

    fn write_replace(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        os_replace(
            path,
            &mut |w| w.write_all(bytes),
            executable,
            Keep::Replaced,
        )
    }

    fn write_replace_streamed(
        &self,
        path: &Path,
        fill: &mut dyn FnMut(&mut dyn io::Write) -> io::Result<()>,
    ) -> io::Result<()> {
        os_replace(path, fill, false, Keep::Disposable)
    }

    fn sync_tree(&self, dir: &Path) -> io::Result<()> {
        write::sync_tree(dir)
    }

    fn modified(&self, path: &Path) -> io::Result<Option<std::time::SystemTime>> {
        match std::fs::metadata(path) {
            Ok(m) => m.modified().map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
            }
            _ => Ok(()),
        }
    }

    #[allow(clippy::disallowed_methods)]
    fn remove_empty_dirs(&self, dir: &Path) -> io::Result<()> {
        fn prune(d: &Path) -> io::Result<bool> {
            let mut empty = true;
            for entry in std::fs::read_dir(d)? {
                let entry = entry?;
                if entry.file_type()?.is_dir() {
                    if !prune(&entry.path())? {
                        empty = false;
                    }
                } else {
                    empty = false;
                }
            }
            if empty {
                std::fs::remove_dir(d)?;
            }
            Ok(empty)
        }
        if dir.is_dir() {
            prune(dir)?;
        }
        Ok(())
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn is_symlink(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }

    fn run_streaming(
        &self,
        process: &Process,
        on_line: &mut dyn FnMut(Stream, &str),
    ) -> io::Result<ProcessOutput> {
        process::run_streaming(process, on_line)
    }

    fn run_limited(&self, process: &Process, limits: RunLimits) -> io::Result<LimitedRun> {
        process::run_limited(process, limits)
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn HeldLock>>> {
        lock::try_lock(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_sorts_as_paths_do() {
        let names = [
            "/r/images/a-b.yml",
            "/r/images/a/b.yml",
            "/r/images/a.yml",
            "/r/images/a/b/c.yml",
            "/r/images/ab.yml",
            "/r/images/a",
            "/r/images/A.yml",
            "/r/images/é.yml",
            "/r/images/a/b-c.yml",
            "/r/images/a/b c.yml",
        ];
        let mut by_path: Vec<PathBuf> = names.iter().map(PathBuf::from).collect();
        let mut by_bytes = by_path.clone();
        by_path.sort();
        by_bytes.sort_by_cached_key(|p| path_order(p).collect::<Vec<u8>>());
        assert_eq!(by_path, by_bytes);
    }
}
