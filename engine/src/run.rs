//! `csis run`: validation, the bake plan, generation, the apply step and
//! the summary, in the spec's order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use csis_model::ItemKind;
use csis_plugin_api::{Builder, ExecutionLifecyclePhase, LifecycleSpec};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::json;

use crate::builders::builders;
use crate::db::Db;
use crate::emit::{sync_dir, write_if_changed};
use crate::generate::{Emission, EngineContext, HOOK_ORDER, by_phase, gitignore_entries};
use crate::items::item_index;
use crate::lifecycles::parse_lifecycles;
use crate::meta_state;
use crate::plan::{RunInput, RunOptions, bake_plan, image_graph};
use crate::script::{self, RUN_LOCAL_FILES};
use crate::system::{Process, System};
use crate::workspace::Workspace;

/// What `csis run` was asked.
#[derive(Clone, Debug, Default)]
pub struct RunRequest {
    pub lifecycles: Vec<String>,
    pub options: RunOptions,
    /// `--no-apply`: generate only.
    pub no_apply: bool,
    /// The binary deferred `"$CSIS"` steps run (this executable).
    pub csis: PathBuf,
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
    /// Drift counts from the state query (none yet).
    pub state: BTreeMap<String, u64>,
    pub overlays: Vec<String>,
    pub undeclared: Vec<String>,
    pub bake_plan: BTreeMap<String, String>,
}

/// A line of the run's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// `run_id`: the ISO start time with every separator replaced by `_`.
pub fn run_id(unix: i64) -> String {
    crate::clock::strftime(unix, "%Y_%m_%dT%H_%M_%S")
}

/// Perform a run. The summary says how it went; `log` hears every line.
pub fn run(
    ws: &mut Workspace,
    system: &dyn System,
    req: &RunRequest,
    log: &mut dyn FnMut(Level, String),
) -> RunSummary {
    let start = ws.tree.start_unix(&ws.db);
    let mut summary = RunSummary {
        run_id: run_id(start),
        dry_run: req.options.dry_run,
        ok: true,
        ..RunSummary::default()
    };
    summary.overlays = ws
        .tree
        .overlays(&ws.db)
        .iter()
        .map(|f| f.path(&ws.db).to_string())
        .collect();
    let lifecycles: Vec<LifecycleSpec> = ws.db.registry().lifecycles().to_vec();
    let requested = match parse_lifecycles(&lifecycles, &req.lifecycles) {
        Ok(r) => r.into_iter().cloned().collect::<Vec<_>>(),
        Err(e) => return fail(ws, system, summary, e, log),
    };
    summary.requested = requested.iter().map(|l| l.name.to_string()).collect();
    let run_input = RunInput::new(&ws.db, req.options.clone());

    // 1. --only names images (or <image>@<runtime>); none is the empty surface.
    let index = item_index(&ws.db, ws.tree);
    summary.undeclared = index
        .undeclared
        .iter()
        .map(|(k, n)| format!("{}:{n}", k.singular()))
        .collect();
    if let Some(only) = &req.options.only {
        let unknown: Vec<&str> = only
            .iter()
            .map(|s| s.split_once('@').map_or(s.as_str(), |(i, _)| i))
            .filter(|i| !index.contains(ItemKind::IMAGES, i) && !is_os_builder(ws, i))
            .collect();
        if !unknown.is_empty() {
            let known: Vec<&str> = index.names(ItemKind::IMAGES).map(String::as_str).collect();
            let e = format!(
                "--only names unknown image(s): {}; known: {}",
                unknown.join(", "),
                known.join(", ")
            );
            return fail(ws, system, summary, e, log);
        }
    }

    let b = builders(&ws.db, ws.tree).clone();
    let gen_dir_name = b
        .config
        .as_ref()
        .map(|c| c.generation_directory.clone())
        .unwrap_or_else(|| "generated".into());
    let gen_dir = ws.root.join(&gen_dir_name);
    let gitignore = gitignore_entries(&ws.db, ws.tree);
    let root_ignore = script::gitignore(&gitignore, &RUN_LOCAL_FILES);
    if let Err(e) = write_if_changed(
        system,
        &gen_dir.join(".gitignore"),
        root_ignore.as_bytes(),
        false,
    ) {
        return fail(
            ws,
            system,
            summary,
            format!("writing {}: {e}", gen_dir.display()),
            log,
        );
    }

    // 2. Validation: what the load refuses, image cycles, run-hook validators.
    let mut errors: Vec<String> = ws
        .load_diagnostics()
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
        run: run_input,
        lifecycle: String::new(),
    };
    for hooks in ws.db.registry().run_hooks() {
        errors.extend(hooks.validators(&ctx));
    }
    if !errors.is_empty() {
        for e in &errors {
            log(Level::Error, format!("validation: {e}"));
        }
        summary.validation_errors = errors;
        summary.ok = false;
        summary.error = Some(format!(
            "validation failed with {} error(s)",
            summary.validation_errors.len()
        ));
        return finish(ws, system, summary, &gen_dir, log);
    }

    // 3. The bake plan, one decision per <series>@<runtime>.
    if requested
        .iter()
        .any(|l| l.name == "base-image" || l.name == "instance-image")
    {
        for (series, rt, d) in &bake_plan(&ws.db, ws.tree, run_input).decisions {
            log(
                Level::Info,
                format!("bake plan: {series}@{rt}: {}", d.reason),
            );
            summary
                .bake_plan
                .insert(format!("{series}@{rt}"), d.reason.clone());
        }
    }

    // 4. Generation, per requested lifecycle in declared order.
    let mut emissions: BTreeMap<String, Emission> = BTreeMap::new();
    let names: Vec<&str> = requested.iter().map(|l| l.name).collect();
    let generated = crate::generate::emissions(&ws.db, ws.tree, run_input, &names);
    for (spec, em) in requested.iter().zip(generated) {
        let mut outcome = LifecycleOutcome {
            deferred_commands: em.deferred.len(),
            runner_script: em
                .runner_script(spec.name)
                .map(|s| format!("{gen_dir_name}/{}/{s}", spec.name)),
            ..LifecycleOutcome::default()
        };
        if let Some(e) = &em.error {
            log(Level::Error, e.clone());
            outcome.status = "failed".into();
            outcome.error = Some(e.clone());
            summary.ok = false;
            summary
                .error
                .get_or_insert_with(|| format!("Generation failed for lifecycle {}", spec.name));
        } else {
            let dir = gen_dir.join(spec.name);
            let scope = req.options.only_runtime.clone();
            let frozen = |rel: &str| {
                let Some(scope) = &scope else { return false };
                let top = rel.split('/').next().unwrap_or_default();
                em.builder_runtimes.get(top).is_some_and(|rt| rt != scope)
            };
            match sync_dir(system, &dir, &em.files, &em.executables, &frozen) {
                Ok(r) => {
                    log(
                        Level::Info,
                        format!(
                            "[{}] generated: {} written, {} removed, {} unchanged",
                            spec.name,
                            r.written.len(),
                            r.removed.len(),
                            r.unchanged
                        ),
                    );
                    outcome.status = "generated".into();
                }
                Err(e) => {
                    outcome.status = "failed".into();
                    outcome.error = Some(format!("writing {}: {e}", dir.display()));
                    summary.ok = false;
                }
            }
            if outcome.status == "generated"
                && let Err(e) = run_build_commands(ws, system, req, spec.name, &em, &dir, log)
            {
                outcome.status = "failed".into();
                outcome.error = Some(e.clone());
                summary.ok = false;
                summary.error.get_or_insert(e);
            }
        }
        summary.lifecycles.insert(spec.name.to_string(), outcome);
        emissions.insert(spec.name.to_string(), em);
    }
    let names: Vec<&str> = lifecycles.iter().map(|l| l.name).collect();
    if let Err(e) = write_if_changed(
        system,
        &gen_dir.join("final_execution.sh"),
        script::final_execution(&names).as_bytes(),
        true,
    ) {
        summary.ok = false;
        summary
            .error
            .get_or_insert(format!("writing final_execution.sh: {e}"));
    }

    // 5. Apply.
    let sleep = b.config.as_ref().map_or(0, |c| c.sleep_before_finalization);
    if !req.options.dry_run && sleep != 0 {
        log(
            Level::Info,
            format!(
                "sleep_before_finalization={sleep} is ignored: finalization never waits on a terminal (DESIGN §3G)"
            ),
        );
    }
    if !req.no_apply {
        apply(
            ws,
            system,
            req,
            &lifecycles,
            &requested,
            &emissions,
            &gen_dir,
            &mut summary,
            log,
        );
    }
    finish(ws, system, summary, &gen_dir, log)
}

fn is_os_builder(ws: &Workspace, name: &str) -> bool {
    builders(&ws.db, ws.tree)
        .resolve(csis_model::Vct::OsBuilderModel, name)
        .is_some()
}

fn fail(
    ws: &Workspace,
    system: &dyn System,
    mut summary: RunSummary,
    error: String,
    log: &mut dyn FnMut(Level, String),
) -> RunSummary {
    log(Level::Error, error.clone());
    summary.ok = false;
    summary.error = Some(error);
    let gen_dir = ws.root.join(
        builders(&ws.db, ws.tree)
            .config
            .as_ref()
            .map(|c| c.generation_directory.clone())
            .unwrap_or_else(|| "generated".into()),
    );
    finish(ws, system, summary, &gen_dir, log)
}

/// The environment every executed command sees.
fn command_env(
    ws: &Workspace,
    req: &RunRequest,
    run_id: &str,
    lifecycle: &str,
) -> Vec<(String, String)> {
    vec![
        ("CSIS_ROOT".into(), ws.root.to_string_lossy().to_string()),
        ("CSIS".into(), req.csis.to_string_lossy().to_string()),
        ("CSIS_RUN_ID".into(), run_id.to_string()),
        ("CSIS_LIFECYCLE".into(), lifecycle.to_string()),
    ]
}

fn process_for(
    ws: &Workspace,
    req: &RunRequest,
    cmd: &csis_plugin_api::Command,
    dir: &Path,
    run_id: &str,
    lifecycle: &str,
) -> Result<Process, String> {
    let b = builders(&ws.db, ws.tree);
    let (binary, args) = script::argv(cmd, &b.executables)?;
    Ok(Process {
        program: binary
            .map(PathBuf::from)
            .unwrap_or_else(|| req.csis.clone()),
        args,
        cwd: match &cmd.working_directory {
            Some(d) => dir.join(d),
            None => dir.to_path_buf(),
        },
        env: command_env(ws, req, run_id, lifecycle),
    })
}

/// Run-now commands (formatters, validators), in hook order.
fn run_build_commands(
    ws: &Workspace,
    system: &dyn System,
    req: &RunRequest,
    lifecycle: &str,
    em: &Emission,
    dir: &Path,
    log: &mut dyn FnMut(Level, String),
) -> Result<(), String> {
    let b = builders(&ws.db, ws.tree);
    let run_id = run_id(ws.tree.start_unix(&ws.db));
    for cmd in &em.build {
        let line = script::command_line(cmd, &b.executables)?;
        let p = process_for(ws, req, cmd, dir, &run_id, lifecycle)?;
        let out = system
            .run(&p)
            .map_err(|e| format!("[{lifecycle}] command failed: {line}: {e}"))?;
        if out.code != Some(0) {
            for l in out.stdout.lines().chain(out.stderr.lines()) {
                log(Level::Warn, format!("[{lifecycle}] {l}"));
            }
            return Err(format!(
                "[{lifecycle}] Command failed: {line} (Return code: {})",
                out.code.map_or("signal".into(), |c| c.to_string())
            ));
        }
    }
    Ok(())
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

#[allow(clippy::too_many_arguments)]
fn apply(
    ws: &Workspace,
    system: &dyn System,
    req: &RunRequest,
    lifecycles: &[LifecycleSpec],
    requested: &[LifecycleSpec],
    emissions: &BTreeMap<String, Emission>,
    gen_dir: &Path,
    summary: &mut RunSummary,
    log: &mut dyn FnMut(Level, String),
) {
    let b = builders(&ws.db, ws.tree);
    let builder_objs = builders_in_hook_order(ws);
    let hooks = ws.db.registry().run_hooks();
    let mut failed = false;
    for spec in lifecycles {
        let name = spec.name;
        let script_path = gen_dir.join(name).join(script::runner_script_name(name));
        let Some(em) = emissions.get(name) else {
            if requested.iter().all(|r| r.name != name)
                && system.read_bytes(&script_path).ok().flatten().is_some()
            {
                log(
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
        if failed
            || summary
                .lifecycles
                .get(name)
                .is_some_and(|o| o.status != "generated")
        {
            summary.apply.insert(name.into(), "not-attempted".into());
            continue;
        }
        if em.deferred.is_empty() {
            summary.apply.insert(name.into(), "no-script".into());
            continue;
        }
        let dir = gen_dir.join(name);
        if req.options.dry_run {
            for d in &em.deferred {
                let line = script::command_line(&d.command, &b.executables).unwrap_or_default();
                log(
                    Level::Info,
                    format!(
                        "[DRY RUN] {name}/{}: would execute {line}",
                        d.phase.as_str()
                    ),
                );
            }
            summary.apply.insert(name.into(), "dry-run".into());
            continue;
        }
        let result = execute_lifecycle(ws, system, req, name, em, &dir, &builder_objs, hooks, log);
        match result {
            Ok(()) => {
                summary.apply.insert(name.into(), "executed".into());
            }
            Err(e) => {
                log(Level::Error, e.clone());
                log(Level::Error, format!("Apply failed for lifecycle {name}"));
                summary.apply.insert(name.into(), "failed".into());
                summary.ok = false;
                summary.error.get_or_insert(e);
                failed = true;
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn execute_lifecycle(
    ws: &Workspace,
    system: &dyn System,
    req: &RunRequest,
    name: &str,
    em: &Emission,
    dir: &Path,
    builder_objs: &[Box<dyn Builder>],
    hooks: &[&'static dyn csis_plugin_api::RunHooks],
    log: &mut dyn FnMut(Level, String),
) -> Result<(), String> {
    let b = builders(&ws.db, ws.tree);
    let run_id = run_id(ws.tree.start_unix(&ws.db));
    for h in hooks {
        h.before_apply(name)
            .map_err(|e| format!("[{name}] before-apply hook {} failed: {e}", h.name()))?;
    }
    for (phase, cmds) in by_phase(&em.deferred) {
        finalize_hooks(builder_objs, phase, true)
            .map_err(|e| format!("[{name}/{}] {e}", phase.as_str()))?;
        for cmd in cmds {
            let line = script::command_line(cmd, &b.executables)?;
            log(
                Level::Info,
                format!("[{name}/{}] executing {line}", phase.as_str()),
            );
            let p = process_for(ws, req, cmd, dir, &run_id, name)?;
            let out = system
                .run(&p)
                .map_err(|e| format!("[{name}/{}] command failed: {e}", phase.as_str()))?;
            for l in out.stdout.lines() {
                log(Level::Info, format!("[{name}/{}] {l}", phase.as_str()));
            }
            if out.code != Some(0) {
                for l in out.stderr.lines() {
                    log(Level::Warn, format!("[{name}/{}] {l}", phase.as_str()));
                }
                return Err(format!(
                    "[{name}/{}] command returned {}: {line}",
                    phase.as_str(),
                    out.code.map_or("a signal".into(), |c| c.to_string())
                ));
            }
        }
        finalize_hooks(builder_objs, phase, false)
            .map_err(|e| format!("[{name}/{}] {e}", phase.as_str()))?;
    }
    for h in hooks {
        h.after_apply(name)
            .map_err(|e| format!("[{name}] after-apply hook {} failed: {e}", h.name()))?;
    }
    Ok(())
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

/// Write the summary and the journal, then call the on-summary hooks.
fn finish(
    ws: &Workspace,
    system: &dyn System,
    summary: RunSummary,
    gen_dir: &Path,
    log: &mut dyn FnMut(Level, String),
) -> RunSummary {
    let json = serde_json::to_string_pretty(&summary).unwrap_or_else(|_| "{}".into());
    if let Err(e) = system.write_atomic(
        &gen_dir.join("run-summary.json"),
        format!("{json}\n").as_bytes(),
        false,
    ) {
        log(Level::Error, format!("Could not write run summary: {e}"));
    }
    let entry = json!({
        "run": summary.run_id,
        "requested": summary.requested,
        "dry_run": summary.dry_run,
        "ok": summary.ok,
        "apply": summary.apply,
        "error": summary.error,
    });
    if let Err(e) = meta_state::record_run(system, &ws.root, entry) {
        log(Level::Error, format!("Could not write run summary: {e}"));
    }
    for h in ws.db.registry().run_hooks() {
        if let Err(e) = h.on_summary(&json) {
            log(
                Level::Warn,
                format!("on-summary hook {} failed: {e}", h.name()),
            );
        }
    }
    summary
}
