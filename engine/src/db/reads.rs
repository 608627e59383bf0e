//! Every read of an input, noted: what a result was computed from.
//!
//! A query reads the tree's inputs only through this module. Each reader
//! notes what it read as a [`Read`] (salsa accumulates it on the query
//! that read it and on every query above), so that the inputs a memoized
//! result depends on can be named afterwards:
//! `query::accumulated::<Read>(db, ...)`. The persisted cache (issue 40,
//! docs/performance.md) is to key each result it keeps by those inputs'
//! contents; a read not noted would let it serve a stale result, which is
//! why nothing else may call an input's field (tests/e2e/layering.rs
//! holds the engine to it).
//!
//! The note is a tracked function of its own: salsa accumulates only
//! inside an executing query, and a reader is also called from outside
//! one (the workspace, the commands). The note's memo reads nothing, so
//! it is never re-executed; the reader reads the field itself after it,
//! which is the dependency salsa re-verifies on an edit.
//!
//! The environment and the clock are noted as narrowly as they are used:
//! a template that names `ENV.USER` depends on `USER` only, and one that
//! never names `execution` does not depend on the time of the run
//! ([`note_looked`], called by each renderer with what its templates
//! looked up).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::db::{Db, ItemFile, PathFact, SourceFile, Tree};

/// One input a query read.
#[salsa::accumulator]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Read(pub Input);

/// The inputs a query can read, as the cache names them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Input {
    /// A file's text.
    Text(SourceFile),
    /// A field of the tree other than the environment and the clock.
    Field(Field),
    /// One environment variable (whether it is set, and its value).
    Env(String),
    /// The whole environment (a template that iterates `ENV`).
    WholeEnv,
    /// The run's start time: what reads it is never served from a cache.
    Clock,
}

/// The tree's fields a query may read, besides the environment and the
/// clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    RootDisplay,
    CfgFiles,
    ItemFiles,
    Overlays,
    Undeclare,
    MetaFiles,
    AuxFiles,
    PathFacts,
    Identities,
    Index,
}

#[salsa::tracked]
fn note_text(db: &dyn Db, file: SourceFile) {
    use salsa::Accumulator;
    Read(Input::Text(file)).accumulate(db);
}

/// One note per field, each a query of the tree alone: a note keyed by
/// (tree, field) would intern that pair on every read, and the index is
/// read for every name looked up.
macro_rules! field_notes {
    ($($note:ident => $field:ident),* $(,)?) => {
        $(
            #[salsa::tracked]
            fn $note(db: &dyn Db, tree: Tree) {
                use salsa::Accumulator;
                let _ = tree;
                Read(Input::Field(Field::$field)).accumulate(db);
            }
        )*
    };
}

field_notes! {
    note_root_display => RootDisplay,
    note_cfg_files => CfgFiles,
    note_item_files => ItemFiles,
    note_overlays => Overlays,
    note_undeclare => Undeclare,
    note_meta_files => MetaFiles,
    note_aux_files => AuxFiles,
    note_path_facts => PathFacts,
    note_identities => Identities,
    note_index => Index,
}

/// Note a read of the environment variable `key`.
#[salsa::tracked]
fn note_env(db: &dyn Db, tree: Tree, key: String) {
    use salsa::Accumulator;
    let _ = tree;
    if let Some(cache) = db.cache() {
        cache.env_reads().var(&key);
    }
    Read(Input::Env(key)).accumulate(db);
}

#[salsa::tracked]
fn note_whole_env(db: &dyn Db, tree: Tree) {
    use salsa::Accumulator;
    let _ = tree;
    if let Some(cache) = db.cache() {
        cache.env_reads().whole();
    }
    Read(Input::WholeEnv).accumulate(db);
}

/// Note a read of the run's clock.
#[salsa::tracked]
fn note_clock(db: &dyn Db, tree: Tree) {
    use salsa::Accumulator;
    let _ = tree;
    if let Some(cache) = db.cache() {
        cache.env_reads().clock();
    }
    Read(Input::Clock).accumulate(db);
}

/// A file's text.
pub fn text(db: &dyn Db, file: SourceFile) -> &Arc<str> {
    note_text(db, file);
    file.text(db)
}

/// What messages call the root (`<root>/cfg`).
pub fn root_display(db: &dyn Db, tree: Tree) -> &Arc<str> {
    note_root_display(db, tree);
    tree.root_display(db)
}

pub fn cfg_files(db: &dyn Db, tree: Tree) -> &Vec<SourceFile> {
    note_cfg_files(db, tree);
    tree.cfg_files(db)
}

pub fn item_files(db: &dyn Db, tree: Tree) -> &Vec<ItemFile> {
    note_item_files(db, tree);
    tree.item_files(db)
}

pub fn overlays(db: &dyn Db, tree: Tree) -> &Vec<SourceFile> {
    note_overlays(db, tree);
    tree.overlays(db)
}

pub fn undeclare(db: &dyn Db, tree: Tree) -> &Vec<String> {
    note_undeclare(db, tree);
    tree.undeclare(db)
}

pub fn meta_files(db: &dyn Db, tree: Tree) -> &Vec<SourceFile> {
    note_meta_files(db, tree);
    tree.meta_files(db)
}

pub fn aux_files(db: &dyn Db, tree: Tree) -> &Vec<SourceFile> {
    note_aux_files(db, tree);
    tree.aux_files(db)
}

pub fn path_facts(db: &dyn Db, tree: Tree) -> &Arc<BTreeMap<String, PathFact>> {
    note_path_facts(db, tree);
    tree.path_facts(db)
}

pub fn identities(db: &dyn Db, tree: Tree) -> &csis_secrets::IdentitySource {
    note_identities(db, tree);
    tree.identities(db)
}

pub fn index(db: &dyn Db, tree: Tree) -> &crate::db::index::ItemIndex {
    note_index(db, tree);
    tree.index(db)
}

/// The whole environment, for a reader that hands it on whole (the
/// interpolation of `env_files`, the executables' `PATH` search).
pub fn whole_env(db: &dyn Db, tree: Tree) -> &Arc<BTreeMap<String, String>> {
    note_whole_env(db, tree);
    tree.env(db)
}

/// One environment variable.
pub fn env_var<'db>(db: &'db dyn Db, tree: Tree, key: &str) -> Option<&'db String> {
    note_env(db, tree, key.to_string());
    tree.env(db).get(key)
}

/// The run's start, seconds since the epoch.
pub fn start_unix(db: &dyn Db, tree: Tree) -> i64 {
    note_clock(db, tree);
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
pub fn note_looked(db: &dyn Db, tree: Tree, looked: &csis_string_stage::looked::Looked) {
    for var in looked.vars() {
        note_env(db, tree, var);
    }
    if looked.whole_env() {
        note_whole_env(db, tree);
    }
    if looked.clock() {
        note_clock(db, tree);
    }
}

impl Input {
    /// The input as a person reads it: `text cfg/_config.yml`,
    /// `field Index`, `env USER`, `clock`.
    pub fn describe(&self, db: &dyn Db) -> String {
        match self {
            Input::Text(file) => format!("text {}", file.path(db)),
            Input::Field(field) => format!("field {field:?}"),
            Input::Env(var) => format!("env {var}"),
            Input::WholeEnv => "env *".to_string(),
            Input::Clock => "clock".to_string(),
        }
    }
}

/// What `reads` (a query's accumulated [`Read`]s) name, each once, sorted
/// as [`Input::describe`] writes them.
pub fn described(db: &dyn Db, reads: &[&Read]) -> Vec<String> {
    let mut out: Vec<String> = reads.iter().map(|r| r.0.describe(db)).collect();
    out.sort();
    out.dedup();
    out
}
