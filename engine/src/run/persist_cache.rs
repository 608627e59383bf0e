//! The persisted cache written back at the end of `plan`, `validate` and
//! `run` (the store is `db::cache`, what it keeps of a file
//! `load::entries`).

use rayon::prelude::*;

use crate::check::groups::check_groups;
use crate::check::item_checks::{check_every_file, file_findings};
use crate::check::logins::login_diagnostics;
use crate::check::{capabilities, kept_capabilities};
use crate::db::SourceFile;
use crate::db::cache::{SHARDS, shard_of};
use crate::db::files::text_digest;
use crate::db::system::System;
use crate::db::{Database, Tree};
use crate::load::entries;
use crate::load::items::indexed_of_kind;
use crate::load::items::item_file_entries;
use crate::load::kept_world::WorldCheck;
use crate::load::{kept_instances, kept_scripts, kept_users, kept_world};
use crate::plan::bakes::bake_keys;
use crate::plan::bakes::image_series;
use crate::plan::fingerprint::{SeriesKey, input_fingerprint, referenced_files};
use crate::plan::kept_fingerprints;
use crate::state::storage_state;
use crate::workspace::Workspace;
use csis_model::ItemKind;

/// What the cache directory's own .gitignore holds: everything in it.
const GITIGNORE: &str = "# Written by csis: its persisted cache is never committed.\n*\n";

/// Write the shards of the cache the workspace was loaded with that do
/// not hold exactly what this process would keep in them; an edit
/// rewrites its file's shard alone.
pub fn save_cache(ws: &Workspace, system: &dyn System) -> Result<(), String> {
    let Some(cache) = crate::db::Db::cache(&ws.db) else {
        return Ok(());
    };
    let (db, tree) = (&ws.db, ws.tree);
    // Every file's checks first: whether a hook read across instances is
    // known only once they have all run.
    check_every_file(db, tree);
    // The users and instances files' checks on every core: each digests
    // its file for its key. A unit taken from the cache is written back
    // with the bytes it was loaded with.
    let files = tree.item_files(db);
    let world_taken = kept_world::kept_world(db, tree).is_some();
    let checks: Vec<Option<ToKeep>> = files
        .par_iter()
        .map_with(db.clone(), |db, f| {
            let found_nothing = || file_findings(db, f.file).is_empty();
            let path = f.file.path(db);
            // A process that took the world's files asked nothing of a
            // users file, which is part of that world: its unit goes back
            // as it was loaded, unread.
            let users = kept_users::unit_path(path);
            if world_taken && let Some(digest) = cache.keep_untaken(&users) {
                return Some((users, Unit::Held(digest), true));
            }
            held_or_encoded(cache, users, || {
                kept_users::encode(db, f.file, found_nothing)
            })
            .or_else(|| {
                held_or_encoded(cache, kept_instances::unit_path(path), || {
                    kept_instances::encode(db, f.file, found_nothing, || {
                        capabilities::storages_carried(db, f.file)
                    })
                })
            })
        })
        .collect();
    // The tree's fingerprints (plan/kept_fingerprints.rs).
    let fingerprints = held_or_encoded(cache, kept_fingerprints::UNIT.to_string(), || {
        kept_fingerprints::encode(db, tree, || {
            bake_keys(db, tree)
                .into_iter()
                .map(|(s, r)| {
                    let key = SeriesKey::new(db, s.clone(), r.clone());
                    let fp = input_fingerprint(db, tree, key).clone();
                    ((s, r), fp)
                })
                .collect()
        })
    });
    // The world's part of the capabilities (check/kept_capabilities.rs),
    // asked first: a process that checked no capability (a load alone)
    // writes back a unit that still holds as it was loaded, rather than
    // computing it again.
    kept_capabilities::kept_capabilities(db, tree);
    let capabilities = held_or_encoded(cache, kept_capabilities::UNIT.to_string(), || {
        kept_capabilities::encode(db, tree, || capabilities::to_keep(db, tree))
    });
    // What the world's files found and what the plan reads of their
    // images and storages (load/kept_world.rs).
    kept_world::kept_world(db, tree);
    let world = held_or_encoded(cache, kept_world::UNIT.to_string(), || {
        kept_world::encode(db, tree, || world_parts(db, tree))
    });
    // The scripts the images name, under the key the load noted when it
    // asked for them (load/kept_scripts.rs).
    let scripts = held_or_encoded(cache, kept_scripts::UNIT.to_string(), || {
        kept_scripts::encode(db, tree, referenced_files(db, tree))
    });
    // Each kept unit by shard, in path order, and whether it was taken
    // from the cache. The entries on this thread: every entry is
    // memoized, and handing them to every core cost more than reading
    // them.
    let mut shards: Vec<Vec<ToKeep>> = (0..SHARDS).map(|_| Vec::new()).collect();
    for (f, checks) in files.iter().zip(checks) {
        let path = f.file.path(db);
        // Entries taken from the cache were kept, and are kept again as
        // they were: only a file read anew has its entries looked over.
        let taken = cache.taken_digest(path).is_some();
        if !taken && !entries::keeps(path, item_file_entries(db, f.file)) {
            continue;
        }
        shards[shard_of(path)].push((path.to_string(), Unit::Entries(f.file), taken));
        if let Some(checks) = checks {
            shards[shard_of(&checks.0)].push(checks);
        }
    }
    for unit in [fingerprints, capabilities, world, scripts]
        .into_iter()
        .flatten()
    {
        shards[shard_of(&unit.0)].push(unit);
    }
    for units in &mut shards {
        units.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let stale: Vec<(usize, &[ToKeep])> = shards
        .iter()
        .enumerate()
        .filter(|(shard, units)| {
            let taken = units.iter().filter(|(_, _, taken)| *taken).count();
            cache.stale(*shard, units.len(), taken)
        })
        .map(|(shard, units)| (shard, units.as_slice()))
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    let failed = |e: std::io::Error| crate::db::cache::not_written(cache.dir(), &e);
    // The directory ignores itself in git, wherever it is and wherever
    // the repository's top is.
    let ignore = cache.dir().join(".gitignore");
    if !matches!(system.read_to_string(&ignore), Ok(Some(text)) if text == GITIGNORE) {
        system
            .write_replace(&ignore, GITIGNORE.as_bytes(), false)
            .map_err(failed)?;
    }
    stale
        .par_iter()
        .map_with(db.clone(), |db, (shard, units)| {
            cache.save(system, *shard, units.len(), &mut |out| {
                for (path, unit, _) in *units {
                    match unit {
                        Unit::Entries(file) => {
                            let digest = cache
                                .taken_digest(path)
                                .unwrap_or_else(|| *text_digest(db, *file));
                            let bytes = entries::encode(path, item_file_entries(db, *file))
                                .ok_or_else(|| {
                                    std::io::Error::other(format!(
                                        "{path}: its entries are not to be kept"
                                    ))
                                })?;
                            out.unit(path, &digest, &bytes)?;
                        }
                        Unit::Encoded(digest, bytes) => out.unit(path, digest, bytes)?,
                        Unit::Held(digest) => cache
                            .write_held(path, |bytes| out.unit(path, digest, bytes))
                            .ok_or_else(|| {
                                std::io::Error::other(format!("{path}: its bytes are not held"))
                            })??,
                    }
                }
                Ok(())
            })
        })
        .collect::<std::io::Result<()>>()
        .map_err(failed)
}

/// The world's files and checks across it that found nothing, each
/// image's series and what is read of each storage (`load::kept_world`).
fn world_parts(db: &Database, tree: Tree) -> kept_world::Parts {
    let quiet = tree
        .item_files(db)
        .iter()
        // A file declaring an instance among other kinds is left out: its
        // instance's checks may read other instances files (a name two
        // files declare, the hooks' user-data).
        .filter(|f| {
            !item_file_entries(db, f.file)
                .items
                .iter()
                .any(|e| e.kind == ItemKind::INSTANCES)
                && file_findings(db, f.file).is_empty()
        })
        .map(|f| f.file.path(db).to_string())
        .collect();
    let images = indexed_of_kind(db, tree, ItemKind::IMAGES)
        .iter()
        .filter_map(|id| Some((id.name(db).to_string(), image_series(db, *id).clone()?)))
        .collect();
    let storages = indexed_of_kind(db, tree, ItemKind::STORAGES)
        .iter()
        .filter_map(|id| Some((id.name(db).to_string(), storage_state::to_keep(db, *id)?)))
        .collect();
    let checks = [
        (WorldCheck::Groups, check_groups(db, tree).is_empty()),
        (WorldCheck::Logins, login_diagnostics(db, tree).is_empty()),
    ]
    .into_iter()
    .filter_map(|(check, quiet)| quiet.then_some(check))
    .collect();
    kept_world::Parts {
        quiet,
        checks,
        images,
        storages,
    }
}

/// One unit a shard keeps, by its path, and whether this process took it
/// from the cache.
type ToKeep = (String, Unit, bool);

/// The unit at `path`: the bytes this process took it with, written back
/// as they were loaded; else what `encode` makes of it now, when it may be
/// kept.
fn held_or_encoded(
    cache: &crate::db::cache::Cache,
    path: String,
    encode: impl FnOnce() -> Option<([u8; 32], Vec<u8>)>,
) -> Option<ToKeep> {
    match cache.taken_digest(&path) {
        Some(digest) => Some((path, Unit::Held(digest), true)),
        None => encode().map(|(digest, bytes)| (path, Unit::Encoded(digest, bytes), false)),
    }
}

/// What a unit holds: a file's entries (encoded as it is written), a
/// users or instances file's checks (`load::kept_users`,
/// `load::kept_instances`), the tree's fingerprints
/// (`plan::kept_fingerprints`), its capabilities' world part
/// (`check::kept_capabilities`), the world's files (`load::kept_world`)
/// or the images' scripts (`load::kept_scripts`), encoded already, or the
/// bytes of a unit this process took, held by the cache.
enum Unit {
    Entries(SourceFile),
    Encoded([u8; 32], Vec<u8>),
    Held([u8; 32]),
}
