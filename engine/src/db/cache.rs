//! The persisted cache (issue 40): what a fresh process reuses of an
//! earlier process's work. Each unit is one source file's result, kept
//! with the blake3 digest of the text it was computed from and used only
//! when the file's text has that digest again. This file is the store
//! alone: bytes by source path. What a unit's bytes mean belongs to the
//! query that keeps them (`load::cached_entries`).
//!
//! The file, `csis.cache` in the cache directory: [`MAGIC`]; the key (the
//! format, the csis version and the plugin set, one line); the units
//! sorted by path (path, digest, bytes); then the blake3 digest of
//! everything before it, so that a truncated or damaged file is told from
//! a whole one before anything in it is believed. A cache that fails any
//! of this is ignored with one notice and rewritten: it can make csis
//! faster, never wrong.

use std::collections::HashMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

use csis_model::packed::{read_len, write_len, write_str};

use crate::db::system::System;
use crate::registry::Registry;

/// The cache's file name inside its directory.
pub const FILE: &str = "csis.cache";
/// The default directory, under the configuration root.
pub const DEFAULT_DIR: &str = ".csis/cache";
const MAGIC: &[u8] = b"csis cache\n";
/// Raised whenever what a unit holds, or how it is written, changes: a
/// cache of another format is ignored whole.
const FORMAT: u32 = 1;
const DIGEST: usize = 32;

/// A unit of the loaded file: where its bytes are in it.
#[derive(Debug)]
struct Kept {
    digest: [u8; DIGEST],
    range: Range<usize>,
    /// Taken by this process, so still its file's result.
    taken: AtomicBool,
}

/// A cache directory and what was loaded from it.
#[derive(Debug, Default)]
pub struct Cache {
    dir: PathBuf,
    key: String,
    /// The file as it was read, each unit a range of it: needed only
    /// while the files are read (`release`), not kept through the plan.
    bytes: RwLock<Vec<u8>>,
    units: HashMap<String, Kept>,
    /// Why the file in the directory was not used, when it was not.
    notice: Option<String>,
}

/// What a cache is keyed by besides each file's text: a cache written by
/// another build of csis or with other plugins is another cache.
pub fn key(registry: &Registry) -> String {
    format!(
        "format {FORMAT}, csis {}, plugins {}",
        env!("CARGO_PKG_VERSION"),
        registry.plugins().join(" ")
    )
}

/// The digest a unit is kept with.
pub fn digest(text: &str) -> [u8; DIGEST] {
    *blake3::hash(text.as_bytes()).as_bytes()
}

impl Cache {
    /// The cache in `dir`: empty when there is none yet; empty with a
    /// notice when the file there cannot be used.
    pub fn load(system: &dyn System, dir: &Path, key: String) -> Cache {
        let path = dir.join(FILE);
        let (bytes, units, notice) = match system.read_bytes(&path) {
            Ok(None) => (Vec::new(), HashMap::new(), None),
            Ok(Some(bytes)) => match decode(&bytes, &key) {
                Ok(units) => (bytes, units, None),
                Err(why) => (Vec::new(), HashMap::new(), Some(why)),
            },
            Err(e) => (
                Vec::new(),
                HashMap::new(),
                Some(format!("it could not be read ({e})")),
            ),
        };
        Cache {
            dir: dir.to_path_buf(),
            key,
            bytes: RwLock::new(bytes),
            units,
            notice: notice.map(|why| {
                format!(
                    "note: ignoring the cache {}: {why}; this run rebuilds it",
                    path.display()
                )
            }),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The one notice to print when the file in the directory was ignored.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// What `read` makes of the bytes kept for `path`, when they were
    /// computed from `text` (which is what makes them this file's result)
    /// and are still held.
    pub fn take<T>(
        &self,
        path: &str,
        text: &str,
        read: impl FnOnce(&[u8]) -> Option<T>,
    ) -> Option<T> {
        let kept = self.units.get(path)?;
        if kept.digest != digest(text) {
            return None;
        }
        let bytes = self.bytes.read().unwrap_or_else(|p| p.into_inner());
        let value = read(bytes.get(kept.range.clone())?)?;
        kept.taken.store(true, Ordering::Relaxed);
        Some(value)
    }

    /// Drop the loaded bytes: every file has been read. A later `take`
    /// finds nothing, and its file is read as without a cache.
    pub fn release(&self) {
        *self.bytes.write().unwrap_or_else(|p| p.into_inner()) = Vec::new();
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

    /// Whether a cache of exactly the units this process took, and no
    /// other, is what the file already holds: then nothing needs writing.
    pub fn holds_only_taken(&self, units: usize) -> bool {
        self.notice.is_none() && units == self.units.len() && self.taken() == units
    }

    /// Write the whole cache, atomically (a reader sees the old file or
    /// the new one, never a part), as it is made: `units` writes `count`
    /// units, sorted by path, through [`UnitWriter::unit`]. Nothing of it
    /// is held in memory whole.
    pub fn save(
        &self,
        system: &dyn System,
        count: usize,
        units: &mut dyn FnMut(&mut UnitWriter<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        system.write_replace_streamed(&self.dir.join(FILE), &mut |w| {
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

/// The units of a cache file, or why it cannot be used.
fn decode(bytes: &[u8], key: &str) -> Result<HashMap<String, Kept>, String> {
    const DAMAGED: &str = "it is truncated or damaged (its checksum does not match)";
    if !bytes.starts_with(MAGIC) {
        return Err("it is not a csis cache file".into());
    }
    let Some(body_len) = bytes.len().checked_sub(DIGEST) else {
        return Err(DAMAGED.into());
    };
    let (body, sum) = bytes.split_at(body_len);
    if blake3::hash(body).as_bytes() != sum {
        return Err(DAMAGED.into());
    }
    let mut at = MAGIC.len();
    let malformed = || "it is malformed".to_string();
    let found = slice(body, &mut at).ok_or_else(malformed)?;
    if found != key.as_bytes() {
        return Err(format!(
            "it was written by another csis build or plugin set ({}, not {key})",
            String::from_utf8_lossy(found)
        ));
    }
    let count = read_len(body, &mut at).ok_or_else(malformed)?;
    let mut units = HashMap::with_capacity(count.min(body.len()));
    for _ in 0..count {
        let path = slice(body, &mut at).and_then(|p| std::str::from_utf8(p).ok());
        let digest = body.get(at..at + DIGEST).and_then(|d| d.try_into().ok());
        at += DIGEST;
        let len = read_len(body, &mut at);
        let (Some(path), Some(digest), Some(len)) = (path, digest, len) else {
            return Err(malformed());
        };
        let range = at..at.checked_add(len).ok_or_else(malformed)?;
        if range.end > body.len() {
            return Err(malformed());
        }
        at = range.end;
        let taken = AtomicBool::new(false);
        units.insert(
            path.to_string(),
            Kept {
                digest,
                range,
                taken,
            },
        );
    }
    if at != body.len() {
        return Err(malformed());
    }
    Ok(units)
}

/// Length-prefixed bytes at `at`.
pub fn slice<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let len = read_len(bytes, at)?;
    let end = at.checked_add(len)?;
    let s = bytes.get(*at..end)?;
    *at = end;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::OsSystem;

    /// Two units whose bytes are their texts.
    const UNITS: [(&str, &str); 2] = [("images/a.yml", "a: 1\n"), ("users/u.yml", "u: 2\n")];

    fn write_units(w: &mut UnitWriter<'_>) -> io::Result<()> {
        for (path, text) in UNITS {
            w.unit(path, &digest(text), text.as_bytes())?;
        }
        Ok(())
    }

    fn as_text(bytes: &[u8]) -> Option<String> {
        String::from_utf8(bytes.to_vec()).ok()
    }

    /// The OS's files: the in-memory system holds text, and a cache is
    /// bytes.
    fn saved(tmp: &tempfile::TempDir) -> (PathBuf, Vec<u8>) {
        let sys = OsSystem;
        let dir = tmp.path().join(".csis/cache");
        Cache::load(&sys, &dir, "k".into())
            .save(&sys, 2, &mut write_units)
            .unwrap();
        let bytes = sys.read_bytes(&dir.join(FILE)).unwrap().unwrap();
        (dir, bytes)
    }

    #[test]
    fn a_saved_cache_gives_back_each_unit_for_its_text_only() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = OsSystem;
        let (dir, _) = saved(&tmp);
        let cache = Cache::load(&sys, &dir, "k".into());
        assert_eq!(cache.notice(), None);
        let take = |path, text| cache.take(path, text, as_text);
        assert_eq!(take("images/a.yml", "a: 2\n"), None);
        assert_eq!(cache.taken_digest("images/a.yml"), None);
        assert_eq!(take("images/a.yml", "a: 1\n").as_deref(), Some("a: 1\n"));
        assert_eq!(take("images/b.yml", "a: 1\n"), None);
        assert_eq!(cache.taken(), 1);
        assert_eq!(cache.taken_digest("images/a.yml"), Some(digest("a: 1\n")));
        // Both units are needed to leave the file as it is.
        assert!(!cache.holds_only_taken(1));
        assert_eq!(take("users/u.yml", "u: 2\n").as_deref(), Some("u: 2\n"));
        assert!(cache.holds_only_taken(2));
        assert!(!cache.holds_only_taken(3));
        // Released, the bytes are gone; what was taken stays known.
        cache.release();
        assert_eq!(take("users/u.yml", "u: 2\n"), None);
        assert_eq!(cache.taken(), 2);
    }

    #[test]
    fn a_save_writes_exactly_the_units_it_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::load(&OsSystem, tmp.path(), "k".into());
        for count in [1, 3] {
            let e = cache.save(&OsSystem, count, &mut write_units).unwrap_err();
            assert!(e.to_string().contains("than counted"), "{e}");
        }
        assert!(!tmp.path().join(FILE).exists());
    }

    #[test]
    fn a_missing_cache_is_empty_and_silent() {
        let cache = Cache::load(&OsSystem, Path::new("/nonexistent/csis/cache"), "k".into());
        assert_eq!(cache.notice(), None);
        assert!(cache.holds_only_taken(0));
        assert!(!cache.holds_only_taken(1));
    }

    #[test]
    fn every_truncation_and_every_flipped_bit_is_ignored_with_a_notice() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = OsSystem;
        let (dir, whole) = saved(&tmp);
        let shown = dir.join(FILE).display().to_string();
        let path = dir.join(FILE);
        let ignored = |bytes: Vec<u8>| {
            sys.write_atomic(&path, &bytes, false).unwrap();
            let cache = Cache::load(&sys, &dir, "k".into());
            assert_eq!(cache.take("images/a.yml", "a: 1\n", as_text), None);
            cache.notice().map(str::to_string)
        };
        for len in 0..whole.len() {
            let notice = ignored(whole[..len].to_vec()).unwrap();
            assert!(notice.starts_with(&format!("note: ignoring the cache {shown}: ")));
        }
        for bit in 0..whole.len() * 8 {
            let mut bytes = whole.clone();
            bytes[bit / 8] ^= 1 << (bit % 8);
            assert!(ignored(bytes).is_some(), "bit {bit}");
        }
        assert_eq!(
            ignored(whole[..whole.len() - 1].to_vec()),
            Some(format!(
                "note: ignoring the cache {shown}: it is truncated or damaged (its checksum does \
not match); this run rebuilds it"
            ))
        );
    }

    #[test]
    fn a_cache_of_another_key_is_ignored_and_says_whose_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = OsSystem;
        let (dir, _) = saved(&tmp);
        let cache = Cache::load(&sys, &dir, "k2".into());
        assert_eq!(
            cache.notice().map(str::to_string),
            Some(format!(
                "note: ignoring the cache {}: it was written by another csis build or plugin set \
(k, not k2); this run rebuilds it",
                dir.join(FILE).display()
            ))
        );
        assert_eq!(cache.take("images/a.yml", "a: 1\n", as_text), None);
    }
}
