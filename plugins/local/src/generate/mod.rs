//! What the local builders generate: one JSON spec per bake, storage,
//! launch and identity, and the deferred `csis local ...` step that
//! executes it. The spec is the whole input of the step, so the runner
//! script and the files beside it are exactly what a real run does.

use csis_model::models::{BaseBuilder, Item, ItemView, OsBuilderModel};
use csis_model::{Diagnostic, ItemKind, Map, Value, Vct};
use csis_plugin_api::{
    Asset, BakeStep, BuilderDecl, CfExecutables, Command, Deferred, ExecutionLifecyclePhase as P,
    HookContext, HookResult, path_for_phase,
};
use serde_json::{Value as J, json};

use crate::DEFAULT_STORE;

mod launch;

pub use launch::{instance_user_data, launch, launches};

/// A spec file and the steps that execute it.
pub struct Step {
    pub asset: Asset,
    pub extra_assets: Vec<Asset>,
    pub commands: Vec<Command>,
    /// The bake it is, when it is one: a step of the run's bake graph.
    pub bake: Option<BakeStep>,
}

fn refuse<T>(msg: String) -> HookResult<T> {
    Err(vec![Diagnostic::error(msg)])
}

/// The store directory of a runtime builder (relative to the root).
pub fn store_of(runtime: Option<&BuilderDecl>) -> String {
    runtime
        .and_then(|r| r.extra.get("store"))
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_STORE)
        .to_string()
}

/// The store as a runner script names it: under `${CSIS_ROOT}` unless the
/// tree declared an absolute path (allow_store_outside_root).
fn store_in_script(store: &str) -> String {
    if store.starts_with('/') {
        store.to_string()
    } else {
        format!("${{CSIS_ROOT}}/{store}")
    }
}

fn pretty(v: &J) -> String {
    format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default())
}

fn step(builder: &str, phase: P, name: &str, spec: J, verb: &str) -> Step {
    let path = path_for_phase(builder, phase, Some(name), ".json");
    Step {
        asset: Asset::text(path.clone(), pretty(&spec)),
        extra_assets: Vec::new(),
        commands: vec![Command::csis(["local", verb, "--spec", path.as_str()])],
        bake: None,
    }
}

/// A bake, then its record in lineage: the build id is only known when the
/// step runs, so the record step names the manifest through the run's own
/// variables. It runs after the bakes of `after` (its parent's), on this
/// machine.
fn bake_step(
    builder: &str,
    phase: P,
    (series, runtime, store): (&str, &str, &str),
    spec: J,
    after: Vec<String>,
) -> Step {
    let mut s = step(builder, phase, series, spec, "bake");
    s.bake = Some(BakeStep {
        key: BakeStep::key(series, runtime),
        after,
        local: true,
    });
    let manifest = format!(
        "{}/images/{}/manifest.json",
        store_in_script(store),
        crate::build_id(series, runtime, "${CSIS_RUN_ID}")
    );
    s.commands.push(Command::lineage_record(&manifest));
    s
}

/// The files of steps.
pub fn assets(steps: Vec<Step>) -> Vec<Asset> {
    steps
        .into_iter()
        .flat_map(|s| std::iter::once(s.asset).chain(s.extra_assets))
        .collect()
}

/// The deferred commands of steps: every local step runs in the execution
/// phase, in the order generated (parents before children, images before
/// the instances launched from them).
pub fn commands(steps: &[Step]) -> CfExecutables {
    CfExecutables {
        build_executables: Vec::new(),
        finalize_executables: steps
            .iter()
            .flat_map(|s| {
                s.commands.iter().cloned().map(|command| Deferred {
                    phase: P::Execution,
                    command,
                    bake: s.bake.clone(),
                })
            })
            .collect(),
    }
}

fn runtime_of(ctx: &dyn HookContext, decl: &BuilderDecl) -> (String, String) {
    let rt_name = decl.base.runtime().unwrap_or("default").to_string();
    let rt = ctx.builder(Vct::RuntimeBuilderModel, &rt_name);
    let store = store_of(rt.as_deref());
    (rt.map(|r| r.name().to_string()).unwrap_or(rt_name), store)
}

/// Whether the runtime of `decl` shares the network with its sandboxes;
/// a spec says so only when it does (`"network": true`).
fn with_network(ctx: &dyn HookContext, decl: &BuilderDecl, mut spec: J) -> J {
    let rt_name = decl.base.runtime().unwrap_or("default");
    let on = ctx
        .builder(Vct::RuntimeBuilderModel, rt_name)
        .is_some_and(|r| crate::network_shared(&r));
    if on && let J::Object(m) = &mut spec {
        m.insert("network".into(), J::Bool(true));
    }
    spec
}

/// The declared in-bake tests (`tests:`, not its `post_bake`) as the
/// assertions the bake runs last inside the build's root, each with what
/// it checks: `"in_bake_tests": [{"what": "file /etc/motd", "line":
/// "if ! ..."}]`, only when there are any. No admin checks: the local
/// runtime provisions no admin user (its session is the local shell).
fn with_in_bake_tests(mut spec: J, tests: &csis_model::Map) -> J {
    let checks: Vec<J> = csis_plugin_api::image_tests::in_bake_checks("", &[], tests)
        .into_iter()
        .map(|c| json!({"what": c.what, "line": c.line}))
        .collect();
    if !checks.is_empty()
        && let J::Object(m) = &mut spec
    {
        m.insert("in_bake_tests".into(), J::Array(checks));
    }
    spec
}

fn names_builder(ctx: &dyn HookContext, vct: Vct, reference: &str, me: &str) -> bool {
    ctx.builder(vct, reference).is_some_and(|b| b.name() == me)
}

/// base-image, image-generation: one bake per OS builder entry naming this
/// image builder, from the vendor tree its `image_id` names.
pub fn base_bakes(ctx: &dyn HookContext, me: &BuilderDecl) -> HookResult<Vec<Step>> {
    let (runtime, store) = runtime_of(ctx, me);
    let config = ctx.config();
    let mut steps = Vec::new();
    for (os_decl, entry) in csis_plugin_api::builder::base_bake_entries(ctx, me, &runtime) {
        let BaseBuilder::Os(os) = &os_decl.base else {
            continue;
        };
        let series = os_decl.name();
        // A base composed from an image template: image-composer-tool
        // builds it into the work directory before this bake (the ict OS
        // builder's pre-execution steps), and the bake takes its artifact.
        let vendor = match &entry.template {
            Some(_) => Some(csis_plugin_api::template_work_dir(series, &runtime)),
            None => entry.image_id.clone(),
        };
        let start = match (&entry.distribution, vendor) {
            (Some(d), _) => ("distribution", json!(d)),
            (None, Some(vendor)) => ("vendor", json!(vendor)),
            (None, None) => {
                return refuse(format!(
                    "No resolved Image identifiers for OS {series} in predefined_resolve (the local runtime starts a base from the runtimes entry's image_id, a directory relative to the root, or from its distribution:, a root mmdebstrap builds)"
                ));
            }
        };
        let spec = json!({
            "kind": "base",
            "series": series,
            "runtime": runtime,
            "store": store,
            "fingerprint": ctx.fingerprint(series, &runtime),
            "identity_types": os.identity_types,
            "storage_types": os.storage_types,
            start.0: start.1,
            "family": os.family,
            "family_version": os.family_version,
            "admin_user": os.admin_user,
            "admin_public_keys": admin_keys(os, &config),
            "update": update_of(os),
            "tags": os.builder.tags,
        });
        let spec = with_network(ctx, me, spec);
        let mut spec = with_in_bake_tests(spec, entry.tests.as_ref().unwrap_or(&os.tests));
        if entry.template.is_some()
            && let J::Object(m) = &mut spec
        {
            m.insert("vendor_kind".into(), json!("template-build"));
        }
        steps.push(bake_step(
            me.name(),
            P::ImageGeneration,
            (series, &runtime, &store),
            spec,
            Vec::new(),
        ));
    }
    Ok(steps)
}

fn admin_keys(os: &OsBuilderModel, config: &Map) -> J {
    match &os.admin_public_keys {
        Some(keys) => json!(keys),
        None => match config.get("admin_public_keys") {
            Some(Value::Seq(items)) => J::Array(items.iter().map(Value::to_json).collect()),
            Some(Value::Scalar { text, .. }) => json!([text]),
            _ => json!([]),
        },
    }
}

fn update_of(os: &OsBuilderModel) -> J {
    serde_json::to_value(os.effective_update()).unwrap_or(J::Null)
}

/// instance-image, image-generation: one bake per image this builder
/// bakes, parents before children.
pub fn image_bakes(ctx: &dyn HookContext, me: &BuilderDecl) -> HookResult<Vec<Step>> {
    let mut steps = Vec::new();
    for name in ctx.images_in_bake_order() {
        steps.extend(image_bake(ctx, me, &name)?);
    }
    Ok(steps)
}

/// The bake of one image, when this builder bakes it in this run.
pub fn image_bake(ctx: &dyn HookContext, me: &BuilderDecl, name: &str) -> HookResult<Option<Step>> {
    let Some(view) = ctx.item(ItemKind::IMAGES, name) else {
        return Ok(None);
    };
    let Item::Image(img) = view.item.as_ref() else {
        return Ok(None);
    };
    if !img
        .runtimes
        .iter()
        .any(|e| names_builder(ctx, Vct::ImageBuilderModel, &e.image_builder, me.name()))
    {
        return Ok(None);
    }
    let (runtime, store) = runtime_of(ctx, me);
    if !ctx.bake_decision(name, &runtime).bake {
        return Ok(None);
    }
    let parent = img
        .source_image
        .as_deref()
        .map(csis_model::naming::safe_name);
    let pinned = ctx.pinned_parent(name, &runtime);
    let after = csis_plugin_api::builder::parent_bakes(
        ctx,
        parent.as_deref().unwrap_or_default(),
        pinned.as_deref(),
        &runtime,
    );
    let mods = mod_specs(ctx, name, &view)?;
    let variables = mod_variables(name, &img.variables)?;
    let (identity_types, storage_types) = ctx.capabilities(name);
    let spec = json!({
        "kind": "image",
        "series": name,
        "runtime": runtime,
        "store": store,
        "fingerprint": ctx.fingerprint(name, &runtime),
        "identity_types": identity_types,
        "storage_types": storage_types,
        "parent": parent,
        "parent_build": pinned,
        "group": img.group,
        "modifications": mods,
        "tags": img.root.tags,
    });
    let mut spec = with_in_bake_tests(with_network(ctx, me, spec), &img.tests);
    // Only when declared, so a tree without them generates as before.
    if !variables.is_empty()
        && let J::Object(m) = &mut spec
    {
        m.insert("variables".into(), json!(variables));
    }
    Ok(Some(bake_step(
        me.name(),
        P::ImageGeneration,
        (name, &runtime, &store),
        spec,
        after,
    )))
}

/// The image's `variables:` as its modifications see them: environment
/// variables, as packer's provisioners get them (`name=${var.name}`). A
/// name must be an environment variable's, a value a scalar.
pub(crate) fn mod_variables(
    image: &str,
    vars: &csis_model::Map,
) -> HookResult<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    for (k, v) in vars {
        let name_ok = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with("CSIS_");
        if !name_ok {
            return refuse(format!(
                "image '{image}': variable '{k}' cannot be an environment variable of its modifications -- name it with letters, digits and underscores, starting with a letter (CSIS_ names are csis's own)"
            ));
        }
        let Some(text) = v.as_str() else {
            return refuse(format!(
                "image '{image}': variable '{k}' is not a scalar; its modifications see it as an environment variable -- give it a string, number or boolean"
            ));
        };
        out.insert(k.clone(), text.to_string());
    }
    Ok(out)
}

pub(crate) fn mod_specs(ctx: &dyn HookContext, image: &str, view: &ItemView) -> HookResult<Vec<J>> {
    Ok(
        csis_plugin_api::bash_mods::bash_mods(ctx, image, view, "local")?
            .into_iter()
            .map(|m| {
                json!({
                    "name": m.name,
                    "script": m.script,
                    "scripts": m.scripts,
                    "ensure": m.ensure,
                })
            })
            .collect(),
    )
}

/// storage, storage-generation: one directory per storage of this builder.
pub fn storages(ctx: &dyn HookContext, me: &BuilderDecl) -> HookResult<Vec<Step>> {
    let (runtime, store) = runtime_of(ctx, me);
    let mut steps = Vec::new();
    for view in ctx.items(ItemKind::STORAGES) {
        let Item::Storage(s) = view.item.as_ref() else {
            continue;
        };
        if !names_builder(ctx, Vct::StorageBuilderModel, &s.named.type_, me.name()) {
            continue;
        }
        let spec = json!({
            "name": s.named.name,
            "runtime": runtime,
            "store": store,
            "groups": s.groups,
            "public_read": s.public_read,
            "share_mode": s.share_mode,
            "state": s.state,
        });
        steps.push(step(
            me.name(),
            P::StorageGeneration,
            &s.named.name,
            spec,
            "storage",
        ));
    }
    // A storage whose declaration is gone is destroyed from its record.
    for name in ctx.undeclared_storages(me.name()) {
        let spec = json!({
            "name": name,
            "runtime": runtime,
            "store": store,
            "groups": [],
            "public_read": false,
            "share_mode": J::Null,
            "state": "destroyed",
            "undeclared": true,
        });
        steps.push(step(
            me.name(),
            P::StorageGeneration,
            &name,
            spec,
            "storage",
        ));
    }
    Ok(steps)
}

/// identity: the users and groups of this builder, recorded in the store.
pub fn identity(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    kind: ItemKind,
    phase: P,
) -> HookResult<Vec<Step>> {
    // The users and groups are recorded in a local runtime's store for its
    // machines; a tree with no local runtime (its clouds take them from
    // user-data) has no store to record them in.
    let is_local = |d: &std::sync::Arc<BuilderDecl>| d.model == "local";
    let Some(local) = ctx
        .builder(Vct::RuntimeBuilderModel, "default")
        .filter(is_local)
        .or_else(|| {
            ctx.builders(Vct::RuntimeBuilderModel)
                .into_iter()
                .find(is_local)
        })
    else {
        return Ok(Vec::new());
    };
    let store = store_of(Some(&local));
    let vct = kind.builder_vct();
    let mut entries = Vec::new();
    for view in ctx.items(kind) {
        if !names_builder(ctx, vct, view.item.type_name(), me.name()) {
            continue;
        }
        // Encrypted values are emitted as their ciphertext.
        let e = |s: &str| view.emit(s);
        let all = |v: &[String]| v.iter().map(|s| e(s)).collect::<Vec<_>>();
        entries.push(match view.item.as_ref() {
            Item::User(u) => json!({"name": e(u.root.name()), "login": e(&u.login), "first_name": e(&u.first_name), "last_name": e(&u.last_name), "email": u.email.as_deref().map(e), "enabled": u.is_enabled}),
            Item::Group(g) => json!({"name": g.root.name(), "is_root": g.is_root, "members": all(&g.members), "admins": all(&g.admins), "gid": g.gid}),
            _ => continue,
        });
    }
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let spec =
        json!({ "builder": me.name(), "kind": kind.key(), "store": store, "entries": entries });
    Ok(vec![step(me.name(), phase, kind.key(), spec, "identity")])
}
