//! The one door to the file system and the process environment.
//!
//! The engine never calls `std::fs` or `std::env` itself (clippy's
//! `disallowed-methods` keeps it so); it asks a [`System`]. Tests hand it a
//! [`MemorySystem`] and run the whole engine on an in-memory tree.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
    /// The text, and whether the path was a symlink.
    Text { text: String, link: bool },
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

/// The kind of a file that is not a regular file, for messages.
fn kind_of(ty: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ty.is_fifo() {
            return "a FIFO";
        }
        if ty.is_char_device() {
            return "a character device";
        }
        if ty.is_block_device() {
            return "a block device";
        }
        if ty.is_socket() {
            return "a socket";
        }
    }
    if ty.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// A source that is not a symlink, in four system calls (open, fstat,
/// read, close) instead of six: a large tree is thousands of files, and
/// the calls were a twentieth of a cold plan. The open refuses a symlink
/// (`O_NOFOLLOW`) and does not wait on a FIFO (`O_NONBLOCK`). Nothing
/// when the open fails for any reason, a symlink among them: the caller
/// then looks before it opens.
#[cfg(unix)]
fn read_plain_file(path: &Path, max_bytes: u64) -> Option<SourceRead> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    Some(read_opened(file, max_bytes, false))
}

/// An opened source, its type checked on what was opened (a FIFO or a
/// device is refused unread), read whole when it holds at most
/// `max_bytes`: the size it had when opened, with no probe for more (a
/// file written while it is read is read as it was, never past the
/// limit). A file that says it is empty is read to its end, at most one
/// byte past the limit, as a few filesystems report no size for what
/// they hold.
fn read_opened(file: std::fs::File, max_bytes: u64, link: bool) -> SourceRead {
    use std::io::Read;
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return SourceRead::Failed(e),
    };
    if !meta.is_file() {
        return SourceRead::NotRegular {
            kind: kind_of(meta.file_type()),
        };
    }
    if meta.len() > max_bytes {
        return SourceRead::TooLarge { size: meta.len() };
    }
    let limit = match meta.len() {
        0 => max_bytes.saturating_add(1),
        len => len,
    };
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    if let Err(e) = file.take(limit).read_to_end(&mut bytes) {
        return SourceRead::Failed(e);
    }
    if bytes.len() as u64 > max_bytes {
        return SourceRead::TooLarge {
            size: bytes.len() as u64,
        };
    }
    utf8(bytes, link)
}

/// Bytes as UTF-8 text, or where the first byte that is not.
fn utf8(bytes: Vec<u8>, link: bool) -> SourceRead {
    match String::from_utf8(bytes) {
        Ok(text) => SourceRead::Text { text, link },
        Err(e) => {
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = good.iter().filter(|b| **b == b'\n').count() + 1;
            let start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let col = String::from_utf8_lossy(&good[start..]).chars().count() + 1;
            SourceRead::NotUtf8 { line, col }
        }
    }
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessOutput {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

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

/// [`System::write_replace`] writes of this process not yet synced.
static UNSYNCED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A temporary file beside `path`, then a rename over it; `durable`: the
/// temporary fsync'd before the rename and the directory after it.
#[allow(clippy::disallowed_methods)]
fn os_replace(path: &Path, bytes: &[u8], executable: bool, durable: bool) -> io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no parent", path.display())))?;
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    // Unique per process and per write, so two writers (processes, or
    // threads of one) never share a temporary.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}{TEMP_MARK}{}-{n}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        #[cfg(unix)]
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let result = result.and_then(|()| {
        // The rename itself reaches the disk with the directory.
        #[cfg(unix)]
        if durable {
            std::fs::File::open(dir)?.sync_all()?;
        }
        if !durable {
            UNSYNCED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    });
    result.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[allow(clippy::disallowed_methods)]
impl System for OsSystem {
    fn read_to_string(&self, path: &Path) -> io::Result<Option<String>> {
        match std::fs::read_to_string(path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn read_source(&self, path: &Path, max_bytes: u64) -> SourceRead {
        #[cfg(unix)]
        if let Some(read) = read_plain_file(path, max_bytes) {
            return read;
        }
        let own = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return SourceRead::Missing,
            Err(e) => return SourceRead::Failed(e),
        };
        // Followed (a link only: anything else is what it says), and looked
        // at before anything is opened: opening a FIFO for reading blocks
        // until a writer comes.
        let link = own.file_type().is_symlink();
        let meta = if !link {
            own
        } else {
            match std::fs::metadata(path) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return SourceRead::Dangling {
                        target: std::fs::read_link(path).unwrap_or_default(),
                    };
                }
                Err(e) => return SourceRead::Failed(e),
            }
        };
        if !meta.is_file() {
            return SourceRead::NotRegular {
                kind: kind_of(meta.file_type()),
            };
        }
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        // Should the file have become a FIFO since, the open must not wait
        // for a writer; the type is checked again on what was opened.
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NONBLOCK);
        }
        match options.open(path) {
            Ok(file) => read_opened(file, max_bytes, link),
            Err(e) => SourceRead::Failed(e),
        }
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

    fn env(&self) -> BTreeMap<String, String> {
        std::env::vars().collect()
    }

    /// `CSIS_NOW` (seconds since the epoch) pins the run's start, for
    /// reproducible runs and tests.
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

    fn write_atomic(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        os_replace(path, bytes, executable, true)
    }

    fn write_replace(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        os_replace(path, bytes, executable, false)
    }

    fn sync_tree(&self, dir: &Path) -> io::Result<()> {
        // Nothing written since the last sync: nothing to wait for.
        if UNSYNCED.swap(0, std::sync::atomic::Ordering::Relaxed) == 0 || !dir.is_dir() {
            return Ok(());
        }
        let d = std::fs::File::open(dir)?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: syncfs only reads the descriptor, which `d` keeps
            // open for the call.
            if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display())));
            }
        }
        #[cfg(not(target_os = "linux"))]
        d.sync_all()?;
        Ok(())
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

    /// Spawned with both outputs piped; a thread per output reads lines and
    /// sends them through one channel, so `on_line` hears them here, on the
    /// caller's thread, as they come.
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
        use std::io::BufRead;
        use std::process::Stdio;
        let mut child = std::process::Command::new(&process.program)
            .args(&process.args)
            .current_dir(&process.cwd)
            .envs(process.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let (tx, rx) = std::sync::mpsc::channel::<(Stream, Vec<u8>)>();
        fn reader(
            pipe: Option<impl io::Read + Send + 'static>,
            stream: Stream,
            tx: std::sync::mpsc::Sender<(Stream, Vec<u8>)>,
        ) -> Option<std::thread::JoinHandle<io::Result<()>>> {
            let pipe = pipe?;
            Some(std::thread::spawn(move || {
                let mut pipe = io::BufReader::new(pipe);
                loop {
                    let mut line = Vec::new();
                    if pipe.read_until(b'\n', &mut line)? == 0 {
                        return Ok(());
                    }
                    if tx.send((stream, line)).is_err() {
                        return Ok(());
                    }
                }
            }))
        }
        let readers = [
            reader(child.stdout.take(), Stream::Stdout, tx.clone()),
            reader(child.stderr.take(), Stream::Stderr, tx),
        ];
        let mut out = ProcessOutput {
            code: None,
            stdout: String::new(),
            stderr: String::new(),
        };
        // Ends when both readers have dropped their senders.
        for (stream, bytes) in rx {
            let text = String::from_utf8_lossy(&bytes);
            let line = text.strip_suffix('\n').unwrap_or(&text);
            on_line(stream, line.strip_suffix('\r').unwrap_or(line));
            match stream {
                Stream::Stdout => out.stdout.push_str(&text),
                Stream::Stderr => out.stderr.push_str(&text),
            }
        }
        out.code = child.wait()?.code();
        for handle in readers.into_iter().flatten() {
            handle
                .join()
                .map_err(|_| io::Error::other("an output reader panicked"))??;
        }
        Ok(out)
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn HeldLock>>> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => Ok(Some(Box::new(OsLock { file }))),
            Err(fs4::TryLockError::WouldBlock) => Ok(None),
            Err(fs4::TryLockError::Error(e)) => {
                Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
            }
        }
    }
}

/// A flock held through an open file; closing the file releases it.
struct OsLock {
    file: std::fs::File,
}

impl HeldLock for OsLock {
    fn set_text(&mut self, text: &str) -> io::Result<()> {
        use std::io::{Seek, Write};
        self.file.set_len(0)?;
        self.file.seek(io::SeekFrom::Start(0))?;
        self.file.write_all(text.as_bytes())?;
        self.file.sync_data()
    }
}

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
            Ok(Some(text)) => SourceRead::Text { text, link: false },
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

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the tests set the disk up by hand
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

    #[test]
    fn a_source_is_read_whole_under_the_limit_and_a_symlink_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let read = |name: &str, max: u64| match OsSystem.read_source(&dir.path().join(name), max) {
            SourceRead::Text { text, link } => format!("text {link} {text:?}"),
            SourceRead::Missing => "missing".into(),
            SourceRead::Dangling { target } => format!("dangling {}", target.display()),
            SourceRead::NotRegular { kind } => format!("not regular: {kind}"),
            SourceRead::TooLarge { size } => format!("too large: {size}"),
            SourceRead::NotUtf8 { line, col } => format!("not utf-8 at {line}:{col}"),
            SourceRead::Failed(e) => format!("failed: {e}"),
        };
        std::fs::write(dir.path().join("a.yml"), "a: 1\n").unwrap();
        std::fs::write(dir.path().join("empty.yml"), "").unwrap();
        std::fs::write(dir.path().join("bad.yml"), b"a: 1\nb: \xff\n").unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert_eq!(read("a.yml", 5), "text false \"a: 1\\n\"");
        assert_eq!(read("a.yml", 4), "too large: 5");
        assert_eq!(read("empty.yml", 0), "text false \"\"");
        assert_eq!(read("bad.yml", 100), "not utf-8 at 2:4");
        assert_eq!(read("d", 100), "not regular: a directory");
        assert_eq!(read("none.yml", 100), "missing");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("a.yml", dir.path().join("link.yml")).unwrap();
            std::os::unix::fs::symlink("gone.yml", dir.path().join("dangling.yml")).unwrap();
            assert_eq!(read("link.yml", 5), "text true \"a: 1\\n\"");
            assert_eq!(read("link.yml", 4), "too large: 5");
            assert_eq!(read("dangling.yml", 5), "dangling gone.yml");
        }
    }

    #[test]
    fn a_streamed_process_hands_over_each_line_as_it_is_printed() {
        let dir = tempfile::tempdir().unwrap();
        let process = Process {
            program: PathBuf::from("sh"),
            args: vec![
                "-c".into(),
                "echo one; echo warn >&2; sleep 1; printf 'two\\nthree'; exit 4".into(),
            ],
            cwd: dir.path().to_path_buf(),
            env: vec![],
        };
        let start = std::time::Instant::now();
        let mut seen = Vec::new();
        let out = OsSystem
            .run_streaming(&process, &mut |stream, line| {
                seen.push((stream, line.to_string(), start.elapsed()));
            })
            .unwrap();
        let of = |stream| {
            seen.iter()
                .filter(|(s, _, _)| *s == stream)
                .map(|(_, l, t)| (l.as_str(), *t))
                .collect::<Vec<_>>()
        };
        let stdout = of(Stream::Stdout);
        let lines: Vec<_> = stdout.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, ["one", "two", "three"]);
        assert_eq!(of(Stream::Stderr)[0].0, "warn");
        // `one` came before the sleep, not with the rest at the end.
        assert!(stdout[1].1 - stdout[0].1 >= std::time::Duration::from_millis(500));
        assert_eq!(out.code, Some(4));
        assert_eq!(out.stdout, "one\ntwo\nthree");
        assert_eq!(out.stderr, "warn\n");
        assert_eq!(OsSystem.run(&process).unwrap(), out);
    }

    #[test]
    fn a_failed_rename_leaves_the_target_as_it_was_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty directory: the rename must fail.
        let target = dir.path().join("lineage.yaml");
        std::fs::create_dir_all(target.join("keep")).unwrap();
        let err = OsSystem
            .write_atomic(&target, b"builds: []\n", false)
            .unwrap_err();
        assert!(err.to_string().contains("lineage.yaml"), "{err}");
        assert!(target.join("keep").is_dir());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(leftovers, ["lineage.yaml"]);
    }

    #[test]
    fn a_replacing_write_leaves_the_new_file_whole_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("gen/base-image/main.sh");
        OsSystem.write_replace(&target, b"old\n", false).unwrap();
        OsSystem.write_replace(&target, b"new\n", true).unwrap();
        OsSystem.sync_tree(dir.path()).unwrap();
        OsSystem.sync_tree(&dir.path().join("missing")).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o755);
        }
        let names: Vec<_> = std::fs::read_dir(target.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(names, ["main.sh"]);
    }

    #[test]
    fn a_writer_killed_before_its_rename_leaves_the_old_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("pins.yaml");
        OsSystem
            .write_atomic(&target, b"images: {}\n", false)
            .unwrap();
        // What a writer killed between write and rename leaves behind.
        std::fs::write(
            dir.path().join(".pins.yaml.csis-tmp-99999"),
            b"images: {a: half",
        )
        .unwrap();
        assert_eq!(
            OsSystem.read_to_string(&target).unwrap().unwrap(),
            "images: {}\n"
        );
        OsSystem
            .write_atomic(&target, b"images: {a: b}\n", false)
            .unwrap();
        assert_eq!(
            OsSystem.read_to_string(&target).unwrap().unwrap(),
            "images: {a: b}\n"
        );
    }
}
