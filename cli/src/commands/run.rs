//! `csis run LIFECYCLE...`: validate, plan, generate the tree under
//! generated/ and apply it (a dry run unless --no-dry-run), drawing the
//! run's progress.

use std::path::PathBuf;
use std::process::ExitCode;

use csis_engine::db::system::OsSystem;
use csis_engine::run::RunRequest;
use csis_engine::workspace::Workspace;

use super::selection::Selection;
use crate::progress;

#[derive(clap::Args)]
pub struct RunArgs {
    /// Lifecycles to run (identity, storage, base-image, instance-image,
    /// release, retention, or all); they run in declared order.
    #[arg(value_name = "LIFECYCLE", add = crate::complete::lifecycle_names())]
    lifecycles: Vec<String>,
    /// Execute the deferred commands (the default only logs them).
    #[arg(long)]
    no_dry_run: bool,
    /// Only log the deferred commands: the default, accepted for scripts
    /// that spell it out.
    #[arg(long, conflicts_with = "no_dry_run")]
    dry_run: bool,
    /// Let a real run bake outside its apply scope.
    #[arg(long)]
    allow_unscoped_bakes: bool,
    /// Generate only: skip the apply step.
    #[arg(long)]
    no_apply: bool,
    /// After a successful run, commit meta-state/ and the generated tree
    /// (in a git repository, after the public-safe gate).
    #[arg(long)]
    commit: bool,
    /// Leave meta-state/ and the generated tree uncommitted: the default,
    /// accepted for scripts that spell it out.
    #[arg(long, conflicts_with = "commit")]
    no_commit: bool,
    /// Print time, executed and reused queries per stage and peak memory;
    /// the same under `stats` in run-summary.json.
    #[arg(long)]
    pub stats: bool,
    /// Log, for every bake and every rewritten generated file, the chain
    /// of inputs that caused it; the same under `explain` in
    /// run-summary.json.
    #[arg(long)]
    explain: bool,
    /// Skip the first step, asking every runtime what exists (the last
    /// generated/state-report.json then stands).
    #[arg(long)]
    no_state_query: bool,
    /// Let this workspace's state location move while resources stand in
    /// it (a real run; recorded in meta-state/state-locations.yaml).
    /// Repeatable.
    #[arg(long, value_name = "WORKSPACE")]
    migrate_state: Vec<String>,
    /// At most N bakes at once, each as soon as its parent's bake is
    /// recorded (default 4; bakes on the local runtime also at most this
    /// machine's cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Stop starting bakes at the first failed one (by default the bakes
    /// that do not descend from it still run).
    #[arg(long)]
    fail_fast: bool,
    /// Bake the selected images and run nothing else, as one job of a CI
    /// matrix (`csis plan --format matrix`): each bake's manifest is kept
    /// in DIR as <series>@<runtime>.json and nothing is recorded; one
    /// `csis lineage record --manifest DIR/*.json` records them all.
    #[arg(
        long,
        value_name = "DIR",
        requires = "no_dry_run",
        conflicts_with_all = ["commit", "no_apply"]
    )]
    shard: Option<PathBuf>,
    #[command(flatten)]
    selection: Selection,
}

/// `csis run` with no lifecycle: which there are, before any tree is read
/// (exit 2, as clap's own usage errors).
pub fn without_lifecycles(
    args: &RunArgs,
    registry: &csis_engine::registry::Registry,
) -> Option<ExitCode> {
    if !args.lifecycles.is_empty() {
        return None;
    }
    let names: Vec<&str> = registry.lifecycles().iter().map(|l| l.name).collect();
    eprintln!(
        "error: csis run needs the lifecycles to run: `all`, or one or more of {}\n\nUsage: csis run [OPTIONS] <LIFECYCLE>...\n\nFor more information, try 'csis run --help'.",
        names.join(", ")
    );
    Some(ExitCode::from(2))
}

pub fn run(
    ws: &Workspace,
    args: &RunArgs,
    lock_token: Option<String>,
    carried_env: Vec<(String, String)>,
) -> ExitCode {
    let mut options = args.selection.options(!args.no_dry_run);
    options.migrate_state = args.migrate_state.clone();
    options.allow_unscoped_bakes = args.allow_unscoped_bakes;
    let req = RunRequest {
        lifecycles: args.lifecycles.clone(),
        options,
        no_apply: args.no_apply,
        csis: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("csis")),
        commit: args.commit,
        // A shard leaves meta-state to the job that records its bakes.
        record: args.shard.is_none(),
        shard: args
            .shard
            .as_deref()
            .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf())),
        stats: args.stats,
        explain: args.explain,
        no_state_query: args.no_state_query,
        jobs: args.jobs.map_or(0, usize::from),
        fail_fast: args.fail_fast,
        lock_token,
        carried_env,
    };
    let mut view = progress::RunView::new(progress::wanted());
    let summary = csis_engine::run::run(ws, &OsSystem, &req, &mut view);
    view.finish();
    if let Some(stats) = &summary.stats {
        for line in csis_engine::db::stats::describe(stats) {
            eprintln!("{line}");
        }
    }
    if summary.not_started {
        eprintln!(
            "error: {}",
            summary.error.as_deref().unwrap_or("the run did not start")
        );
        ExitCode::from(1)
    } else if summary.ok {
        eprintln!("run {}: ok", summary.run_id);
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "run {}: failed: {}",
            summary.run_id,
            summary.error.as_deref().unwrap_or("see the log above")
        );
        ExitCode::from(1)
    }
}
