//! The persisted cache written back at the end of `plan`, `validate` and
//! `run` (the store is `db::cache`, what it keeps of a file
//! `load::entries`).

use crate::db::cache::{DEFAULT_DIR, digest};
use crate::db::reads;
use crate::db::system::System;
use crate::load::entries;
use crate::load::items::item_file_entries;
use crate::workspace::Workspace;

/// Write the cache the workspace was loaded with, unless it already holds
/// exactly what this process would write. Under the root's own default
/// directory, in a git repository, `.csis/` is added to the root's
/// .gitignore once.
pub fn save_cache(ws: &Workspace, system: &dyn System) -> Result<(), String> {
    let Some(cache) = crate::db::Db::cache(&ws.db) else {
        return Ok(());
    };
    let (db, tree) = (&ws.db, ws.tree);
    let files = reads::item_files(db, tree);
    // Which files are kept, and whether each was taken from the cache.
    // On this thread: every entry is memoized, and handing the files to
    // every core cost more than reading them.
    let kept: Vec<(bool, bool)> = files
        .iter()
        .map(|f| {
            let path = f.file.path(db);
            let keeps = entries::keeps(path, item_file_entries(db, tree, f.file));
            (keeps, cache.taken_digest(path).is_some())
        })
        .collect();
    let count = kept.iter().filter(|(keep, _)| *keep).count();
    if kept.iter().all(|(keep, taken)| !keep || *taken) && cache.holds_only_taken(count) {
        return Ok(());
    }
    let failed = |e: std::io::Error| {
        format!(
            "warning: the cache could not be written to {}: {e}",
            cache.dir().display()
        )
    };
    if cache.dir() == ws.root.join(DEFAULT_DIR) {
        crate::run::lock::ignore_in_git(system, &ws.root, ".csis/")
            .map_err(|e| failed(std::io::Error::other(e)))?;
    }
    cache
        .save(system, count, &mut |out| {
            for (f, _) in files.iter().zip(&kept).filter(|(_, (keep, _))| *keep) {
                let path = f.file.path(db);
                let digest = cache
                    .taken_digest(path)
                    .unwrap_or_else(|| digest(reads::text(db, f.file)));
                let bytes = entries::encode(path, item_file_entries(db, tree, f.file)).ok_or_else(
                    || std::io::Error::other(format!("{path}: its entries are not to be kept")),
                )?;
                out.unit(path, &digest, &bytes)?;
            }
            Ok(())
        })
        .map_err(failed)
}
