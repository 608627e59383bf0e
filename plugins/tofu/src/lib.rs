//! The `tofu` plugin: instances and storages launched by OpenTofu on AWS
//! and GCE, and the `s3` and `gcs` state backends their roots keep state
//! on.
//!
//! - Instance builders `tofu-aws` and `tofu-gce` write one OpenTofu root
//!   per builder in the instance-image lifecycle
//!   (`<builder>/instance-generation/`): the instances of the builder
//!   (`aws_instance` / `google_compute_instance`, booting the build their
//!   pin names, else the newest build of their image's series), the
//!   attachments of their storages (one resource with `for_each` keyed
//!   `<instance>/<storage>`) and the cloud-config user-data each boots
//!   with.
//! - Storage builders `tofu-aws` and `tofu-gce` write one root per builder
//!   in the storage lifecycle (`<builder>/storage-generation/`): one
//!   `aws_ebs_volume` / `google_compute_disk` per declared storage; a
//!   storage whose declaration is gone (or that asks to be destroyed)
//!   leaves the configuration, so the plan destroys it, and its address
//!   is on the root's destroy whitelist.
//! - Every root runs `tofu init`, `tofu plan`, `csis gate-plan` and, when
//!   the lifecycle's apply flag allows the root, `csis apply-check` and
//!   `tofu apply`; an instance root then binds each instance to the build
//!   it booted (`csis lineage bind-instance --tofu-outputs`).
//!
//! The runtime is read through the aws and gce runtime plugins' own
//! accessors (a Cloud base model with `region` and `networking`; the
//! profile on AWS, the project and zone on GCE), and GCE resources are
//! named by the gce plugin's rule, the one its image families are baked
//! under. The plugin never runs OpenTofu
//! itself; every command is deferred to the runner script.

mod cloud;
mod instances;
mod root;
mod state;
mod storages;
mod user_data;

use csis_model::Vct;
use csis_model::models::BaseModelKind;
use csis_plugin_api::{
    AssetSet, Builder, BuilderDecl, CfExecutables, ExecutionLifecyclePhase as P, HookContext,
    HookResult, ModelSpec, Plugin,
};
use std::sync::Arc;

pub use cloud::Cloud;
pub use root::RootFiles;

pub struct TofuPlugin;

/// What a builder of this plugin builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Instance,
    Storage,
    Backend,
}

struct TofuBuilder {
    role: Role,
    cloud: Cloud,
    decl: Arc<BuilderDecl>,
}

impl TofuBuilder {
    /// This builder's root in the current lifecycle and phase, if it has
    /// one there.
    fn root(&self, phase: P, ctx: &dyn HookContext) -> HookResult<Option<RootFiles>> {
        match (self.role, ctx.lifecycle(), phase) {
            (Role::Instance, "instance-image", P::InstanceGeneration) => {
                instances::root(ctx, &self.decl, self.cloud)
            }
            (Role::Storage, "storage", P::StorageGeneration) => {
                storages::root(ctx, &self.decl, self.cloud)
            }
            _ => Ok(None),
        }
    }
}

impl Builder for TofuBuilder {
    fn generate_items_during(&self, phase: P, ctx: &dyn HookContext) -> HookResult<AssetSet> {
        Ok(self.root(phase, ctx)?.map(|r| r.assets).unwrap_or_default())
    }

    fn get_commands_to_run_during(
        &self,
        phase: P,
        ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        Ok(CfExecutables {
            build_executables: Vec::new(),
            finalize_executables: self
                .root(phase, ctx)?
                .map(|r| r.deferred)
                .unwrap_or_default(),
        })
    }

    fn capability_type(&self) -> Option<&str> {
        (self.role == Role::Storage).then_some(self.cloud.storage_type())
    }
    /// A block device lives in one availability zone.
    fn is_zonal(&self) -> bool {
        self.role == Role::Storage
    }
    fn is_posix(&self) -> bool {
        self.role == Role::Storage
    }
    fn keeps_state(&self) -> bool {
        matches!(self.role, Role::Instance | Role::Storage)
    }
    fn user_data_format(&self) -> Option<&'static str> {
        (self.role == Role::Instance).then_some("cloud-config")
    }
    fn user_data(
        &self,
        ctx: &dyn HookContext,
        instance: &str,
    ) -> Option<csis_plugin_api::cloud_config::UserData> {
        if self.role != Role::Instance {
            return None;
        }
        instances::user_data_of(ctx, &self.decl, self.cloud, instance)
    }
    /// The roots set `user_data_replace_on_change` (AWS) and
    /// `replace_triggered_by` the user-data's digest (GCE).
    fn replaces_on_user_data_change(&self) -> bool {
        self.role == Role::Instance
    }
    fn destroy_whitelist(&self, ctx: &dyn HookContext) -> Vec<String> {
        match self.role {
            Role::Instance => instances::whitelist(ctx, &self.decl, self.cloud),
            Role::Storage => storages::whitelist(ctx, &self.decl, self.cloud),
            Role::Backend => Vec::new(),
        }
    }
    fn finalize(&self) -> HookResult<()> {
        match self.role {
            Role::Backend => state::check(&self.decl),
            _ => Ok(()),
        }
    }
    fn runtime_problem(&self, runtime: &BuilderDecl, _hooks: &dyn Builder) -> Option<String> {
        match self.role {
            Role::Backend => None,
            _ => cloud::cloud_of(&self.decl, runtime, self.cloud).err(),
        }
    }
}

fn builder(decl: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    let role = match decl.classification {
        Vct::InstanceBuilderModel => Role::Instance,
        Vct::StorageBuilderModel => Role::Storage,
        _ => Role::Backend,
    };
    let cloud = match decl.model {
        "tofu-gce" | "gcs" => Cloud::Gce,
        _ => Cloud::Aws,
    };
    Box::new(TofuBuilder {
        role,
        cloud,
        decl: decl.clone(),
    })
}

fn spec(name: &'static str, vct: Vct, base: BaseModelKind) -> ModelSpec {
    ModelSpec::plain(name, vct, base, builder)
}

impl Plugin for TofuPlugin {
    fn name(&self) -> &'static str {
        "tofu"
    }

    fn models(&self) -> Vec<ModelSpec> {
        vec![
            spec(
                "tofu-aws",
                Vct::InstanceBuilderModel,
                BaseModelKind::Instance,
            ),
            spec(
                "tofu-gce",
                Vct::InstanceBuilderModel,
                BaseModelKind::Instance,
            ),
            spec("tofu-aws", Vct::StorageBuilderModel, BaseModelKind::Storage),
            spec("tofu-gce", Vct::StorageBuilderModel, BaseModelKind::Storage),
            spec("s3", Vct::StateBackendModel, BaseModelKind::State),
            spec("gcs", Vct::StateBackendModel, BaseModelKind::State),
        ]
    }

    fn state_reader(
        &self,
        backend: &BuilderDecl,
        object: &csis_plugin_api::state_object::StateObject,
    ) -> Option<csis_plugin_api::state_object::StateRead> {
        state::state_reader(backend, object)
    }
}
