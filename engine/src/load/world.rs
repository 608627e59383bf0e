//! The tree but its instances files: a digest of every input an
//! instance's checks, an image's fingerprint or anything else but an
//! instance may read (issue 40). What is computed from these alone is
//! kept in the persisted cache under this digest, so an edit of an
//! instances file leaves it as it was (`load::kept_instances`,
//! `plan::kept_fingerprints`, `check::kept_capabilities`); an edit of any
//! other file changes it.

use csis_secrets::IdentitySource;

use crate::db::files::text_digest;
use crate::db::system::digest_parts;
use crate::db::{Db, SourceFile, Tree};
use crate::load::items::{indexed_in_file, item_index};
use crate::load::items_model::structured_item;
use crate::load::kept_env::keyable;
use crate::load::kept_users::kept_users;

/// A file under instances/ that declares instances and nothing else: what
/// `load::kept_instances` may keep, and what [`world`] leaves out.
/// The index knows them (`ItemIndex::instances_only`).
pub(crate) fn is_instances_file(db: &dyn Db, file: SourceFile) -> bool {
    item_index(db, file.tree(db)).instances_only.contains(&file)
}

/// The digest of every input of the tree but its instances files: every
/// other file (cfg/, the other item files,
/// meta-state, the files the configuration names, remote state read for
/// interpolation), its path and its text's digest (an item file's hashed
/// by the worker that took its entries from the cache, where hashing
/// every text here kept one core busy for a thirtieth of a plan after an
/// edit; cfg/, meta-state and the other files here), and what the
/// load learnt of the paths template chains name. `None` with overlays,
/// `--undeclare` or an identity set.
#[salsa::tracked(returns(ref))]
pub(crate) fn world(db: &dyn Db, tree: Tree) -> Option<[u8; 32]> {
    digest_of_world(db, tree, tree.aux_files(db), true)
}

/// What the load has read of the world when it asks which scripts the
/// images' modifications name (`load::kept_scripts`): the [`world`]
/// with, of the files the configuration names, only those interpolation
/// reads (`interpolated`), and no path facts yet; the load notes it for
/// the cache's writer (`Cache::note_key`). `None` also when
/// interpolation reads remote state.
pub(crate) fn world_before_scripts(
    db: &dyn Db,
    tree: Tree,
    interpolated: &crate::load::interp::Reads,
) -> Option<[u8; 32]> {
    if !interpolated.remote.is_empty() {
        return None;
    }
    let aux: Vec<SourceFile> = tree
        .aux_files(db)
        .iter()
        .copied()
        .filter(|f| interpolated.files.iter().any(|p| **p == **f.path(db)))
        .collect();
    digest_of_world(db, tree, &aux, false)
}

fn digest_of_world(
    db: &dyn Db,
    tree: Tree,
    aux: &[SourceFile],
    with_facts: bool,
) -> Option<[u8; 32]> {
    if !keyable(db, tree) || !matches!(tree.identities(db), IdentitySource::Unset) {
        return None;
    }
    let instances = &item_index(db, tree).instances_only;
    let items = tree
        .item_files(db)
        .iter()
        .map(|f| f.file)
        .filter(|f| !instances.contains(f));
    let files = tree
        .cfg_files(db)
        .iter()
        .copied()
        .chain(items)
        .chain(tree.meta_files(db).iter().copied())
        .chain(aux.iter().copied())
        .map(|f| (f.path(db), text_digest(db, f)))
        .collect::<Vec<_>>();
    let files = files
        .iter()
        .flat_map(|(path, text)| [path.as_bytes(), text.as_slice()]);
    let facts = with_facts.then(|| tree.path_facts(db));
    let facts = facts
        .iter()
        .flat_map(|facts| facts.iter())
        .flat_map(|(path, fact)| {
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

/// The key of a unit of the tree kept under the world: `tag` (which
/// unit it is) and the [`world`]'s digest. `None` when nothing of this
/// tree may be kept.
fn world_key(db: &dyn Db, tree: Tree, tag: &str) -> Option<[u8; 32]> {
    let world = world(db, tree).as_ref()?;
    Some(digest_parts([tag.as_bytes(), world.as_slice()]))
}

/// The unit of the tree at `unit`, kept under `tag` and the world, as
/// `read` makes it of its bytes (the units of the tree:
/// `plan::kept_fingerprints`, `check::kept_capabilities`).
pub(crate) fn take_under_world<T>(
    db: &dyn Db,
    tree: Tree,
    unit: &str,
    tag: &str,
    read: impl FnOnce(&bytes::Bytes) -> Option<T>,
) -> Option<T> {
    db.cache()?
        .take_shared(unit, &world_key(db, tree, tag)?, read)
}

/// The key to keep a unit of the tree under, `tag` and the world; `None`
/// when nothing may be kept under the world ([`world_names_no_item`]).
/// Asked by the cache's writer, once the world's items are structured.
pub(crate) fn key_to_keep(db: &dyn Db, tree: Tree, tag: &str) -> Option<[u8; 32]> {
    if !world_names_no_item(db, tree) {
        return None;
    }
    world_key(db, tree, tag)
}

/// The value of `name`'s row, in rows a unit keeps ([`sort_unique`]).
pub(crate) fn row<'a, V>(rows: &'a [(String, V)], name: &str) -> Option<&'a V> {
    let at = rows.binary_search_by(|(n, _)| n.as_str().cmp(name)).ok()?;
    rows.get(at).map(|(_, v)| v)
}

/// Rows a unit keeps, sorted by key and each key once, as its readers
/// search them ([`row`]).
pub(crate) fn sort_unique<K: Ord, V>(rows: &mut Vec<(K, V)>) {
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows.dedup_by(|a, b| a.0 == b.0);
}

/// Whether no item of the world names another item in its templates
/// (`StructuredItem::reads_items`). Only then does the world depend on
/// nothing an instances file declares: an image whose group is
/// `{{ box.description }}`, or whose template names an item that does not
/// exist until an instance takes that name, reads the instances files. So
/// what is kept under [`world`] is written only when this holds, by a
/// process that has structured the world's items (a kept users file's
/// users read no item, or it would not have been kept); a later process
/// whose world has the same texts has items with the same templates,
/// which name no item either.
#[salsa::tracked]
pub(crate) fn world_names_no_item(db: &dyn Db, tree: Tree) -> bool {
    let instances = &item_index(db, tree).instances_only;
    tree.item_files(db)
        .iter()
        .map(|f| f.file)
        .filter(|f| !instances.contains(f) && kept_users(db, *f).is_none())
        .all(|f| {
            indexed_in_file(db, f)
                .iter()
                .all(|id| !structured_item(db, *id).reads_items)
        })
}
