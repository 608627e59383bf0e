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
    Asset, BuilderDecl, CfExecutables, Command, Contribution, Deferred, ExecutionLifecyclePhase,
    HookResult, LifecycleSpec,
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

/// Which of a phase's hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hook {
    Before,
    During,
    After,
}

/// One builder's hooks of one kind for one phase of one lifecycle in one
/// run: the whole key of [`phase_part`] and [`emission_units`], so the
/// query log names a phase by this key's id.
#[salsa::interned(debug)]
pub struct PhaseKey<'db> {
    #[returns(copy)]
    pub tree: Tree,
    #[returns(copy)]
    pub run: RunInput,
    #[returns(ref)]
    pub lifecycle: String,
    #[returns(copy)]
    pub vct: Vct,
    #[returns(ref)]
    pub builder: String,
    #[returns(copy)]
    pub phase: ExecutionLifecyclePhase,
    #[returns(copy)]
    pub hook: Hook,
}

/// One emission unit ([`csis_plugin_api::Builder::emission_units`]) of a
/// builder's during-hooks: the whole key of [`unit_part`], so the query
/// log names a unit by this key's id.
#[salsa::interned(debug)]
pub struct UnitKey<'db> {
    #[returns(copy)]
    pub phase: PhaseKey<'db>,
    #[returns(ref)]
    pub unit: String,
}

/// A generated file's path and bytes, shared: merging parts into a
/// directory copies no content.
pub type File = (String, Arc<[u8]>);

/// What one hook call (or one emission unit) returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Part {
    pub assets: Vec<File>,
    pub build: Vec<Command>,
    pub deferred: Vec<Deferred>,
    /// The hook's refusal, when it failed.
    pub error: Option<Vec<Diagnostic>>,
    /// The first asset a hook may not write (its index in `assets`, and
    /// why): checked here, once per part, not at every merge.
    pub bad_asset: Option<(usize, String)>,
}

impl Part {
    fn checked(mut self) -> Part {
        self.bad_asset = self
            .assets
            .iter()
            .enumerate()
            .find_map(|(i, (path, content))| {
                check_asset_path(path)
                    .and_then(|()| check_user_data(path, content))
                    .err()
                    .map(|e| (i, e))
            });
        self
    }
}

fn lifecycle_spec(db: &dyn Db, name: &str) -> Option<LifecycleSpec> {
    db.registry()
        .lifecycles()
        .iter()
        .find(|l| l.name == name)
        .cloned()
}

fn files(assets: Vec<Asset>) -> Vec<File> {
    assets
        .into_iter()
        .map(|a| (a.path, Arc::from(a.content)))
        .collect()
}

fn part(assets: HookResult<Vec<Asset>>, commands: HookResult<CfExecutables>) -> Part {
    let mut p = Part::default();
    let mut errors = Vec::new();
    match assets {
        Ok(a) => p.assets = files(a),
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

/// The builder a phase key names, made by its plugin, with the hooks'
/// context; `None` when the lifecycle or the builder is unknown.
fn hooks_of<'db>(
    db: &'db dyn Db,
    key: PhaseKey<'db>,
) -> Option<(Box<dyn csis_plugin_api::Builder>, EngineContext<'db>)> {
    let (tree, run) = (key.tree(db), key.run(db));
    let b = builders(db, tree);
    let decl = b.by_class.get(&key.vct(db))?.get(key.builder(db))?;
    let model = db.registry().model(decl.classification, decl.model)?;
    let ctx = EngineContext {
        db,
        tree,
        run: Some(run),
        lifecycle: key.lifecycle(db).clone(),
    };
    Some(((model.builder)(decl), ctx))
}

/// The emission units a builder's during-hooks split into, or `None` when
/// it is called whole. Reads only what the builder's list reads.
#[salsa::tracked(returns(ref))]
pub fn emission_units<'db>(db: &'db dyn Db, key: PhaseKey<'db>) -> Option<Vec<String>> {
    let (builder, ctx) = hooks_of(db, key)?;
    builder.emission_units(key.phase(db), &ctx)
}

/// One emission unit's files and commands: recomputed only when what the
/// builder read for this unit changed.
#[salsa::tracked(returns(ref))]
pub fn unit_part<'db>(db: &'db dyn Db, key: UnitKey<'db>) -> Part {
    let pk = key.phase(db);
    let Some((builder, ctx)) = hooks_of(db, pk) else {
        return Part::default();
    };
    match builder.generate_unit_during(pk.phase(db), key.unit(db), &ctx) {
        Ok(e) => Part {
            assets: files(e.assets),
            build: e.commands.build_executables,
            deferred: e.commands.finalize_executables,
            ..Part::default()
        }
        .checked(),
        Err(errs) => Part {
            error: Some(errs),
            ..Part::default()
        },
    }
}

/// One builder's hooks of one kind for one phase: a builder that splits
/// its during-hooks into units is the concatenation of its units' parts
/// (the first refusal is the phase's).
#[salsa::tracked(returns(ref))]
pub fn phase_part<'db>(db: &'db dyn Db, key: PhaseKey<'db>) -> Part {
    let phase = key.phase(db);
    if key.hook(db) == Hook::During
        && let Some(units) = emission_units(db, key)
    {
        let mut out = Part::default();
        for u in units {
            let p = unit_part(db, UnitKey::new(db, key, u.clone()));
            if p.error.is_some() {
                return Part {
                    error: p.error.clone(),
                    ..Part::default()
                };
            }
            if out.bad_asset.is_none()
                && let Some((i, e)) = &p.bad_asset
            {
                out.bad_asset = Some((out.assets.len() + i, e.clone()));
            }
            out.assets.extend(p.assets.iter().cloned());
            out.build.extend(p.build.iter().cloned());
            out.deferred.extend(p.deferred.iter().cloned());
        }
        return out;
    }
    let Some((builder, ctx)) = hooks_of(db, key) else {
        return Part::default();
    };
    let p = match key.hook(db) {
        Hook::Before => part(
            builder.generate_items_before(phase, &ctx),
            builder.get_commands_to_run_before(phase, &ctx),
        ),
        Hook::During => part(
            builder.generate_items_during(phase, &ctx),
            builder.get_commands_to_run_during(phase, &ctx),
        ),
        Hook::After => part(
            builder.generate_items_after(phase, &ctx),
            builder.get_commands_to_run_after(phase, &ctx),
        ),
    };
    p.checked()
}

/// The phase keys of one builder in one lifecycle, in hook order: per
/// phase, before, during (only for builders of the phase's
/// classification), after.
pub fn phase_keys<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    spec: &LifecycleSpec,
    vct: Vct,
    builder: &str,
) -> Vec<Vec<PhaseKey<'db>>> {
    spec.phases
        .iter()
        .map(|(phase, phase_vct)| {
            let mut hooks = vec![Hook::Before];
            if vct == phase_vct.sanitize() {
                hooks.push(Hook::During);
            }
            hooks.push(Hook::After);
            hooks
                .into_iter()
                .map(|h| {
                    PhaseKey::new(
                        db,
                        tree,
                        run,
                        spec.name.to_string(),
                        vct,
                        builder.to_string(),
                        *phase,
                        h,
                    )
                })
                .collect()
        })
        .collect()
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

/// The builders whose hooks fire, in hook order: (classification, name).
fn builders_in_hook_order(db: &dyn Db, tree: Tree) -> Vec<(Vct, String)> {
    let b = builders(db, tree);
    let mut out = Vec::new();
    for vct in HOOK_ORDER {
        let mut names: Vec<&String> = b
            .by_class
            .get(&vct)
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        names.sort();
        out.extend(names.into_iter().map(|n| (vct, n.clone())));
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
fn check_user_data(path: &str, content: &[u8]) -> Result<(), String> {
    if !content.starts_with(b"#cloud-config") || content.windows(8).any(|w| w == b"ENC[age:") {
        return Ok(());
    }
    let refused: Vec<String> = csis_cloud_config::check(content, false)
        .into_iter()
        .filter(|f| f.severity == csis_cloud_config::Severity::Refused)
        .map(|f| format!("{path}:{}:{}: {}", f.line, f.col, f.message))
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
    // Read by the release and retention lifecycles only, so no other
    // lifecycle's after-generate query depends on every image.
    let images = || -> Vec<_> {
        item_index(db, tree)
            .names(ItemKind::IMAGES)
            .filter_map(|n| {
                let id = ItemId::new(db, tree, ItemKind::IMAGES, n.as_str());
                match structured_item(db, id).item.as_deref() {
                    Some(Item::Image(img)) => Some(img.clone()),
                    _ => None,
                }
            })
            .collect()
    };
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
            if images().iter().any(|i| i.release.is_some()) {
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
            let declared = images().iter().any(|i| i.retention.is_some())
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
