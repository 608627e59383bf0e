//! Generation: each requested lifecycle's directory as a pure function of
//! the loaded tree and the run options.
//!
//! One query per (lifecycle, builder, phase, hook) calls that builder's
//! hooks (`hook_parts.rs`); [`lifecycle_emission`] merges them in hook
//! order into the directory's files, the run-now commands and the deferred
//! commands, adds what the after-generate hooks contribute, and renders
//! the runner script. Nothing here writes a file: [`crate::db::emit`]
//! syncs an emission to disk.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{Diagnostic, Vct};
use csis_plugin_api::{Command, Contribution, Deferred, LifecycleSpec};

use crate::db::run_input::RunInput;
use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::plan::hook_context::EngineContext;
use crate::run::core_contribution::core_contribution;
use crate::run::hook_order::{builders_in_hook_order, gitignore_entries};
pub use crate::run::hook_parts::{Hook, PhaseKey, UnitKey};
use crate::run::hook_parts::{check_asset_path, emission_units, phase_keys, phase_part, unit_part};
use crate::run::script;

#[salsa::interned(debug)]
pub struct LifecycleKey<'db> {
    #[returns(ref)]
    pub name: String,
}

fn lifecycle_spec(db: &dyn Db, name: &str) -> Option<LifecycleSpec> {
    db.registry()
        .lifecycles()
        .iter()
        .find(|l| l.name == name)
        .cloned()
}

/// A lifecycle's generated directory and its commands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Emission {
    /// Files by path relative to the lifecycle directory.
    pub files: BTreeMap<String, Arc<[u8]>>,
    /// Paths of `files` that are executable.
    pub executables: Vec<String>,
    /// Commands to run now, during generation, in hook order.
    pub build: Vec<Command>,
    /// Deferred commands in execution order (phase order, then recording
    /// order).
    pub deferred: Vec<Deferred>,
    /// The runtime each builder directory belongs to, for runtime scopes.
    pub builder_runtimes: BTreeMap<String, String>,
    /// Why generation failed, with the hooks' own diagnostics.
    pub error: Option<String>,
    pub diags: Vec<Diagnostic>,
}

impl Emission {
    pub fn runner_script(&self, lifecycle: &str) -> Option<String> {
        let name = script::runner_script_name(lifecycle);
        self.files.contains_key(&name).then_some(name)
    }
}

/// The builders' part of one lifecycle's directory: every builder's
/// assets and commands merged in hook order, before the after-generate
/// hooks, the runner script and the `.gitignore`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Merged {
    pub files: BTreeMap<String, Arc<[u8]>>,
    pub build: Vec<Command>,
    /// In recording order (sorted by phase in [`lifecycle_deferred`]).
    pub deferred: Vec<Deferred>,
    pub builder_runtimes: BTreeMap<String, String>,
    /// The builder that wrote each file.
    pub owner: BTreeMap<String, String>,
    pub error: Option<String>,
    pub diags: Vec<Diagnostic>,
}

/// The builders' part of one lifecycle: recomputed when one of its phase
/// parts changed, a merge of shared files (no content is copied).
#[salsa::tracked(returns(ref))]
pub fn lifecycle_parts<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    lc: LifecycleKey<'db>,
) -> Merged {
    let mut em = Merged::default();
    let name = lc.name(db).clone();
    let Some(spec) = lifecycle_spec(db, &name) else {
        em.error = Some(format!("unknown lifecycle '{name}'"));
        return em;
    };
    let keys = builders_in_hook_order(db, tree);
    let b = builders(db, tree);
    for (vct, bname) in &keys {
        let runtime = b
            .by_class
            .get(vct)
            .and_then(|m| m.get(bname))
            .and_then(|d| {
                d.base
                    .runtime()
                    .map(str::to_string)
                    .or_else(|| (*vct == Vct::RuntimeBuilderModel).then(|| bname.clone()))
            });
        if let Some(rt) = runtime {
            em.builder_runtimes.insert(bname.clone(), rt);
        }
    }
    // Under a runtime scope, builders bound to other runtimes generate
    // nothing: their directories stay as they were and their commands are
    // not this run's.
    let scope = run.options(db).only_runtime.clone();
    let outputs: Vec<(&String, Vec<Vec<PhaseKey<'db>>>)> = keys
        .iter()
        .filter(|(_, n)| {
            scope
                .as_ref()
                .is_none_or(|s| em.builder_runtimes.get(n).is_none_or(|rt| rt == s))
        })
        .map(|(vct, n)| (n, phase_keys(db, tree, run, &spec, *vct, n)))
        .collect();
    let owner = &mut em.owner;
    for (i, (phase, _)) in spec.phases.iter().enumerate() {
        for (hook, label) in [
            (Hook::Before, "before-phase hooks"),
            (Hook::During, "generation"),
            (Hook::After, "after-phase hooks"),
        ] {
            for (bname, phases) in &outputs {
                let Some(key) = phases
                    .get(i)
                    .and_then(|ks| ks.iter().find(|k| k.hook(db) == hook))
                else {
                    continue;
                };
                let p = phase_part(db, *key);
                if let Some(errs) = &p.error {
                    let detail: Vec<String> = errs.iter().map(|d| d.message.clone()).collect();
                    em.error = Some(format!(
                        "[{name}] {label} failed for {}: {bname}: {}",
                        phase.as_str(),
                        detail.join("; ")
                    ));
                    em.diags.extend(errs.iter().cloned());
                    return em;
                }
                for (i, (path, content)) in p.assets.iter().enumerate() {
                    if let Some((bad, e)) = &p.bad_asset
                        && *bad == i
                    {
                        em.error = Some(format!("[{name}] {bname}: {e}"));
                        return em;
                    }
                    if let Some(first) = owner.insert(path.clone(), (*bname).clone())
                        && first != **bname
                    {
                        em.error = Some(format!(
                            "[{name}] asset {path} is written by both {first} and {bname}"
                        ));
                        return em;
                    }
                    em.files.insert(path.clone(), content.clone());
                }
                em.build.extend(p.build.iter().cloned());
                em.deferred.extend(p.deferred.iter().cloned());
            }
        }
    }
    em
}

/// What the after-generate hooks add to one lifecycle: the core's own
/// contribution, then each plugin's run hooks in registration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AfterGenerate {
    pub core: Contribution,
    /// (hook name, what it added or why it failed).
    pub hooks: Vec<(String, Result<Contribution, String>)>,
}

#[salsa::tracked(returns(ref))]
pub fn after_generate<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    lc: LifecycleKey<'db>,
) -> AfterGenerate {
    let name = lc.name(db).clone();
    let ctx = EngineContext {
        db,
        tree,
        run: Some(run),
        lifecycle: name.clone(),
        about: None,
    };
    AfterGenerate {
        core: core_contribution(db, tree, run, &name),
        hooks: db
            .registry()
            .run_hooks()
            .iter()
            .map(|hooks| {
                let r = hooks.after_generate(&ctx).map_err(|errs| {
                    errs.iter()
                        .map(|d| d.message.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                });
                (hooks.name().to_string(), r)
            })
            .collect(),
    }
}

/// One lifecycle's deferred commands in execution order (phase order,
/// then recording order): what its runner script lists. Backdated when an
/// edit changed files but no command, so the script is not re-rendered.
#[salsa::tracked(returns(ref))]
pub fn lifecycle_deferred<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    lc: LifecycleKey<'db>,
) -> Result<Vec<Deferred>, String> {
    let name = lc.name(db);
    let parts = lifecycle_parts(db, tree, run, lc);
    if let Some(e) = &parts.error {
        return Err(e.clone());
    }
    let after = after_generate(db, tree, run, lc);
    let mut deferred = parts.deferred.clone();
    deferred.extend(after.core.deferred.iter().cloned());
    for (hook, r) in &after.hooks {
        match r {
            Ok(c) => deferred.extend(c.deferred.iter().cloned()),
            Err(e) => return Err(format!("[{name}] after-generate hook {hook} failed: {e}")),
        }
    }
    if let Some(late) = deferred.iter().find(|d| !d.phase.accepts_deferred()) {
        return Err(format!(
            "[{name}] Extending finalization phase after PRE_VERIFY not allowed ({})",
            late.phase.as_str()
        ));
    }
    // Stable: phase order, then the order commands were recorded.
    deferred.sort_by_key(|d| d.phase);
    Ok(deferred)
}

/// One lifecycle's runner script, when anything was deferred: its own
/// query over the commands it lists.
#[salsa::tracked(returns(ref))]
pub fn runner_script_file<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    lc: LifecycleKey<'db>,
) -> Result<Option<Arc<[u8]>>, String> {
    let name = lc.name(db);
    let deferred = lifecycle_deferred(db, tree, run, lc).as_ref()?;
    if deferred.is_empty() {
        return Ok(None);
    }
    let b = builders(db, tree);
    let gen_dir = b
        .config
        .as_ref()
        .map(|c| c.generation_directory.clone())
        .unwrap_or_else(|| "generated".into());
    script::runner_script(name, &gen_dir, deferred, &b.executables)
        .map(|text| Some(Arc::from(text.into_bytes())))
        .map_err(|e| format!("[{name}] {e}"))
}

/// The directory of one lifecycle: every builder's assets, the
/// after-generate hooks' assets, the merged `.gitignore`, and the runner
/// script when anything was deferred.
#[salsa::tracked(returns(ref))]
pub fn lifecycle_emission<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    lc: LifecycleKey<'db>,
) -> Emission {
    let name = lc.name(db).clone();
    let parts = lifecycle_parts(db, tree, run, lc);
    let mut em = Emission {
        files: parts.files.clone(),
        build: parts.build.clone(),
        builder_runtimes: parts.builder_runtimes.clone(),
        error: parts.error.clone(),
        diags: parts.diags.clone(),
        ..Emission::default()
    };
    if em.error.is_some() {
        return em;
    }
    let after = after_generate(db, tree, run, lc);
    // A run hook may not write a builder's file nor another hook's.
    let mut hook_owner: BTreeMap<&str, &str> = BTreeMap::new();
    for a in &after.core.assets {
        em.files
            .insert(a.path.clone(), Arc::from(a.content.as_slice()));
    }
    for (hook, r) in &after.hooks {
        let Ok(c) = r else {
            // Reported below, with the deferred commands.
            break;
        };
        for a in &c.assets {
            if let Err(e) = check_asset_path(&a.path) {
                em.error = Some(format!("[{name}] after-generate hook {hook}: {e}"));
                return em;
            }
            let first = parts
                .owner
                .get(&a.path)
                .map(String::as_str)
                .or_else(|| hook_owner.get(a.path.as_str()).copied());
            if let Some(first) = first {
                em.error = Some(format!(
                    "[{name}] asset {} is written by both {first} and {hook}",
                    a.path
                ));
                return em;
            }
            hook_owner.insert(&a.path, hook);
            em.files
                .insert(a.path.clone(), Arc::from(a.content.as_slice()));
        }
    }
    let deferred = match lifecycle_deferred(db, tree, run, lc) {
        Ok(d) => d,
        Err(e) => {
            em.error = Some(e.clone());
            return em;
        }
    };
    match runner_script_file(db, tree, run, lc) {
        Ok(Some(text)) => {
            let path = script::runner_script_name(&name);
            em.files.insert(path.clone(), text.clone());
            em.executables.push(path);
        }
        Ok(None) => {}
        Err(e) => {
            em.error = Some(e.clone());
            return em;
        }
    }
    em.files.insert(
        ".gitignore".into(),
        Arc::from(
            script::gitignore(&gitignore_entries(db, tree), &[])
                .into_bytes()
                .as_slice(),
        ),
    );
    em.deferred = deferred.clone();
    em
}

/// Every requested lifecycle's emission, computed in parallel on the
/// workers of one rayon pool, each holding a handle on the same database
/// (results are memoized once for all): first every builder's emission
/// units, then every unit and every hook call (the roots, independent of
/// each other), then each lifecycle's merge. Returned in requested order:
/// the bytes are those of a sequential run.
pub fn emissions(
    db: &crate::db::Database,
    tree: Tree,
    run: RunInput,
    lifecycles: &[&str],
) -> Vec<Emission> {
    use rayon::prelude::*;
    let order = builders_in_hook_order(db, tree);
    let keys: Vec<PhaseKey<'_>> = lifecycles
        .iter()
        .filter_map(|lc| lifecycle_spec(db, lc))
        .flat_map(|spec| {
            order
                .iter()
                .flat_map(|(vct, name)| phase_keys(db, tree, run, &spec, *vct, name))
                .flatten()
                .collect::<Vec<_>>()
        })
        .collect();
    // Interned ids are plain ids: workers with their own handle look them
    // up in the same database.
    let ids: Vec<salsa::Id> = keys.iter().map(salsa::plumbing::AsId::as_id).collect();
    let units: Vec<(salsa::Id, String)> = ids
        .par_iter()
        .map_with(db.clone(), |db, id| {
            let k: PhaseKey<'_> = salsa::plumbing::FromId::from_id(*id);
            if k.hook(db) != Hook::During {
                return Vec::new();
            }
            emission_units(db, k)
                .iter()
                .flatten()
                .map(|u| (*id, u.clone()))
                .collect()
        })
        .flatten()
        .collect();
    units
        .par_iter()
        .for_each_with(db.clone(), |db, (id, unit)| {
            let k: PhaseKey<'_> = salsa::plumbing::FromId::from_id(*id);
            unit_part(db, UnitKey::new(db, k, unit.clone()));
        });
    ids.par_iter().for_each_with(db.clone(), |db, id| {
        let k: PhaseKey<'_> = salsa::plumbing::FromId::from_id(*id);
        phase_part(db, k);
    });
    lifecycles
        .par_iter()
        .map_with(db.clone(), |db, lc| {
            lifecycle_emission(db, tree, run, LifecycleKey::new(db, lc.to_string())).clone()
        })
        .collect()
}
