//! The door itself ([`System`]) and the types it speaks in, defined apart
//! from both sides that implement it (the real machine in `os/`, the
//! in-memory tree in `memory.rs`): `mod.rs` re-exports all three, and a
//! side that names the door through it reaches this file, not its
//! sibling.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub trait System: Send + Sync {
    /// The text of a file; `Ok(None)` when it does not exist.
    fn read_to_string(&self, path: &Path) -> io::Result<Option<String>>;
    /// A file of the configuration, read under csis's limits on input: only
    /// a regular file (after following symlinks), at most `max_bytes`
    /// bytes, UTF-8. A FIFO or a device is never read: what a symlink
    /// points to is looked at before it is opened, and anything else is
    /// opened without waiting and looked at before it is read (a device
    /// node inside the tree itself, which git cannot hold, is opened).
    fn read_source(&self, path: &Path, max_bytes: u64) -> SourceRead;
    /// The path with every symlink followed (`realpath`).
    fn resolve(&self, path: &Path) -> io::Result<PathBuf>;
    /// Every file below `dir`, recursively, sorted; empty when `dir` is
    /// missing.
    fn list_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;
    /// A snapshot of the process environment.
    fn env(&self) -> BTreeMap<String, String>;
    /// Seconds since the Unix epoch, UTC.
    fn now_unix(&self) -> i64;
    /// A file's bytes; `Ok(None)` when it does not exist.
    fn read_bytes(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;
    /// A file's bytes as [`read_bytes`](System::read_bytes) gives them,
    /// shared rather than owned. For a file nothing changes in place once
    /// written, only replaces by a rename (the persisted cache's shards
    /// and plan record), which the real machine maps instead of copying.
    /// By default read.
    fn map_bytes(&self, path: &Path) -> io::Result<Option<bytes::Bytes>> {
        Ok(self.read_bytes(path)?.map(bytes::Bytes::from))
    }
    /// The blake3 digest (hex) of a file's bytes; `Ok(None)` when it does
    /// not exist. For files fingerprinted by content, not read as text (a
    /// vendor image's root tarball).
    fn digest(&self, path: &Path) -> io::Result<Option<String>> {
        Ok(self
            .read_bytes(path)?
            .map(|b| blake3::hash(&b).to_hex().to_string()))
    }
    /// Write a file whole or not at all, durably: a temporary file in the
    /// same directory, fsync'd, renamed over the target, then the
    /// directory fsync'd; once this returns, the new file survives a power
    /// loss. Parent directories are created. Records (meta-state/) use it.
    fn write_atomic(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()>;
    /// Write a file whole or not at all, without waiting for the disk: a
    /// temporary file, then a rename. A kill leaves the old file or the new
    /// one, whole; a power loss before [`System::sync_tree`] may leave
    /// either, or an empty file. For derived, regenerable files
    /// (generated/), synced once at the end of a run. By default the
    /// durable write.
    fn write_replace(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        self.write_atomic(path, bytes, executable)
    }
    /// A file that may be lost (the persisted cache), written whole as its
    /// bytes are made, never held whole in memory: a temporary file, the
    /// old file removed, the temporary renamed. A reader finds the old
    /// file, no file, or the new one whole. By default the bytes are
    /// gathered, then written as by [`System::write_replace`].
    fn write_replace_streamed(
        &self,
        path: &Path,
        fill: &mut dyn FnMut(&mut dyn io::Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut bytes = Vec::new();
        fill(&mut bytes)?;
        self.write_replace(path, &bytes, false)
    }
    /// Make every write so far to the file system holding `dir` durable
    /// (one `syncfs`, where the OS has it): the end of a run's
    /// [`System::write_replace`] writes. Nothing when `dir` is missing.
    fn sync_tree(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Remove every empty directory below `dir` (and `dir` itself when it
    /// ends up empty).
    fn remove_empty_dirs(&self, dir: &Path) -> io::Result<()>;
    /// The path with every symlink resolved; an error when it does not
    /// exist.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// Whether `path` is itself a symbolic link (not followed).
    fn is_symlink(&self, _path: &Path) -> bool {
        false
    }
    /// Run a process to completion, handing `on_line` each line of its
    /// stdout and stderr (without the line end) as it arrives, in the order
    /// it arrives; the whole output is returned too.
    fn run_streaming(
        &self,
        process: &Process,
        on_line: &mut dyn FnMut(Stream, &str),
    ) -> io::Result<ProcessOutput>;
    /// Run a process to completion, its output collected.
    fn run(&self, process: &Process) -> io::Result<ProcessOutput> {
        self.run_streaming(process, &mut |_, _| {})
    }
    /// Run a process whose whole output csis reads (`tofu show -json`),
    /// under `limits`: one that outlives the timeout, or prints more than
    /// the bound, is killed (with every process it started) and its
    /// output dropped, so that a hung or runaway tool can neither hang
    /// csis nor fill its memory. By default (the in-memory system of
    /// tests) the process is run whole and its output held to the bound
    /// afterwards.
    fn run_limited(&self, process: &Process, limits: RunLimits) -> io::Result<LimitedRun> {
        let out = self.run(process)?;
        Ok(if out.stdout.len() as u64 > limits.max_stdout {
            LimitedRun::TooMuchOutput
        } else {
            LimitedRun::Finished(out)
        })
    }
    /// When a file was last modified; `Ok(None)` when it does not exist.
    fn modified(&self, path: &Path) -> io::Result<Option<std::time::SystemTime>>;
    /// Take an exclusive advisory lock (flock) on `path` without waiting,
    /// creating the file (and its directory) when absent and leaving its
    /// text as it is: the held lock, or `None` while another holder has
    /// it. Dropping the lock releases it; so does the holder's death.
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn HeldLock>>>;
}

/// An advisory lock this process holds, released when dropped.
pub trait HeldLock: Send {
    /// Replace the locked file's text in place (never by a rename: the
    /// lock belongs to the file as it was opened).
    fn set_text(&mut self, text: &str) -> io::Result<()>;
}

/// What names a temporary of [`System::write_atomic`]: one still standing
/// is a write that never reached its rename (a kill, a full disk).
pub const TEMP_MARK: &str = ".csis-tmp-";

pub fn is_unfinished_write(path: &Path) -> bool {
    path.file_name().is_some_and(|n| {
        n.to_string_lossy().starts_with('.') && n.to_string_lossy().contains(TEMP_MARK)
    })
}

/// What [`System::read_source`] found at a path.
#[derive(Debug)]
pub enum SourceRead {
    /// The text (shared, as the load keeps it), whether the path was a
    /// symlink, and the text's blake3 digest when the reader took it (a
    /// recording does, to note the read; a load hands it on, and the text
    /// is not hashed again).
    Text {
        text: std::sync::Arc<str>,
        link: bool,
        digest: Option<[u8; 32]>,
    },
    /// Nothing there (not even a symlink).
    Missing,
    /// A symlink to nothing.
    Dangling { target: PathBuf },
    /// A FIFO, a device, a directory or a socket: refused unread.
    NotRegular { kind: &'static str },
    /// More bytes than the limit (`size` as the file system reports it).
    TooLarge { size: u64 },
    /// Not UTF-8: the first bad byte's 1-based line and column.
    NotUtf8 { line: usize, col: usize },
    /// What the file system said (permission denied, a symlink loop, a
    /// name too long...).
    Failed(io::Error),
}

/// Which of a process's outputs a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A process to run: program, arguments, working directory, extra
/// environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
}

/// The bounds of [`System::run_limited`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimits {
    /// How long the process may run.
    pub timeout: std::time::Duration,
    /// The most bytes of stdout read.
    pub max_stdout: u64,
}

/// How a run under [`RunLimits`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitedRun {
    /// It ended by itself, within both bounds.
    Finished(ProcessOutput),
    /// It was still running at the timeout, and was killed.
    TimedOut,
    /// It printed more than `max_stdout` bytes, and was killed.
    TooMuchOutput,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessOutput {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}
