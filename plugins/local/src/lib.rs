//! The `local` plugin: the offline runtime csis runs on when no cloud is at
//! hand. Images, instances and storages live in a store directory under the
//! configuration root (`store`, default `.csis-local`). Generation and real
//! runs on it come with the lifecycles; this crate registers its models.

pub mod exec;
mod generate;

use csis_model::models::BaseModelKind;
use csis_model::{Fields, ItemKind, Map, Value, Vct};
use csis_plugin_api::{
    AssetSet, Builder, BuilderDecl, CfExecutables, Emitted, ExecutionLifecyclePhase as P,
    HookContext, HookResult, ItemModelSpec, ModelSpec, Plugin,
};
use std::sync::Arc;

use crate::generate::Step;

pub struct LocalPlugin;

/// The store directory when a local runtime declares none.
pub const DEFAULT_STORE: &str = ".csis-local";

/// A build's id: its series, runtime and the run that baked it.
pub fn build_id(series: &str, runtime: &str, run: &str) -> String {
    format!("{series}-{runtime}-{run}")
}

struct LocalBuilder {
    classification: Vct,
    decl: Arc<BuilderDecl>,
}

impl LocalBuilder {
    /// This runtime's store on the host, under the configuration `root`.
    fn store(&self, root: &std::path::Path) -> std::path::PathBuf {
        root.join(generate::store_of(Some(&self.decl)))
    }

    /// What this builder generates in a phase of the current lifecycle.
    fn steps(&self, phase: P, ctx: &dyn HookContext) -> HookResult<Vec<Step>> {
        let me = &self.decl;
        match (self.classification, ctx.lifecycle(), phase) {
            (Vct::ImageBuilderModel, "base-image", P::ImageGeneration) => {
                generate::base_bakes(ctx, me)
            }
            (Vct::ImageBuilderModel, "instance-image", P::ImageGeneration) => {
                generate::image_bakes(ctx, me)
            }
            (Vct::InstanceBuilderModel, _, P::InstanceGeneration) => generate::launches(ctx, me),
            (Vct::StorageBuilderModel, _, P::StorageGeneration) => generate::storages(ctx, me),
            (Vct::UserBuilderModel, _, P::UserGeneration) => {
                generate::identity(ctx, me, ItemKind::USERS, phase)
            }
            (Vct::GroupBuilderModel, _, P::GroupGeneration) => {
                generate::identity(ctx, me, ItemKind::GROUPS, phase)
            }
            _ => Ok(Vec::new()),
        }
    }
}

impl Builder for LocalBuilder {
    fn builds_from_distribution(&self) -> bool {
        self.classification == Vct::OsBuilderModel
    }

    fn generate_items_during(&self, phase: P, ctx: &dyn HookContext) -> HookResult<AssetSet> {
        self.steps(phase, ctx).map(generate::assets)
    }

    /// Image bakes by image, launches by instance: an edit to one image
    /// recomputes its chain's bakes and its instances' launches only.
    fn emission_units(&self, phase: P, ctx: &dyn HookContext) -> Option<Vec<String>> {
        match (self.classification, ctx.lifecycle(), phase) {
            (Vct::ImageBuilderModel, "instance-image", P::ImageGeneration) => {
                Some(ctx.images_in_bake_order())
            }
            (Vct::InstanceBuilderModel, _, P::InstanceGeneration) => {
                Some(ctx.item_names(ItemKind::INSTANCES))
            }
            _ => None,
        }
    }

    fn generate_unit_during(
        &self,
        phase: P,
        unit: &str,
        ctx: &dyn HookContext,
    ) -> HookResult<Emitted> {
        let step = match (self.classification, phase) {
            (Vct::ImageBuilderModel, P::ImageGeneration) => {
                generate::image_bake(ctx, &self.decl, unit)?
            }
            (Vct::InstanceBuilderModel, P::InstanceGeneration) => {
                generate::launch(ctx, &self.decl, unit)
            }
            _ => None,
        };
        let steps: Vec<Step> = step.into_iter().collect();
        let commands = generate::commands(&steps);
        Ok(Emitted {
            assets: generate::assets(steps),
            commands,
        })
    }

    fn get_commands_to_run_during(
        &self,
        phase: P,
        ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        self.steps(phase, ctx).map(|s| generate::commands(&s))
    }

    fn identity_type(&self) -> Option<&str> {
        (self.classification == Vct::GroupBuilderModel).then_some("unix")
    }
    fn capability_type(&self) -> Option<&str> {
        (self.classification == Vct::StorageBuilderModel).then_some("local")
    }
    fn multi_attach(&self) -> bool {
        self.classification == Vct::StorageBuilderModel
    }
    fn is_posix(&self) -> bool {
        self.classification == Vct::StorageBuilderModel
    }
    /// A local bake runs as whoever runs csis and logs in nowhere; `root`
    /// ends the bake-user order so it always resolves.
    fn default_bake_user(&self, _family: &str) -> Option<String> {
        (self.classification == Vct::RuntimeBuilderModel).then(|| "root".to_string())
    }
    fn user_data_format(&self) -> Option<&'static str> {
        (self.classification == Vct::InstanceBuilderModel).then_some("cloud-config")
    }
    fn user_data(
        &self,
        ctx: &dyn HookContext,
        instance: &str,
    ) -> Option<csis_plugin_api::cloud_config::UserData> {
        if self.classification != Vct::InstanceBuilderModel {
            return None;
        }
        generate::instance_user_data(ctx, &self.decl, instance)
    }
    fn session_mechanism(&self) -> Option<&str> {
        (self.classification == Vct::RuntimeBuilderModel).then_some("local-shell")
    }

    fn can_retag_image(&self) -> bool {
        self.classification == Vct::RuntimeBuilderModel
    }

    fn retag_image(
        &self,
        root: &std::path::Path,
        build_id: &str,
        tags: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), String> {
        exec::retag(&self.store(root), build_id, tags)
    }

    fn dispose_image(&self, root: &std::path::Path, build_id: &str) -> Result<(), String> {
        exec::dispose(&self.store(root), build_id)
    }

    /// A mount is a link in the instance's directory of the store.
    fn unmount(
        &self,
        root: &std::path::Path,
        instance: &str,
        mount_point: &str,
    ) -> Result<(), (i32, String)> {
        if self.classification != Vct::RuntimeBuilderModel {
            return Err((1, "only a runtime unmounts".into()));
        }
        exec::unmount(&self.store(root), instance, mount_point)
    }

    /// The store is the tree's own: nothing of another tree is in it.
    fn observe(
        &self,
        root: &std::path::Path,
        _tree: &str,
    ) -> Result<csis_plugin_api::Observed, String> {
        exec::observe(&self.store(root), self.decl.name())
    }

    /// Where its store is.
    fn describe(&self, root: &std::path::Path) -> Result<Vec<String>, String> {
        Ok(vec![format!("store: {}", self.store(root).display())])
    }

    fn clean(&self, root: &std::path::Path, orphans: &[String]) -> Result<Vec<String>, String> {
        exec::clean(&self.store(root), self.decl.name(), orphans)
    }

    fn test_modifications(
        &self,
        ctx: &dyn HookContext,
        root: &std::path::Path,
        image: &str,
        parent_build: &str,
        test: &[String],
    ) -> Result<Vec<csis_plugin_api::ModTestOutcome>, String> {
        if self.classification != Vct::RuntimeBuilderModel {
            return Err("only a runtime tests modifications".into());
        }
        let messages = |d: Vec<csis_model::Diagnostic>| {
            d.into_iter()
                .map(|d| d.message)
                .collect::<Vec<_>>()
                .join("; ")
        };
        let view = ctx
            .item(ItemKind::IMAGES, image)
            .ok_or_else(|| format!("image '{image}' is not declared"))?;
        let csis_model::models::Item::Image(img) = view.item.as_ref() else {
            return Err(format!("'{image}' is not an image"));
        };
        let mods = generate::mod_specs(ctx, image, &view).map_err(messages)?;
        let variables: serde_json::Map<String, serde_json::Value> =
            generate::mod_variables(image, &img.variables)
                .map_err(messages)?
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
        let store = self.store(root);
        exec::test_mods(&exec::ModTestRequest {
            root,
            store: &store,
            network: network_shared(&self.decl),
            image,
            parent_build,
            mods: &mods,
            variables: &variables,
            test,
        })
    }

    fn verify_instance(
        &self,
        _ctx: &dyn HookContext,
        root: &std::path::Path,
        req: &csis_plugin_api::VerifyRequest,
    ) -> Result<csis_plugin_api::Verdict, String> {
        if self.classification != Vct::RuntimeBuilderModel {
            return Err("only a runtime verifies its machines".into());
        }
        let store = self.store(root);
        exec::verify(&store, network_shared(&self.decl), req)
    }

    fn owned_directory(&self) -> Option<csis_plugin_api::OwnedDirectory> {
        (self.classification == Vct::RuntimeBuilderModel).then(|| csis_plugin_api::OwnedDirectory {
            key: "store",
            path: generate::store_of(Some(&self.decl)),
            allow_key: ALLOW_OUTSIDE,
            outside_allowed: store_outside_allowed(&self.decl),
        })
    }
}

/// The runtime key that lets a store leave the configuration root.
const ALLOW_OUTSIDE: &str = "allow_store_outside_root";

/// The runtime key that shares the host's network with the sandbox (for
/// package installs); off by default.
pub(crate) const NETWORK: &str = "network";

/// Whether a runtime shares the host's network with its sandboxes.
pub(crate) fn network_shared(decl: &BuilderDecl) -> bool {
    decl.extra
        .get(NETWORK)
        .is_some_and(|v| v.typed() == csis_model::value::Typed::Bool(true))
}

fn store_outside_allowed(decl: &BuilderDecl) -> bool {
    decl.extra
        .get(ALLOW_OUTSIDE)
        .is_some_and(|v| v.typed() == csis_model::value::Typed::Bool(true))
}

fn builder(decl: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(LocalBuilder {
        classification: decl.classification,
        decl: decl.clone(),
    })
}

/// `store`: the directory under the root where the runtime keeps its
/// images, instances and storages; `allow_store_outside_root` lets it
/// resolve elsewhere; `network: true` lets its scripts reach the network.
fn runtime_extra(f: &mut Fields<'_>) -> Map {
    let mut m = Map::default();
    let store = f.str_or("store", DEFAULT_STORE);
    m.insert("store".into(), Value::str(store));
    // Kept only when set, so a tree without them reads as it always did.
    if f.bool_or(NETWORK, false) {
        m.insert(
            NETWORK.into(),
            Value::Scalar {
                text: "true".into(),
                plain: true,
            },
        );
    }
    if f.bool_or(ALLOW_OUTSIDE, false) {
        m.insert(
            ALLOW_OUTSIDE.into(),
            Value::Scalar {
                text: "true".into(),
                plain: true,
            },
        );
    }
    m
}

/// A `bash` modification: an inline `script`, script files (`scripts`, paths
/// relative to the root), and `ensure` commands whose success means the
/// modification is already applied.
fn bash_item_extra(f: &mut Fields<'_>) -> Map {
    let mut m = Map::default();
    if let Some(s) = f.opt_str("script") {
        m.insert("script".into(), Value::str(s));
    }
    let list = |v: Vec<String>| Value::Seq(v.into_iter().map(Value::str).collect());
    let scripts = f.rel_path_list("scripts");
    m.insert("scripts".into(), list(scripts));
    let ensure = f.str_list("ensure");
    m.insert("ensure".into(), list(ensure));
    m
}

fn spec(name: &'static str, vct: Vct, base: BaseModelKind) -> ModelSpec {
    ModelSpec::plain(name, vct, base, builder)
}

impl Plugin for LocalPlugin {
    fn name(&self) -> &'static str {
        "local"
    }

    fn models(&self) -> Vec<ModelSpec> {
        vec![
            ModelSpec {
                read_extra: runtime_extra,
                ..spec("local", Vct::RuntimeBuilderModel, BaseModelKind::Runtime)
            },
            spec("local", Vct::ImageBuilderModel, BaseModelKind::Image),
            spec("local", Vct::InstanceBuilderModel, BaseModelKind::Instance),
            spec("local", Vct::StorageBuilderModel, BaseModelKind::Storage),
            spec("local", Vct::OsBuilderModel, BaseModelKind::Os),
            spec("bash", Vct::ModBuilderModel, BaseModelKind::Mod),
            spec("basic", Vct::GroupBuilderModel, BaseModelKind::Group),
            spec("basic", Vct::UserBuilderModel, BaseModelKind::User),
            spec("local", Vct::StateBackendModel, BaseModelKind::State),
        ]
    }

    fn item_models(&self) -> Vec<ItemModelSpec> {
        vec![ItemModelSpec {
            classification: Vct::ModBuilderItemModel,
            builder_model: "bash",
            read_extra: bash_item_extra,
        }]
    }

    /// A `local` backend's state is a file below the root, read as one.
    fn state_reader(
        &self,
        _backend: &csis_plugin_api::BuilderDecl,
        object: &csis_plugin_api::state_object::StateObject,
    ) -> Option<csis_plugin_api::state_object::StateRead> {
        match object {
            csis_plugin_api::state_object::StateObject::Local { path } => {
                Some(csis_plugin_api::state_object::StateRead::File(path.clone()))
            }
            _ => None,
        }
    }
}
