//! What every step of one run shares, and the steps in the spec's order:
//! each step is a method of [`Runner`] in the file named for it (see the
//! overview in `run/mod.rs`).

use std::path::PathBuf;

use csis_plugin_api::LifecycleSpec;

use crate::db::emit::write_if_changed;
use crate::db::run_input::RunInput;
use crate::db::stats::StageClock;
use crate::db::system::System;
use crate::load::builders::builders;
use crate::run::hook_order::gitignore_entries;
use crate::run::script::{self, RUN_LOCAL_FILES};
use crate::run::{Level, RunLog, RunRequest, RunSummary};
use crate::workspace::Workspace;

/// What every step of one run shares.
pub(super) struct Runner<'a> {
    pub(super) ws: &'a Workspace,
    pub(super) system: &'a dyn System,
    pub(super) req: &'a RunRequest,
    pub(super) run_input: RunInput,
    pub(super) run_id: String,
    pub(super) gen_dir: PathBuf,
    pub(super) gen_dir_name: String,
    pub(super) log: &'a mut dyn RunLog,
    /// Where the current stage started, for `--stats`.
    pub(super) clock: StageClock,
}

impl Runner<'_> {
    pub(super) fn info(&mut self, line: String) {
        self.log.line(Level::Info, line);
    }

    /// Close a stage for `--stats`.
    pub(super) fn mark(&mut self, summary: &mut RunSummary, stage: &str) {
        self.clock.mark(&self.ws.db, summary.stats.as_mut(), stage);
    }

    /// The run in the spec's order. An `Err` stops the run with that
    /// error; failures that let the run go on are recorded in `summary`.
    pub(super) fn steps(
        &mut self,
        summary: &mut RunSummary,
        (lifecycles, requested): (Vec<LifecycleSpec>, Vec<LifecycleSpec>),
    ) -> Result<(), String> {
        let db = &self.ws.db;
        let tree = self.ws.tree;
        let root_ignore = script::gitignore(&gitignore_entries(db, tree), &RUN_LOCAL_FILES);
        write_if_changed(
            self.system,
            &self.gen_dir.join(".gitignore"),
            root_ignore.as_bytes(),
            false,
        )
        .map_err(|e| format!("writing {}: {e}", self.gen_dir.display()))?;
        if !self.req.no_state_query && self.req.record {
            self.state_query(summary)?;
            self.mark(summary, "state query");
        }
        // Registries are asked only when this run launches machines.
        let launches = !self.req.options.dry_run
            && !self.req.no_apply
            && self.req.shard.is_none()
            && requested.iter().any(|l| l.name == "instance-image");
        let valid = self.validate(summary, launches);
        self.mark(summary, "validate");
        if !valid {
            return Ok(());
        }
        if requested
            .iter()
            .any(|l| l.name == "base-image" || l.name == "instance-image")
        {
            self.plan(summary);
            if let Some(refusal) = crate::plan::bakes::unscoped_bakes(db, tree, self.run_input) {
                if !self.req.options.dry_run {
                    return Err(refusal);
                }
                self.log.line(Level::Warn, refusal);
            }
            self.mark(summary, "plan");
        }
        let emissions = self.generate(&requested, summary);
        if self.req.record && summary.ok {
            self.record_state_locations(false)?;
        }
        self.mark(summary, "generate");
        let names: Vec<&str> = lifecycles.iter().map(|l| l.name).collect();
        write_if_changed(
            self.system,
            &self.gen_dir.join("final_execution.sh"),
            script::final_execution(&names).as_bytes(),
            true,
        )
        .map_err(|e| format!("writing final_execution.sh: {e}"))?;
        // Only a tree that asks for the pause hears that it is not taken.
        let sleep = builders(db, tree)
            .config
            .as_ref()
            .and_then(|c| c.sleep_before_finalization)
            .filter(|s| *s != 0);
        if !self.req.no_apply {
            if let Some(sleep) = sleep.filter(|_| !self.req.options.dry_run) {
                self.info(format!(
                    "sleep_before_finalization={sleep} in cfg/ is ignored: csis never pauses before finalization"
                ));
            }
            self.apply(&lifecycles, &requested, &emissions, summary);
            if summary.ok && !self.req.options.dry_run && self.req.record {
                self.record_state_locations(true)?;
            }
            self.mark(summary, "apply");
        }
        Ok(())
    }
}
