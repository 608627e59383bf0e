//! One builder's hooks for one phase of one lifecycle, each call a query
//! keyed by what it reads ([`PhaseKey`], and [`UnitKey`] for a builder
//! that splits its output into emission units): what a hook returned (a
//! [`Part`]) with its assets checked once, before generate.rs merges the
//! parts into a lifecycle's directory. A refusal stays in the part; only
//! the merge decides what fails the lifecycle.

use std::sync::Arc;

use csis_model::{Diagnostic, Vct};
use csis_plugin_api::{
    Asset, CfExecutables, Command, Deferred, ExecutionLifecyclePhase, HookResult, LifecycleSpec,
};

use crate::db::run_input::RunInput;
use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::plan::hook_context::EngineContext;

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
        about: None,
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

/// A hook's asset path must stay inside the lifecycle directory.
pub(super) fn check_asset_path(path: &str) -> Result<(), String> {
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
