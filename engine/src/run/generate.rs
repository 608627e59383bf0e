//! Generation: each requested lifecycle's directory as a pure function of
//! the loaded tree and the run options.
//!
//! One query per (lifecycle, builder) calls that builder's hooks for every
//! phase of the lifecycle; [`lifecycle_emission`] merges them in hook order
//! into the directory's files, the run-now commands and the deferred
//! commands, and renders the runner script. Nothing here writes a file:
//! [`crate::db::emit`] syncs an emission to disk.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{Diagnostic, ItemKind, Vct};
use csis_plugin_api::{
    Asset, BuilderDecl, CfExecutables, Command, Deferred, ExecutionLifecyclePhase, HookResult,
    LifecycleSpec,
};

use crate::db::run_input::RunInput;
use crate::db::{Db, Tree};
use crate::load::builders::{Builders, builders};
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::plan::hook_context::EngineContext;
use crate::run::script;

/// The builder classifications in hook order: runtime, state, group, user,
/// OS, mod, storage, image, instance (each sorted by name).
pub const HOOK_ORDER: [Vct; 9] = [
    Vct::RuntimeBuilderModel,
    Vct::StateBackendModel,
    Vct::GroupBuilderModel,
    Vct::UserBuilderModel,
    Vct::OsBuilderModel,
    Vct::ModBuilderModel,
    Vct::StorageBuilderModel,
    Vct::ImageBuilderModel,
    Vct::InstanceBuilderModel,
];

#[salsa::interned(debug)]
pub struct LifecycleKey<'db> {
    #[returns(ref)]
    pub name: String,
}

#[salsa::interned(debug)]
pub struct BuilderKey<'db> {
    #[returns(copy)]
    pub vct: Vct,
    #[returns(ref)]
    pub name: String,
}

/// What one hook call returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Part {
    pub assets: Vec<Asset>,
    pub build: Vec<Command>,
    pub deferred: Vec<Deferred>,
    /// The hook's refusal, when it failed.
    pub error: Option<Vec<Diagnostic>>,
}

/// One builder's hooks for one phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseParts {
    pub before: Part,
    pub during: Part,
    pub after: Part,
}

/// One builder's output for one lifecycle: one entry per phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuilderOutput {
    pub phases: Vec<PhaseParts>,
}

fn lifecycle_spec(db: &dyn Db, name: &str) -> Option<LifecycleSpec> {
    db.registry()
        .lifecycles()
        .iter()
        .find(|l| l.name == name)
        .cloned()
}

fn part(assets: HookResult<Vec<Asset>>, commands: HookResult<CfExecutables>) -> Part {
    let mut p = Part::default();
    let mut errors = Vec::new();
    match assets {
        Ok(a) => p.assets = a,
        Err(e) => errors.extend(e),
    }
    match commands {
        Ok(c) => {
            p.build = c.build_executables;
            p.deferred = c.finalize_executables;
        }
        Err(e) => errors.extend(e),
    }
    // A builder computing assets and commands from one source reports a
    // refusal through both hooks: say it once.
    let mut unique: Vec<Diagnostic> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    if !unique.is_empty() {
        p.error = Some(unique);
    }
    p
}

/// One builder's hooks for every phase of one lifecycle.
#[salsa::tracked(returns(ref))]
pub fn builder_output<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    lc: LifecycleKey<'db>,
    key: BuilderKey<'db>,
) -> BuilderOutput {
    let Some(spec) = lifecycle_spec(db, lc.name(db)) else {
        return BuilderOutput::default();
    };
    let b = builders(db, tree);
    let Some(decl) = b
        .by_class
        .get(&key.vct(db))
        .and_then(|m| m.get(key.name(db)))
    else {
        return BuilderOutput::default();
    };
    let Some(model) = db.registry().model(decl.classification, decl.model) else {
        return BuilderOutput::default();
    };
    let builder = (model.builder)(decl);
    let ctx = EngineContext {
        db,
        tree,
        run: Some(run),
        lifecycle: spec.name.to_string(),
    };
    let mut out = BuilderOutput::default();
    for (phase, vct) in &spec.phases {
        let during = if key.vct(db) == vct.sanitize() {
            part(
                builder.generate_items_during(*phase, &ctx),
                builder.get_commands_to_run_during(*phase, &ctx),
            )
        } else {
            Part::default()
        };
        out.phases.push(PhaseParts {
            before: part(
                builder.generate_items_before(*phase, &ctx),
                builder.get_commands_to_run_before(*phase, &ctx),
            ),
            during,
            after: part(
                builder.generate_items_after(*phase, &ctx),
                builder.get_commands_to_run_after(*phase, &ctx),
            ),
        });
    }
    out
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

/// The builders whose hooks fire, in hook order.
fn builders_in_hook_order<'db>(db: &'db dyn Db, tree: Tree) -> Vec<BuilderKey<'db>> {
    let b = builders(db, tree);
    let mut out = Vec::new();
    for vct in HOOK_ORDER {
        let mut names: Vec<&String> = b
            .by_class
            .get(&vct)
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        names.sort();
        out.extend(
            names
                .into_iter()
                .map(|n| BuilderKey::new(db, vct, n.clone())),
        );
    }
    out
}

/// A `#cloud-config` asset is read back as instance-setup reads it at
/// boot: what it would refuse fails generation. A document holding
/// `ENC[age:...]` markers is checked at validate instead, where the names
/// are known in clear.
///
/// A backstop: for the local builder every cause (an account or group
/// name, a file too big to carry or holding a NUL) is refused at validate
/// first ([`crate::check::user_data`]), so a `csis run` over it never gets here;
/// a plugin's own `#cloud-config` assets, which validation does not read,
/// do (engine/tests/generation.rs).
fn check_user_data(a: &Asset) -> Result<(), String> {
    if !a.content.starts_with(b"#cloud-config") || a.content.windows(8).any(|w| w == b"ENC[age:") {
        return Ok(());
    }
    let refused: Vec<String> = csis_cloud_config::check(&a.content, false)
        .into_iter()
        .filter(|f| f.severity == csis_cloud_config::Severity::Refused)
        .map(|f| format!("{}:{}:{}: {}", a.path, f.line, f.col, f.message))
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the generated user-data would be refused at boot: {}",
            refused.join("; ")
        ))
    }
}

/// The directory of one lifecycle: every builder's assets, the merged
/// `.gitignore`, and the runner script when anything was deferred.
#[salsa::tracked(returns(ref))]
pub fn lifecycle_emission<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    lc: LifecycleKey<'db>,
) -> Emission {
    let mut em = Emission::default();
    let name = lc.name(db).clone();
    let Some(spec) = lifecycle_spec(db, &name) else {
        em.error = Some(format!("unknown lifecycle '{name}'"));
        return em;
    };
    let keys = builders_in_hook_order(db, tree);
    let b = builders(db, tree);
    for k in &keys {
        let runtime =
            b.by_class
                .get(&k.vct(db))
                .and_then(|m| m.get(k.name(db)))
                .and_then(|d| {
                    d.base.runtime().map(str::to_string).or_else(|| {
                        (k.vct(db) == Vct::RuntimeBuilderModel).then(|| k.name(db).clone())
                    })
                });
        if let Some(rt) = runtime {
            em.builder_runtimes.insert(k.name(db).clone(), rt);
        }
    }
    // Under a runtime scope, builders bound to other runtimes generate
    // nothing: their directories stay as they were and their commands are
    // not this run's.
    let scope = run.options(db).only_runtime.clone();
    let outputs: Vec<(BuilderKey<'db>, &BuilderOutput)> = keys
        .iter()
        .filter(|k| {
            scope
                .as_ref()
                .is_none_or(|s| em.builder_runtimes.get(k.name(db)).is_none_or(|rt| rt == s))
        })
        .map(|k| (*k, builder_output(db, tree, run, lc, *k)))
        .collect();
    let mut deferred: Vec<Deferred> = Vec::new();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for (i, (phase, _)) in spec.phases.iter().enumerate() {
        for (which, label) in [
            (0, "before-phase hooks"),
            (1, "generation"),
            (2, "after-phase hooks"),
        ] {
            for (key, out) in &outputs {
                let Some(pp) = out.phases.get(i) else {
                    continue;
                };
                let p = match which {
                    0 => &pp.before,
                    1 => &pp.during,
                    _ => &pp.after,
                };
                if let Some(errs) = &p.error {
                    let detail: Vec<String> = errs.iter().map(|d| d.message.clone()).collect();
                    em.error = Some(format!(
                        "[{name}] {label} failed for {}: {}: {}",
                        phase.as_str(),
                        key.name(db),
                        detail.join("; ")
                    ));
                    em.diags.extend(errs.iter().cloned());
                    return em;
                }
                for a in &p.assets {
                    if let Err(e) = check_asset_path(&a.path).and_then(|()| check_user_data(a)) {
                        em.error = Some(format!("[{name}] {}: {e}", key.name(db)));
                        return em;
                    }
                    if let Some(first) = owner.insert(a.path.clone(), key.name(db).clone())
                        && first != *key.name(db)
                    {
                        em.error = Some(format!(
                            "[{name}] asset {} is written by both {first} and {}",
                            a.path,
                            key.name(db)
                        ));
                        return em;
                    }
                    em.files
                        .insert(a.path.clone(), Arc::from(a.content.as_slice()));
                }
                em.build.extend(p.build.iter().cloned());
                deferred.extend(p.deferred.iter().cloned());
            }
        }
    }
    // After-generate hooks: the run hooks of every plugin.
    let ctx = EngineContext {
        db,
        tree,
        run: Some(run),
        lifecycle: name.clone(),
    };
    let core = core_contribution(db, tree, run, &name);
    for a in core.assets {
        em.files.insert(a.path, Arc::from(a.content.as_slice()));
    }
    deferred.extend(core.deferred);
    for hooks in db.registry().run_hooks() {
        match hooks.after_generate(&ctx) {
            Ok(c) => {
                for a in c.assets {
                    if let Err(e) = check_asset_path(&a.path) {
                        em.error = Some(format!(
                            "[{name}] after-generate hook {}: {e}",
                            hooks.name()
                        ));
                        return em;
                    }
                    if let Some(first) = owner.insert(a.path.clone(), hooks.name().to_string()) {
                        em.error = Some(format!(
                            "[{name}] asset {} is written by both {first} and {}",
                            a.path,
                            hooks.name()
                        ));
                        return em;
                    }
                    em.files.insert(a.path, Arc::from(a.content.as_slice()));
                }
                deferred.extend(c.deferred);
            }
            Err(errs) => {
                let detail: Vec<String> = errs.iter().map(|d| d.message.clone()).collect();
                em.error = Some(format!(
                    "[{name}] after-generate hook {} failed: {}",
                    hooks.name(),
                    detail.join("; ")
                ));
                return em;
            }
        }
    }
    if let Some(late) = deferred.iter().find(|d| !d.phase.accepts_deferred()) {
        em.error = Some(format!(
            "[{name}] Extending finalization phase after PRE_VERIFY not allowed ({})",
            late.phase.as_str()
        ));
        return em;
    }
    // Stable: phase order, then the order commands were recorded.
    deferred.sort_by_key(|d| d.phase);
    let gen_dir = b
        .config
        .as_ref()
        .map(|c| c.generation_directory.clone())
        .unwrap_or_else(|| "generated".into());
    if !deferred.is_empty() {
        match script::runner_script(&name, &gen_dir, &deferred, &b.executables) {
            Ok(text) => {
                let path = script::runner_script_name(&name);
                em.files
                    .insert(path.clone(), Arc::from(text.into_bytes().as_slice()));
                em.executables.push(path);
            }
            Err(e) => {
                em.error = Some(format!("[{name}] {e}"));
                return em;
            }
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
    em.deferred = deferred;
    em
}

/// A hook's asset path must stay inside the lifecycle directory.
fn check_asset_path(path: &str) -> Result<(), String> {
    // The directory's own files: its .gitignore and runner script.
    let reserved = path == ".gitignore"
        || (path.starts_with("run-") && path.ends_with(".sh") && !path.contains('/'));
    if path.is_empty()
        || path.starts_with('/')
        || path.split('/').any(|s| s == ".." || s.is_empty())
        || reserved
    {
        return Err(format!(
            "asset path '{path}' must be a relative path inside the lifecycle directory"
        ));
    }
    Ok(())
}

/// The gitignore entries the configuration adds: cfg/'s, then every
/// builder's.
pub fn gitignore_entries(db: &dyn Db, tree: Tree) -> Vec<String> {
    let b = builders(db, tree);
    let mut v: Vec<String> = b
        .config
        .as_ref()
        .map(|c| c.gitignore.clone())
        .unwrap_or_default();
    for d in decls_in_hook_order(b) {
        v.extend(d.base.common().gitignore.iter().cloned());
    }
    v
}

/// Every declared builder in hook order: by classification as
/// [`HOOK_ORDER`] lists them, then by name.
pub fn decls_in_hook_order(b: &Builders) -> Vec<&Arc<BuilderDecl>> {
    HOOK_ORDER
        .iter()
        .flat_map(|vct| {
            let mut decls: Vec<&Arc<BuilderDecl>> = b
                .by_class
                .get(vct)
                .map(|m| m.values().collect())
                .unwrap_or_default();
            decls.sort_by(|a, c| a.name().cmp(c.name()));
            decls
        })
        .collect()
}

/// The deferred commands of one phase, for the apply step.
pub fn by_phase(deferred: &[Deferred]) -> Vec<(ExecutionLifecyclePhase, Vec<&Command>)> {
    let mut out: Vec<(ExecutionLifecyclePhase, Vec<&Command>)> = Vec::new();
    for d in deferred {
        match out.last_mut() {
            Some((p, cmds)) if *p == d.phase => cmds.push(&d.command),
            _ => out.push((d.phase, vec![&d.command])),
        }
    }
    out
}

/// Every requested lifecycle's emission, computed in parallel: first every
/// (lifecycle, builder) output (the roots, independent of each other), then
/// each lifecycle's merge. Each worker holds a handle on the same database,
/// so results are memoized once for all.
pub fn emissions(
    db: &crate::db::Database,
    tree: Tree,
    run: RunInput,
    lifecycles: &[&str],
) -> Vec<Emission> {
    use rayon::prelude::*;
    let b = builders(db, tree);
    let roots: Vec<(String, Vct, String)> = lifecycles
        .iter()
        .flat_map(|lc| {
            HOOK_ORDER.iter().flat_map(move |vct| {
                b.by_class
                    .get(vct)
                    .into_iter()
                    .flat_map(|m| m.keys())
                    .map(move |name| (lc.to_string(), *vct, name.clone()))
            })
        })
        .collect();
    roots
        .par_iter()
        .for_each_with(db.clone(), |db, (lc, vct, name)| {
            let lk = LifecycleKey::new(db, lc.clone());
            let bk = BuilderKey::new(db, *vct, name.clone());
            builder_output(db, tree, run, lk, bk);
        });
    lifecycles
        .par_iter()
        .map_with(db.clone(), |db, lc| {
            lifecycle_emission(db, tree, run, LifecycleKey::new(db, lc.to_string())).clone()
        })
        .collect()
}

/// The core's own after-generate contributions: the release lifecycle's
/// read-model and `release --declared` step, the retention lifecycle's
/// `dispose image --retention` step.
fn core_contribution(
    db: &dyn Db,
    tree: Tree,
    run: RunInput,
    lifecycle: &str,
) -> csis_plugin_api::Contribution {
    use csis_model::models::Item;
    let mut c = csis_plugin_api::Contribution::default();
    let images: Vec<_> = item_index(db, tree)
        .names(ItemKind::IMAGES)
        .filter_map(|n| {
            let id = ItemId::new(db, ItemKind::IMAGES, n.clone());
            match structured_item(db, tree, id).item.as_deref() {
                Some(Item::Image(img)) => Some(img.clone()),
                _ => None,
            }
        })
        .collect();
    let system_step = |args: &[&str]| {
        let mut all = vec!["--root-dir", "${CSIS_ROOT}"];
        all.extend(args);
        Deferred {
            phase: ExecutionLifecyclePhase::Execution,
            command: Command::csis(all),
        }
    };
    match lifecycle {
        "release" => {
            let current = &crate::state::lineage::releases(db, tree).value.current;
            let body = csis_yaml::emit::to_yaml(&serde_json::json!({ "current": current }));
            c.assets.push(Asset::text(
                "releases.yaml",
                format!("# Generated by csis: the current releases (a read-model of meta-state/releases.yaml).\n{body}"),
            ));
            if images.iter().any(|i| i.release.is_some()) {
                c.deferred.push(system_step(&["release", "--declared"]));
            }
        }
        "retention" => {
            let b = builders(db, tree);
            let runtimes: Vec<_> = b
                .by_class
                .get(&Vct::RuntimeBuilderModel)
                .into_iter()
                .flat_map(|m| m.values())
                .filter_map(|d| d.base.runtime_model())
                .collect();
            let declared = images.iter().any(|i| i.retention.is_some())
                || runtimes
                    .iter()
                    .any(|r| r.retention_keep.is_some() || r.ephemeral);
            if declared {
                let mut args = vec!["dispose", "image", "--retention"];
                let scope = run.options(db).only_runtime.clone();
                if let Some(rt) = &scope {
                    args.extend(["--runtime", rt.as_str()]);
                }
                c.deferred.push(system_step(&args));
            }
        }
        _ => {}
    }
    c
}
