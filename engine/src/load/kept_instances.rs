//! An instances file's checks as the persisted cache keeps them (issue
//! 40): a fresh process whose instances file, and everything that is not
//! an instances file, are as they were knows the file's checks found
//! nothing and does not run them. An edit of one instances file then
//! re-checks that file alone: its 10 instances, not the tree's 5,000.
//!
//! An instance's checks (`check::item_checks`) read its own entry, the
//! image, storages, groups and users it names, the builders, cfg/,
//! meta-state, and the builders' hooks they call (user-data). None of
//! those is another instances file, so the key ([`key`]) is the file's
//! text, the digest of every input of the tree but the instances files
//! ([`world`]), which of its entries the index takes, and, inside the
//! unit, the values of the environment variables the writing process
//! had looked up. Three things could make an instance read another, and
//! each keeps the file out:
//!
//! - a template naming another item (`StructuredItem::reads_items`);
//! - a builder's hook reading another instance while it answers for one
//!   (`plan::hook_context::EngineContext::about`): the process keeps no
//!   instances file at all (`Cache::reached_across`);
//! - a file under instances/ that declares anything but instances: it is
//!   part of [`world`], never kept.
//!
//! As for users, nothing is kept of a process that read the clock or the
//! whole environment, ran with overlays or `--undeclare`, or could
//! decrypt (an identity is set).

use csis_model::ItemKind;
use csis_model::packed::{read_len, write_len};
use csis_secrets::IdentitySource;

use crate::db::system::digest_parts;
use crate::db::{Db, SourceFile, Tree};
use crate::load::items::{indexed_in_file, item_file_entries};
use crate::load::items_model::structured_item;
use crate::load::kept_env::{KeptEnv, keyable};

/// What a unit's path adds to its file's (no path holds a NUL).
const SUFFIX: &str = "\0instances";

/// The path the cache keeps `path`'s checks under.
pub fn unit_path(path: &str) -> String {
    format!("{path}{SUFFIX}")
}

/// Whether a unit of the cache is an instances file's checks (asked for
/// after the load, so its bytes are held past it).
pub fn is_unit_path(path: &str) -> bool {
    path.ends_with(SUFFIX)
}

/// What the cache kept of one instances file: that its checks found
/// nothing, for this many instances, under these variables' values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptInstances {
    env: KeptEnv,
    instances: usize,
}

/// The file's kept checks, when every input they were computed from is
/// as it was. Answered without a query for a file the cache holds no
/// unit for (every file, without a cache).
pub fn kept_instances(db: &dyn Db, file: SourceFile) -> Option<&KeptInstances> {
    let held = db.cache()?.holds(&unit_path(file.path(db)));
    held.then(|| taken_instances(db, file).as_ref()).flatten()
}

#[salsa::tracked(returns(ref))]
fn taken_instances(db: &dyn Db, file: SourceFile) -> Option<KeptInstances> {
    let cache = db.cache()?;
    let tree = file.tree(db);
    let instances = instances_of(db, file)?;
    let key = key(db, file)?;
    cache.take(&unit_path(file.path(db)), &key, |bytes| {
        let kept = decode(bytes)?;
        (kept.instances == instances && kept.env.holds(db, tree)).then_some(kept)
    })
}

/// The bytes to keep for `file` and the digest to keep them with, when
/// they may be kept (see the module's comment). `found_nothing`: whether
/// the file's checks found nothing, asked once every file's checks have
/// run (a hook reading across instances is noted as they run). Not asked
/// of a unit this process took: the cache writes its loaded bytes back.
pub fn encode(
    db: &dyn Db,
    file: SourceFile,
    found_nothing: impl FnOnce() -> bool,
) -> Option<([u8; 32], Vec<u8>)> {
    let tree = file.tree(db);
    let cache = db.cache()?;
    let instances = instances_of(db, file).filter(|n| *n > 0)?;
    let reads = cache.env_reads();
    if reads.read_clock() || cache.reached_across() || !found_nothing() {
        return None;
    }
    let vars = reads.vars()?;
    let reads_another = indexed_in_file(db, file).iter().any(|id| {
        let si = structured_item(db, *id);
        !si.secrets.is_empty() || si.reads_items
    });
    if reads_another {
        return None;
    }
    let key = key(db, file)?;
    let kept = KeptInstances {
        env: KeptEnv::now(db, tree, vars),
        instances,
    };
    Some((crate::db::cache::digest(&key), bytes_of(&kept)))
}

/// How many items the index takes from `file`, when it may be kept.
fn instances_of(db: &dyn Db, file: SourceFile) -> Option<usize> {
    is_instances_file(db, file).then(|| indexed_in_file(db, file).len())
}

/// A file under instances/ that declares instances and nothing else: what
/// may be kept, and what [`world`] leaves out.
fn is_instances_file(db: &dyn Db, file: SourceFile) -> bool {
    let under = file
        .path(db)
        .split_once('/')
        .is_some_and(|(dir, _)| dir == ItemKind::INSTANCES.dir());
    let entries = &item_file_entries(db, file).items;
    under && !entries.is_empty() && entries.iter().all(|e| e.kind == ItemKind::INSTANCES)
}

/// What a unit of `file` is kept with: its text, the [`world`], and the
/// names of the entries the index takes from it (which follow from the
/// other files when a name is declared twice). `None` when nothing of
/// this tree may be kept.
fn key(db: &dyn Db, file: SourceFile) -> Option<String> {
    let world = world(db, file.tree(db)).as_ref()?;
    let names = indexed_in_file(db, file)
        .iter()
        .map(|id| id.name(db).as_str());
    let parts = [
        b"csis instances checks".as_slice(),
        file.text(db).as_bytes(),
        world.as_slice(),
    ]
    .into_iter()
    .chain(names.map(str::as_bytes));
    Some(blake3::Hash::from(digest_parts(parts)).to_hex().to_string())
}

/// The digest of every input of the tree an instance's checks may read:
/// every file but the instances files (cfg/, the other item files,
/// meta-state, the files the configuration names, remote state read for
/// interpolation), with its path, and what the load learnt of the paths
/// template chains name. `None` with overlays, `--undeclare` or an
/// identity set.
#[salsa::tracked(returns(ref))]
fn world(db: &dyn Db, tree: Tree) -> Option<[u8; 32]> {
    if !keyable(db, tree) || !matches!(tree.identities(db), IdentitySource::Unset) {
        return None;
    }
    let items = tree
        .item_files(db)
        .iter()
        .map(|f| f.file)
        .filter(|f| !is_instances_file(db, *f));
    let files = tree
        .cfg_files(db)
        .iter()
        .copied()
        .chain(items)
        .chain(tree.meta_files(db).iter().copied())
        .chain(tree.aux_files(db).iter().copied())
        .flat_map(|f| [f.path(db).as_bytes(), f.text(db).as_bytes()]);
    let facts = tree.path_facts(db).iter().flat_map(|(path, fact)| {
        let canonical = fact
            .canonical
            .as_ref()
            .map_or(&b"\0absent"[..], |p| p.as_os_str().as_encoded_bytes());
        [
            path.as_bytes(),
            canonical,
            if fact.symlink { b"link" } else { b"file" },
            fact.digest.as_deref().map_or(&b"\0none"[..], str::as_bytes),
        ]
    });
    let parts = [b"csis world".as_slice(), tree.root_display(db).as_bytes()]
        .into_iter()
        .chain(files)
        .chain(facts);
    Some(digest_parts(parts))
}

fn bytes_of(kept: &KeptInstances) -> Vec<u8> {
    let mut out = Vec::new();
    kept.env.write(&mut out);
    write_len(kept.instances, &mut out);
    out
}

fn decode(bytes: &[u8]) -> Option<KeptInstances> {
    let mut at = 0;
    let env = KeptEnv::read(bytes, &mut at)?;
    let instances = read_len(bytes, &mut at)?;
    (at == bytes.len()).then_some(KeptInstances { env, instances })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_reads_back_as_written_and_a_short_or_long_one_not_at_all() {
        let kept = KeptInstances {
            env: KeptEnv::now_for_test(),
            instances: 10,
        };
        let bytes = bytes_of(&kept);
        assert_eq!(decode(&bytes), Some(kept));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
    }

    #[test]
    fn a_unit_path_is_neither_a_file_path_nor_a_users_unit() {
        let path = unit_path("instances/hosts-000.yml");
        assert!(is_unit_path(&path));
        assert!(!crate::load::kept_users::is_unit_path(&path));
        assert!(!is_unit_path("instances/hosts-000.yml"));
        assert!(!is_unit_path(&crate::load::kept_users::unit_path(
            "instances/hosts-000.yml"
        )));
    }
}
