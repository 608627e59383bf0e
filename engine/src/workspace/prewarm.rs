//! A cold load on every core: the per-file and per-item queries (parse,
//! structure, the per-file checks, the fingerprints) computed in parallel,
//! so that the sequential queries that read them all find them memoized.
//! Each worker holds a handle on the same database, as generation's do.
//! What the main thread still computes alone (the tree-wide reports, the
//! bake plan) only concatenates and compares these results.

use csis_model::ItemKind;
use rayon::prelude::*;

use crate::db::{Database, SourceFile, Tree};
use crate::load::items::{ItemId, indexed_in_file, indexed_of_kind, item_file_entries, item_index};
use crate::load::items_model::structured_item;
use crate::load::kept_world::{WorldCheck, quiet_check};
use crate::plan::fingerprint::{SeriesKey, input_fingerprint};

/// The most items one worker takes at a time: rayon otherwise splits a
/// list into as few pieces as there are cores, and the last piece kept
/// one core busy for a tenth of a cold plan while the other had nothing
/// left to take. (Files and fingerprints, each several items' worth of
/// work, go fewer at a time.)
pub const PIECE: usize = 64;

/// Every item file parsed into its entries, and the meta-state records
/// validation and the plan read: megabytes on a large tree, each one
/// worker's task (listed first, so they start first) while the other
/// workers parse the item files. Read later, a record kept every worker
/// but one waiting for it.
pub fn parse_files(db: &Database, tree: Tree) {
    enum Job {
        Record(fn(&Database, Tree)),
        File(SourceFile),
    }
    let records: [fn(&Database, Tree); 6] = [
        |db, tree| {
            crate::state::launch_params::launch_record(db, tree);
        },
        |db, tree| {
            crate::check::groups::recorded_managed_groups(db, tree);
        },
        |db, tree| {
            crate::state::lineage::lineage(db, tree);
        },
        |db, tree| {
            crate::state::lineage::pins(db, tree);
        },
        |db, tree| {
            crate::state::lineage::releases(db, tree);
        },
        |db, tree| {
            crate::state::instance_state::recorded(db, tree);
        },
    ];
    let jobs: Vec<Job> = records
        .into_iter()
        .map(Job::Record)
        .chain(tree.item_files(db).iter().map(|f| Job::File(f.file)))
        .collect();
    jobs.par_iter()
        .with_max_len(PIECE / 4)
        .for_each_with(db.clone(), |db, job| match job {
            Job::Record(read) => read(db, tree),
            Job::File(file) => {
                item_file_entries(db, *file);
            }
        });
}

/// Every image structured: the load needs their modifications' scripts
/// (`referenced_files`) before it can read them.
pub fn structure_images(db: &Database, tree: Tree) {
    each_image(db, tree, |db, id| {
        structured_item(db, id);
    });
}

/// `query` of every image, on every core.
fn each_image(db: &Database, tree: Tree, query: impl Fn(&Database, ItemId<'_>) + Sync + Send) {
    indexed_of_kind(db, tree, ItemKind::IMAGES)
        .par_iter()
        .with_max_len(PIECE)
        .for_each_with(db.clone(), |db, id| query(db, *id));
}

/// Every item structured, then every image's capabilities, then every
/// file's checks beside the slowest tree-wide ones. The capabilities wait
/// for the structuring: each image's reads every instance's image
/// (`checked_instances_by_image`), and asked while instances were still
/// unstructured, one worker structured them all while the other waited
/// for it.
///
/// File by file, through the ids each file's checks read
/// (`indexed_in_file`): every item is then interned and looked up in the
/// index once, where a pass by name did both again (at ten times the
/// reference tree, neither table fits a cache; issue 40). A file's items
/// go [`PIECE`] at a time: the reference tree's 500 groups are one file,
/// which one worker structured while the other had nothing left to take.
pub fn structure_items(db: &Database, tree: Tree) {
    let files: Vec<SourceFile> = tree.item_files(db).iter().map(|f| f.file).collect();
    files
        .par_iter()
        .with_max_len(1)
        .for_each_with(db.clone(), |db, file| {
            // A users or instances file whose checks the cache kept, or a
            // file of the world it kept quiet: its items are structured
            // only if something asks for one.
            if crate::load::kept_quiet::kept_quiet(db, *file) {
                return;
            }
            // A file of a few items (an edited instances file, after the
            // cache answered for every other) is still split among the
            // workers: taken whole, it kept one busy while the others had
            // nothing left.
            let ids = indexed_in_file(db, *file);
            let piece = (ids.len() / (2 * rayon::current_num_threads())).clamp(1, PIECE);
            ids.par_chunks(piece).for_each_with(db.clone(), |db, ids| {
                for id in ids {
                    structured_item(db, *id);
                }
            });
        });
    let overlaid: Vec<(ItemKind, String)> = item_index(db, tree).overlay_declared.clone();
    overlaid
        .par_iter()
        .for_each_with(db.clone(), |db, (kind, name)| {
            structured_item(db, ItemId::new(db, tree, *kind, name.as_str()));
        });
    // The capabilities beside the files' checks: the first image's waits
    // for the instances by image, which one worker gathers alone.
    let (images, files, whole) = (db.clone(), db.clone(), db.clone());
    rayon::join(
        move || {
            each_image(&images, tree, |db, id| {
                crate::check::capabilities::image_findings(db, id);
            })
        },
        move || {
            rayon::join(
                move || check_files(&files, tree),
                move || check_tree(&whole, tree),
            )
        },
    );
}

/// Every item file's checks, its users' logins and the cloud names its
/// images, instances and storages derive.
fn check_files(db: &Database, tree: Tree) {
    let files: Vec<_> = tree.item_files(db).to_vec();
    files
        .par_iter()
        .with_max_len(PIECE / 8)
        .for_each_with(db.clone(), |db, f| {
            crate::check::item_checks::file_findings(db, f.file);
            // The logins across the tree, when the cache kept that they
            // found nothing, need no file's.
            if f.dir == ItemKind::USERS.dir() {
                if quiet_check(db, tree, WorldCheck::Logins) {
                    return;
                }
                crate::check::logins::file_logins(db, f.file);
            } else if crate::check::cloud_names::NAMED_KINDS
                .iter()
                .any(|k| k.dir() == f.dir)
            {
                crate::check::cloud_names::file_cloud_names(db, f.file);
            }
        });
}

/// The tree-wide checks that take longest, computed while the files'
/// checks are: asked after them, they kept one core busy and the other
/// idle (storage attachments, groups, the image graph).
fn check_tree(db: &Database, tree: Tree) {
    crate::check::validate::storage_diagnostics(db, tree);
    crate::check::groups::check_groups(db, tree);
    crate::plan::bakes::image_graph(db, tree);
}

/// The input fingerprint of each `(series, runtime)`: a chain's parent is
/// computed once, by whichever worker reaches it first.
pub fn fingerprints(db: &Database, tree: Tree, keys: &[(String, String)]) {
    // Every series' fingerprint, so the cache may keep them
    // (plan/kept_fingerprints.rs).
    if let Some(cache) = crate::db::Db::cache(db) {
        cache.note_fingerprinted();
    }
    keys.par_iter()
        .with_max_len(PIECE / 4)
        .for_each_with(db.clone(), |db, (series, runtime)| {
            input_fingerprint(
                db,
                tree,
                SeriesKey::new(db, series.clone(), runtime.clone()),
            );
        });
}
