//! Builder hooks. Every builder wraps one builder model; the runner calls
//! these hooks per phase of each requested lifecycle and writes what they
//! return. Hooks read the run through [`HookContext`] and never write files.
//!
//! This file holds the [`Builder`] trait itself (every hook, with the
//! small answers only its load-time and execution-time hooks return);
//! what the generation hooks return is in `output.rs`, what they may read
//! in `context.rs`, and what image builders and runtimes hand each other:
//! base images composed from templates in `template.rs`, Packer bakes in
//! `packer.rs`.

mod context;
mod output;
mod packer;
mod template;

pub use context::{BakeDecision, HookContext, StateRoot, base_bake_entries, parent_bakes};
pub use output::{
    Asset, AssetSet, BakeStep, CfExecutables, Command, Deferred, Emitted, HookResult, Program,
    path_for_phase,
};
pub use packer::{PackerBake, PackerParent, PackerPlugin, PackerValue};
pub use template::{
    BaseTemplate, TEMPLATE_ARTIFACT_SUFFIXES, TEMPLATE_COMPRESSION_SUFFIXES, is_template_artifact,
    template_private_file, template_work_dir,
};

use crate::BuilderDecl;
use crate::phase::ExecutionLifecyclePhase;

/// The hooks of "Builder base classes and hooks". Every default does
/// nothing, so a builder implements only what it generates.
pub trait Builder: Send + Sync {
    fn generate_items_before(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<AssetSet> {
        Ok(Vec::new())
    }
    fn get_commands_to_run_before(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        Ok(CfExecutables::default())
    }
    /// Only for builders of the phase's classification.
    fn generate_items_during(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<AssetSet> {
        Ok(Vec::new())
    }
    fn get_commands_to_run_during(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        Ok(CfExecutables::default())
    }
    /// Generation by emission (optional): the units this builder's
    /// during-hooks of `phase` split into, in output order (one per image
    /// baked, one per instance launched), or `None` to be called whole.
    /// With units, the engine calls [`Builder::generate_unit_during`] once
    /// per unit instead of the two during-hooks and concatenates what they
    /// return in this order; that must be what the two hooks return (the
    /// first unit refused is the hooks' refusal). The engine recomputes a
    /// unit only when something it read through the context changed, so
    /// the list itself should read little (names, not items) and each unit
    /// only what its own files and commands depend on.
    fn emission_units(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> Option<Vec<String>> {
        None
    }
    /// One unit of [`Builder::emission_units`]: its files and commands
    /// (nothing, for a unit the builder turns out not to emit).
    fn generate_unit_during(
        &self,
        _phase: ExecutionLifecyclePhase,
        _unit: &str,
        _ctx: &dyn HookContext,
    ) -> HookResult<Emitted> {
        Ok(Emitted::default())
    }
    fn generate_items_after(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<AssetSet> {
        Ok(Vec::new())
    }
    fn get_commands_to_run_after(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        Ok(CfExecutables::default())
    }
    /// Around each phase's deferred commands in a real run; never in a dry
    /// run.
    fn pre_finalize_phase(&self, _phase: ExecutionLifecyclePhase) -> HookResult<()> {
        Ok(())
    }
    fn post_finalize_phase(&self, _phase: ExecutionLifecyclePhase) -> HookResult<()> {
        Ok(())
    }
    /// Once, after the builder is constructed: where a plugin checks its
    /// model against its provider.
    /// OS builders: whether this type composes its base images from image
    /// templates (reads each runtimes entry's `template:`, `variables:`
    /// and `defaults_dir`). Any other OS builder refuses those keys.
    fn composes_from_template(&self) -> bool {
        false
    }
    /// OS builders: whether this type builds base roots from a
    /// distribution's archive (reads each runtimes entry's
    /// `distribution:`). Any other OS builder refuses that key.
    fn builds_from_distribution(&self) -> bool {
        false
    }
    fn finalize(&self) -> HookResult<()> {
        Ok(())
    }
    /// Image, instance and storage builders, once at load with the
    /// runtime their `runtime` names and that runtime's own hooks: why the
    /// builder cannot run on it, if it cannot. Validation reports the
    /// message at the builder's `runtime` field.
    fn runtime_problem(
        &self,
        _runtime: &BuilderDecl,
        _runtime_hooks: &dyn Builder,
    ) -> Option<String> {
        None
    }

    /// Group builders: the identity type the builder provides.
    fn identity_type(&self) -> Option<&str> {
        None
    }
    /// User and group builders: what the plugin refuses in one of its own
    /// users or groups (a provider's attribute vocabulary, say), as
    /// messages; validation reports each naming the item.
    fn validate_identity_item(&self, _item: &csis_model::models::Item) -> Vec<String> {
        Vec::new()
    }
    /// Group builders: when a group's gid is fixed: `config-time` (the
    /// YAML's gid, or one the builder picks at generation),
    /// `creation-only` (set when the group is created, never changed), or
    /// `provider-assigned`. Recorded in the identity read-model.
    fn gid_policy(&self) -> &'static str {
        "config-time"
    }
    /// Storage builders: the capability type, and whether many instances
    /// may attach one storage.
    fn capability_type(&self) -> Option<&str> {
        None
    }
    fn multi_attach(&self) -> bool {
        false
    }
    /// Storage builders: whether the builder realizes the `archived` state
    /// (a storage kept but not attachable). Only then may a storage of this
    /// builder request it.
    fn supports_archive(&self) -> bool {
        false
    }
    /// Storage builders: whether a storage lives in one availability zone
    /// (a block device) rather than a region; only then does its
    /// `availability_zone` constrain the instances that attach it.
    fn is_zonal(&self) -> bool {
        false
    }
    fn is_posix(&self) -> bool {
        false
    }
    /// Instance builders: the user-data format their machines boot with,
    /// when csis emits one: `cloud-config` for cloud-init. Validation then
    /// refuses what instance-setup would refuse or skip at boot.
    fn user_data_format(&self) -> Option<&'static str> {
        None
    }
    /// Instance builders whose format is `cloud-config`: the document
    /// instance `instance` boots with, built by the same function its
    /// generation hook emits it with, or `None` when the instance is not
    /// this builder's. Validation reads it to check what it carries (a
    /// file over the 4095 bytes instance-setup can carry) where the cause
    /// is declared. Not a generation hook: it is asked outside any run, so
    /// `ctx.lifecycle()` is empty and `ctx.dry_run()` is true.
    fn user_data(
        &self,
        _ctx: &dyn HookContext,
        _instance: &str,
    ) -> Option<crate::cloud_config::UserData> {
        None
    }
    /// Instance builders: whether an apply replaces a launched machine
    /// whose user-data changed (a running machine never reads it again).
    /// Then csis records the digest of the user-data each machine was
    /// launched with (launch-params.yaml `user_data_sha256`) and the plan
    /// names the replacement.
    fn replaces_on_user_data_change(&self) -> bool {
        false
    }
    /// Storage and instance builders whose roots keep terraform state:
    /// the resource addresses (or address prefixes) whose planned destroy
    /// `csis gate-plan` lets through for this builder's root in the
    /// current lifecycle, sorted. An address matches itself and every
    /// address that continues it with `[` or `.`. The builder renders
    /// them as `--whitelist` arguments of its gate step.
    fn destroy_whitelist(&self, _ctx: &dyn HookContext) -> Vec<String> {
        Vec::new()
    }
    /// Runtime builders: the last step of the bake-user order, the user a
    /// vendor image of this OS family logs in as, when the runtime knows.
    fn default_bake_user(&self, _family: &str) -> Option<String> {
        None
    }
    /// Runtime builders: whether every image of a chain must bake as its
    /// chain root's user (GCE keeps one login per chain).
    fn one_bake_user_per_chain(&self) -> bool {
        false
    }
    /// Runtime builders: why a declared tag key cannot become a label on
    /// this runtime (GCE wants a lowercase letter first), if it cannot.
    fn label_key_problem(&self, _key: &str) -> Option<String> {
        None
    }
    /// Storage, instance, group, user and runtime builders: whether the
    /// builder's root keeps terraform state, and so has a state location
    /// (`config.use_state_backends`).
    fn keeps_state(&self) -> bool {
        false
    }
    /// Runtime builders: the cloud resource names this runtime derives
    /// from the declared name `name` of an item of `kind` (images,
    /// instances, storages), each with what it names (`GCE disk name`),
    /// when its naming rule can map two declared names to one (lowercasing,
    /// replacing characters, truncating). Validation refuses a second item
    /// of the same kind on the same runtime that derives a name another
    /// already has: two resources cannot share it.
    fn derived_names(
        &self,
        _kind: csis_model::ItemKind,
        _name: &str,
    ) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// Runtime builders: the namespace [`Builder::derived_names`] live
    /// in, when runtimes can share one (a GCE project: two runtimes on one
    /// project name their resources in one list). Runtimes with the same
    /// scope are compared together; `None` is the runtime alone.
    fn name_scope(&self) -> Option<String> {
        None
    }
    /// Runtime builders: the session mechanism, when there is one.
    fn session_mechanism(&self) -> Option<&str> {
        None
    }
    /// Runtime builders: whether the provider knows the vendor image an OS
    /// builder entry names ([`VendorImage`]: pinned by `image_id`, or found
    /// by `query` among `owners`' images), asked at validate. `Ok(None)`:
    /// this runtime's vendor images are no provider's (the local runtime's
    /// `image_id` is a path of the tree); `Err`: the provider could not be
    /// asked, or this runtime cannot look vendor images up (validate notes
    /// it and goes on).
    fn vendor_image_known(&self, _image: &VendorImage<'_>) -> Result<Option<bool>, String> {
        Ok(None)
    }
    /// Whether [`Builder::retag_image`] can set tags on this runtime's
    /// builds (asked before any is changed).
    fn can_retag_image(&self) -> bool {
        false
    }
    /// Set `tags` on the build `build_id` (its artifact and what backs
    /// it), keeping its other tags; a tag whose value is empty is removed.
    /// `lineage relabel` moves a build to a renamed series (`csis_series`),
    /// a release marks it (`csis_release_<model>`).
    fn retag_image(
        &self,
        _root: &std::path::Path,
        _build_id: &str,
        _tags: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), String> {
        Err("this runtime cannot retag its images".into())
    }
    /// Runtime builders: remove a recorded build's artifact (an execution
    /// step of `dispose image`, never a generation hook). `root` is the
    /// configuration root.
    fn dispose_image(&self, _root: &std::path::Path, build_id: &str) -> Result<(), String> {
        Err(format!(
            "this runtime cannot dispose images (build {build_id})"
        ))
    }
    /// Runtime builders: unmount `mount_point` on the machine of
    /// `instance` (an execution step of `csis unmount storage`, never a
    /// generation hook), before its storage is detached. `root` is the
    /// configuration root. `Err((exit code, what it said))` when it could
    /// not; the default is a runtime that cannot run commands on its
    /// machines.
    fn unmount(
        &self,
        _root: &std::path::Path,
        instance: &str,
        mount_point: &str,
    ) -> Result<(), (i32, String)> {
        Err((
            1,
            format!(
                "this runtime cannot run commands on its machines: unmount {mount_point} on {instance} by hand, then run the unmount again with --confirm"
            ),
        ))
    }
    /// Group builders: the servers the group's registry holds under
    /// `hostname`. `None`: this builder keeps no server registry (nothing
    /// to check); `Some(Err)`: the registry did not answer.
    fn registered_servers(
        &self,
        _root: &std::path::Path,
        _group: &str,
        _hostname: &str,
    ) -> Option<Result<Vec<String>, String>> {
        None
    }
    /// Runtime builders: what exists on the provider now, for `csis state
    /// query` (never a generation hook). `Err` says why it could not be
    /// asked; the report lists the runtime as unavailable. `tree` is the
    /// tree's id: images carry it (`csis_tree`), and another tree's are
    /// not this one's to report.
    fn observe(&self, _root: &std::path::Path, _tree: &str) -> Result<Observed, String> {
        Err("this runtime cannot be asked what exists".into())
    }
    /// Runtime builders, for `csis runtime describe` (never a generation
    /// hook): what the runtime answers of where it is and of what it
    /// declares, as `key: value` lines (`region: us-east-1`, `subnet
    /// subnet-0a (us-east-1a): found`). `Err` says why it could not be
    /// asked.
    fn describe(&self, _root: &std::path::Path) -> Result<Vec<String>, String> {
        Err("this runtime cannot describe itself".into())
    }
    /// Runtime builders, in a real run before anything else (the tree is
    /// locked): remove the debris `observe` reported and the given builds
    /// that lineage does not record (baked by a run that ended before it
    /// recorded them). Returns a line per thing done.
    fn clean(&self, _root: &std::path::Path, _orphans: &[String]) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }
    /// Runtime builders, for `csis test-mods` (never a generation hook):
    /// apply the modifications of `image` in order in a throwaway copy of
    /// `parent_build`, each named in `test` twice (apply, then again for
    /// idempotence: the second run must exit 0 and change nothing in the
    /// root); one outcome per tested modification. `Err`: this runtime
    /// cannot test modifications (every one is recorded skipped).
    fn test_modifications(
        &self,
        _ctx: &dyn HookContext,
        _root: &std::path::Path,
        _image: &str,
        _parent_build: &str,
        _test: &[String],
    ) -> Result<Vec<ModTestOutcome>, String> {
        Err("this runtime cannot test modifications".into())
    }
    /// Runtime builders, for `csis verify instance` (never a generation
    /// hook): check the machine of `req.instance` (it exists, runs the
    /// build it is pinned to, each declared storage is mounted where
    /// declared), then run the image's post-bake checks on it. `Err`: this
    /// runtime cannot verify its machines.
    fn verify_instance(
        &self,
        _ctx: &dyn HookContext,
        _root: &std::path::Path,
        _req: &VerifyRequest,
    ) -> Result<Verdict, String> {
        Err("this runtime cannot verify its machines".into())
    }
    /// A directory this builder writes, as declared (relative to the
    /// configuration root): validation refuses one that resolves, after
    /// symlinks, outside the root unless the declaration opts out.
    fn owned_directory(&self) -> Option<OwnedDirectory> {
        None
    }

    /// Runtime builders that Packer bakes on (spec: packer_source_type):
    /// the Packer plugin the source needs, as `packer { required_plugins
    /// }` names it. `None`: packer cannot bake on this runtime.
    fn packer_plugin(&self) -> Option<PackerPlugin> {
        None
    }
    /// Runtime builders (spec: packer_source_blocks): the `source` block a
    /// bake of `bake` runs on this runtime (`source "amazon-ebs" "<name>"`),
    /// or `None` when the runtime has no packer source. Its arguments come
    /// from the runtime's declaration and the bake; the disk is
    /// `bake.disk_size` (the fingerprint's bake_disk_size), the lineage
    /// tags are `bake.tags`.
    fn packer_source(&self, _bake: &PackerBake) -> HookResult<Option<csis_hcl::Block>> {
        Ok(None)
    }
    /// Runtime builders: a Packer expression a post-processor reads the
    /// build's actual parent from (amazon-ebs shares `build.SourceAMI`),
    /// for a bake whose parent is found by filter at build time. `None`:
    /// the parent is recorded as `series:<parent>` and bound after the bake
    /// to the parent series' newest recorded build.
    fn packer_parent_expression(&self) -> Option<&'static str> {
        None
    }
    /// Runtime builders (spec: build_id_from_artifact): the build id of a
    /// packer artifact id as the manifest post-processor records it (AWS
    /// `us-east-1:ami-0abc` is `ami-0abc`). `None`: not an artifact of this
    /// runtime.
    fn build_id_from_artifact(&self, _artifact_id: &str) -> Option<String> {
        None
    }
    /// Runtime builders (spec: bake_finalize_commands): shell commands the
    /// bake runs (as root) after the modifications and before the in-bake
    /// verification, to leave the machine ready to be captured.
    fn bake_finalize_commands(&self) -> Vec<String> {
        Vec::new()
    }
    /// Runtime builders: shell commands every base bake on this runtime
    /// runs (as root) before anything else, to install what the runtime's
    /// machines need from their image and the vendor's lacks: the agent
    /// of its session mechanism, the tooling that reads the user-data at
    /// first boot. Children inherit them with the rest of the disk.
    fn base_bake_commands(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A directory a builder writes, and how the tree declared it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedDirectory {
    /// The key that declares it (`store`).
    pub key: &'static str,
    pub path: String,
    /// The key that lets it leave the root, and whether the tree set it.
    pub allow_key: &'static str,
    pub outside_allowed: bool,
}

/// The vendor image an OS builder entry starts a base from, as validate
/// asks its runtime about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VendorImage<'a> {
    /// Pinned: the provider's id (an AMI id).
    Id(&'a str),
    /// The newest image matching `query` (the provider's image filters)
    /// among those `owners` publish.
    Query {
        query: &'a csis_model::Map,
        owners: &'a [String],
    },
}

/// What a runtime reports exists: builds (by their lineage tags), storages
/// by name, and the machines standing under each instance name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    pub images: Vec<ObservedImage>,
    pub storages: Vec<String>,
    pub instances: Vec<ObservedInstance>,
    /// What an interrupted step left behind (a bake's partial directory, a
    /// temporary file): `(path, what it is)`, the path as the runtime
    /// names it.
    pub debris: Vec<(String, String)>,
}

/// What `verify instance` asks a runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyRequest {
    pub instance: String,
    /// The build the instance is pinned to, when it is.
    pub pinned_build: Option<String>,
    /// The image's `tests.post_bake` assertions, as the in-bake ones.
    pub post_bake: Vec<crate::image_tests::InBakeCheck>,
    /// `tests.post_bake.mounts`: mount points that must hold a storage.
    pub mounts: Vec<String>,
    /// The storages the instance declares, `(storage, mount point)`, in
    /// declaration order.
    pub storages: Vec<(String, String)>,
}

/// A runtime's answer to `verify instance`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The machine is switched off; nothing was checked.
    Stopped,
    /// Each check, in order.
    Checked(Vec<CheckResult>),
}

/// One check of a verification: what, whether it held, and what was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    pub check: String,
    pub ok: bool,
    pub detail: String,
}

/// One modification's test, as mod-tests.yaml records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModTestOutcome {
    pub name: String,
    /// `passed` or `failed`.
    pub status: String,
    /// Whether the second run changed nothing; `None` when the first
    /// run failed (there was no second).
    pub idempotent: Option<bool>,
    /// Why it failed, empty when it passed.
    pub detail: String,
}

/// A machine standing under an instance name, with what its runtime can
/// say of it; `None` is "cannot answer", never "stopped" or "none".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedInstance {
    pub name: String,
    /// The provider's id of the machine (an EC2 instance id).
    pub instance_id: Option<String>,
    /// `running` or `stopped` (a machine starting or stopping counts as
    /// where it is going).
    pub power: Option<String>,
    /// The build it booted.
    pub boot_image: Option<String>,
}

impl ObservedInstance {
    /// A machine known by its name only.
    pub fn named(name: impl Into<String>) -> ObservedInstance {
        ObservedInstance {
            name: name.into(),
            ..ObservedInstance::default()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedImage {
    pub build_id: String,
    /// The `csis_series` lineage tag.
    pub series: String,
    /// Every lineage tag the build carries (`csis_series`, `csis_parent`,
    /// `csis_run`, `csis_fingerprint`, `csis_identity_types`,
    /// `csis_storage_types`), what `state import` adopts it from.
    pub tags: std::collections::BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bare;
    impl Builder for Bare {}

    #[test]
    fn a_runtime_that_cannot_run_commands_on_its_machines_says_to_unmount_by_hand() {
        assert_eq!(
            Bare.unmount(std::path::Path::new("/r"), "web", "/srv/data"),
            Err((
                1,
                "this runtime cannot run commands on its machines: unmount /srv/data on web by hand, then run the unmount again with --confirm".to_string()
            ))
        );
    }
}
