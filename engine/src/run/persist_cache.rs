//! The persisted cache written back at the end of `plan`, `validate` and
//! `run` (the store is `db::cache`, what it keeps of a file
//! `load::entries`).

use rayon::prelude::*;

use crate::db::SourceFile;
use crate::db::cache::{SHARDS, digest, shard_of};
use crate::db::system::System;
use crate::load::entries;
use crate::load::items::item_file_entries;
use crate::workspace::Workspace;

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
    // Each kept file by shard, in path order, and whether it was taken
    // from the cache. On this thread: every entry is memoized, and handing
    // the files to every core cost more than reading them.
    let mut shards: Vec<Vec<(SourceFile, bool)>> = vec![Vec::new(); SHARDS];
    for f in tree.item_files(db) {
        let path = f.file.path(db);
        if entries::keeps(path, item_file_entries(db, f.file)) {
            shards[shard_of(path)].push((f.file, cache.taken_digest(path).is_some()));
        }
    }
    let stale: Vec<(usize, &[(SourceFile, bool)])> = shards
        .iter()
        .enumerate()
        .filter(|(shard, files)| {
            let taken = files.iter().filter(|(_, taken)| *taken).count();
            cache.stale(*shard, files.len(), taken)
        })
        .map(|(shard, files)| (shard, files.as_slice()))
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
        .map_with(db.clone(), |db, (shard, files)| {
            cache.save(system, *shard, files.len(), &mut |out| {
                for (file, _) in *files {
                    let path = file.path(db);
                    let digest = cache
                        .taken_digest(path)
                        .unwrap_or_else(|| digest(file.text(db)));
                    let bytes =
                        entries::encode(path, item_file_entries(db, *file)).ok_or_else(|| {
                            std::io::Error::other(format!("{path}: its entries are not to be kept"))
                        })?;
                    out.unit(path, &digest, &bytes)?;
                }
                Ok(())
            })
        })
        .collect::<std::io::Result<()>>()
        .map_err(failed)
}
