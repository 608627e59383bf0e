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
mod inputs;
pub mod lock;
pub mod reads;
pub mod run_input;
pub mod stats;
pub mod system;

use std::sync::{Arc, Mutex};

use crate::registry::Registry;
pub use inputs::{ItemFile, ItemIndex, ItemSource, Names, PathFact, SourceFile, Tree};

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
