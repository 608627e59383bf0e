//! The `packer` plugin: image builder `packer`, which bakes with HashiCorp
//! Packer on a runtime that has a packer source (`aws`: amazon-ebs, `gce`:
//! googlecompute).
//!
//! In the base-image and instance-image lifecycles' image-generation
//! phase, every image the run bakes on the builder's runtime gets one
//! template, `<builder>/image-generation/<series>.pkr.hcl`, and three
//! deferred steps run from its directory: `packer init`, `packer build
//! -machine-readable -var csis_run=$CSIS_RUN_ID`, and `csis lineage record
//! --manifest <series>.manifest.json`, which reads the manifest
//! post-processor's output and records the build under the id the
//! runtime's `build_id_from_artifact` gives its artifact.
//!
//! Its own field: `required_plugins`, a map of Packer plugin name to
//! version constraint overriding the runtime's default (`amazon: "~> 1.3"`).

mod template;

use csis_model::models::BaseModelKind;
use csis_model::{Fields, Map, Value, Vct};
use csis_plugin_api::{
    AssetSet, Builder, BuilderDecl, CfExecutables, Deferred, ExecutionLifecyclePhase as P,
    HookContext, HookResult, ModelSpec, Plugin,
};
use std::sync::Arc;

pub use template::{Bake, bakes};

pub struct PackerPlugin;

/// The model name `type:` selects.
pub const MODEL: &str = "packer";

struct PackerBuilder {
    decl: Arc<BuilderDecl>,
}

impl PackerBuilder {
    fn bakes(&self, phase: P, ctx: &dyn HookContext) -> HookResult<Vec<Bake>> {
        match (ctx.lifecycle(), phase) {
            ("base-image", P::ImageGeneration) => bakes(ctx, &self.decl, true),
            ("instance-image", P::ImageGeneration) => bakes(ctx, &self.decl, false),
            _ => Ok(Vec::new()),
        }
    }
}

impl Builder for PackerBuilder {
    fn generate_items_during(&self, phase: P, ctx: &dyn HookContext) -> HookResult<AssetSet> {
        self.bakes(phase, ctx)
            .map(|b| b.into_iter().map(|b| b.asset).collect())
    }

    fn get_commands_to_run_during(
        &self,
        phase: P,
        ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        let bakes = self.bakes(phase, ctx)?;
        Ok(CfExecutables {
            build_executables: Vec::new(),
            finalize_executables: bakes
                .into_iter()
                .flat_map(|b| {
                    let step = b.step;
                    b.commands.into_iter().map(move |command| Deferred {
                        phase: P::Execution,
                        command,
                        bake: Some(step.clone()),
                    })
                })
                .collect(),
        })
    }

    fn runtime_problem(&self, runtime: &BuilderDecl, hooks: &dyn Builder) -> Option<String> {
        template::runtime_problem(&self.decl, runtime, hooks)
    }
}

fn builder(decl: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(PackerBuilder { decl: decl.clone() })
}

/// `required_plugins`: plugin name to version constraint.
fn image_builder_extra(f: &mut Fields<'_>) -> Map {
    let mut m = Map::default();
    let plugins = f.str_map("required_plugins");
    if !plugins.is_empty() {
        m.insert(
            "required_plugins".into(),
            Value::map(
                plugins
                    .into_iter()
                    .map(|(k, v)| (k, Value::str(v)))
                    .collect(),
            ),
        );
    }
    m
}

impl Plugin for PackerPlugin {
    fn name(&self) -> &'static str {
        "packer"
    }

    fn models(&self) -> Vec<ModelSpec> {
        vec![
            ModelSpec {
                name: MODEL,
                aliases: &[],
                classification: Vct::ImageBuilderModel,
                base: BaseModelKind::Image,
                read_extra: image_builder_extra,
                builder,
            },
            // OS builders whose runtimes entries name packer image builders:
            // the OS (family, vendor image per runtime, admin user, tests) the
            // base-image bakes start from; no fields of its own.
            ModelSpec {
                name: MODEL,
                aliases: &[],
                classification: Vct::OsBuilderModel,
                base: BaseModelKind::Os,
                read_extra: |_| Map::default(),
                builder: os_builder,
            },
        ]
    }
}

struct OsBuilder;
impl Builder for OsBuilder {}

fn os_builder(_: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(OsBuilder)
}
