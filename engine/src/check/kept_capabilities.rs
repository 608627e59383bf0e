//! The world's part of the capabilities check as the persisted cache
//! keeps it (issue 40): a fresh process whose tree is as it was but for
//! its instances files takes, for each image, what its chain carries
//! (`check::capabilities`) and, for each storage, the capability type its
//! builder asks for, instead of walking 2,000 chains, their pins and
//! their groups again. Only the instances' part is then checked: which
//! storages the instances of each image attach, read from their kept
//! files or their structured items.
//!
//! What an image's chain carries reads the image, its chain, the OS
//! builders, the pins and build records, its group and the group builder;
//! a storage's type reads the storage and the storage builders. None of
//! those is an instances file, so the key is the digest of the tree but
//! its instances files (`load::world`, kept only while no item of that
//! world names another item in its templates), and, inside the unit, the
//! values of the environment variables the writing process had looked
//! up. An image whose own part found something (a group without an
//! identity builder, an identity type its base does not declare) is left
//! out, and checked whole: the unit holds no diagnostics. Nothing is kept
//! of a process that read the clock or the whole environment, ran with
//! overlays or `--undeclare`, or had an identity set.

use csis_model::packed::{read_len, read_str, write_len, write_str};

use crate::db::{Db, Tree};
use crate::load::kept_env::KeptEnv;
use crate::load::world::{key_to_keep, row, sort_unique, take_under_world};

/// Where the cache keeps the unit: a unit of the tree, not of a file (no
/// file's path starts with a NUL).
pub const UNIT: &str = "\0capabilities";

/// What the unit is kept with besides the world's digest.
const TAG: &str = "csis capabilities";

/// What an image's chain carries, against which the storages its
/// instances attach are checked: its root base, where the types come from
/// (`declaration`, or `pin:<build>` for a stamped build), and the storage
/// types. Defined here, where the cache keeps it, and used by
/// `check::capabilities`, which asks this file (not the reverse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carries {
    pub root: String,
    pub source: String,
    pub storage_types: Vec<String>,
}

/// Each image whose own part found nothing, with what its chain carries
/// (`None`: its instances' storages are not checked, as for an image
/// whose base is not an OS builder), and each storage's capability type;
/// both sorted by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptCapabilities {
    env: KeptEnv,
    images: Vec<(String, Option<Carries>)>,
    storages: Vec<(String, Option<String>)>,
}

/// What the writer hands [`encode`]: the kept images and storages, in any
/// order.
pub type Parts = (
    Vec<(String, Option<Carries>)>,
    Vec<(String, Option<String>)>,
);

/// The unit this process took, when every input it was kept with is as
/// it was. Answered without a query when the cache holds none (a cold
/// plan asks this of every image).
pub fn kept_capabilities(db: &dyn Db, tree: Tree) -> Option<&KeptCapabilities> {
    if !db.cache()?.holds(UNIT) {
        return None;
    }
    taken_capabilities(db, tree).as_ref()
}

/// What image `name`'s chain carries, when the unit holds the image:
/// `Some(None)` for an image whose storages are not checked.
pub(crate) fn kept_image<'db>(
    db: &'db dyn Db,
    tree: Tree,
    name: &str,
) -> Option<Option<&'db Carries>> {
    row(&kept_capabilities(db, tree)?.images, name).map(Option::as_ref)
}

/// Storage `name`'s capability type, when the unit holds the storage.
pub(crate) fn kept_storage<'db>(
    db: &'db dyn Db,
    tree: Tree,
    name: &str,
) -> Option<Option<&'db str>> {
    row(&kept_capabilities(db, tree)?.storages, name).map(Option::as_deref)
}

#[salsa::tracked(returns(ref))]
fn taken_capabilities(db: &dyn Db, tree: Tree) -> Option<KeptCapabilities> {
    take_under_world(db, tree, UNIT, TAG, |bytes| {
        decode(bytes).filter(|kept| kept.env.holds(db, tree))
    })
}

/// The bytes to keep and the digest to keep them with, when they may be
/// kept (see the module's comment). `to_keep`: the images' and storages'
/// parts, computed by the writer from `check::capabilities`. Not asked of
/// a unit this process took: the cache writes its loaded bytes back.
pub fn encode(
    db: &dyn Db,
    tree: Tree,
    to_keep: impl FnOnce() -> Parts,
) -> Option<([u8; 32], Vec<u8>)> {
    let key = key_to_keep(db, tree, TAG)?;
    let (mut images, mut storages) = to_keep();
    sort_unique(&mut images);
    sort_unique(&mut storages);
    // What they read, once they are all computed.
    let kept = KeptCapabilities {
        env: KeptEnv::of_process(db, tree)?,
        images,
        storages,
    };
    Some((key, bytes_of(&kept)))
}

fn write_optional(value: Option<&str>, out: &mut Vec<u8>) {
    match value {
        None => write_len(0, out),
        Some(value) => {
            write_len(1, out);
            write_str(value, out);
        }
    }
}

fn read_optional(bytes: &[u8], at: &mut usize) -> Option<Option<String>> {
    match read_len(bytes, at)? {
        0 => Some(None),
        1 => Some(Some(read_str(bytes, at)?.to_string())),
        _ => None,
    }
}

fn bytes_of(kept: &KeptCapabilities) -> Vec<u8> {
    let mut out = Vec::new();
    kept.env.write(&mut out);
    write_len(kept.images.len(), &mut out);
    for (name, carries) in &kept.images {
        write_str(name, &mut out);
        // An image whose storages are not checked is 0; one that carries
        // types 1, its root, source and types.
        match carries {
            None => write_len(0, &mut out),
            Some(Carries {
                root,
                source,
                storage_types,
            }) => {
                write_len(1, &mut out);
                write_str(root, &mut out);
                write_str(source, &mut out);
                write_len(storage_types.len(), &mut out);
                for t in storage_types {
                    write_str(t, &mut out);
                }
            }
        }
    }
    write_len(kept.storages.len(), &mut out);
    for (name, t) in &kept.storages {
        write_str(name, &mut out);
        write_optional(t.as_deref(), &mut out);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<KeptCapabilities> {
    let mut at = 0;
    let env = KeptEnv::read(bytes, &mut at)?;
    let n = read_len(bytes, &mut at)?;
    let mut images: Vec<(String, Option<Carries>)> = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let name = read_str(bytes, &mut at)?.to_string();
        // Sorted and unique, as [`kept_image`] searches them.
        if images.last().is_some_and(|(last, _)| *last >= name) {
            return None;
        }
        let carries = match read_len(bytes, &mut at)? {
            0 => None,
            1 => {
                let root = read_str(bytes, &mut at)?.to_string();
                let source = read_str(bytes, &mut at)?.to_string();
                let n = read_len(bytes, &mut at)?;
                let mut storage_types = Vec::with_capacity(n.min(bytes.len()));
                for _ in 0..n {
                    storage_types.push(read_str(bytes, &mut at)?.to_string());
                }
                Some(Carries {
                    root,
                    source,
                    storage_types,
                })
            }
            _ => return None,
        };
        images.push((name, carries));
    }
    let n = read_len(bytes, &mut at)?;
    let mut storages: Vec<(String, Option<String>)> = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let name = read_str(bytes, &mut at)?.to_string();
        if storages.last().is_some_and(|(last, _)| *last >= name) {
            return None;
        }
        storages.push((name, read_optional(bytes, &mut at)?));
    }
    (at == bytes.len()).then_some(KeptCapabilities {
        env,
        images,
        storages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_reads_back_as_written_and_a_short_long_or_unsorted_one_not_at_all() {
        let carries = |types: &[&str]| {
            Some(Carries {
                root: "alma".into(),
                source: "pin:web-1".into(),
                storage_types: types.iter().map(|t| t.to_string()).collect(),
            })
        };
        let kept = KeptCapabilities {
            env: KeptEnv::now_for_test(),
            images: vec![
                ("mid".into(), None),
                ("web".into(), carries(&["local", "nfs"])),
            ],
            storages: vec![("data".into(), Some("local".into())), ("logs".into(), None)],
        };
        let bytes = bytes_of(&kept);
        assert_eq!(decode(&bytes), Some(kept.clone()));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        let mut unsorted = kept.clone();
        unsorted.images.reverse();
        assert_eq!(decode(&bytes_of(&unsorted)), None);
        let mut unsorted = kept;
        unsorted.storages.reverse();
        assert_eq!(decode(&bytes_of(&unsorted)), None);
    }
}
