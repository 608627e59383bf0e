//! `csis run`: validation, the bake plan, generation, the apply step and
//! the summary, in the spec's order. [`run`] builds the `Runner` every
//! step shares (`steps.rs`, which also calls the steps in order); each step
//! lives in the file named for it:
//!
//! 1. `request.rs`: what was asked ([`RunRequest`]) and the log's [`Level`]s.
//! 2. `head.rs`: the requested lifecycles, the selection, `--migrate-state`
//!    refused in a dry run; `steps.rs` then writes generated/.gitignore.
//! 3. `state_query.rs`: ask the runtimes what exists (generated/state-report.json).
//! 4. `head.rs`: the validation; an error ends the run here.
//! 5. `bake_plan.rs`: one decision per `<series>@<runtime>` (base-image and
//!    instance-image only), with `--explain`'s causes.
//! 6. `generate.rs` computes each requested lifecycle's directory from
//!    the builders' hook calls (`hook_parts.rs`, in the order of
//!    `hook_order.rs`) and the core's own contribution
//!    (`core_contribution.rs`); `write_lifecycles.rs` writes it, its
//!    read-models and runs its run-now commands (`execute.rs`); `records.rs` records the state locations;
//!    `script.rs` is the shell of the runner scripts and final_execution.sh.
//! 7. `apply.rs`: each lifecycle's deferred commands, logged in a dry run;
//!    in a real one executed (`execute.rs`, each line the command prints
//!    logged as it comes, its wall time after it, the [`Progress`] to the
//!    [`RunLog`]) from the private mirror
//!    (`mirror.rs`); the bakes of a phase as a graph (`bake_graph.rs` cuts
//!    the phase into commands and graphs of bakes, `apply_bakes.rs` runs a
//!    graph, several bakes at once), each phase between the builders' finalize hooks
//!    (`finalize.rs`), then what the apply leaves in meta-state/
//!    (`records.rs`: storage transitions, launched and ephemeral instances,
//!    migrated state locations).
//! 8. `summary.rs`: the journal entry, `--commit` (`commit.rs`),
//!    generated/run-summary.json ([`RunSummary`], in `outcome.rs`, filled
//!    in by every step) and the on-summary hooks.
//!
//! Beside the run: `plan_report.rs` (`csis plan`), `plan_matrix.rs` (its
//! bakes as a CI matrix), `explain.rs` (the causes
//! `--explain` reports), `record_build.rs` (`lineage record` after a bake)
//! `operations/` (upgrade, forget, release, dispose and the lineage
//! commands on meta-state) and `persist_cache.rs` (the persisted cache
//! written back after `plan`, `validate` and `run`).

mod apply;
mod apply_bakes;
mod bake_plan;
mod core_contribution;
mod execute;
mod finalize;
mod head;
mod hook_order;
mod hook_parts;
mod mirror;
mod outcome;
mod records;
mod request;
mod steps;
mod summary;
mod write_lifecycles;

pub mod bake_graph;
pub mod commit;
pub mod explain;
pub mod generate;
pub mod lock;
pub mod operations;
pub mod persist_cache;
pub mod plan_matrix;
pub mod plan_record;
pub mod plan_report;
pub mod plan_summary;
pub mod record_build;
pub mod script;
pub mod state_instances;
pub mod state_query;
pub mod state_report;

use crate::db::stats::{StageClock, Stats};
use crate::db::system::System;
use crate::workspace::Workspace;
pub use head::validation;
pub use outcome::{Explained, LifecycleOutcome, RunSummary};
pub use request::{Level, Progress, RunLog, RunRequest};
use steps::Runner;

/// Perform a run. The summary says how it went; `log` hears every line.
pub fn run(
    ws: &Workspace,
    system: &dyn System,
    req: &RunRequest,
    log: &mut dyn RunLog,
) -> RunSummary {
    let gen_dir_name = ws.generation_dir_name();
    let mut runner = Runner {
        ws,
        system,
        req,
        run_input: ws.run_input(&req.options),
        run_id: crate::state::lineage::run_id(crate::db::reads::start_unix(&ws.db, ws.tree)),
        gen_dir: ws.root.join(&gen_dir_name),
        gen_dir_name,
        log,
        clock: StageClock::start(&ws.db),
    };
    let mut summary = RunSummary {
        run_id: runner.run_id.clone(),
        dry_run: req.options.dry_run,
        ok: true,
        stats: req.stats.then(Stats::default),
        explain: req.explain.then(Explained::default),
        ..RunSummary::default()
    };
    let head = match runner.head(&mut summary) {
        Ok(head) => head,
        // A run that never started is no run: no journal entry, no files.
        Err(e) => {
            summary.ok = false;
            summary.not_started = true;
            summary.error = Some(e);
            return summary;
        }
    };
    if let Err(e) = runner.steps(&mut summary, head) {
        runner.log.line(Level::Error, e.clone());
        summary.ok = false;
        summary.error = Some(e);
    }
    // generated/ and _private/ are written without an fsync per file
    // (derived, regenerable): one sync makes them durable before the run
    // records itself (docs/reliability.md).
    if let Err(e) = system.sync_tree(&runner.gen_dir) {
        let e = format!("syncing {}: {e}", runner.gen_dir.display());
        runner.log.line(Level::Error, e.clone());
        summary.ok = false;
        summary.error.get_or_insert(e);
    }
    runner.mark(&mut summary, "sync");
    if let Some(stats) = summary.stats.as_mut() {
        stats.peak_memory_kib = crate::db::stats::peak_memory_kib(system);
    }
    runner.finish(summary)
}
