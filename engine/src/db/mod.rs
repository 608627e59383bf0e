//! The salsa database and its inputs, and the doors to the world.
//!
//! Inputs are the text of each file of the tree, the tree's listing, the
//! overlays and `--undeclare` flags, the item index, the environment
//! snapshot with the run's start time, and the run's options. Everything
//! else is a tracked function of them. [`system::System`] is the only
//! door to files, the environment and processes.
//!
//! May not: know a model, an item or a record beyond its input type. Uses
//! registry/ only.

pub mod cache;
pub mod emit;
pub mod files;
pub mod index;
pub mod lock;
pub mod reads;
pub mod run_input;
mod source_file;
pub mod stats;
pub mod system;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::registry::Registry;
pub use source_file::SourceFile;

/// An item file and the item directory it was found under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemFile {
    pub dir: &'static str,
    pub file: SourceFile,
}

/// The whole configuration tree as the engine sees it.
#[salsa::input(debug)]
pub struct Tree {
    /// How messages name the root (`<root>/cfg`).
    #[returns(ref)]
    pub root_display: Arc<str>,
    /// cfg/*.yml and cfg/*.yaml, sorted by file name.
    #[returns(ref)]
    pub cfg_files: Vec<SourceFile>,
    /// Every file under the item directories, sorted by path.
    #[returns(ref)]
    pub item_files: Vec<ItemFile>,
    /// `--overlay` files in command-line order.
    #[returns(ref)]
    pub overlays: Vec<SourceFile>,
    /// `--undeclare KIND:NAME` flags in command-line order.
    #[returns(ref)]
    pub undeclare: Vec<String>,
    /// The process environment snapshot (ENV in templates).
    #[returns(ref)]
    pub env: Arc<BTreeMap<String, String>>,
    /// The run's start, seconds since the epoch, UTC (execution.*).
    #[returns(copy)]
    pub start_unix: i64,
    /// meta-state/*.yaml: the records runs leave (lineage, pins, ...).
    #[returns(ref)]
    pub meta_files: Vec<SourceFile>,
    /// Files the configuration refers to by path (modification scripts),
    /// read so their content enters fingerprints; a missing one is absent.
    #[returns(ref)]
    pub aux_files: Vec<SourceFile>,
    /// What the load learnt of the paths an image template chain names
    /// (its canonical path, whether it is a symlink), by path relative to
    /// the root: the facts the extends resolver asks besides file texts.
    #[returns(ref)]
    pub path_facts: Arc<BTreeMap<String, PathFact>>,
    /// The identities CSIS_CONFIG_IDENTITY names.
    #[returns(ref)]
    pub identities: csis_secrets::IdentitySource,
    /// Every item by kind and name. Derived from the item files, but held
    /// as an input the workspace refreshes after an edit (see
    /// `Workspace::set_file_text`): an edit that renames nothing leaves it
    /// untouched, so what reads it keeps its durability and is not
    /// re-verified.
    #[returns(ref)]
    pub index: crate::db::index::ItemIndex,
}

/// A path's facts as the load found them through the `System`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PathFact {
    /// Every symlink followed; `None` when the path does not exist.
    pub canonical: Option<std::path::PathBuf>,
    /// The path itself is a symbolic link.
    pub symlink: bool,
    /// The blake3 digest of its bytes, taken for a file the configuration
    /// names by content rather than as text (a vendor root tarball).
    pub digest: Option<String>,
}

#[salsa::db]
pub trait Db: salsa::Database {
    fn registry(&self) -> &Registry;
    /// The persisted cache this process loaded, when it uses one.
    fn cache(&self) -> Option<&cache::Cache>;
}

/// Executed-query log, for tests of incrementality and for `--stats`.
/// Only a database made with [`Database::with_query_log`] (a load with
/// `LoadOptions::query_log`) fills it; otherwise it stays empty.
#[derive(Clone, Default)]
pub struct QueryLog {
    enabled: bool,
    events: Arc<Mutex<Option<Vec<String>>>>,
    /// Queries executed, and memoized results salsa re-validated without
    /// executing, since the database was made.
    executed: Arc<std::sync::atomic::AtomicU64>,
    reused: Arc<std::sync::atomic::AtomicU64>,
}

impl QueryLog {
    /// Whether the database reports its queries here at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// (executed, reused) so far; `--stats` reports the difference across
    /// each stage.
    pub fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.executed.load(Relaxed), self.reused.load(Relaxed))
    }

    /// Start recording executed queries (drops anything recorded before).
    pub fn start(&self) {
        if let Ok(mut e) = self.events.lock() {
            *e = Some(Vec::new());
        }
    }

    /// The names of the queries executed since `start`, e.g.
    /// `parse_file(Id(3))`.
    pub fn take(&self) -> Vec<String> {
        self.events
            .lock()
            .ok()
            .and_then(|mut e| e.as_mut().map(std::mem::take))
            .unwrap_or_default()
    }

    fn push(&self, s: String) {
        if let Ok(mut e) = self.events.lock()
            && let Some(v) = e.as_mut()
        {
            v.push(s);
        }
    }
}

#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    registry: Arc<Registry>,
    log: QueryLog,
    /// What the public-safe gate passed of the generated files in this
    /// process (every handle shares it).
    passed: Arc<std::sync::Mutex<emit::Passed>>,
    /// What this process left in the generated tree (every handle shares
    /// it).
    seen: Arc<emit::Seen>,
    /// The persisted cache, for the commands that use one (`with_cache`).
    cache: Option<Arc<cache::Cache>>,
}

impl Database {
    /// A database without an event callback: salsa then builds no event
    /// per query, which a cold plan pays 7–10% for (see
    /// docs/performance.md). Its [`QueryLog`] records and counts nothing.
    pub fn new(registry: Arc<Registry>) -> Database {
        Database {
            storage: salsa::Storage::new(None),
            registry,
            log: QueryLog::default(),
            passed: Arc::default(),
            seen: Arc::default(),
            cache: None,
        }
    }

    /// A database whose [`QueryLog`] counts executed and re-validated
    /// queries (`--stats`, `watch`) and records executed ones when asked
    /// (tests of incrementality).
    pub fn with_query_log(registry: Arc<Registry>) -> Database {
        let log = QueryLog {
            enabled: true,
            ..QueryLog::default()
        };
        let sink = log.clone();
        Database {
            storage: salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
                use std::sync::atomic::Ordering::Relaxed;
                match event.kind {
                    salsa::EventKind::WillExecute { database_key } => {
                        sink.executed.fetch_add(1, Relaxed);
                        sink.push(format!("{database_key:?}"));
                    }
                    salsa::EventKind::DidValidateMemoizedValue { .. } => {
                        sink.reused.fetch_add(1, Relaxed);
                    }
                    _ => {}
                }
            }))),
            registry,
            log,
            passed: Arc::default(),
            seen: Arc::default(),
            cache: None,
        }
    }

    /// The same database, reading results kept in `cache` (set before
    /// the first query: a result is taken from it once, as it is
    /// computed).
    pub fn with_cache(mut self, cache: cache::Cache) -> Database {
        self.cache = Some(Arc::new(cache));
        self
    }

    pub fn query_log(&self) -> &QueryLog {
        &self.log
    }

    /// What this process left in the generated tree.
    pub fn generated_seen(&self) -> &emit::Seen {
        &self.seen
    }

    /// The generated files the public-safe gate passed in this process.
    pub fn gate_passed(&self) -> &std::sync::Mutex<emit::Passed> {
        &self.passed
    }
}

#[salsa::db]
impl salsa::Database for Database {}

#[salsa::db]
impl Db for Database {
    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn cache(&self) -> Option<&cache::Cache> {
        self.cache.as_deref()
    }
}
