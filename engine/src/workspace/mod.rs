//! The edge between the world and the query graph: reads a tree through a
//! [`System`](crate::db::system::System) into salsa inputs, applies
//! changes, and maps diagnostics back to file positions. The only place
//! inputs change after a load.
//!
//! May not: plan, generate or write; the commands in run/ and `csis watch`
//! hold a workspace.
//!
//! Here: the [`Workspace`] and what a load is asked ([`LoadOptions`]), the
//! durability every file keeps from its load on, and the workspace's plain
//! reads. Beside it: `load.rs` (a tree read into inputs), `read.rs` (one
//! file read under the limits on input), `environment.rs` (the
//! environment snapshot and the age identities), `remote.rs` (remote
//! state objects read by their commands), `edit.rs` (an edit applied, and
//! whether it wants a reload), `locate.rs` (diagnostics mapped to file
//! positions) and `prewarm.rs` (a cold load's queries on every core).

mod edit;
mod environment;
mod load;
mod locate;
pub mod preflight;
pub mod prewarm;
mod read;
mod remote;

pub use read::{human_bytes, read_named};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use csis_model::{Diagnostic, ItemKind};
use csis_yaml::Span;
use salsa::Durability;

use crate::check::report::load_diagnostics;
use crate::db::run_input::{RunInput, RunOptions};
use crate::db::{Database, SourceFile, Tree};

/// A diagnostic located in its file (`Workspace::locate`, in locate.rs).
pub struct Located {
    pub file: String,
    pub text: Arc<str>,
    pub span: Span,
}

/// What a load is asked to read besides the root.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub overlays: Vec<PathBuf>,
    pub undeclare: Vec<String>,
    /// How messages name the root, when not as the path given to `load`
    /// (the cli loads an absolute root but names it as the user wrote it).
    pub display_root: Option<String>,
    /// The most bytes read from one file (`--max-file-size`); a larger
    /// file is refused unread.
    pub max_file_size: u64,
    /// `--tolerate-missing-env`: an unset `${env.NAME}` is a marked
    /// placeholder and a warning (set in the environment snapshot as
    /// CSIS_TOLERATE_MISSING_ENV=1).
    pub tolerate_missing_env: bool,
    /// Count and log the queries salsa executes (`--stats`, `watch`,
    /// tests of incrementality); off, salsa builds no event per query.
    pub query_log: bool,
    /// Read the tree's own files and index what they declare, nothing
    /// they name (interpolation's files and remote state, scripts,
    /// templates): enough for shell completion to list names, without a
    /// command run or a file outside the tree read.
    pub declarations_only: bool,
    /// The persisted cache's directory (`--cache-dir`), for the commands
    /// that use one; None reads and writes no cache.
    pub cache_dir: Option<PathBuf>,
}

/// 16 MiB: far above any hand-written configuration file, far below what
/// would exhaust memory once parsed.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 16 * 1024 * 1024;

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            overlays: Vec::new(),
            undeclare: Vec::new(),
            display_root: None,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            tolerate_missing_env: false,
            query_log: false,
            declarations_only: false,
            cache_dir: None,
        }
    }
}

/// A loaded tree: the database, its inputs, and the files by path.
pub struct Workspace {
    pub db: Database,
    pub tree: Tree,
    pub root: PathBuf,
    files: BTreeMap<String, SourceFile>,
    /// Refusals found while reading the tree (a missing overlay).
    pub read_diags: Vec<Diagnostic>,
    /// One run input per distinct run options: a re-plan with the same
    /// options reuses every query keyed by the run.
    run_inputs: std::sync::Mutex<Vec<(RunOptions, RunInput)>>,
    /// Whether the first load's queries ran on every core already; later
    /// re-plans recompute little and stay on one.
    prewarmed: std::sync::atomic::AtomicBool,
    /// The remote state objects the load ran a command for (read or
    /// failed): an edit that makes an entry read another one wants a
    /// reload (`wants_reload`).
    remote_tried: Vec<String>,
}

impl Workspace {
    /// Whether the load read remote state (a command or a cloud's API,
    /// neither of which the machine's door can ask again).
    pub fn read_remote_state(&self) -> bool {
        !self.remote_tried.is_empty()
    }

    /// The run input for `options`: the same one every time they are
    /// equal, so queries keyed by the run are memoized across re-plans.
    pub fn run_input(&self, options: &RunOptions) -> RunInput {
        let mut known = self
            .run_inputs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, input)) = known.iter().find(|(o, _)| o == options) {
            return *input;
        }
        let input = RunInput::new(&self.db, options.clone());
        known.push((options.clone(), input));
        input
    }

    /// Every load-time refusal and warning.
    pub fn load_diagnostics(&self) -> Vec<Diagnostic> {
        if !self
            .prewarmed
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            crate::workspace::prewarm::structure_items(&self.db, self.tree);
        }
        let mut out = self.read_diags.clone();
        out.extend(load_diagnostics(&self.db, self.tree).iter().cloned());
        out
    }

    /// The configuration's own YAML files (cfg/ and the item
    /// directories), by path relative to the root, with their text.
    pub fn config_files(&self) -> Vec<(String, Arc<str>)> {
        let tree = self.tree;
        let mut out: Vec<(String, Arc<str>)> = tree
            .cfg_files(&self.db)
            .iter()
            .chain(tree.item_files(&self.db).iter().map(|f| &f.file))
            .map(|f| (f.path(&self.db).to_string(), f.text(&self.db).clone()))
            .collect();
        out.sort();
        out
    }

    /// `config.generation_directory` (default `generated`), relative to
    /// the root.
    pub fn generation_dir_name(&self) -> String {
        crate::load::builders::builders(&self.db, self.tree)
            .config
            .as_ref()
            .map_or_else(|| "generated".into(), |c| c.generation_directory.clone())
    }

    pub fn file(&self, path: &str) -> Option<SourceFile> {
        self.files.get(path).copied()
    }
}

/// Durability of a file, from its load on: it never changes with an
/// edit. cfg/ declarations are rarely edited (HIGH); meta-state records
/// change only when a run records, and users and groups when people join
/// or leave (MEDIUM); what people edit while they work (images,
/// instances, storages, their scripts and templates, state files an entry
/// reads) is LOW from the start.
///
/// Why never lowered: salsa backdates a re-computed value only if its
/// durability did not fall, so a file that went from MEDIUM to LOW on its
/// first save re-executed every query downstream of it, tree-wide reports
/// included. Why users and groups apart: a save re-verifies every memo of
/// its durability and below, and the 20,000 users of a large tree are
/// most of the memos; kept MEDIUM, an image or instance save does not
/// walk them (docs/performance.md, "First saves").
fn durability_for(path: &str) -> Durability {
    if path.starts_with("cfg/") {
        Durability::HIGH
    } else if [
        crate::state::meta_state::DIR,
        ItemKind::USERS.dir(),
        ItemKind::GROUPS.dir(),
    ]
    .iter()
    .any(|dir| {
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    }) {
        Durability::MEDIUM
    } else {
        Durability::LOW
    }
}
