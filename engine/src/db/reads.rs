//! The one door through which queries read the environment and the
//! clock: each read is noted, in the persisted cache's
//! [`EnvReads`](crate::db::cache::EnvReads), because a plan is kept whole
//! only with the variables it read and only when it did not read the
//! clock (`run/plan_record.rs`). tests/e2e/layering.rs holds the engine
//! to it. The tree's files and its other fields are read as they are:
//! what a plan read of them, the machine's door records
//! (`db::system::Recording`).
//!
//! They are noted as narrowly as they are used: a template that names
//! `ENV.USER` reads `USER` only, and one that never names `execution`
//! does not read the time of the run ([`note_looked`], called by each
//! renderer with what its templates looked up).
//!
//! Every read of an input was once noted here as a salsa accumulator
//! value, so that the inputs of any memoized result could be named
//! afterwards; a cache keyed by them cost more to key than it saved
//! (docs/performance.md, sixth and eighth sessions of issue 40), and the
//! notes cost every plan about 3%.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::db::{Db, Tree};

/// Note a read of the environment variable `key`.
fn note_env(db: &dyn Db, key: &str) {
    if let Some(cache) = db.cache() {
        cache.env_reads().var(key);
    }
}

/// Note a read of the whole environment.
fn note_whole_env(db: &dyn Db) {
    if let Some(cache) = db.cache() {
        cache.env_reads().whole();
    }
}

/// Note a read of the run's clock.
fn note_clock(db: &dyn Db) {
    if let Some(cache) = db.cache() {
        cache.env_reads().clock();
    }
}

/// The whole environment, for a reader that hands it on whole (the
/// interpolation of `env_files`, the executables' `PATH` search).
pub fn whole_env(db: &dyn Db, tree: Tree) -> &Arc<BTreeMap<String, String>> {
    note_whole_env(db);
    tree.env(db)
}

/// One environment variable.
pub fn env_var<'db>(db: &'db dyn Db, tree: Tree, key: &str) -> Option<&'db String> {
    note_env(db, key);
    tree.env(db).get(key)
}

/// The run's start, seconds since the epoch.
pub fn start_unix(db: &dyn Db, tree: Tree) -> i64 {
    note_clock(db);
    tree.start_unix(db)
}

/// The environment as a template context wraps it: read here without a
/// note, because the renderers note each variable a template looks up
/// ([`note_looked`]) rather than the whole map.
pub fn env_for_templates(db: &dyn Db, tree: Tree) -> &Arc<BTreeMap<String, String>> {
    tree.env(db)
}

/// The start time as a template context wraps it: noted by the renderer
/// only when a template looks at it ([`note_looked`]).
pub fn start_for_templates(db: &dyn Db, tree: Tree) -> i64 {
    tree.start_unix(db)
}

/// Note what templates looked up through a context's `ENV` and
/// `execution` (csis_string_stage::looked).
pub fn note_looked(db: &dyn Db, looked: &csis_string_stage::looked::Looked) {
    for var in looked.vars() {
        note_env(db, &var);
    }
    if looked.whole_env() {
        note_whole_env(db);
    }
    if looked.clock() {
        note_clock(db);
    }
}
