//! The tree's input fingerprints as the persisted cache keeps them (issue
//! 40): a fresh process whose tree is as it was but for its instances
//! files takes every series' fingerprint from the cache instead of
//! hashing its chain, modifications and scripts again.
//!
//! A fingerprint reads the images and OS builders of its chain, the
//! modification builders, the scripts and template files they name,
//! cfg/ and the pins (`plan::fingerprint`), never an instance and no
//! builder's hook. So its key is the digest of the tree but its
//! instances files (`load::world`, kept only while no item of that world
//! names another item in its templates, which could be an instance),
//! and, inside the unit, the values of
//! the environment variables the writing process had looked up (an
//! image's templates may read one). Nothing is kept of a process that
//! read the clock or the whole environment, ran with overlays or
//! `--undeclare`, or had an identity set; nor of one that did not compute
//! the fingerprints (`validate`): its cache does without them.

use csis_model::packed::{read_len, read_str, write_len, write_str};

use crate::db::{Db, Tree};
use crate::load::kept_env::KeptEnv;
use crate::load::world::{key_to_keep, sort_unique, take_under_world};

/// Where the cache keeps the tree's fingerprints: a unit of the tree, not
/// of a file (no file's path starts with a NUL).
pub const UNIT: &str = "\0fingerprints";

/// What the unit is kept with besides the world's digest.
const TAG: &str = "csis fingerprints";

/// Every series' fingerprint on each of its runtimes, sorted by series
/// and runtime; `None` where the series has none (an image that did not
/// structure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptFingerprints {
    env: KeptEnv,
    series: Vec<((String, String), Option<InputFingerprint>)>,
}

/// What a plan keeps of a fingerprint: the hash, and the one field the
/// emitters read. The fields it hashes are computed again when asked
/// (`plan::fingerprint::fingerprint_detail`): only `--explain` and build
/// records read them, and keeping them was a fourteenth of a cold plan's
/// heap. Defined here, where the cache keeps it, and used through
/// `plan::fingerprint`, which asks this file (not the reverse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFingerprint {
    pub hex: String,
    pub bake_disk_size: Option<String>,
}

/// The fingerprint of `series` on `runtime` when the tree's are kept:
/// `Some(None)` for a series kept without one, `None` when nothing is
/// kept for it.
pub fn kept_fingerprint<'db>(
    db: &'db dyn Db,
    tree: Tree,
    series: &str,
    runtime: &str,
) -> Option<Option<&'db InputFingerprint>> {
    // A query only when the cache holds the unit: a cold plan asks this
    // of every series.
    if !db.cache()?.holds(UNIT) {
        return None;
    }
    let kept = taken_fingerprints(db, tree).as_ref()?;
    let at = kept
        .series
        .binary_search_by(|((s, r), _)| (s.as_str(), r.as_str()).cmp(&(series, runtime)))
        .ok()?;
    kept.series.get(at).map(|(_, fp)| fp.as_ref())
}

#[salsa::tracked(returns(ref))]
fn taken_fingerprints(db: &dyn Db, tree: Tree) -> Option<KeptFingerprints> {
    take_under_world(db, tree, UNIT, TAG, |bytes| {
        decode(bytes).filter(|kept| kept.env.holds(db, tree))
    })
}

/// The bytes to keep and the digest to keep them with, when they may be
/// kept (see the module's comment). `fingerprints`: every series' on each
/// of its runtimes, asked only when they may be (the writer computes them
/// from `plan::fingerprint`). Not asked of a unit this process took: the
/// cache writes its loaded bytes back.
pub fn encode(
    db: &dyn Db,
    tree: Tree,
    fingerprints: impl FnOnce() -> Vec<((String, String), Option<InputFingerprint>)>,
) -> Option<([u8; 32], Vec<u8>)> {
    if !db.cache()?.fingerprinted() {
        return None;
    }
    let key = key_to_keep(db, tree, TAG)?;
    let mut series = fingerprints();
    sort_unique(&mut series);
    // What the fingerprints read, once they are all computed.
    let kept = KeptFingerprints {
        env: KeptEnv::of_process(db, tree)?,
        series,
    };
    Some((key, bytes_of(&kept)))
}

fn bytes_of(kept: &KeptFingerprints) -> Vec<u8> {
    let mut out = Vec::new();
    kept.env.write(&mut out);
    write_len(kept.series.len(), &mut out);
    for ((series, runtime), fp) in &kept.series {
        write_str(series, &mut out);
        write_str(runtime, &mut out);
        // None is 0; a fingerprint 1 with its hash, then 0 or 1 and the
        // bake disk size.
        match fp {
            None => write_len(0, &mut out),
            Some(InputFingerprint {
                hex,
                bake_disk_size,
            }) => {
                write_len(1, &mut out);
                write_str(hex, &mut out);
                match bake_disk_size {
                    None => write_len(0, &mut out),
                    Some(size) => {
                        write_len(1, &mut out);
                        write_str(size, &mut out);
                    }
                }
            }
        }
    }
    out
}

fn decode(bytes: &[u8]) -> Option<KeptFingerprints> {
    let mut at = 0;
    let env = KeptEnv::read(bytes, &mut at)?;
    let n = read_len(bytes, &mut at)?;
    let mut series: Vec<((String, String), Option<InputFingerprint>)> =
        Vec::with_capacity(n.min(bytes.len()));
    let optional = |at: &mut usize| -> Option<Option<String>> {
        match read_len(bytes, at)? {
            0 => Some(None),
            1 => Some(Some(read_str(bytes, at)?.to_string())),
            _ => None,
        }
    };
    for _ in 0..n {
        let key = (
            read_str(bytes, &mut at)?.to_string(),
            read_str(bytes, &mut at)?.to_string(),
        );
        // Sorted and unique, as [`kept_fingerprint`] searches them.
        if series.last().is_some_and(|(k, _)| *k >= key) {
            return None;
        }
        let fp = match optional(&mut at)? {
            None => None,
            Some(hex) => Some(InputFingerprint {
                hex,
                bake_disk_size: optional(&mut at)?,
            }),
        };
        series.push((key, fp));
    }
    (at == bytes.len()).then_some(KeptFingerprints { env, series })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprints_read_back_as_written_and_a_short_or_unsorted_unit_not_at_all() {
        let fp = |hex: &str, size: Option<&str>| {
            Some(InputFingerprint {
                hex: hex.into(),
                bake_disk_size: size.map(String::from),
            })
        };
        let key = |s: &str, r: &str| (s.to_string(), r.to_string());
        let kept = KeptFingerprints {
            env: KeptEnv::now_for_test(),
            series: vec![
                (key("alma", "here"), fp("aa", None)),
                (key("web", "aws"), None),
                (key("web", "here"), fp("bb", Some("20G"))),
            ],
        };
        let bytes = bytes_of(&kept);
        assert_eq!(decode(&bytes), Some(kept.clone()));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        let mut unsorted = kept;
        unsorted.series.reverse();
        assert_eq!(decode(&bytes_of(&unsorted)), None);
    }
}
