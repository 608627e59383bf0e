//! The persisted cache (issue 40): what a fresh process reuses of an
//! earlier process's work. Each unit is one source file's result, kept
//! with the blake3 digest of the text it was computed from and used only
//! when the file's text has that digest again. This file is the store
//! alone: bytes by source path. What a unit's bytes mean belongs to the
//! query that keeps them (`load::entries`).
//!
//! The units of files are spread over [`FILE_SHARDS`] files by a hash of
//! their path, so that an edit rewrites the one file its unit is in; the
//! units of the tree (a path that starts with a NUL: they are keyed by
//! most of the tree and change together) are in two files of their own,
//! so that a change to the tree rewrites those and not every shard: the
//! tree's whole units in one, and in the last those of the tree that are
//! one file's each (a path with a second NUL: the instances files'
//! checks), which an edit of that one file changes too. Each file,
//! `csis-XX.cache` in the cache directory: [`MAGIC`]; the key (the format,
//! the csis version and the plugin set); the units sorted by path (path,
//! digest, bytes); then the blake3 digest of everything before it, so that
//! a truncated or damaged file is told from a whole one before anything
//! in it is believed. A file that fails any of this is ignored (one notice
//! for all of them) and rewritten: the cache can make csis faster, never
//! wrong.

use std::collections::HashMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use csis_model::packed::{read_bytes, read_len, read_str, write_len, write_str};
use rayon::prelude::*;

use crate::db::system::System;
use crate::registry::Registry;

/// The default directory, under the configuration root.
pub const DEFAULT_DIR: &str = ".csis/cache";
/// How many files the units are spread over: the files' units', the
/// tree's whole units', and the tree's units of one file each.
pub const SHARDS: usize = FILE_SHARDS + 2;
/// How many files the units of files are spread over.
const FILE_SHARDS: usize = 64;
const MAGIC: &[u8] = b"csis cache\n";
/// Raised whenever what a unit holds, or how it is written, changes: a
/// cache of another format is ignored whole.
const FORMAT: u32 = 4;
const DIGEST: usize = 32;

/// The name of shard `shard`'s file in the cache directory.
pub fn shard_file(shard: usize) -> String {
    format!("csis-{shard:02x}.cache")
}

/// Whether `path` names a unit of the tree as a whole (no file's path
/// starts with a NUL): each is asked for after the load, so its bytes are
/// held past it ([`Cache::release`]).
pub fn is_tree_unit(path: &str) -> bool {
    path.starts_with('\0')
}

/// The shard a unit's path is kept in: FNV-1a of the path, or one of the
/// two shards of the tree's units (part of the format: a change raises
/// [`FORMAT`]).
pub fn shard_of(path: &str) -> usize {
    if let Some(rest) = path.strip_prefix('\0') {
        // An instances file's checks: rewritten on an edit of its file,
        // which leaves the tree's whole units (hundreds of KiB) as they
        // were.
        return if rest.contains('\0') {
            FILE_SHARDS + 1
        } else {
            FILE_SHARDS
        };
    }
    let hash = path.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % FILE_SHARDS as u64) as usize
}

/// A unit of a loaded file: where its bytes are in it.
#[derive(Debug)]
struct Kept {
    shard: usize,
    digest: [u8; DIGEST],
    range: Range<usize>,
    /// Taken by this process, so still its file's result.
    taken: AtomicBool,
}

/// One shard file as it was loaded.
#[derive(Debug, Default)]
struct Shard {
    /// The file's bytes as mapped (`System::map_bytes`), each unit a range
    /// of them: the cache lets go of them once the tree's files are read
    /// (`release`); a unit taken, or held past the load, keeps its range,
    /// and so the file's mapping.
    bytes: RwLock<Bytes>,
    /// The units it held (0 when it was missing or ignored).
    units: usize,
    /// Why it was ignored, when it was.
    ignored: Option<String>,
}

/// A cache directory and what was loaded from it.
#[derive(Debug, Default)]
pub struct Cache {
    dir: PathBuf,
    key: String,
    shards: Vec<Shard>,
    units: HashMap<String, Kept>,
    /// The bytes of the units still to be taken once the files are read
    /// (`release`): a file's checks are asked after the load, and a taken
    /// one is written back from them (`write_held`).
    held: RwLock<HashMap<String, Bytes>>,
    /// The one notice for the files that were ignored.
    notice: Option<String>,
    /// What this process read of the environment and the clock.
    env_reads: EnvReads,
    /// A builder's hook read another instance while it answered for one
    /// (`plan::hook_context`): no instances file's checks are kept.
    reached_across: AtomicBool,
    /// This process computed every series' fingerprint
    /// (`workspace::prewarm::fingerprints`): they may be kept.
    fingerprinted: AtomicBool,
    /// The key the load computed for a unit it asked for, so that the
    /// writer keeps the unit under it (`load::kept_scripts`).
    noted_keys: RwLock<HashMap<String, [u8; DIGEST]>>,
}

/// What a process read of the environment and the clock, as its queries
/// noted it (`db::reads`): besides the files, what a plan record is kept
/// with.
#[derive(Debug, Default)]
pub struct EnvReads {
    vars: std::sync::Mutex<std::collections::BTreeSet<String>>,
    whole: AtomicBool,
    clock: AtomicBool,
}

impl EnvReads {
    pub fn var(&self, key: &str) {
        // Noted at every render that looks it up: copied the first time.
        let mut vars = self.vars.lock().unwrap_or_else(|p| p.into_inner());
        if !vars.contains(key) {
            vars.insert(key.to_string());
        }
    }

    pub fn whole(&self) {
        self.whole.store(true, Ordering::Relaxed);
    }

    pub fn clock(&self) {
        self.clock.store(true, Ordering::Relaxed);
    }

    /// The variables read, sorted; None when the whole environment was.
    pub fn vars(&self) -> Option<Vec<String>> {
        if self.whole.load(Ordering::Relaxed) {
            return None;
        }
        let vars = self.vars.lock().unwrap_or_else(|p| p.into_inner());
        Some(vars.iter().cloned().collect())
    }

    /// Whether the clock was read.
    pub fn read_clock(&self) -> bool {
        self.clock.load(Ordering::Relaxed)
    }
}

/// What a cache is keyed by besides each file's text: a cache written by
/// another build of csis (its version and a digest of the sources a unit
/// depends on, engine/build.rs) or with other plugins is another cache.
pub fn key(registry: &Registry) -> String {
    format!(
        "format {FORMAT}, csis {} ({}), plugins {} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("CSIS_BUILD_SOURCES"),
        registry.plugins().join(" "),
        registry.plugin_sources().unwrap_or("sources not named"),
    )
}

/// The digest a unit is kept with: its text's, as a recording digests a
/// source it reads (`SourceFile::read_digest` is that digest).
pub fn digest(text: &str) -> [u8; DIGEST] {
    crate::db::system::digest_text(text)
}

impl Cache {
    /// The cache in `dir` (its files read on every core): empty when there
    /// is none yet; a file that cannot be used is left out and named in
    /// the notice.
    pub fn load(system: &dyn System, dir: &Path, key: String) -> Cache {
        // No directory yet (a first run): no shard file to try.
        let shards = if system.is_dir(dir) { SHARDS } else { 0 };
        let loaded: Vec<(Shard, Vec<(String, Kept)>)> = (0..shards)
            .into_par_iter()
            .map(|shard| {
                let (bytes, units, ignored) = match system.map_bytes(&dir.join(shard_file(shard))) {
                    Ok(None) => return (Shard::default(), Vec::new()),
                    Ok(Some(bytes)) => match decode(&bytes, &key, shard) {
                        // Kept as mapped: a unit taken is a range of it.
                        Ok(units) => (bytes, units, None),
                        Err(why) => (Bytes::new(), Vec::new(), Some(why)),
                    },
                    Err(e) => (
                        Bytes::new(),
                        Vec::new(),
                        Some(format!("it could not be read ({e})")),
                    ),
                };
                let shard = Shard {
                    bytes: RwLock::new(bytes),
                    units: units.len(),
                    ignored,
                };
                (shard, units)
            })
            .collect();
        let mut units = HashMap::with_capacity(loaded.iter().map(|(_, u)| u.len()).sum());
        let mut shards = Vec::with_capacity(SHARDS);
        for (shard, kept) in loaded {
            units.extend(kept);
            shards.push(shard);
        }
        shards.resize_with(SHARDS, Shard::default);
        let notice = notice(dir, &shards);
        Cache {
            dir: dir.to_path_buf(),
            key,
            shards,
            units,
            held: RwLock::default(),
            notice,
            env_reads: EnvReads::default(),
            reached_across: AtomicBool::new(false),
            fingerprinted: AtomicBool::new(false),
            noted_keys: RwLock::default(),
        }
    }

    /// What this process read of the environment and the clock.
    pub fn env_reads(&self) -> &EnvReads {
        &self.env_reads
    }

    /// Note that an instance's checks read another instance
    /// (`load::kept_instances`).
    pub fn note_reach_across(&self) {
        self.reached_across.store(true, Ordering::Relaxed);
    }

    /// Whether an instance's checks read another instance in this process.
    pub fn reached_across(&self) -> bool {
        self.reached_across.load(Ordering::Relaxed)
    }

    /// Note that this process computed every series' fingerprint
    /// (`plan::kept_fingerprints`).
    pub fn note_fingerprinted(&self) {
        self.fingerprinted.store(true, Ordering::Relaxed);
    }

    /// Whether this process computed every series' fingerprint.
    pub fn fingerprinted(&self) -> bool {
        self.fingerprinted.load(Ordering::Relaxed)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The one notice to print when a file of the cache was ignored.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// What `read` makes of the bytes kept for `path`, when they were
    /// kept under `key` (a digest of what makes them this file's result:
    /// its text's, `db::files::text_digest`, or a unit's inputs') and are
    /// still held.
    pub fn take<T>(
        &self,
        path: &str,
        key: &[u8; DIGEST],
        read: impl FnOnce(&[u8]) -> Option<T>,
    ) -> Option<T> {
        self.take_shared(path, key, |unit| read(unit))
    }

    /// [`Cache::take`], `read` given the unit's bytes as shared: what it
    /// keeps of them is a range of the loaded file, not a copy.
    pub fn take_shared<T>(
        &self,
        path: &str,
        key: &[u8; DIGEST],
        read: impl FnOnce(&Bytes) -> Option<T>,
    ) -> Option<T> {
        let kept = self.units.get(path)?;
        if kept.digest != *key {
            return None;
        }
        let value = read(&self.unit(path, kept)?)?;
        kept.taken.store(true, Ordering::Relaxed);
        Some(value)
    }

    /// Whether a unit is kept for `path` (taken or not).
    pub fn holds(&self, path: &str) -> bool {
        self.units.contains_key(path)
    }

    /// Drop the loaded bytes: every file has been read. A later `take`
    /// finds nothing, and its file is read as without a cache, except the
    /// units `hold` names, which are asked for after the load: each keeps
    /// its range of its shard (the shard's memory lives as long as a range
    /// of it does: a file's entries taken are ranges too).
    pub fn release(&self, hold: &dyn Fn(&str) -> bool) {
        let mut held = self.held.write().unwrap_or_else(|p| p.into_inner());
        for (path, kept) in &self.units {
            if hold(path)
                && let Some(unit) = self.in_shard(kept)
            {
                held.insert(path.clone(), unit);
            }
        }
        for shard in &self.shards {
            *shard.bytes.write().unwrap_or_else(|p| p.into_inner()) = Bytes::new();
        }
    }

    /// The bytes of unit `kept`, a range of its shard, while the shard is
    /// loaded.
    fn in_shard(&self, kept: &Kept) -> Option<Bytes> {
        let shard = self
            .shards
            .get(kept.shard)?
            .bytes
            .read()
            .unwrap_or_else(|p| p.into_inner());
        shard.get(kept.range.clone())?;
        Some(shard.slice(kept.range.clone()))
    }

    /// The bytes of the unit `kept` at `path`, when they are still held:
    /// in its shard, or kept past the release.
    fn unit(&self, path: &str, kept: &Kept) -> Option<Bytes> {
        let held = self.held.read().unwrap_or_else(|p| p.into_inner());
        match held.get(path) {
            Some(unit) => Some(unit.clone()),
            None => self.in_shard(kept),
        }
    }

    /// `write` given the bytes of the unit this process took for `path`,
    /// as they were loaded and held past the load ([`Cache::release`]):
    /// written back as they are, not encoded again. `None` when they are
    /// not held.
    pub fn write_held<T>(&self, path: &str, write: impl FnOnce(&[u8]) -> T) -> Option<T> {
        self.taken_digest(path)?;
        let unit = self.unit(path, self.units.get(path)?)?;
        Some(write(&unit))
    }

    /// Keep the unit at `path` as it was loaded, though this process did
    /// not take it: for a unit whose inputs this process knows unchanged
    /// without asking (a users file's, when it took the world's files,
    /// `load::kept_world`). It is written back as it was, and its key is
    /// checked by whichever process takes it next, as any unit's is.
    /// `None` when its bytes are not held.
    pub fn keep_untaken(&self, path: &str) -> Option<[u8; DIGEST]> {
        let kept = self.units.get(path)?;
        self.unit(path, kept)?;
        kept.taken.store(true, Ordering::Relaxed);
        Some(kept.digest)
    }

    /// Note the key of the unit at `path` as this process computed it
    /// where it asked for the unit (the load), for the writer.
    pub fn note_key(&self, path: &str, key: [u8; DIGEST]) {
        let mut keys = self.noted_keys.write().unwrap_or_else(|p| p.into_inner());
        keys.insert(path.to_string(), key);
    }

    /// The key noted for the unit at `path`.
    pub fn noted_key(&self, path: &str) -> Option<[u8; DIGEST]> {
        let keys = self.noted_keys.read().unwrap_or_else(|p| p.into_inner());
        keys.get(path).copied()
    }

    /// The digest of the unit this process took for `path`.
    pub fn taken_digest(&self, path: &str) -> Option<[u8; DIGEST]> {
        let kept = self.units.get(path)?;
        kept.taken.load(Ordering::Relaxed).then_some(kept.digest)
    }

    /// How many units this process took.
    pub fn taken(&self) -> usize {
        self.units
            .values()
            .filter(|k| k.taken.load(Ordering::Relaxed))
            .count()
    }

    /// Whether shard `shard`'s file must be written for it to hold
    /// `units` units, `taken` of them taken from it: it was ignored, or
    /// holds other units than those.
    pub fn stale(&self, shard: usize, units: usize, taken: usize) -> bool {
        let Some(s) = self.shards.get(shard) else {
            return true;
        };
        s.ignored.is_some() || units != s.units || taken != units
    }

    /// Write shard `shard`'s file whole (a reader finds the old file, none,
    /// or the new one whole) as it is made: `units` writes `count` units,
    /// sorted by path, through [`UnitWriter::unit`].
    pub fn save(
        &self,
        system: &dyn System,
        shard: usize,
        count: usize,
        units: &mut dyn FnMut(&mut UnitWriter<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        system.write_replace_streamed(&self.dir.join(shard_file(shard)), &mut |w| {
            let mut out = UnitWriter {
                w,
                hasher: blake3::Hasher::new(),
                left: count,
            };
            out.raw(MAGIC)?;
            let mut head = Vec::new();
            write_str(&self.key, &mut head);
            write_len(count, &mut head);
            out.raw(&head)?;
            units(&mut out)?;
            if out.left != 0 {
                return Err(io::Error::other("fewer units than counted"));
            }
            let sum = out.hasher.finalize();
            out.w.write_all(sum.as_bytes())
        })
    }
}

/// One notice for every shard file that was ignored.
fn notice(dir: &Path, shards: &[Shard]) -> Option<String> {
    let ignored: Vec<(usize, &String)> = shards
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.ignored.as_ref().map(|why| (i, why)))
        .collect();
    let (first, why) = *ignored.first()?;
    Some(if ignored.len() == 1 {
        ignoring(&dir.join(shard_file(first)), why)
    } else {
        format!(
            "note: ignoring {} cache files in {} (the first, {}: {why}); this run rebuilds them",
            ignored.len(),
            dir.display(),
            shard_file(first)
        )
    })
}

/// Where [`Cache::save`]'s units go, summed as they pass.
pub struct UnitWriter<'a> {
    w: &'a mut dyn io::Write,
    hasher: blake3::Hasher,
    left: usize,
}

impl UnitWriter<'_> {
    fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hasher.update(bytes);
        self.w.write_all(bytes)
    }

    /// One unit: its file's path, the digest of the text it was computed
    /// from, its bytes.
    pub fn unit(&mut self, path: &str, digest: &[u8; DIGEST], bytes: &[u8]) -> io::Result<()> {
        self.left = self
            .left
            .checked_sub(1)
            .ok_or_else(|| io::Error::other("more units than counted"))?;
        let mut head = Vec::with_capacity(path.len() + DIGEST + 8);
        write_str(path, &mut head);
        head.extend_from_slice(digest);
        write_len(bytes.len(), &mut head);
        self.raw(&head)?;
        self.raw(bytes)
    }
}

/// A file of the cache directory checked before anything in it is
/// believed: it begins with `magic` (else it is not `what`), ends with the
/// blake3 digest of everything before it, and names `key` next. Its body
/// (without the digest) and where the key ends in it; or why it cannot
/// be used.
pub(crate) fn checked<'a>(
    bytes: &'a [u8],
    magic: &[u8],
    what: &str,
    key: &str,
) -> Result<(&'a [u8], usize), String> {
    const DAMAGED: &str = "it is truncated or damaged (its checksum does not match)";
    if !bytes.starts_with(magic) {
        return Err(format!("it is not {what}"));
    }
    let Some(body_len) = bytes.len().checked_sub(DIGEST) else {
        return Err(DAMAGED.into());
    };
    let (body, sum) = bytes.split_at(body_len);
    if blake3::hash(body).as_bytes() != sum {
        return Err(DAMAGED.into());
    }
    let mut at = magic.len();
    let found = read_bytes(body, &mut at).ok_or_else(malformed)?;
    if found != key.as_bytes() {
        return Err(format!(
            "it was written by another csis build or plugin set ({}, not {key})",
            String::from_utf8_lossy(found)
        ));
    }
    Ok((body, at))
}

/// Why a checked file whose contents do not parse cannot be used.
pub(crate) fn malformed() -> String {
    "it is malformed".to_string()
}

/// The notice for one file of the cache directory that is ignored.
pub(crate) fn ignoring(path: &Path, why: &str) -> String {
    format!(
        "note: ignoring the cache file {}: {why}; this run rebuilds it",
        path.display()
    )
}

/// The warning for a cache directory that could not be written.
pub fn not_written(dir: &Path, e: &io::Error) -> String {
    format!(
        "warning: the cache could not be written to {}: {e}",
        dir.display()
    )
}

/// The units of a cache file, or why it cannot be used.
fn decode(bytes: &[u8], key: &str, shard: usize) -> Result<Vec<(String, Kept)>, String> {
    let (body, mut at) = checked(bytes, MAGIC, "a csis cache file", key)?;
    let count = read_len(body, &mut at).ok_or_else(malformed)?;
    let mut units = Vec::with_capacity(count.min(body.len()));
    for _ in 0..count {
        let path = read_str(body, &mut at);
        let digest = body.get(at..at + DIGEST).and_then(|d| d.try_into().ok());
        at += DIGEST;
        let unit = read_bytes(body, &mut at).map(<[u8]>::len);
        let (Some(path), Some(digest), Some(len)) = (path, digest, unit) else {
            return Err(malformed());
        };
        if shard_of(path) != shard {
            return Err(malformed());
        }
        let range = at - len..at;
        let taken = AtomicBool::new(false);
        units.push((
            path.to_string(),
            Kept {
                shard,
                digest,
                range,
                taken,
            },
        ));
    }
    if at != body.len() {
        return Err(malformed());
    }
    Ok(units)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::OsSystem;

    /// Two units whose bytes are their texts, in different shards.
    const UNITS: [(&str, &str); 2] = [("images/a.yml", "a: 1\n"), ("users/u.yml", "u: 2\n")];

    fn as_text(bytes: &[u8]) -> Option<String> {
        String::from_utf8(bytes.to_vec()).ok()
    }

    /// Each unit saved in its shard, on the OS's files (the in-memory
    /// system holds text, and a cache is bytes); the directory and the
    /// first unit's file.
    fn saved(tmp: &tempfile::TempDir) -> (PathBuf, PathBuf) {
        let dir = tmp.path().join(".csis/cache");
        let cache = Cache::load(&OsSystem, &dir, "k".into());
        assert_ne!(shard_of(UNITS[0].0), shard_of(UNITS[1].0));
        for (path, text) in UNITS {
            cache
                .save(&OsSystem, shard_of(path), 1, &mut |w| {
                    w.unit(path, &digest(text), text.as_bytes())
                })
                .unwrap();
        }
        let first = dir.join(shard_file(shard_of(UNITS[0].0)));
        (dir, first)
    }

    #[test]
    fn a_saved_cache_gives_back_each_unit_for_its_text_only() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, _) = saved(&tmp);
        let cache = Cache::load(&OsSystem, &dir, "k".into());
        assert_eq!(cache.notice(), None);
        let take = |path, text: &str| cache.take(path, &digest(text), as_text);
        let shard = shard_of("images/a.yml");
        assert_eq!(take("images/a.yml", "a: 2\n"), None);
        assert_eq!(cache.taken_digest("images/a.yml"), None);
        assert!(cache.stale(shard, 1, 0));
        assert_eq!(take("images/a.yml", "a: 1\n").as_deref(), Some("a: 1\n"));
        assert_eq!(take("images/b.yml", "a: 1\n"), None);
        assert_eq!(cache.taken(), 1);
        assert_eq!(cache.taken_digest("images/a.yml"), Some(digest("a: 1\n")));
        // Its shard holds exactly that unit; one more or one fewer is
        // another shard file.
        assert!(!cache.stale(shard, 1, 1));
        assert!(cache.stale(shard, 2, 1));
        assert!(cache.stale(shard, 0, 0));
        // A shard with no file and no unit needs none.
        let empty = (0..SHARDS).find(|s| *s != shard && *s != shard_of("users/u.yml"));
        assert!(!cache.stale(empty.unwrap(), 0, 0));
        // Released, the bytes are gone; what was taken stays known.
        cache.release(&|_| false);
        assert_eq!(take("users/u.yml", "u: 2\n"), None);
        assert_eq!(cache.taken(), 1);
    }

    #[test]
    fn a_save_writes_exactly_the_units_it_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::load(&OsSystem, tmp.path(), "k".into());
        let (path, text) = UNITS[0];
        for count in [0, 2] {
            let e = cache
                .save(&OsSystem, shard_of(path), count, &mut |w| {
                    w.unit(path, &digest(text), text.as_bytes())
                })
                .unwrap_err();
            assert!(e.to_string().contains("than counted"), "{e}");
        }
        assert!(
            !OsSystem.is_dir(tmp.path()) || OsSystem.list_files(tmp.path()).unwrap().is_empty()
        );
    }

    #[test]
    fn a_missing_cache_is_empty_and_silent() {
        let cache = Cache::load(&OsSystem, Path::new("/nonexistent/csis/cache"), "k".into());
        assert_eq!(cache.notice(), None);
        assert!(!cache.stale(0, 0, 0));
        assert!(cache.stale(0, 1, 0));
    }

    #[test]
    fn every_truncation_and_every_flipped_bit_is_ignored_with_a_notice() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, file) = saved(&tmp);
        let whole = OsSystem.read_bytes(&file).unwrap().unwrap();
        let shown = file.display().to_string();
        let ignored = |bytes: &[u8]| {
            OsSystem.write_replace(&file, bytes, false).unwrap();
            let cache = Cache::load(&OsSystem, &dir, "k".into());
            assert_eq!(cache.take(UNITS[0].0, &digest(UNITS[0].1), as_text), None);
            // The other shard is still used.
            assert!(
                cache
                    .take(UNITS[1].0, &digest(UNITS[1].1), as_text)
                    .is_some()
            );
            assert!(cache.stale(shard_of(UNITS[0].0), 1, 0));
            cache.notice().map(str::to_string)
        };
        for len in 0..whole.len() {
            let notice = ignored(&whole[..len]).unwrap();
            assert!(notice.starts_with(&format!("note: ignoring the cache file {shown}: ")));
        }
        for bit in 0..whole.len() * 8 {
            let mut bytes = whole.clone();
            bytes[bit / 8] ^= 1 << (bit % 8);
            assert!(ignored(&bytes).is_some(), "bit {bit}");
        }
        assert_eq!(
            ignored(&whole[..whole.len() - 1]),
            Some(format!(
                "note: ignoring the cache file {shown}: it is truncated or damaged (its checksum \
does not match); this run rebuilds it"
            ))
        );
    }

    #[test]
    fn a_cache_of_another_key_is_ignored_and_says_whose_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, _) = saved(&tmp);
        let cache = Cache::load(&OsSystem, &dir, "k2".into());
        assert_eq!(
            cache.notice().map(str::to_string),
            Some(format!(
                "note: ignoring 2 cache files in {} (the first, {}: it was written by another \
csis build or plugin set (k, not k2)); this run rebuilds them",
                dir.display(),
                shard_file(shard_of(UNITS[0].0).min(shard_of(UNITS[1].0)))
            ))
        );
        assert_eq!(cache.take("images/a.yml", &digest("a: 1\n"), as_text), None);
    }

    #[test]
    fn the_key_names_the_plugins_sources_when_the_binary_does() {
        let registry = || Registry::build(&[]).unwrap();
        let unnamed = key(&registry());
        let named = key(&registry().with_plugin_sources("0123456789abcdef"));
        assert!(named.contains("(0123456789abcdef)"), "{named}");
        assert_ne!(
            named,
            key(&registry().with_plugin_sources("fedcba9876543210"))
        );
        assert_ne!(named, unnamed);
    }

    #[test]
    fn the_units_of_the_tree_are_in_the_last_two_shards_and_no_files_unit_is_in_them() {
        assert_eq!(shard_of("\0fingerprints"), SHARDS - 2);
        assert_eq!(shard_of("\0world files"), SHARDS - 2);
        assert_eq!(shard_of("\0instances\0instances/a.yml"), SHARDS - 1);
        assert_eq!(shard_file(SHARDS - 2), "csis-40.cache");
        assert_eq!(shard_file(SHARDS - 1), "csis-41.cache");
        for path in ["instances/a.yml", "users/u.yml\0checks", "images/x/y.yml"] {
            assert!(shard_of(path) < SHARDS - 2, "{path}");
        }
    }

    #[test]
    fn a_unit_in_the_wrong_shard_makes_its_file_malformed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let cache = Cache::load(&OsSystem, &dir, "k".into());
        let (path, text) = UNITS[0];
        let wrong = (shard_of(path) + 1) % SHARDS;
        cache
            .save(&OsSystem, wrong, 1, &mut |w| {
                w.unit(path, &digest(text), text.as_bytes())
            })
            .unwrap();
        let cache = Cache::load(&OsSystem, &dir, "k".into());
        assert_eq!(
            cache.notice().map(str::to_string),
            Some(format!(
                "note: ignoring the cache file {}: it is malformed; this run rebuilds it",
                dir.join(shard_file(wrong)).display()
            ))
        );
    }
}
