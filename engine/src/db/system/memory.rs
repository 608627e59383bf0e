//! The in-memory tree of tests: [`MemorySystem`], every file a text in a
//! map, processes answered from a table a test fills, locks a set of
//! paths. Touches no disk and no process environment.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{HeldLock, LimitedRun, Process, ProcessOutput, RunLimits, SourceRead, Stream, System};

/// An in-memory tree for tests: paths map to file contents.
#[derive(Debug, Default, Clone)]
pub struct MemorySystem {
    /// Each file's text and the number of writes made to the system up
    /// to its last one: its modification time, in nanoseconds after the
    /// epoch, unless a test set one (every write moves its file's time,
    /// as on a disk).
    files: Arc<Mutex<MemFiles>>,
    writes: Arc<std::sync::atomic::AtomicU64>,
    /// Files read so far (what a test of reading less counts).
    reads: Arc<std::sync::atomic::AtomicU64>,
    /// Modification times set by a test.
    mtimes: Arc<Mutex<BTreeMap<PathBuf, std::time::SystemTime>>>,
    /// What a process answers, by its command line (`program arg...`),
    /// and the command lines run, in order, each with its directory.
    answers: Arc<Mutex<BTreeMap<String, ProcessOutput>>>,
    /// Command lines that never end: a limited run of one times out.
    hangs: Arc<Mutex<std::collections::BTreeSet<String>>>,
    ran: Arc<Mutex<Vec<(String, PathBuf)>>>,
    locks: Arc<Mutex<std::collections::BTreeSet<PathBuf>>>,
    env: BTreeMap<String, String>,
    now: i64,
}

/// The files of a [`MemorySystem`]: looked up by hash (a generation
/// looks every generated file up; a sorted map compared paths component
/// by component a dozen times per lookup), listed in path order.
#[derive(Debug, Default)]
struct MemFiles {
    texts: std::collections::HashMap<PathBuf, (String, u64)>,
    paths: std::collections::BTreeSet<PathBuf>,
}

impl MemFiles {
    fn get(&self, path: &Path) -> Option<&(String, u64)> {
        self.texts.get(path)
    }

    fn insert(&mut self, path: &Path, text: String, written: u64) {
        if self
            .texts
            .insert(path.to_path_buf(), (text, written))
            .is_none()
        {
            self.paths.insert(path.to_path_buf());
        }
    }

    fn remove(&mut self, path: &Path) {
        if self.texts.remove(path).is_some() {
            self.paths.remove(path);
        }
    }

    /// The files below `dir`, in path order.
    fn under<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = &'a PathBuf> + 'a {
        self.paths
            .range(dir.to_path_buf()..)
            .take_while(move |p| p.starts_with(dir))
            .filter(move |p| p.as_path() != dir)
    }
}

impl MemorySystem {
    pub fn new() -> MemorySystem {
        MemorySystem {
            now: 1_767_225_600, // 2026-01-01T00:00:00Z
            ..MemorySystem::default()
        }
    }

    pub fn with_env(mut self, key: &str, value: &str) -> MemorySystem {
        self.env.insert(key.to_string(), value.to_string());
        self
    }

    pub fn write(&self, path: &Path, text: &str) {
        let n = 1 + self
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut files) = self.files.lock() {
            files.insert(path, text.to_string(), n);
        }
    }

    /// How many file reads were made so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A file's text, empty when absent.
    pub fn read(&self, path: &Path) -> String {
        self.files
            .lock()
            .ok()
            .and_then(|f| f.get(path).map(|(text, _)| text.clone()))
            .unwrap_or_default()
    }

    pub fn remove(&self, path: &Path) {
        if let Ok(mut files) = self.files.lock() {
            files.remove(path);
        }
    }

    /// Set a file's modification time, `secs` after the epoch.
    pub fn set_modified(&self, path: &Path, secs: u64) {
        if let Ok(mut m) = self.mtimes.lock() {
            m.insert(
                path.to_path_buf(),
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
            );
        }
    }

    /// A process stand-in: the command line `program arg...` (joined with
    /// spaces) exits `code` printing `stdout` and `stderr`. A command line
    /// with no answer fails to start.
    pub fn answer(&self, line: &str, code: i32, stdout: &str, stderr: &str) {
        if let Ok(mut a) = self.answers.lock() {
            a.insert(
                line.to_string(),
                ProcessOutput {
                    code: Some(code),
                    stdout: stdout.to_string(),
                    stderr: stderr.to_string(),
                },
            );
        }
    }

    /// A process stand-in that never ends: a limited run of the command
    /// line times out.
    pub fn hang(&self, line: &str) {
        if let Ok(mut h) = self.hangs.lock() {
            h.insert(line.to_string());
        }
    }

    /// The command lines run so far, each with its working directory.
    pub fn ran(&self) -> Vec<(String, PathBuf)> {
        self.ran.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl System for MemorySystem {
    fn read_to_string(&self, path: &Path) -> io::Result<Option<String>> {
        let files = self
            .files
            .lock()
            .map_err(|_| io::Error::other("memory system poisoned"))?;
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(files.get(path).map(|(text, _)| text.clone()))
    }

    fn read_source(&self, path: &Path, max_bytes: u64) -> SourceRead {
        match self.read_to_string(path) {
            Ok(Some(text)) if text.len() as u64 > max_bytes => SourceRead::TooLarge {
                size: text.len() as u64,
            },
            Ok(Some(text)) => SourceRead::Text {
                text: text.into(),
                link: false,
                digest: None,
            },
            Ok(None) => SourceRead::Missing,
            Err(e) => SourceRead::Failed(e),
        }
    }

    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(path.to_path_buf())
    }

    fn list_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let files = self
            .files
            .lock()
            .map_err(|_| io::Error::other("memory system poisoned"))?;
        Ok(files.under(dir).cloned().collect())
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.files
            .lock()
            .map(|f| f.under(path).next().is_some())
            .unwrap_or(false)
    }

    fn env(&self) -> BTreeMap<String, String> {
        self.env.clone()
    }

    fn now_unix(&self) -> i64 {
        self.now
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        Ok(self.read_to_string(path)?.map(String::into_bytes))
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8], _executable: bool) -> io::Result<()> {
        self.write(path, &String::from_utf8_lossy(bytes));
        Ok(())
    }

    fn modified(&self, path: &Path) -> io::Result<Option<std::time::SystemTime>> {
        let written = self
            .files
            .lock()
            .map_err(|_| io::Error::other("memory system poisoned"))?
            .get(path)
            .map(|(_, n)| *n);
        let Some(n) = written else {
            return Ok(None);
        };
        if let Some(set) = self.mtimes.lock().ok().and_then(|m| m.get(path).copied()) {
            return Ok(Some(set));
        }
        Ok(Some(
            std::time::UNIX_EPOCH + std::time::Duration::from_nanos(n),
        ))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.remove(path);
        Ok(())
    }

    fn remove_empty_dirs(&self, _dir: &Path) -> io::Result<()> {
        Ok(()) // directories exist only through their files here
    }

    /// A memory tree has no symlinks: a path that exists is its own.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let exists = self.is_dir(path) || self.read_bytes(path)?.is_some();
        if exists {
            Ok(path.to_path_buf())
        } else {
            Err(io::Error::new(io::ErrorKind::NotFound, "no such path"))
        }
    }

    fn run_streaming(
        &self,
        process: &Process,
        on_line: &mut dyn FnMut(Stream, &str),
    ) -> io::Result<ProcessOutput> {
        let line = std::iter::once(process.program.to_string_lossy().to_string())
            .chain(process.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let answer = self
            .answers
            .lock()
            .map_err(|_| io::Error::other("memory system poisoned"))?
            .get(&line)
            .cloned();
        let Some(out) = answer else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "the in-memory system runs no processes ({})",
                    process.program.display()
                ),
            ));
        };
        if let Ok(mut ran) = self.ran.lock() {
            ran.push((line, process.cwd.clone()));
        }
        out.stdout.lines().for_each(|l| on_line(Stream::Stdout, l));
        out.stderr.lines().for_each(|l| on_line(Stream::Stderr, l));
        Ok(out)
    }

    fn run_limited(&self, process: &Process, limits: RunLimits) -> io::Result<LimitedRun> {
        let line = std::iter::once(process.program.to_string_lossy().to_string())
            .chain(process.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        if self.hangs.lock().is_ok_and(|h| h.contains(&line)) {
            if let Ok(mut ran) = self.ran.lock() {
                ran.push((line, process.cwd.clone()));
            }
            return Ok(LimitedRun::TimedOut);
        }
        let out = self.run(process)?;
        Ok(if out.stdout.len() as u64 > limits.max_stdout {
            LimitedRun::TooMuchOutput
        } else {
            LimitedRun::Finished(out)
        })
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn HeldLock>>> {
        let mut locks = self
            .locks
            .lock()
            .map_err(|_| io::Error::other("memory system poisoned"))?;
        if !locks.insert(path.to_path_buf()) {
            return Ok(None);
        }
        if self.read_to_string(path)?.is_none() {
            self.write(path, "");
        }
        Ok(Some(Box::new(MemoryLock {
            system: self.clone(),
            path: path.to_path_buf(),
        })))
    }
}

/// A lock of the in-memory system, released when dropped.
struct MemoryLock {
    system: MemorySystem,
    path: PathBuf,
}

impl HeldLock for MemoryLock {
    fn set_text(&mut self, text: &str) -> io::Result<()> {
        self.system.write(&self.path, text);
        Ok(())
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        if let Ok(mut locks) = self.system.locks.lock() {
            locks.remove(&self.path);
        }
    }
}
