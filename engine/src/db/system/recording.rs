//! A door that remembers what came through it: each question a process
//! asked the machine, with a digest of the answer, so that a later
//! process can ask the same questions and know whether anything it read
//! has changed (the plan record, `run/plan_record.rs`).
//!
//! The environment and the clock pass through unrecorded: a process reads
//! them whole, and what it depends on is only what its templates looked
//! up, which the cache notes as the queries read it (`db::reads`). A
//! question whose answer cannot be asked again without doing something
//! (running a process, writing, locking) makes the recording unrepeatable.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{HeldLock, LimitedRun, Process, ProcessOutput, RunLimits, SourceRead, Stream, System};

/// What was asked of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ask {
    ReadToString,
    /// `read_source` under a limit of this many bytes.
    ReadSource(u64),
    Resolve,
    ListFiles,
    IsDir,
    ReadBytes,
    Digest,
    Canonicalize,
    IsSymlink,
    Modified,
}

/// One question and the digest of its answer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Probe {
    pub ask: Ask,
    pub path: PathBuf,
    pub answer: [u8; 32],
}

impl Probe {
    /// Whether `system` answers the question as it was answered then.
    pub fn holds(&self, system: &dyn System) -> bool {
        answer(system, self.ask, &self.path) == self.answer
    }
}

/// Ask `system` the question and digest its answer.
pub fn answer(system: &dyn System, ask: Ask, path: &Path) -> [u8; 32] {
    match ask {
        Ask::ReadToString => of_text(&system.read_to_string(path)),
        Ask::ReadSource(max) => of_source(&digested(system.read_source(path, max))),
        Ask::Resolve => of_path(&system.resolve(path)),
        Ask::ListFiles => of_listing(&system.list_files(path)),
        Ask::IsDir => of_flag(system.is_dir(path)),
        Ask::ReadBytes => of_bytes(&system.read_bytes(path)),
        Ask::Digest => of_text(&system.digest(path)),
        Ask::Canonicalize => of_path(&system.canonicalize(path)),
        Ask::IsSymlink => of_flag(system.is_symlink(path)),
        Ask::Modified => of_time(&system.modified(path)),
    }
}

/// `System` over another, every answer noted.
pub struct Recording<'a> {
    inner: &'a dyn System,
    /// Where reads are not noted: the persisted cache, which can make a
    /// process faster but never changes what it answers.
    unnoted: Option<PathBuf>,
    probes: Mutex<Vec<Probe>>,
    /// Why the answers cannot all be asked for again.
    unrepeatable: Mutex<Option<&'static str>>,
    /// Files read ahead ([`Recording::read_ahead`]) under a limit, with
    /// their answers' digests, each handed to the first read of it under
    /// that limit through the recording: a plan whose record did not hold
    /// reads no file twice. Looked up by the path asked, without a copy
    /// of it; the path kept is the one its probe is noted with.
    ahead: Mutex<HashMap<PathBuf, (u64, ReadAhead), foldhash::fast::RandomState>>,
}

/// A source read made ahead, and its answer's digest.
pub type ReadAhead = (SourceRead, [u8; 32]);

impl<'a> Recording<'a> {
    pub fn new(inner: &'a dyn System) -> Self {
        Recording {
            inner,
            unnoted: None,
            probes: Mutex::new(Vec::new()),
            unrepeatable: Mutex::new(None),
            ahead: Mutex::default(),
        }
    }

    /// The same recording, noting nothing read below `dir`.
    pub fn unnoted_below(mut self, dir: &Path) -> Self {
        self.unnoted = Some(dir.to_path_buf());
        self
    }

    /// Every question asked so far, each once, sorted by what was asked and
    /// the path's bytes (taken: the recording starts again empty); or why
    /// they cannot be asked again.
    pub fn take_probes(&self) -> Result<Vec<Probe>, &'static str> {
        if let Some(why) = *self.unrepeatable.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(why);
        }
        let mut probes =
            std::mem::take(&mut *self.probes.lock().unwrap_or_else(|p| p.into_inner()));
        // By each path's bytes: `PathBuf`'s own order parses both paths'
        // components at every comparison, and a plan asks thousands.
        fn key(p: &Probe) -> (Ask, &[u8], [u8; 32]) {
            (p.ask, p.path.as_os_str().as_encoded_bytes(), p.answer)
        }
        probes.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
        probes.dedup();
        // The same question answered two ways (a file that changed while
        // it was read) is no answer to check against.
        if probes
            .windows(2)
            .any(|w| w[0].ask == w[1].ask && w[0].path == w[1].path)
        {
            return Err("a file changed while it was read");
        }
        Ok(probes)
    }

    /// Whether the recording's system answers `probe` as it was answered
    /// then, asked without noting it; what a source read found, for
    /// [`Recording::read_ahead`].
    pub fn holds_ahead(&self, probe: &Probe) -> (bool, Option<ReadAhead>) {
        let Ask::ReadSource(max) = probe.ask else {
            return (probe.holds(self.inner), None);
        };
        let got = digested(self.inner.read_source(&probe.path, max));
        let digest = of_source(&got);
        (digest == probe.answer, Some((got, digest)))
    }

    /// Source reads made ahead (by [`Recording::holds_ahead`]), each the
    /// answer to the first read of its file through the recording.
    pub fn read_ahead(
        &self,
        reads: impl IntoIterator<Item = (PathBuf, u64, SourceRead, [u8; 32])>,
    ) {
        let mut ahead = self.ahead.lock().unwrap_or_else(|p| p.into_inner());
        ahead.extend(
            reads
                .into_iter()
                .map(|(path, max, got, digest)| (path, (max, (got, digest)))),
        );
    }

    /// Mark the recording unrepeatable, for the first reason given.
    pub fn refuse(&self, why: &'static str) {
        self.unrepeatable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(why);
    }

    fn note(&self, ask: Ask, path: &Path, answer: impl FnOnce() -> [u8; 32]) {
        if !self.is_unnoted(path) {
            self.push(ask, path.to_path_buf(), answer());
        }
    }

    /// [`Recording::note`] of a path the recording already owns.
    fn note_owned(&self, ask: Ask, path: PathBuf, answer: impl FnOnce() -> [u8; 32]) {
        if !self.is_unnoted(&path) {
            self.push(ask, path, answer());
        }
    }

    fn is_unnoted(&self, path: &Path) -> bool {
        self.unnoted
            .as_deref()
            .is_some_and(|dir| path.starts_with(dir))
    }

    fn push(&self, ask: Ask, path: PathBuf, answer: [u8; 32]) {
        self.probes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Probe { ask, path, answer });
    }
}

impl System for Recording<'_> {
    fn read_to_string(&self, path: &Path) -> io::Result<Option<String>> {
        let got = self.inner.read_to_string(path);
        self.note(Ask::ReadToString, path, || of_text(&got));
        got
    }

    fn read_source(&self, path: &Path, max_bytes: u64) -> SourceRead {
        let ahead = self
            .ahead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove_entry(path);
        // Read under another limit, the file is asked again.
        if let Some((path, (max, (got, digest)))) = ahead
            && max == max_bytes
        {
            self.note_owned(Ask::ReadSource(max_bytes), path, || digest);
            return got;
        }
        let got = digested(self.inner.read_source(path, max_bytes));
        self.note(Ask::ReadSource(max_bytes), path, || of_source(&got));
        got
    }

    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let got = self.inner.resolve(path);
        self.note(Ask::Resolve, path, || of_path(&got));
        got
    }

    fn list_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let got = self.inner.list_files(dir);
        self.note(Ask::ListFiles, dir, || of_listing(&got));
        got
    }

    fn is_dir(&self, path: &Path) -> bool {
        let got = self.inner.is_dir(path);
        self.note(Ask::IsDir, path, || of_flag(got));
        got
    }

    fn env(&self) -> BTreeMap<String, String> {
        self.inner.env()
    }

    fn now_unix(&self) -> i64 {
        self.inner.now_unix()
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        let got = self.inner.read_bytes(path);
        self.note(Ask::ReadBytes, path, || of_bytes(&got));
        got
    }

    fn map_bytes(&self, path: &Path) -> io::Result<Option<bytes::Bytes>> {
        let got = self.inner.map_bytes(path);
        // Asked again, the question is a read: the same answer either way.
        self.note(Ask::ReadBytes, path, || of_bytes(&got));
        got
    }

    fn digest(&self, path: &Path) -> io::Result<Option<String>> {
        let got = self.inner.digest(path);
        self.note(Ask::Digest, path, || of_text(&got));
        got
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        self.refuse("it wrote a file");
        self.inner.write_atomic(path, bytes, executable)
    }

    fn write_replace(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        self.refuse("it wrote a file");
        self.inner.write_replace(path, bytes, executable)
    }

    fn write_replace_streamed(
        &self,
        path: &Path,
        fill: &mut dyn FnMut(&mut dyn io::Write) -> io::Result<()>,
    ) -> io::Result<()> {
        self.refuse("it wrote a file");
        self.inner.write_replace_streamed(path, fill)
    }

    fn sync_tree(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_tree(dir)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.refuse("it removed a file");
        self.inner.remove_file(path)
    }

    fn remove_empty_dirs(&self, dir: &Path) -> io::Result<()> {
        self.refuse("it removed a directory");
        self.inner.remove_empty_dirs(dir)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let got = self.inner.canonicalize(path);
        self.note(Ask::Canonicalize, path, || of_path(&got));
        got
    }

    fn is_symlink(&self, path: &Path) -> bool {
        let got = self.inner.is_symlink(path);
        self.note(Ask::IsSymlink, path, || of_flag(got));
        got
    }

    fn run_streaming(
        &self,
        process: &Process,
        on_line: &mut dyn FnMut(Stream, &str),
    ) -> io::Result<ProcessOutput> {
        self.refuse("it ran a process");
        self.inner.run_streaming(process, on_line)
    }

    fn run(&self, process: &Process) -> io::Result<ProcessOutput> {
        self.refuse("it ran a process");
        self.inner.run(process)
    }

    fn run_limited(&self, process: &Process, limits: RunLimits) -> io::Result<LimitedRun> {
        self.refuse("it ran a process");
        self.inner.run_limited(process, limits)
    }

    fn modified(&self, path: &Path) -> io::Result<Option<std::time::SystemTime>> {
        let got = self.inner.modified(path);
        self.note(Ask::Modified, path, || of_time(&got));
        got
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn HeldLock>>> {
        self.refuse("it took a lock");
        self.inner.try_lock(path)
    }
}

/// A digest of parts, each tagged, so that no two answers of different
/// shapes can digest alike.
fn digest_of(parts: &[&[u8]]) -> [u8; 32] {
    digest_parts(parts.iter().copied())
}

/// The blake3 digest of `parts`, each prefixed with its length (so that
/// no two lists of parts digest alike by where one ends).
pub fn digest_parts<'p>(parts: impl IntoIterator<Item = &'p [u8]>) -> [u8; 32] {
    // Small parts gathered before they are hashed (the same bytes, so
    // the same digest): a key over a users file's 200 names was 400
    // updates of a few bytes, each paying the hasher's own bookkeeping.
    const GATHER: usize = 4096;
    let mut h = blake3::Hasher::new();
    let mut gathered: Vec<u8> = Vec::with_capacity(GATHER);
    for part in parts {
        gathered.extend_from_slice(&(part.len() as u64).to_le_bytes());
        if part.len() >= GATHER {
            h.update(&gathered);
            gathered.clear();
            h.update(part);
            continue;
        }
        gathered.extend_from_slice(part);
        if gathered.len() >= GATHER {
            h.update(&gathered);
            gathered.clear();
        }
    }
    h.update(&gathered);
    *h.finalize().as_bytes()
}

fn of_error(e: &io::Error) -> [u8; 32] {
    digest_of(&[b"error", e.to_string().as_bytes()])
}

fn of_text(got: &io::Result<Option<String>>) -> [u8; 32] {
    match got {
        Ok(Some(text)) => digest_of(&[b"text", text.as_bytes()]),
        Ok(None) => digest_of(&[b"missing"]),
        Err(e) => of_error(e),
    }
}

fn of_bytes<B: AsRef<[u8]>>(got: &io::Result<Option<B>>) -> [u8; 32] {
    match got {
        Ok(Some(bytes)) => digest_of(&[b"bytes", bytes.as_ref()]),
        Ok(None) => digest_of(&[b"missing"]),
        Err(e) => of_error(e),
    }
}

fn of_path(got: &io::Result<PathBuf>) -> [u8; 32] {
    match got {
        Ok(p) => digest_of(&[b"path", p.as_os_str().as_encoded_bytes()]),
        Err(e) => of_error(e),
    }
}

fn of_listing(got: &io::Result<Vec<PathBuf>>) -> [u8; 32] {
    match got {
        Ok(paths) => digest_parts(
            std::iter::once(&b"listing"[..])
                .chain(paths.iter().map(|p| p.as_os_str().as_encoded_bytes())),
        ),
        Err(e) => of_error(e),
    }
}

fn of_flag(got: bool) -> [u8; 32] {
    digest_of(&[b"flag", &[u8::from(got)]])
}

fn of_time(got: &io::Result<Option<std::time::SystemTime>>) -> [u8; 32] {
    match got {
        Ok(Some(t)) => {
            let since = t
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            digest_of(&[b"time", &since.to_le_bytes()])
        }
        Ok(None) => digest_of(&[b"missing"]),
        Err(e) => of_error(e),
    }
}

/// The digest a text is known by: a source read's probe is made of it,
/// and the persisted cache keys a file's units by it (`db::cache::digest`
/// is this), which is why a load can hand the one to the other.
pub fn digest_text(text: &str) -> [u8; 32] {
    *blake3::hash(text.as_bytes()).as_bytes()
}

/// A text read, with its digest taken (once: the probe's answer is made
/// of it).
fn digested(got: SourceRead) -> SourceRead {
    match got {
        SourceRead::Text {
            text,
            link,
            digest: None,
        } => {
            let digest = Some(digest_text(&text));
            SourceRead::Text { text, link, digest }
        }
        other => other,
    }
}

fn of_source(got: &SourceRead) -> [u8; 32] {
    match got {
        // Of the text's own digest, which the load hands on as the
        // text's (`db::files::text_digest`): each text is hashed once.
        SourceRead::Text { text, link, digest } => {
            let text = digest.unwrap_or_else(|| digest_text(text));
            digest_of(&[b"source", &[u8::from(*link)], &text])
        }
        SourceRead::Missing => digest_of(&[b"missing"]),
        SourceRead::Dangling { target } => {
            digest_of(&[b"dangling", target.as_os_str().as_encoded_bytes()])
        }
        SourceRead::NotRegular { kind } => digest_of(&[b"not regular", kind.as_bytes()]),
        SourceRead::TooLarge { size } => digest_of(&[b"too large", &size.to_le_bytes()]),
        SourceRead::NotUtf8 { line, col } => digest_of(&[
            b"not utf-8",
            &(*line as u64).to_le_bytes(),
            &(*col as u64).to_le_bytes(),
        ]),
        SourceRead::Failed(e) => of_error(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::MemorySystem;

    /// Gathered or not, the parts hash as one stream of each part's
    /// length and bytes: small parts, one past the gathering, and runs
    /// that cross it.
    #[test]
    fn parts_digest_as_their_framed_bytes_whatever_their_sizes() {
        let big = vec![7u8; 5000];
        let mid = vec![3u8; 4000];
        let cases: Vec<Vec<&[u8]>> = vec![
            vec![],
            vec![b""],
            vec![b"a", b"bc"],
            vec![&big],
            vec![b"x", &big, b"y"],
            vec![&mid, &mid, b"z", &mid],
        ];
        for parts in cases {
            let mut framed = Vec::new();
            for part in &parts {
                framed.extend_from_slice(&(part.len() as u64).to_le_bytes());
                framed.extend_from_slice(part);
            }
            assert_eq!(
                digest_parts(parts.iter().copied()),
                *blake3::hash(&framed).as_bytes()
            );
        }
        assert_ne!(
            digest_parts([&b"ab"[..], b"c"]),
            digest_parts([&b"a"[..], b"bc"])
        );
    }

    #[test]
    fn an_answer_holds_until_what_it_read_changes() {
        let sys = MemorySystem::new();
        sys.write(Path::new("/t/cfg/a.yml"), "a: 1\n");
        let rec = Recording::new(&sys);
        let _ = rec.list_files(Path::new("/t/cfg"));
        let _ = rec.read_source(Path::new("/t/cfg/a.yml"), 1024);
        let _ = rec.is_dir(Path::new("/t/images"));
        let probes = rec.take_probes().unwrap();
        assert_eq!(probes.len(), 3);
        assert!(probes.iter().all(|p| p.holds(&sys)));

        sys.write(Path::new("/t/cfg/a.yml"), "a: 2\n");
        let held: Vec<Ask> = probes
            .iter()
            .filter(|p| p.holds(&sys))
            .map(|p| p.ask)
            .collect();
        assert_eq!(held, vec![Ask::ListFiles, Ask::IsDir]);

        sys.write(Path::new("/t/cfg/b.yml"), "b: 1\n");
        assert!(!probes[0].holds(&sys), "a new file changes the listing");
    }

    #[test]
    fn a_file_read_ahead_is_read_once_and_noted_as_read() {
        let sys = MemorySystem::new();
        let a = Path::new("/t/cfg/a.yml");
        sys.write(a, "a: 1\n");
        let rec = Recording::new(&sys);
        let _ = rec.read_source(a, 1024);
        let probes = rec.take_probes().unwrap();

        // A later process checks the probe ahead, then the file changes
        // before its load reads it: the load gets what was checked, once,
        // and notes the answer it got.
        let later = Recording::new(&sys);
        let (holds, got) = later.holds_ahead(&probes[0]);
        assert!(holds);
        let (got, digest) = got.unwrap();
        later.read_ahead([(a.to_path_buf(), 1024, got, digest)]);
        sys.write(a, "a: 2\n");
        let text = |r: SourceRead| match r {
            SourceRead::Text { text, .. } => text.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(text(later.read_source(a, 1024)), "a: 1\n");
        assert_eq!(later.take_probes().unwrap(), probes);
        assert_eq!(
            text(later.read_source(a, 1024)),
            "a: 2\n",
            "read ahead once"
        );
        // Checked again now, the answer has changed.
        let (holds, got) = later.holds_ahead(&probes[0]);
        assert!(!holds);
        // Read ahead under one limit, a file asked under another is read
        // again.
        let (got, digest) = got.unwrap();
        later.read_ahead([(a.to_path_buf(), 1024, got, digest)]);
        sys.write(a, "a: 3\n");
        assert_eq!(text(later.read_source(a, 2048)), "a: 3\n");
    }

    #[test]
    fn a_write_or_a_process_makes_the_recording_unrepeatable() {
        let sys = MemorySystem::new();
        let rec = Recording::new(&sys);
        let _ = rec.read_to_string(Path::new("/t/x"));
        rec.write_replace(Path::new("/t/y"), b"y", false).unwrap();
        assert_eq!(rec.take_probes(), Err("it wrote a file"));
    }
}
