//! What `csis run` was asked, and the levels of the lines it logs.

use std::path::PathBuf;

use crate::db::run_input::RunOptions;

/// What `csis run` was asked.
#[derive(Clone, Debug, Default)]
pub struct RunRequest {
    pub lifecycles: Vec<String>,
    pub options: RunOptions,
    /// `--no-apply`: generate only.
    pub no_apply: bool,
    /// The binary deferred `"$CSIS"` steps run (this executable).
    pub csis: PathBuf,
    /// `--commit`: commit meta-state/ and the generated tree after the run.
    pub commit: bool,
    /// `--stats`: time, executed and reused queries per stage, and peak
    /// memory, in the summary under `stats`.
    pub stats: bool,
    /// `--explain`: every bake's and every rewritten file's causes, logged
    /// and in the summary under `explain`.
    pub explain: bool,
    /// `--no-state-query`: skip asking the runtimes what exists.
    pub no_state_query: bool,
    /// `--jobs`: at most this many bakes at once (0: the default,
    /// [`crate::run::apply_bakes::DEFAULT_JOBS`]).
    pub jobs: usize,
    /// `--fail-fast`: the first failed bake stops every bake not started.
    pub fail_fast: bool,
    /// `--shard DIR`: bake the selected images and run nothing else (a CI
    /// matrix job): no `lineage record` step, no other command, nothing
    /// written to meta-state; each bake's manifest is kept in DIR as
    /// `<series>@<runtime>.json` for one later `csis lineage record`.
    /// A shard run does not record itself (`record` is false).
    pub shard: Option<PathBuf>,
    /// Whether the run leaves its records (run-summary.json, the journal,
    /// the on-summary hooks): `csis watch --generate` does not.
    pub record: bool,
    /// The token of the tree's lock this run holds (`run::lock`), handed
    /// to every command it executes in `CSIS_LOCK_HELD`, so a `"$CSIS"
    /// lineage record ...` of its runner scripts proceeds under it.
    pub lock_token: Option<String>,
    /// More variables every executed command sees: what the csis steps of
    /// the runner scripts need to load the tree this run loaded (the
    /// cli's `CSIS_OVERLAYS` and `CSIS_UNDECLARE`).
    pub carried_env: Vec<(String, String)>,
}

/// A line of the run's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// How far a real run's apply has got, for a progress display: sent
/// before each executed step (`current` names it) and once after the
/// apply (`current` is `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Steps finished.
    pub done: usize,
    /// Steps this run's apply would execute.
    pub total: usize,
    /// The step now running: `lifecycle/phase: command line`.
    pub current: Option<String>,
}

/// What hears a run: every line of its log, and its progress. A closure
/// `FnMut(Level, String)` is one that ignores the progress.
pub trait RunLog {
    fn line(&mut self, level: Level, line: String);
    fn progress(&mut self, _progress: &Progress) {}
}

impl<F: FnMut(Level, String)> RunLog for F {
    fn line(&mut self, level: Level, line: String) {
        self(level, line)
    }
}
