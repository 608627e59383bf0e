//! The scripts the images' modifications name, as the persisted cache
//! keeps them (issue 40). The load must read them before anything is
//! fingerprinted, and they are known only from the structured images
//! (`plan::fingerprint::referenced_files`): 2,000 images of the
//! reference tree structured, a tenth of a plan after an edit, to learn a
//! list that an edit of an instances file cannot change.
//!
//! The list reads the images, the builders, cfg/, meta-state, the files
//! interpolation reads and the environment. So the key is what the load
//! has read of the tree but its instances files when it asks
//! (`load::world::world_before_scripts`), kept only while no item of that
//! world names another item in its templates
//! (`load::world::world_names_no_item`), and, inside the unit, the values
//! of the environment variables the writing process had looked up.
//! Nothing is kept of a process that read the clock or the whole
//! environment, ran with overlays or `--undeclare`, had an identity set
//! or read remote state for interpolation.

use csis_model::packed::{read_len, read_str, write_len, write_str};

use crate::db::Db;
use crate::db::Tree;
use crate::db::system::digest_parts;
use crate::load::interp::Reads;
use crate::load::kept_env::KeptEnv;
use crate::load::kept_world::names_no_item;
use crate::load::world::world_before_scripts;

/// Where the cache keeps the unit: a unit of the tree, not of a file (no
/// file's path starts with a NUL).
pub const UNIT: &str = "\0scripts";

/// What the unit is kept with besides the world the load had read.
const TAG: &str = "csis scripts";

/// The key of the unit, from what the load has read when it asks.
fn key(db: &dyn Db, tree: Tree, interpolated: &Reads) -> Option<[u8; 32]> {
    let world = world_before_scripts(db, tree, interpolated)?;
    Some(digest_parts([TAG.as_bytes(), world.as_slice()]))
}

/// The scripts the kept unit names, sorted and unique, when every input
/// it was kept with is as it was. Asked once, by the load, with what
/// interpolation read; the key is noted for the writer ([`encode`]),
/// which would otherwise read every entry for interpolation again.
pub fn kept_scripts(db: &dyn Db, tree: Tree, interpolated: &Reads) -> Option<Vec<String>> {
    let cache = db.cache()?;
    let key = key(db, tree, interpolated)?;
    cache.note_key(UNIT, key);
    if !cache.holds(UNIT) {
        return None;
    }
    cache.take(UNIT, &key, |bytes| {
        let (env, scripts) = decode(bytes)?;
        env.holds(db, tree).then_some(scripts)
    })
}

/// The bytes to keep and the digest to keep them with, when they may be
/// kept (see the module's comment): `scripts`, the list this process
/// read, under the key the load noted. Not asked of a unit this process
/// took.
pub fn encode(db: &dyn Db, tree: Tree, scripts: &[String]) -> Option<([u8; 32], Vec<u8>)> {
    if !names_no_item(db, tree) {
        return None;
    }
    let key = db.cache()?.noted_key(UNIT)?;
    let env = KeptEnv::of_process(db, tree)?;
    Some((key, bytes_of(&env, scripts)))
}

fn bytes_of(env: &KeptEnv, scripts: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    env.write(&mut out);
    write_len(scripts.len(), &mut out);
    for path in scripts {
        write_str(path, &mut out);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<(KeptEnv, Vec<String>)> {
    let mut at = 0;
    let env = KeptEnv::read(bytes, &mut at)?;
    let n = read_len(bytes, &mut at)?;
    let mut scripts: Vec<String> = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let path = read_str(bytes, &mut at)?.to_string();
        // Sorted and unique, as the images' list is.
        if scripts.last().is_some_and(|last| *last >= path) {
            return None;
        }
        scripts.push(path);
    }
    (at == bytes.len()).then_some((env, scripts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_reads_back_as_written_and_a_short_long_or_unsorted_one_not_at_all() {
        let env = KeptEnv::now_for_test();
        let scripts = vec!["scripts/a.sh".to_string(), "scripts/b.sh".to_string()];
        let bytes = bytes_of(&env, &scripts);
        assert_eq!(decode(&bytes), Some((env.clone(), scripts.clone())));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        let unsorted: Vec<String> = scripts.iter().rev().cloned().collect();
        assert_eq!(decode(&bytes_of(&env, &unsorted)), None);
    }
}
