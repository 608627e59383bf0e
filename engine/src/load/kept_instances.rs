//! An instances file's checks as the persisted cache keeps them (issue
//! 40): a fresh process whose instances file, and everything that is not
//! an instances file, are as they were knows the file's checks found
//! nothing and does not run them. The unit also holds what the tree-wide
//! checks read of each instance (its image, its storages' names, its
//! builder: [`InstanceLinks`]), so a kept file's instances are not
//! structured at all unless a refusal needs where one is declared. An
//! edit of one instances file then structures and checks that file's 10
//! instances, not the tree's 5,000.
//!
//! An instance's checks (`check::item_checks`) read its own entry, the
//! image, storages, groups and users it names, the builders, cfg/,
//! meta-state, and the builders' hooks they call (user-data). None of
//! those is another instances file, so the key ([`key`]) is the file's
//! text, the digest of every input of the tree but the instances files
//! (`load::world`), which of its entries the index takes, and, inside the
//! unit, the values of the environment variables the writing process
//! had looked up. Four things could make an instance's results depend on
//! another instances file, and each keeps the file out:
//!
//! - a template of the instance naming another item
//!   (`StructuredItem::reads_items`);
//! - a template of an item of the world naming another item, which could
//!   be an instance (`load::world::world_names_no_item`): nothing is kept;
//! - a builder's hook reading another instance while it answers for one
//!   (`plan::hook_context::EngineContext::about_instance`): the process keeps none
//!   of the instances files whose checks it ran (`Cache::reached_across`;
//!   one it took was checked by a process where no hook read across, and
//!   the same inputs lead the same hooks to the same reads);
//! - a file under instances/ that declares anything but instances: it is
//!   part of the world, never kept.
//!
//! As for users, nothing is kept of a process that read the clock or the
//! whole environment, ran with overlays or `--undeclare`, or could
//! decrypt (an identity is set).

use std::sync::Arc;

use csis_model::ItemKind;
use csis_model::models::{Instance, Item, StorageMapping};
use csis_model::packed::{read_flag, read_len, read_str, write_flag, write_len, write_str};

use crate::db::files::text_digest;
use crate::db::system::digest_parts;
use crate::db::{Db, ItemSource, SourceFile, Tree};
use crate::load::items::{ItemId, indexed_entries, indexed_in_file, item_index};
use crate::load::items_model::structured_item;
use crate::load::kept_env::KeptEnv;
use crate::load::kept_world::names_no_item;
use crate::load::world::{is_instances_file, world};

/// What a unit's path puts before its file's: a NUL first, since it is
/// keyed by the tree but its instances files, as a unit of the tree is,
/// and a second one, since it is one file's too (the cache keeps these
/// units together, apart from the tree's whole ones: a change to the tree
/// rewrites the two shards, an edit of an instances file this one; no
/// file's path holds a NUL).
const PREFIX: &str = "\0instances\0";

/// The path the cache keeps `path`'s checks under.
pub fn unit_path(path: &str) -> String {
    format!("{PREFIX}{path}")
}

/// What the cache kept of one instances file: that its checks found
/// nothing, under these variables' values, and what the tree-wide checks
/// read of each of its instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptInstances {
    env: KeptEnv,
    /// Whether every storage its instances attach is of a type their
    /// image's chain carries (`check::capabilities::storages_carried`): a
    /// function of the file and the world, which key the unit, so the
    /// capabilities check need not read its instances again.
    storages_carried: bool,
    /// Each instance, in the order the index takes them.
    instances: Vec<KeptInstance>,
}

/// One instance of a kept file: the entry that declares it, and what the
/// tree-wide checks read of it (the capabilities, single-attach
/// cardinality, the cloud names its runtime derives), so that they need
/// not structure it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptInstance {
    entry: usize,
    links: Links,
}

/// What the tree-wide checks read of an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Links {
    image: Option<String>,
    storages: Vec<String>,
    builder: String,
}

impl KeptInstances {
    /// Whether the capabilities check found every storage the file's
    /// instances attach carried.
    pub fn storages_carried(&self) -> bool {
        self.storages_carried
    }

    /// What the tree-wide checks read of the instance the file's
    /// `entry`-th entry declares.
    pub fn links(&self, entry: usize) -> Option<InstanceLinks<'_>> {
        self.instance(entry).map(InstanceLinks::Kept)
    }

    /// The instance the file's `entry`-th entry declares.
    fn instance(&self, entry: usize) -> Option<&KeptInstance> {
        let at = self
            .instances
            .binary_search_by_key(&entry, |i| i.entry)
            .ok()?;
        self.instances.get(at)
    }
}

/// What the tree-wide checks read of an instance: from its kept file, or
/// from the structured instance (and only then is it structured).
pub enum InstanceLinks<'db> {
    Kept(&'db KeptInstance),
    Structured(&'db Instance, &'db [StorageMapping]),
}

impl InstanceLinks<'_> {
    /// The image it launches, as written.
    pub fn image(&self) -> Option<&str> {
        match self {
            InstanceLinks::Kept(k) => k.links.image.as_deref(),
            InstanceLinks::Structured(inst, _) => inst.image.as_deref(),
        }
    }

    /// The (normalized) names of the storages it attaches.
    pub fn storages(&self) -> Vec<&str> {
        match self {
            InstanceLinks::Kept(k) => k.links.storages.iter().map(String::as_str).collect(),
            InstanceLinks::Structured(_, mappings) => {
                mappings.iter().map(|m| m.name.as_str()).collect()
            }
        }
    }

    /// Its instance builder, as written (`type:`).
    pub fn builder(&self) -> &str {
        match self {
            InstanceLinks::Kept(k) => &k.links.builder,
            InstanceLinks::Structured(inst, _) => &inst.root.named.type_,
        }
    }
}

/// An instance of the tree as the tree-wide checks hold it: its name and
/// the entry the index takes it from, not its id (interning the tree's
/// 15,000 instances for the capabilities and the attachments was a tenth
/// of a plan after an edit that left all but one file kept; issue 40).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceRef {
    pub name: Arc<str>,
    source: ItemSource,
    /// Its id, when the process took no instances file: every instance
    /// is then interned by its file's checks, and looking each up again
    /// three times was 4% of a plan after an image's edit.
    id: Option<salsa::Id>,
}

impl InstanceRef {
    /// The instance the index holds under `name`, declared at `source`.
    pub fn declared(name: Arc<str>, source: ItemSource) -> InstanceRef {
        InstanceRef {
            name,
            source,
            id: None,
        }
    }

    /// Its id: interned only when it is structured or a refusal names
    /// where it is declared.
    pub fn id<'db>(&self, db: &'db dyn Db, tree: Tree) -> ItemId<'db> {
        match self.id {
            Some(id) => salsa::plumbing::FromId::from_id(id),
            None => ItemId::new(db, tree, ItemKind::INSTANCES, &*self.name),
        }
    }

    /// What the tree-wide checks read of it: from its kept file by place,
    /// else as [`instance_links`] answers for its id.
    pub fn links<'db>(&self, db: &'db dyn Db, tree: Tree) -> Option<InstanceLinks<'db>> {
        if let ItemSource::Tree { file, index } = self.source
            && let Some(kept) = kept_links(db, file, index)
        {
            return Some(kept);
        }
        instance_links(db, self.id(db, tree))
    }
}

/// Every instance of the tree, in index order (the files', then what an
/// overlay declares), with what the tree-wide checks read of it
/// ([`InstanceRef::links`]): a kept file's unit read once for all its
/// instances, not two queries for each.
pub fn every_instance_links(
    db: &dyn Db,
    tree: Tree,
) -> Vec<(InstanceRef, Option<InstanceLinks<'_>>)> {
    let kind = ItemKind::INSTANCES;
    let taken = took_any(db, tree);
    let mut out = Vec::new();
    for f in tree.item_files(db).iter().filter(|f| f.dir == kind.dir()) {
        let kept = kept_file(db, f.file);
        for instance in declared_in(db, f.file, taken) {
            let links = match (kept, instance.source) {
                (Some(kept), ItemSource::Tree { index, .. }) => kept.links(index),
                _ => None,
            };
            let links = links.or_else(|| instance.links(db, tree));
            out.push((instance, links));
        }
    }
    for instance in overlaid(db, tree) {
        let links = instance.links(db, tree);
        out.push((instance, links));
    }
    out
}

/// Every instance as [`every_instance_links`] orders them, without their
/// links, and without the instances of the files `left_out` answers true
/// for.
pub fn every_instance_but(
    db: &dyn Db,
    tree: Tree,
    left_out: impl Fn(SourceFile) -> bool,
) -> Vec<InstanceRef> {
    let kind = ItemKind::INSTANCES;
    let taken = took_any(db, tree);
    let mut out: Vec<InstanceRef> = tree
        .item_files(db)
        .iter()
        .filter(|f| f.dir == kind.dir() && !left_out(f.file))
        .flat_map(|f| declared_in(db, f.file, taken))
        .collect();
    out.extend(overlaid(db, tree));
    out
}

/// The instances overlays declare, in index order.
fn overlaid(db: &dyn Db, tree: Tree) -> impl Iterator<Item = InstanceRef> + '_ {
    let overlaid = item_index(db, tree)
        .items
        .get(&ItemKind::INSTANCES)
        .into_iter()
        .flatten();
    overlaid
        .filter(|(_, source)| matches!(source, ItemSource::Overlay { .. }))
        .map(|(name, source)| InstanceRef::declared(name.clone(), *source))
}

/// The instances `file` declares, in index order.
pub fn file_instances(db: &dyn Db, file: SourceFile) -> Vec<InstanceRef> {
    declared_in(db, file, took_any(db, file.tree(db))).collect()
}

/// The instances `file` declares, each with its id when no instances
/// file was `taken` (its checks interned them all).
fn declared_in(
    db: &dyn Db,
    file: SourceFile,
    taken: bool,
) -> impl Iterator<Item = InstanceRef> + '_ {
    let kind = ItemKind::INSTANCES;
    // The same entries `indexed_in_file` interns, in its order.
    let mut ids = (!taken).then(|| indexed_in_file(db, file).iter());
    indexed_entries(db, file)
        .map(move |(index, item)| {
            let id = ids.as_mut().and_then(Iterator::next);
            (index, item, id.map(salsa::plumbing::AsId::as_id))
        })
        .filter(move |(_, item, _)| item.kind == kind)
        .map(move |(index, item, id)| InstanceRef {
            name: item.name.clone(),
            source: ItemSource::Tree { file, index },
            id,
        })
}

/// What the tree-wide checks read of instance `id`; `None` when it did
/// not structure into an instance.
pub fn instance_links<'db>(db: &'db dyn Db, id: ItemId<'db>) -> Option<InstanceLinks<'db>> {
    if let Some(kept) = kept_instance(db, id) {
        return Some(InstanceLinks::Kept(kept));
    }
    let si = structured_item(db, id);
    match si.item.as_deref() {
        Some(Item::Instance(inst)) => Some(InstanceLinks::Structured(inst, &si.storages)),
        _ => None,
    }
}

/// What the tree-wide checks read of the instance the `entry`-th entry
/// of `file` declares, when the file is kept: by its place, with no id
/// interned.
pub fn kept_links(db: &dyn Db, file: SourceFile, entry: usize) -> Option<InstanceLinks<'_>> {
    kept_file(db, file)?.links(entry)
}

/// The kept unit of `file`, for a reader of many of its instances
/// ([`KeptInstances::links`]): each reads no query again. The query
/// itself, not [`kept_instances`]: it is memoized per file (`None` for a
/// file without a unit), where asking the cache by path first built a
/// path per instance, 15,000 a plan. Asked once [`took_any`] holds.
pub fn kept_file(db: &dyn Db, file: SourceFile) -> Option<&KeptInstances> {
    if !took_any(db, file.tree(db)) {
        return None;
    }
    taken_instances(db, file).as_ref()
}

/// Instance `id`, when the file that declares it is kept.
fn kept_instance<'db>(db: &'db dyn Db, id: ItemId<'db>) -> Option<&'db KeptInstance> {
    // No lookup of the name when nothing can be kept.
    let tree = id.tree(db);
    if !took_any(db, tree) {
        return None;
    }
    let ItemSource::Tree { file, index } = *item_index(db, tree)
        .items
        .get(&ItemKind::INSTANCES)?
        .get(id.name(db).as_str())?
    else {
        return None;
    };
    kept_file(db, file)?.instance(index)
}

/// Whether this process took any instances file from the cache: false
/// without a cache, or after an edit of any file but an instances file
/// (a cold plan, an edit of the world). Asked first, so that the
/// tree-wide checks ask nothing of each instance when none was taken
/// (their three reads of 5,000 instances were a twentieth of a fresh
/// plan after an image edit).
fn took_any(db: &dyn Db, tree: Tree) -> bool {
    db.cache().is_some() && *any_taken(db, tree)
}

/// [`took_any`] with a cache: a query, so the files are asked once.
#[salsa::tracked]
fn any_taken(db: &dyn Db, tree: Tree) -> bool {
    tree.item_files(db)
        .iter()
        .filter(|f| f.dir == ItemKind::INSTANCES.dir())
        .any(|f| kept_instances(db, f.file).is_some())
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
        (kept.instances.len() == instances && kept.env.holds(db, tree)).then_some(kept)
    })
}

/// The bytes to keep for `file` and the digest to keep them with, when
/// they may be kept (see the module's comment). `found_nothing`: whether
/// the file's checks found nothing, asked once every file's checks have
/// run (a hook reading across instances is noted as they run);
/// `storages_carried`: what [`KeptInstances::storages_carried`] keeps.
/// Not asked of a unit this process took: the cache writes its loaded
/// bytes back.
pub fn encode(
    db: &dyn Db,
    file: SourceFile,
    found_nothing: impl FnOnce() -> bool,
    storages_carried: impl FnOnce() -> bool,
) -> Option<([u8; 32], Vec<u8>)> {
    let tree = file.tree(db);
    let cache = db.cache()?;
    instances_of(db, file).filter(|n| *n > 0)?;
    // The checks first: a hook reading across instances is noted as they
    // run.
    if !found_nothing() || !names_no_item(db, tree) {
        return None;
    }
    let reads = cache.env_reads();
    if reads.read_clock() || cache.reached_across() {
        return None;
    }
    let vars = reads.vars()?;
    let names = item_index(db, tree).items.get(&ItemKind::INSTANCES)?;
    let mut instances = Vec::new();
    for id in indexed_in_file(db, file) {
        let si = structured_item(db, *id);
        if !si.secrets.is_empty() || si.reads_items {
            return None;
        }
        let (Some(Item::Instance(inst)), ItemSource::Tree { index: entry, .. }) =
            (si.item.as_deref(), *names.get(id.name(db).as_str())?)
        else {
            return None;
        };
        instances.push(KeptInstance {
            entry,
            links: Links {
                image: inst.image.clone(),
                storages: si.storages.iter().map(|m| m.name.clone()).collect(),
                builder: inst.root.named.type_.to_string(),
            },
        });
    }
    let key = key(db, file)?;
    let kept = KeptInstances {
        env: KeptEnv::now(db, tree, vars),
        storages_carried: storages_carried(),
        instances,
    };
    Some((key, bytes_of(&kept)))
}

/// How many items the index takes from `file`, when it may be kept.
fn instances_of(db: &dyn Db, file: SourceFile) -> Option<usize> {
    is_instances_file(db, file).then(|| indexed_entries(db, file).count())
}

/// What a unit of `file` is kept with: its text, the [`world`], and the
/// names of the entries the index takes from it (which follow from the
/// other files when a name is declared twice). `None` when nothing of
/// this tree may be kept.
fn key(db: &dyn Db, file: SourceFile) -> Option<[u8; 32]> {
    let world = world(db, file.tree(db)).as_ref()?;
    let names = indexed_entries(db, file).map(|(_, item)| &*item.name);
    let text = text_digest(db, file);
    let parts = [
        b"csis instances checks".as_slice(),
        text.as_slice(),
        world.as_slice(),
    ]
    .into_iter()
    .chain(names.map(str::as_bytes));
    Some(digest_parts(parts))
}

fn bytes_of(kept: &KeptInstances) -> Vec<u8> {
    let mut out = Vec::new();
    kept.env.write(&mut out);
    write_flag(kept.storages_carried, &mut out);
    write_len(kept.instances.len(), &mut out);
    for instance in &kept.instances {
        let Links {
            image,
            storages,
            builder,
        } = &instance.links;
        write_len(instance.entry, &mut out);
        // An instance without an image is 0, one with an image 1 and it.
        match image {
            None => write_len(0, &mut out),
            Some(image) => {
                write_len(1, &mut out);
                write_str(image, &mut out);
            }
        }
        write_len(storages.len(), &mut out);
        for storage in storages {
            write_str(storage, &mut out);
        }
        write_str(builder, &mut out);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<KeptInstances> {
    let mut at = 0;
    let env = KeptEnv::read(bytes, &mut at)?;
    let storages_carried = read_flag(bytes, &mut at)?;
    let n = read_len(bytes, &mut at)?;
    let mut instances: Vec<KeptInstance> = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let entry = read_len(bytes, &mut at)?;
        // In entry order, as the index takes them
        // ([`KeptInstances::instance`] searches them).
        if instances.last().is_some_and(|i| i.entry >= entry) {
            return None;
        }
        let image = match read_len(bytes, &mut at)? {
            0 => None,
            1 => Some(read_str(bytes, &mut at)?.to_string()),
            _ => return None,
        };
        let n = read_len(bytes, &mut at)?;
        let mut storages = Vec::with_capacity(n.min(bytes.len()));
        for _ in 0..n {
            storages.push(read_str(bytes, &mut at)?.to_string());
        }
        let builder = read_str(bytes, &mut at)?.to_string();
        instances.push(KeptInstance {
            entry,
            links: Links {
                image,
                storages,
                builder,
            },
        });
    }
    (at == bytes.len()).then_some(KeptInstances {
        env,
        storages_carried,
        instances,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_reads_back_as_written_and_a_short_or_long_one_not_at_all() {
        let links = |image: Option<&str>, storages: &[&str]| Links {
            image: image.map(String::from),
            storages: storages.iter().map(|s| s.to_string()).collect(),
            builder: "vm".into(),
        };
        let kept = KeptInstances {
            env: KeptEnv::now_for_test(),
            storages_carried: true,
            instances: vec![
                KeptInstance {
                    entry: 0,
                    links: links(Some("web"), &["data", "logs"]),
                },
                KeptInstance {
                    entry: 2,
                    links: links(None, &[]),
                },
            ],
        };
        assert_eq!(kept.instance(2).map(|i| i.links.image.clone()), Some(None));
        assert_eq!(kept.instance(1), None);
        // Out of entry order, a unit could not be searched: refused.
        let mut reversed = kept.clone();
        reversed.instances.reverse();
        assert_eq!(decode(&bytes_of(&reversed)), None);
        let bytes = bytes_of(&kept);
        assert_eq!(decode(&bytes), Some(kept.clone()));
        let uncarried = KeptInstances {
            storages_carried: false,
            ..kept
        };
        assert_eq!(decode(&bytes_of(&uncarried)), Some(uncarried));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
    }

    #[test]
    fn a_unit_path_is_a_unit_of_the_tree_neither_a_file_path_nor_a_users_unit() {
        use crate::db::cache::is_tree_unit;
        let path = unit_path("instances/hosts-000.yml");
        assert!(is_tree_unit(&path));
        assert!(!crate::load::kept_users::is_unit_path(&path));
        assert!(!is_tree_unit("instances/hosts-000.yml"));
        assert!(!is_tree_unit(&crate::load::kept_users::unit_path(
            "instances/hosts-000.yml"
        )));
    }
}
