//! csis-plugin-ict: the OS builder `ict`. Each of its `runtimes:` entries
//! names an image template (`template:`, relative to the root) with
//! optional `variables:` and `defaults_dir` (ICT's `config/osv`, on the
//! entry or on the OS builder); csis reads the extends chain, folds it over
//! the OS defaults and fingerprints the merged template (the engine does
//! that, over its inputs). What this builder generates for a base bake:
//!
//! - `<os>/image-generation/<os>-image-generation-<runtime>.yml`: the
//!   merged template, redacted (passwords, hash_algo, secure-boot key and
//!   certificate paths), for review;
//! - `<os>/image-generation/<os>-image-generation-<runtime>.json`: the
//!   spec of `csis ict materialize`, which resolves the same template at
//!   execution and writes it unredacted under `_private/ict/` (never
//!   under generated/), and empties the build's work directory;
//! - the deferred `image-composer-tool build --work-dir <work> <template>`
//!   (found by name on PATH, or an `executables:` entry of that name),
//!   both in `pre-execution`, so before any runtime's bake in `execution`.
//!
//! A runtime takes the artifact from the work directory
//! ([`csis_plugin_api::template_work_dir`]); the local runtime's contract
//! is in docs/templates-in-csis.md.

pub mod exec;

use csis_model::models::{BaseBuilder, BaseModelKind};
use csis_model::{Fields, Map, Value, Vct};
use csis_plugin_api::{
    Asset, AssetSet, Builder, BuilderDecl, CfExecutables, Command, Deferred,
    ExecutionLifecyclePhase as P, HookContext, HookResult, ModelSpec, Plugin, path_for_phase,
    template_private_file, template_work_dir,
};
use serde_json::json;
use std::sync::Arc;

/// The model name `type:` selects.
pub const MODEL: &str = "ict";
/// The ICT binary, found by name on PATH like packer and tofu.
pub const ICT_BINARY: &str = "image-composer-tool";

pub struct IctPlugin;

impl Plugin for IctPlugin {
    fn name(&self) -> &'static str {
        "ict"
    }

    fn models(&self) -> Vec<ModelSpec> {
        vec![ModelSpec {
            name: MODEL,
            aliases: &["image-composer-tool"],
            classification: Vct::OsBuilderModel,
            base: BaseModelKind::Os,
            read_extra,
            builder,
        }]
    }
}

/// The OS builder's own field: `defaults_dir`, the OS defaults of every
/// entry that does not name its own.
fn read_extra(f: &mut Fields<'_>) -> Map {
    let mut m = Map::default();
    if let Some(dir) = f.opt_str("defaults_dir") {
        m.insert("defaults_dir".into(), Value::str(dir));
    }
    m
}

fn builder(decl: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(IctOsBuilder { decl: decl.clone() })
}

struct IctOsBuilder {
    decl: Arc<BuilderDecl>,
}

/// One base bake of this OS builder: the runtime and its generated files.
struct Bake {
    runtime: String,
    template: csis_plugin_api::BaseTemplate,
    entry_template: String,
}

impl IctOsBuilder {
    fn bakes(&self, phase: P, ctx: &dyn HookContext) -> Vec<Bake> {
        if phase != P::ImageGeneration || ctx.lifecycle() != "base-image" {
            return Vec::new();
        }
        let BaseBuilder::Os(os) = &self.decl.base else {
            return Vec::new();
        };
        let series = self.decl.name();
        let mut out = Vec::new();
        for entry in &os.runtimes {
            let Some(entry_template) = entry.template.clone() else {
                continue;
            };
            let Some(ib) = ctx.builder(Vct::ImageBuilderModel, &entry.image_builder) else {
                continue;
            };
            let rt_ref = ib.base.runtime().unwrap_or("default").to_string();
            let runtime = ctx
                .builder(Vct::RuntimeBuilderModel, &rt_ref)
                .map(|r| r.name().to_string())
                .unwrap_or(rt_ref);
            if !ctx.bake_decision(series, &runtime).bake {
                continue;
            }
            if let Some(template) = ctx.base_template(series, &runtime) {
                out.push(Bake {
                    runtime,
                    template,
                    entry_template,
                });
            }
        }
        out
    }

    fn file(&self, runtime: &str, suffix: &str) -> String {
        path_for_phase(self.decl.name(), P::ImageGeneration, Some(runtime), suffix)
    }
}

impl Builder for IctOsBuilder {
    fn composes_from_template(&self) -> bool {
        true
    }

    fn generate_items_before(&self, phase: P, ctx: &dyn HookContext) -> HookResult<AssetSet> {
        let series = self.decl.name();
        let mut assets = Vec::new();
        for b in self.bakes(phase, ctx) {
            let spec = json!({
                "series": series,
                "runtime": b.runtime,
                "template": b.entry_template,
                "chain": b.template.chain,
                "defaults": b.template.defaults,
                "defaults_dir": b.template.defaults_dir,
                "variables": b.template.variables,
                "redacted": self.file(&b.runtime, ".yml"),
                "out": template_private_file(series, &b.runtime),
                "work_dir": template_work_dir(series, &b.runtime),
                "artifact_types": b.template.artifact_types,
            });
            assets.push(Asset::text(
                self.file(&b.runtime, ".yml"),
                b.template.redacted_yaml.clone(),
            ));
            assets.push(Asset::text(
                self.file(&b.runtime, ".json"),
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(&spec).unwrap_or_default()
                ),
            ));
        }
        Ok(assets)
    }

    fn get_commands_to_run_before(
        &self,
        phase: P,
        ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        let series = self.decl.name();
        let mut deferred = Vec::new();
        for b in self.bakes(phase, ctx) {
            let spec = self.file(&b.runtime, ".json");
            let work = format!("${{CSIS_ROOT}}/{}", template_work_dir(series, &b.runtime));
            let template = format!(
                "${{CSIS_ROOT}}/{}",
                template_private_file(series, &b.runtime)
            );
            for command in [
                Command::csis(["ict", "materialize", "--spec", spec.as_str()]),
                Command::executable(
                    ICT_BINARY,
                    ["build", "--work-dir", work.as_str(), template.as_str()],
                ),
            ] {
                deferred.push(Deferred::new(P::PreExecution, command));
            }
        }
        Ok(CfExecutables {
            build_executables: Vec::new(),
            finalize_executables: deferred,
        })
    }
}
