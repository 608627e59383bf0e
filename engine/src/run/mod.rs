//! `csis run`: validation, the bake plan, generation, the apply step and
//! the summary, in the spec's order.

pub mod commit;
pub mod explain;
pub mod generate;
pub mod operations;
pub mod plan_report;
pub mod record_build;
pub mod script;
pub mod state_query;

use std::collections::BTreeMap;
use std::path::PathBuf;

use csis_plugin_api::{Builder, ExecutionLifecyclePhase, LifecycleSpec};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Value as J, json};

use crate::db::Db;
use crate::db::emit::{sync_dir, write_if_changed};
use crate::db::run_input::{RunInput, RunOptions};
use crate::db::stats::{StageClock, Stats};
use crate::db::system::{Process, ProcessOutput, System};
use crate::load::builders::builders;
use crate::load::items::item_index;
use crate::plan::bakes::{bake_plan, image_graph};
use crate::plan::hook_context::EngineContext;
use crate::registry::lifecycles::parse_lifecycles;
use crate::run::generate::{Emission, HOOK_ORDER, by_phase, gitignore_entries};
use crate::state::meta_state;
use crate::workspace::Workspace;
use script::RUN_LOCAL_FILES;

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
    /// Whether the run leaves its records (run-summary.json, the journal,
    /// the on-summary hooks): `csis watch --generate` does not.
    pub record: bool,
}

/// One lifecycle's generation outcome.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LifecycleOutcome {
    /// generated, failed, or not-requested... only requested ones appear.
    pub status: String,
    pub runner_script: Option<String>,
    pub deferred_commands: usize,
    pub error: Option<String>,
}

/// generated/run-summary.json.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    pub requested: Vec<String>,
    pub dry_run: bool,
    pub ok: bool,
    pub validation_errors: Vec<String>,
    /// In run order.
    pub lifecycles: IndexMap<String, LifecycleOutcome>,
    /// Per lifecycle, in run order: executed, dry-run, no-script,
    /// stale-script-skipped, failed, not-attempted.
    pub apply: IndexMap<String, String>,
    pub meta_state_commit: Option<String>,
    pub error: Option<String>,
    /// Drift counts of the state query, per class, `hard` and
    /// `unavailable`.
    pub state: BTreeMap<String, u64>,
    pub overlays: Vec<String>,
    pub undeclared: Vec<String>,
    pub bake_plan: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explained>,
}

/// `--explain`: the causes of each bake (`<series>@<runtime>`) and of each
/// rewritten generated file (its path under the generated directory).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Explained {
    pub bakes: BTreeMap<String, Vec<String>>,
    pub rewritten: BTreeMap<String, Vec<String>>,
}

/// A line of the run's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// Perform a run. The summary says how it went; `log` hears every line.
pub fn run(
    ws: &Workspace,
    system: &dyn System,
    req: &RunRequest,
    log: &mut dyn FnMut(Level, String),
) -> RunSummary {
    let gen_dir_name = ws.generation_dir_name();
    let mut runner = Runner {
        ws,
        system,
        req,
        run_input: ws.run_input(&req.options),
        run_id: crate::state::lineage::run_id(ws.tree.start_unix(&ws.db)),
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
    if let Err(e) = runner.steps(&mut summary) {
        (runner.log)(Level::Error, e.clone());
        summary.ok = false;
        summary.error = Some(e);
    }
    if let Some(stats) = summary.stats.as_mut() {
        stats.peak_memory_kib = crate::db::stats::peak_memory_kib(system);
    }
    runner.finish(summary)
}

/// What every step of one run shares.
struct Runner<'a> {
    ws: &'a Workspace,
    system: &'a dyn System,
    req: &'a RunRequest,
    run_input: RunInput,
    run_id: String,
    gen_dir: PathBuf,
    gen_dir_name: String,
    log: &'a mut dyn FnMut(Level, String),
    /// Where the current stage started, for `--stats`.
    clock: StageClock,
}

impl Runner<'_> {
    fn info(&mut self, line: String) {
        (self.log)(Level::Info, line);
    }

    /// Close a stage for `--stats`.
    fn mark(&mut self, summary: &mut RunSummary, stage: &str) {
        self.clock.mark(&self.ws.db, summary.stats.as_mut(), stage);
    }

    /// The run in the spec's order. An `Err` stops the run with that
    /// error; failures that let the run go on are recorded in `summary`.
    fn steps(&mut self, summary: &mut RunSummary) -> Result<(), String> {
        let db = &self.ws.db;
        let tree = self.ws.tree;
        summary.overlays = tree
            .overlays(db)
            .iter()
            .map(|f| f.path(db).to_string())
            .collect();
        let index = item_index(db, tree);
        summary.undeclared = index
            .undeclared
            .iter()
            .map(|(k, n)| format!("{}:{n}", k.singular()))
            .collect();
        let lifecycles: Vec<LifecycleSpec> = db.registry().lifecycles().to_vec();
        let requested: Vec<LifecycleSpec> = parse_lifecycles(&lifecycles, &self.req.lifecycles)?
            .into_iter()
            .cloned()
            .collect();
        summary.requested = requested.iter().map(|l| l.name.to_string()).collect();
        crate::plan::bakes::check_selection(&self.ws.db, self.ws.tree, &self.req.options)?;
        if self.req.options.dry_run && !self.req.options.migrate_state.is_empty() {
            return Err(
                "--migrate-state moves state and needs --no-dry-run: a dry run never moves state."
                    .into(),
            );
        }
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
                (self.log)(Level::Warn, refusal);
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
        let sleep = builders(db, tree)
            .config
            .as_ref()
            .map_or(0, |c| c.sleep_before_finalization);
        if !self.req.no_apply {
            if !self.req.options.dry_run && sleep != 0 {
                self.info(format!(
                    "sleep_before_finalization={sleep} is ignored: finalization never waits on a terminal (DESIGN §3G)"
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

    /// Ask the runtimes what exists; the report goes to
    /// generated/state-report.json and its counts to the summary.
    fn state_query(&mut self, summary: &mut RunSummary) -> Result<(), String> {
        let report = crate::run::state_query::query(self.ws, self.system)?;
        crate::run::state_query::write_report(self.system, &self.ws.root, &self.gen_dir, &report)?;
        for line in report.lines() {
            let level = if line.starts_with("unavailable: ") {
                Level::Warn
            } else {
                Level::Info
            };
            (self.log)(level, format!("state: {line}"));
        }
        summary.state = report.counts();
        Ok(())
    }

    /// What the load refuses, image cycles, run-hook validators, and the
    /// registries' claims when this run launches. Whether the run may go on.
    fn validate(&mut self, summary: &mut RunSummary, launches: bool) -> bool {
        let (infos, warnings, mut errors) = validation(self.ws, self.system, self.run_input);
        if launches {
            errors.extend(crate::check::hostname_claims::check(
                &self.ws.db,
                self.ws.tree,
                &self.ws.root,
                &self.req.options,
            ));
        }
        for i in infos {
            (self.log)(Level::Info, i);
        }
        for w in warnings {
            (self.log)(Level::Warn, w);
        }
        if errors.is_empty() {
            return true;
        }
        for e in &errors {
            (self.log)(Level::Error, format!("validation: {e}"));
        }
        summary.ok = false;
        summary.error = Some(format!("validation failed with {} error(s)", errors.len()));
        summary.validation_errors = errors;
        false
    }

    /// One decision per `<series>@<runtime>`, logged and journaled.
    fn plan(&mut self, summary: &mut RunSummary) {
        let ws = self.ws;
        for (series, rt, d) in &bake_plan(&ws.db, ws.tree, self.run_input).decisions {
            self.info(format!("bake plan: {series}@{rt}: {}", d.reason));
            summary
                .bake_plan
                .insert(format!("{series}@{rt}"), d.reason.clone());
        }
        if let Some(explained) = summary.explain.as_mut() {
            for (key, lines) in crate::run::explain::explain_bakes(ws, self.run_input) {
                self.info(format!("explain: bake {key}:"));
                for line in &lines {
                    self.info(format!("    {line}"));
                }
                explained.bakes.insert(key, lines);
            }
        }
    }

    /// Every requested lifecycle's directory, computed in parallel, written
    /// in declared order; then its run-now commands.
    fn generate(
        &mut self,
        requested: &[LifecycleSpec],
        summary: &mut RunSummary,
    ) -> BTreeMap<String, Emission> {
        let ws = self.ws;
        let names: Vec<&str> = requested.iter().map(|l| l.name).collect();
        let generated = crate::run::generate::emissions(&ws.db, ws.tree, self.run_input, &names);
        let mut emissions = BTreeMap::new();
        for (spec, em) in requested.iter().zip(generated) {
            let name = spec.name;
            let mut outcome = LifecycleOutcome {
                deferred_commands: em.deferred.len(),
                runner_script: em
                    .runner_script(name)
                    .map(|s| format!("{}/{name}/{s}", self.gen_dir_name)),
                status: "generated".into(),
                error: None,
            };
            let result = match &em.error {
                Some(e) => {
                    summary
                        .error
                        .get_or_insert_with(|| format!("Generation failed for lifecycle {name}"));
                    Err(e.clone())
                }
                None => self
                    .write_lifecycle(name, &em, summary.explain.as_mut())
                    .and_then(|()| self.write_read_models(name))
                    .and_then(|()| self.run_build_commands(name, &em)),
            };
            if let Err(e) = result {
                (self.log)(Level::Error, e.clone());
                outcome.status = "failed".into();
                outcome.error = Some(e.clone());
                summary.ok = false;
                summary.error.get_or_insert(e);
            }
            summary.lifecycles.insert(name.to_string(), outcome);
            emissions.insert(name.to_string(), em);
        }
        emissions
    }

    /// Sync a lifecycle's directory; under a runtime scope, builder
    /// directories bound to other runtimes stay as they are.
    fn write_lifecycle(
        &mut self,
        name: &str,
        em: &Emission,
        explain: Option<&mut Explained>,
    ) -> Result<(), String> {
        let dir = self.gen_dir.join(name);
        let scope = self.req.options.only_runtime.clone();
        let frozen = |rel: &str| {
            let Some(scope) = &scope else { return false };
            let top = rel.split('/').next().unwrap_or_default();
            em.builder_runtimes.get(top).is_some_and(|rt| rt != scope)
        };
        if let Some(explained) = explain {
            self.explain_rewrites(name, em, &frozen, explained);
        }
        let r = sync_dir(self.system, &dir, &em.files, &em.executables, &frozen)
            .map_err(|e| format!("writing {}: {e}", dir.display()))?;
        self.info(format!(
            "[{name}] generated: {} written, {} removed, {} unchanged",
            r.written.len(),
            r.removed.len(),
            r.unchanged
        ));
        Ok(())
    }

    /// Before the sync: why each file it will rewrite differs from the one
    /// on disk.
    fn explain_rewrites(
        &mut self,
        name: &str,
        em: &Emission,
        frozen: &dyn Fn(&str) -> bool,
        explained: &mut Explained,
    ) {
        let dir = self.gen_dir.join(name);
        for (rel, bytes) in em.files.iter().filter(|(rel, _)| !frozen(rel)) {
            let old = self.system.read_bytes(&dir.join(rel)).ok().flatten();
            if old.as_deref() == Some(&bytes[..]) {
                continue;
            }
            let path = format!("{}/{name}/{rel}", self.gen_dir_name);
            let lines = crate::run::explain::explain_rewrite(
                self.ws,
                self.run_input,
                rel,
                old.as_deref(),
                bytes,
            );
            self.info(format!("explain: rewrote {path}:"));
            for line in &lines {
                self.info(format!("    {line}"));
            }
            explained.rewritten.insert(path, lines);
        }
    }

    /// The read-models a lifecycle leaves in meta-state/ once it has
    /// generated (a dry run too; `watch --generate` leaves no records).
    fn write_read_models(&mut self, lifecycle: &str) -> Result<(), String> {
        use crate::state::read_models::{
            IDENTITY, STORAGE, identity_read_model, storage_read_model,
        };
        if !self.req.record {
            return Ok(());
        }
        let (db, tree) = (&self.ws.db, self.ws.tree);
        match lifecycle {
            "identity" => self.write_read_model(IDENTITY, identity_read_model(db, tree)),
            "storage" => {
                let record =
                    crate::state::lineage::read_record(db, tree, crate::state::storage_state::FILE);
                self.write_read_model(STORAGE, storage_read_model(db, tree, &record.value))
            }
            "instance-image" => self.record_launch_params(),
            _ => Ok(()),
        }
    }

    /// Launch parameters after instance-image generates; `launched` after
    /// a real apply executed it.
    fn record_launch_params(&mut self) -> Result<(), String> {
        use crate::state::launch_params::{compute_all, recorded};
        let (db, tree) = (&self.ws.db, self.ws.tree);
        let before = self.read_launch_params()?;
        let after = recorded(&before, &compute_all(db, tree, &before), &self.run_id);
        self.write_launch_params(&before, &after)
    }

    /// Before a real instance-image apply: each new durable machine takes
    /// the first free name of meta-state/aliases.txt, burnt in place and
    /// recorded in its launch parameters (a run that dies in between costs
    /// one name). No pool, no aliases; an empty pool is a warning. A dry
    /// run only says what it would take.
    fn draw_aliases(&mut self, dry_run: bool) -> Result<(), String> {
        let pool_path = meta_state::path(&self.ws.root, crate::state::alias_pool::FILE);
        let Some(mut pool) = self
            .system
            .read_to_string(&pool_path)
            .map_err(|e| format!("{}: {e}", pool_path.display()))?
        else {
            return Ok(());
        };
        let before = self.read_launch_params()?;
        let mut after = before.clone();
        let time = csis_string_stage::clock::iso_datetime(self.ws.tree.start_unix(&self.ws.db));
        for (name, r) in after.instances.iter_mut() {
            let durable = r.params.get("ephemeral") != Some(&J::Bool(true));
            if r.launched || !durable || r.params.get("alias").is_some_and(|a| !a.is_null()) {
                continue;
            }
            let hostname = r
                .params
                .get("hostname")
                .and_then(J::as_str)
                .unwrap_or(name)
                .to_string();
            match crate::state::alias_pool::draw(&pool, name, &hostname, &time, &self.run_id) {
                Some((rest, alias)) => {
                    let verb = if dry_run {
                        "[DRY RUN] alias pool: instance '{name}' would take"
                    } else {
                        "alias pool: instance '{name}' takes"
                    };
                    (self.log)(
                        Level::Info,
                        format!("{} '{alias}'", verb.replace("{name}", name)),
                    );
                    r.params.insert("alias".into(), json!(alias));
                    pool = rest;
                }
                None => (self.log)(
                    Level::Warn,
                    format!(
                        "alias pool {}: EMPTY -- instance '{name}' launches without an alias; append names to refill",
                        crate::state::alias_pool::FILE
                    ),
                ),
            }
        }
        if dry_run || after == before {
            return Ok(());
        }
        self.system
            .write_atomic(&pool_path, pool.as_bytes(), false)
            .map_err(|e| format!("{}: {e}", pool_path.display()))?;
        self.write_launch_params(&before, &after)
    }

    /// After a real instance-image apply: every declared instance not yet
    /// launched is, and opens its next generation in instance-state.yaml.
    fn mark_launched(&mut self) -> Result<(), String> {
        use crate::state::instance_state::{FILE, InstanceState, opened};
        let before = self.read_launch_params()?;
        let index = item_index(&self.ws.db, self.ws.tree);
        let declared: Vec<&String> = index.names(csis_model::ItemKind::INSTANCES).collect();
        let after = crate::state::launch_params::launched(&before, &declared, &self.run_id);
        let new: Vec<(String, bool)> = after
            .instances
            .iter()
            .filter(|(n, r)| r.launched && !before.instances.get(*n).is_some_and(|b| b.launched))
            .map(|(n, r)| (n.clone(), r.params.get("ephemeral") == Some(&J::Bool(true))))
            .collect();
        if !new.is_empty() {
            let (system, root) = (self.system, &self.ws.root);
            let state: InstanceState = crate::state::lineage::read_json(system, root, FILE)?;
            crate::state::lineage::write_json(
                system,
                root,
                FILE,
                &opened(&state, &new, &self.run_id),
            )?;
        }
        self.write_launch_params(&before, &after)
    }

    /// After a real instance-image apply: every ephemeral machine it
    /// launched (and its runtime tore down) is forgotten.
    fn forget_ephemerals(&mut self) -> Result<(), String> {
        let launched = self.read_launch_params()?;
        let ops = crate::run::operations::Ops {
            ws: self.ws,
            system: self.system,
            run: self.run_id.clone(),
        };
        for (name, r) in &launched.instances {
            if r.launched && r.params.get("ephemeral") == Some(&J::Bool(true)) {
                let line = ops.forget_ephemeral(name)?;
                self.info(line);
            }
        }
        Ok(())
    }

    fn read_launch_params(&self) -> Result<crate::state::launch_params::LaunchParams, String> {
        crate::state::lineage::read_json(
            self.system,
            &self.ws.root,
            crate::state::launch_params::FILE,
        )
    }

    fn write_launch_params(
        &self,
        before: &crate::state::launch_params::LaunchParams,
        after: &crate::state::launch_params::LaunchParams,
    ) -> Result<(), String> {
        if after == before {
            return Ok(());
        }
        crate::state::lineage::write_json(
            self.system,
            &self.ws.root,
            crate::state::launch_params::FILE,
            after,
        )
    }

    fn write_read_model(&self, file: &str, body: serde_json::Map<String, J>) -> Result<(), String> {
        let mut model = serde_json::Map::new();
        model.insert("run".into(), json!(self.run_id));
        model.extend(body);
        meta_state::write(self.system, &self.ws.root, file, &model)
    }

    /// The environment every executed command sees.
    fn command_env(&self, lifecycle: &str) -> Vec<(String, String)> {
        vec![
            (
                "CSIS_ROOT".into(),
                self.ws.root.to_string_lossy().to_string(),
            ),
            ("CSIS".into(), self.req.csis.to_string_lossy().to_string()),
            ("CSIS_RUN_ID".into(), self.run_id.clone()),
            ("CSIS_LIFECYCLE".into(), lifecycle.to_string()),
        ]
    }

    /// Execute one command from the lifecycle directory: its shell line and
    /// what it printed.
    fn execute(
        &self,
        lifecycle: &str,
        cmd: &csis_plugin_api::Command,
        dir: &std::path::Path,
    ) -> Result<(String, ProcessOutput), String> {
        let b = builders(&self.ws.db, self.ws.tree);
        let line = script::command_line(cmd, &b.executables)?;
        let (binary, args) = script::argv(cmd, &b.executables)?;
        let env = self.command_env(lifecycle);
        let args = args.iter().map(|a| script::expand(a, &env)).collect();
        let dir = dir.to_path_buf();
        let process = Process {
            program: binary
                .map(PathBuf::from)
                .unwrap_or_else(|| self.req.csis.clone()),
            args,
            cwd: match &cmd.working_directory {
                Some(d) => dir.join(d),
                None => dir,
            },
            env,
        };
        let out = self
            .system
            .run(&process)
            .map_err(|e| format!("[{lifecycle}] command failed: {line}: {e}"))?;
        Ok((line, out))
    }

    /// Run-now commands (formatters, validators), in hook order.
    fn run_build_commands(&mut self, lifecycle: &str, em: &Emission) -> Result<(), String> {
        let dir = self.gen_dir.join(lifecycle);
        for cmd in &em.build {
            let (line, out) = self.execute(lifecycle, cmd, &dir)?;
            if out.code != Some(0) {
                for l in out.stdout.lines().chain(out.stderr.lines()) {
                    (self.log)(Level::Warn, format!("[{lifecycle}] {l}"));
                }
                return Err(format!(
                    "[{lifecycle}] Command failed: {line} (Return code: {})",
                    out.code.map_or("signal".into(), |c| c.to_string())
                ));
            }
        }
        Ok(())
    }

    /// The apply step: per lifecycle in run order, its deferred commands
    /// (logged in a dry run, executed in a real one).
    fn apply(
        &mut self,
        lifecycles: &[LifecycleSpec],
        requested: &[LifecycleSpec],
        emissions: &BTreeMap<String, Emission>,
        summary: &mut RunSummary,
    ) {
        let ws = self.ws;
        let b = builders(&ws.db, ws.tree);
        let builder_objs = builders_in_hook_order(ws);
        let mut failed = false;
        for spec in lifecycles {
            let name = spec.name;
            let Some(em) = emissions.get(name) else {
                let script_path = self
                    .gen_dir
                    .join(name)
                    .join(script::runner_script_name(name));
                if requested.iter().all(|r| r.name != name)
                    && self
                        .system
                        .read_bytes(&script_path)
                        .ok()
                        .flatten()
                        .is_some()
                {
                    (self.log)(
                        Level::Warn,
                        format!(
                            "[{name}] stale-script-skipped: run-{name}.sh is from an earlier run of a lifecycle not requested now"
                        ),
                    );
                    summary
                        .apply
                        .insert(name.into(), "stale-script-skipped".into());
                }
                continue;
            };
            let generated = summary
                .lifecycles
                .get(name)
                .is_some_and(|o| o.status == "generated");
            let status = if failed || !generated {
                // A lifecycle that failed to generate stops the run's
                // applies as a failed apply does.
                failed = true;
                "not-attempted"
            } else if em.deferred.is_empty() {
                "no-script"
            } else if self.req.options.dry_run {
                if name == "instance-image"
                    && let Err(e) = self.draw_aliases(true)
                {
                    (self.log)(Level::Error, e);
                }
                for d in &em.deferred {
                    let line = script::command_line(&d.command, &b.executables).unwrap_or_default();
                    self.info(format!(
                        "[DRY RUN] {name}/{}: would execute {line}",
                        d.phase.as_str()
                    ));
                }
                "dry-run"
            } else {
                if name == "instance-image"
                    && self.req.record
                    && let Err(e) = self.draw_aliases(false)
                {
                    (self.log)(Level::Error, e);
                }
                match self.execute_lifecycle(name, em, &builder_objs) {
                    Ok(()) => "executed",
                    Err(e) => {
                        (self.log)(Level::Error, e.clone());
                        (self.log)(Level::Error, format!("Apply failed for lifecycle {name}"));
                        summary.ok = false;
                        summary.error.get_or_insert(e);
                        failed = true;
                        "failed"
                    }
                }
            };
            let recorded = match (name, status == "executed" && self.req.record) {
                ("storage", true) => self.record_storage_transitions(),
                ("instance-image", true) => {
                    self.mark_launched().and_then(|()| self.forget_ephemerals())
                }
                _ => Ok(()),
            };
            if let Err(e) = recorded {
                (self.log)(Level::Error, e.clone());
                summary.ok = false;
                summary.error.get_or_insert(e);
            }
            summary.apply.insert(name.into(), status.into());
        }
    }

    /// meta-state/state-locations.yaml: after generation every root's
    /// location (a workspace `--migrate-state` names keeps its old record),
    /// after a real apply the migrated ones, each move journaled.
    fn record_state_locations(&mut self, migrated: bool) -> Result<(), String> {
        use crate::state::lineage::{read_json, write_json};
        use crate::state::state_locations::{FILE, StateLocations, enabled, recorded_after};
        let (db, tree) = (&self.ws.db, self.ws.tree);
        let migrating = &self.req.options.migrate_state;
        if !enabled(builders(db, tree)) || (migrated && migrating.is_empty()) {
            return Ok(());
        }
        let before: StateLocations = read_json(self.system, &self.ws.root, FILE)?;
        let after = recorded_after(db, tree, &before, migrating, migrated, &self.run_id);
        if after != before {
            write_json(self.system, &self.ws.root, FILE, &after)?;
            for m in &after.migrations[before.migrations.len()..] {
                self.info(format!(
                    "state-locations: workspace {} moved from {} to {}",
                    m.workspace, m.from, m.to
                ));
            }
        }
        Ok(())
    }

    /// After a real storage apply, the requested states become current in
    /// meta-state/storage-state.yaml.
    fn record_storage_transitions(&mut self) -> Result<(), String> {
        use crate::state::storage_state::{FILE, StorageState, applied, declared};
        let (system, root) = (self.system, &self.ws.root);
        let before: StorageState = crate::state::lineage::read_json(system, root, FILE)?;
        let after = applied(&before, &declared(&self.ws.db, self.ws.tree), &self.run_id);
        if after == before {
            return Ok(());
        }
        crate::state::lineage::write_json(system, root, FILE, &after)?;
        let model =
            crate::state::read_models::storage_read_model(&self.ws.db, self.ws.tree, &after);
        self.write_read_model(crate::state::read_models::STORAGE, model)
    }

    /// A real run's deferred commands, phase by phase, with every builder's
    /// pre/post_finalize_phase around each phase and the run hooks around
    /// the whole.
    fn execute_lifecycle(
        &mut self,
        name: &str,
        em: &Emission,
        builder_objs: &[Box<dyn Builder>],
    ) -> Result<(), String> {
        let hooks = self.ws.db.registry().run_hooks();
        for h in hooks {
            h.before_apply(name)
                .map_err(|e| format!("[{name}] before-apply hook {} failed: {e}", h.name()))?;
        }
        let mirror = self.materialize(name, em)?;
        for (phase, cmds) in by_phase(&em.deferred) {
            let at = format!("{name}/{}", phase.as_str());
            finalize_hooks(builder_objs, phase, true).map_err(|e| format!("[{at}] {e}"))?;
            for cmd in cmds {
                let b = builders(&self.ws.db, self.ws.tree);
                let line = script::command_line(cmd, &b.executables)?;
                self.info(format!("[{at}] executing {line}"));
                let (line, out) = self
                    .execute(name, cmd, &mirror)
                    .map_err(|e| format!("[{at}] {e}"))?;
                for l in out.stdout.lines() {
                    self.info(format!("[{at}] {l}"));
                }
                if out.code != Some(0) {
                    for l in out.stderr.lines() {
                        (self.log)(Level::Warn, format!("[{at}] {l}"));
                    }
                    return Err(format!(
                        "[{at}] command returned {}: {line}",
                        out.code.map_or("a signal".into(), |c| c.to_string())
                    ));
                }
            }
            finalize_hooks(builder_objs, phase, false).map_err(|e| format!("[{at}] {e}"))?;
        }
        self.copy_back_lock_files(name, &mirror)?;
        for h in hooks {
            h.after_apply(name)
                .map_err(|e| format!("[{name}] after-apply hook {} failed: {e}", h.name()))?;
        }
        Ok(())
    }

    /// Record the run in the journal, commit when asked, write the summary,
    /// then call the on-summary hooks.
    fn finish(mut self, summary: RunSummary) -> RunSummary {
        if !self.req.record {
            return summary;
        }
        let entry = json!({
            "run": summary.run_id,
            "requested": summary.requested,
            "dry_run": summary.dry_run,
            "ok": summary.ok,
            "apply": summary.apply,
            "error": summary.error,
        });
        if let Err(e) = meta_state::record_run(self.system, &self.ws.root, entry) {
            (self.log)(Level::Error, format!("Could not write run summary: {e}"));
        }
        let mut summary = summary;
        if self.req.commit && summary.ok {
            self.commit(&mut summary);
        }
        let json = serde_json::to_string_pretty(&summary).unwrap_or_else(|_| "{}".into());
        if let Err(e) = self.system.write_atomic(
            &self.gen_dir.join("run-summary.json"),
            format!("{json}\n").as_bytes(),
            false,
        ) {
            (self.log)(Level::Error, format!("Could not write run summary: {e}"));
        }
        for h in self.ws.db.registry().run_hooks() {
            if let Err(e) = h.on_summary(&json) {
                (self.log)(
                    Level::Warn,
                    format!("on-summary hook {} failed: {e}", h.name()),
                );
            }
        }
        summary
    }
}

/// The validation at the head of every run: (infos, warnings, errors),
/// each a `file:line:col: message` line where it has a place. What the load
/// refuses, the validate checks, image chain cycles, the executables, and
/// every run hook's validators.
pub fn validation(
    ws: &Workspace,
    system: &dyn System,
    run: RunInput,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let diags = ws.load_diagnostics();
    let warnings = diags
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| ws.describe(d).replacen("warning: ", "", 1))
        .collect();
    let mut errors: Vec<String> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| ws.describe(d))
        .collect();
    errors.extend(
        image_graph(&ws.db, ws.tree)
            .diags
            .iter()
            .map(|d| d.message.clone()),
    );
    let ctx = EngineContext {
        db: &ws.db,
        tree: ws.tree,
        run: Some(run),
        lifecycle: String::new(),
    };
    for hooks in ws.db.registry().run_hooks() {
        errors.extend(hooks.validators(&ctx));
    }
    let (mut infos, exe_errors) =
        crate::check::executables::check(&ws.db, ws.tree, &ws.root, system);
    infos.extend(crate::state::alias_pool::remaining_info(&ws.db, ws.tree));
    errors.extend(exe_errors.iter().map(|d| ws.describe(d)));
    errors.extend(
        crate::state::state_locations::check(&ws.db, ws.tree, &run.options(&ws.db).migrate_state)
            .iter()
            .map(|d| ws.describe(d)),
    );
    errors.extend(crate::run::state_query::check_last_report(
        system,
        &ws.root.join(ws.generation_dir_name()),
    ));
    (infos, warnings, errors)
}

impl Runner<'_> {
    /// The private mirror a real run executes from: the lifecycle's
    /// directory at `_private/<lifecycle>/` beside generated/, with every
    /// `ENC[age:...]` marker replaced by its plaintext, kept in step
    /// incrementally. Only `.terraform.lock.hcl` files are ever copied back.
    /// In a git repository `_private/` is appended to the root's .gitignore.
    fn materialize(&mut self, name: &str, em: &Emission) -> Result<PathBuf, String> {
        let identities = self.ws.tree.identities(&self.ws.db);
        let mut files = BTreeMap::new();
        for (path, bytes) in &em.files {
            let text = String::from_utf8_lossy(bytes);
            let mut plain = text.to_string();
            for (line, marker) in csis_secrets::markers_in(&text) {
                let opened = csis_secrets::decrypt(&marker, identities)
                    .map_err(|e| format!("[{name}] materialise: {path}:{line}: {e}"))?;
                plain = plain.replacen(&marker, &opened, 1);
            }
            files.insert(
                path.clone(),
                std::sync::Arc::<[u8]>::from(plain.into_bytes()),
            );
        }
        let mirror = self.ws.root.join("_private").join(name);
        sync_dir(self.system, &mirror, &files, &em.executables, &|_| false)
            .map_err(|e| format!("[{name}] materialise: {e}"))?;
        if self.system.is_dir(&self.ws.root.join(".git")) {
            let ignore = self.ws.root.join(".gitignore");
            let current = self
                .system
                .read_to_string(&ignore)
                .ok()
                .flatten()
                .unwrap_or_default();
            if !current.lines().any(|l| l.trim() == "_private/") {
                let sep = if current.is_empty() || current.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                let updated = format!("{current}{sep}_private/\n");
                self.system
                    .write_atomic(&ignore, updated.as_bytes(), false)
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(mirror)
    }

    /// After execution: the lock files terraform wrote in the mirror go
    /// back to the generated tree; nothing else does.
    fn copy_back_lock_files(&self, name: &str, mirror: &std::path::Path) -> Result<(), String> {
        for p in self.system.list_files(mirror).map_err(|e| e.to_string())? {
            if p.file_name().is_some_and(|f| f == ".terraform.lock.hcl") {
                let rel = p.strip_prefix(mirror).unwrap_or(&p);
                if let Some(bytes) = self.system.read_bytes(&p).map_err(|e| e.to_string())? {
                    write_if_changed(
                        self.system,
                        &self.gen_dir.join(name).join(rel),
                        &bytes,
                        false,
                    )
                    .map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(())
    }

    /// `--commit`: meta-state/ and the generated tree, after the gate.
    fn commit(&mut self, summary: &mut RunSummary) {
        let message = format!(
            "csis run {}: {}",
            summary.run_id,
            summary.requested.join(", ")
        );
        let plaintexts = decrypted_plaintexts(self.ws);
        let log = &mut self.log;
        let outcome = crate::run::commit::commit_meta_state(
            self.system,
            &self.ws.root,
            &self.gen_dir_name,
            &message,
            &plaintexts,
            &mut |w| log(Level::Warn, w),
        );
        match outcome {
            Ok(crate::run::commit::CommitOutcome::Committed(sha)) => {
                (self.log)(Level::Info, format!("meta-state commit: {sha}"));
                summary.meta_state_commit = Some(sha);
            }
            Ok(crate::run::commit::CommitOutcome::NothingChanged) => {
                (self.log)(Level::Info, "meta-state commit: nothing changed".into());
            }
            Ok(crate::run::commit::CommitOutcome::Skipped(why)) => (self.log)(Level::Warn, why),
            Err(e) => {
                (self.log)(Level::Error, e.clone());
                summary.ok = false;
                summary.error = Some(e);
            }
        }
    }
}

/// Every plaintext the load decrypted, for the commit's search.
fn decrypted_plaintexts(ws: &Workspace) -> Vec<String> {
    let db = &ws.db;
    let mut out = Vec::new();
    for kind in db.registry().item_kinds() {
        for name in crate::load::items::item_index(db, ws.tree).names(kind) {
            let id = crate::load::items::ItemId::new(db, kind, name.clone());
            let si = crate::load::items_model::structured_item(db, ws.tree, id);
            out.extend(si.secrets.iter().map(|s| s.plaintext.clone()));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every builder, constructed, in hook order (for the finalize hooks).
fn builders_in_hook_order(ws: &Workspace) -> Vec<Box<dyn Builder>> {
    let b = builders(&ws.db, ws.tree);
    let mut out = Vec::new();
    for vct in HOOK_ORDER {
        let mut decls: Vec<_> = b
            .by_class
            .get(&vct)
            .map(|m| m.values().collect())
            .unwrap_or_default();
        decls.sort_by(|a, c| a.name().cmp(c.name()));
        for d in decls {
            if let Some(spec) = ws.db.registry().model(d.classification, d.model) {
                out.push((spec.builder)(d));
            }
        }
    }
    out
}

fn finalize_hooks(
    builders: &[Box<dyn Builder>],
    phase: ExecutionLifecyclePhase,
    pre: bool,
) -> Result<(), String> {
    for b in builders {
        let r = if pre {
            b.pre_finalize_phase(phase)
        } else {
            b.post_finalize_phase(phase)
        };
        if let Err(diags) = r {
            let msgs: Vec<String> = diags.into_iter().map(|d| d.message).collect();
            let which = if pre { "pre" } else { "post" };
            return Err(format!(
                "{which}_finalize_phase failed: {}",
                msgs.join("; ")
            ));
        }
    }
    Ok(())
}
