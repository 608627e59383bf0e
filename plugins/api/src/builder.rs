//! Builder hooks. Every builder wraps one builder model; the runner calls
//! these hooks per phase of each requested lifecycle and writes what they
//! return. Hooks read the run through [`HookContext`] and never write files.

use std::sync::Arc;

use csis_model::models::{ExecutableModel, Item, ItemView};
use csis_model::{Diagnostic, ItemKind, Map, Vct};

use crate::BuilderDecl;
use crate::phase::ExecutionLifecyclePhase;

/// One generated file: a path relative to the lifecycle's directory
/// (generated/<lifecycle>/) and its content. The runner writes assets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Asset {
    pub path: String,
    pub content: Vec<u8>,
}

impl Asset {
    pub fn text(path: impl Into<String>, content: impl Into<String>) -> Asset {
        Asset {
            path: path.into(),
            content: content.into().into_bytes(),
        }
    }
}

pub type AssetSet = Vec<Asset>;

/// What a command runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// An entry under `executables:` by name: its binary, with its
    /// prepended and appended arguments around the command's own.
    Executable(String),
    /// The system's own CLI (`"$CSIS"` in a runner script): deferred steps
    /// such as `csis local bake`.
    Csis,
}

/// A command line with a working directory relative to the lifecycle
/// directory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Command {
    pub program: Program,
    pub args: Vec<String>,
    pub working_directory: Option<String>,
}

impl Command {
    pub fn csis<I, S>(args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Command {
            program: Program::Csis,
            args: args.into_iter().map(Into::into).collect(),
            working_directory: None,
        }
    }

    /// `csis lineage record --manifest <manifest>`: the step after a bake
    /// that records its build from the bake's manifest.
    pub fn lineage_record(manifest: &str) -> Command {
        Command::csis([
            "--root-dir",
            "${CSIS_ROOT}",
            "lineage",
            "record",
            "--manifest",
            manifest,
        ])
    }

    pub fn executable<I, S>(name: &str, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Command {
            program: Program::Executable(name.to_string()),
            args: args.into_iter().map(Into::into).collect(),
            working_directory: None,
        }
    }

    pub fn in_dir(mut self, dir: impl Into<String>) -> Command {
        self.working_directory = Some(dir.into());
        self
    }
}

/// A command deferred to finalization, in the phase it runs in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Deferred {
    pub phase: ExecutionLifecyclePhase,
    pub command: Command,
}

/// Commands a hook asks for: run now during generation
/// (`build_executables`: formatters, validators), or deferred to
/// finalization and rendered into the runner script.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CfExecutables {
    pub build_executables: Vec<Command>,
    pub finalize_executables: Vec<Deferred>,
}

impl CfExecutables {
    pub fn deferred(phase: ExecutionLifecyclePhase, command: Command) -> CfExecutables {
        CfExecutables {
            build_executables: Vec::new(),
            finalize_executables: vec![Deferred { phase, command }],
        }
    }
}

/// What one emission unit generates: its files and its commands
/// ([`Builder::emission_units`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Emitted {
    pub assets: AssetSet,
    pub commands: CfExecutables,
}

/// What a hook returns besides its value: problems to report.
pub type HookResult<T> = Result<T, Vec<Diagnostic>>;

/// How this run decided about baking one image on one runtime.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BakeDecision {
    pub bake: bool,
    /// `bake: <reason>` or `skip: <reason>`, as the plan prints it.
    pub reason: String,
}

/// What a hook may read of the run. The engine implements it; every read is
/// tracked, so a builder's output is recomputed only when what it read
/// changed. The run id is deliberately absent: generated files must not
/// change from one run to the next, so commands read `$CSIS_RUN_ID` when
/// they execute.
pub trait HookContext {
    fn dry_run(&self) -> bool;
    /// The lifecycle being generated.
    fn lifecycle(&self) -> &str;
    /// The tree's `config:` map (overlays applied).
    fn config(&self) -> Map;
    /// Builders of a classification, sorted by name.
    fn builders(&self, vct: Vct) -> Vec<Arc<BuilderDecl>>;
    /// A builder by name, alias, or `default`.
    fn builder(&self, vct: Vct, reference: &str) -> Option<Arc<BuilderDecl>>;
    /// Every item of a kind, in declared order.
    fn items(&self, kind: ItemKind) -> Vec<ItemView>;
    fn item(&self, kind: ItemKind, name: &str) -> Option<ItemView>;
    /// An item's model alone, shared, without the copies of its
    /// modifications, storages and secrets [`HookContext::item`] makes:
    /// for a hook that reads an item's own fields (an instance's image's
    /// group, once per instance).
    fn item_model(&self, kind: ItemKind, name: &str) -> Option<Arc<Item>> {
        self.item(kind, name).map(|view| view.item)
    }
    /// The accounts the user-data of an instance of an image with `group`
    /// carries ([`crate::cloud_config::group_accounts`]), read once per
    /// group rather than once per instance.
    fn group_accounts(&self, group: Option<&str>) -> Arc<crate::cloud_config::GroupAccounts>;
    /// The names of every item of a kind, in declared order: what
    /// [`HookContext::items`] lists, without reading the items.
    fn item_names(&self, kind: ItemKind) -> Vec<String> {
        self.items(kind)
            .iter()
            .map(|v| v.item.name().to_string())
            .collect()
    }
    /// Images in bake order: every parent before its children.
    fn images_in_bake_order(&self) -> Vec<String>;
    /// The bake decision for `<image>@<runtime>`.
    fn bake_decision(&self, image: &str, runtime: &str) -> BakeDecision;
    /// The input fingerprint a bake of `<series>@<runtime>` is recorded
    /// with.
    fn fingerprint(&self, series: &str, runtime: &str) -> Option<String>;
    /// The parent build an image bakes from when it is pinned (parent_policy
    /// pinned and a pin recorded); `None` means the parent series' newest
    /// build at execution.
    fn pinned_parent(&self, image: &str, runtime: &str) -> Option<String>;
    /// The build an instance is pinned to, once bound.
    fn instance_pin(&self, instance: &str) -> Option<String>;
    /// Storages meta-state records as realized by storage builder
    /// `builder` (not destroyed) whose declaration is gone: the builder
    /// emits their destroy from these recorded facts.
    fn undeclared_storages(&self, builder: &str) -> Vec<String>;
    /// Instances meta-state records as launched by a real apply whose
    /// declaration is gone (decommissioned), sorted: an instance builder
    /// keeps its root so their destroy is planned, and whitelists them.
    /// The record does not say which builder launched one.
    fn undeclared_instances(&self) -> Vec<String> {
        Vec::new()
    }
    /// The canonical hostname of a declared instance: the one a launched
    /// machine was recorded with, else `<name>-NNN` after its kind's next
    /// generation.
    fn canonical_hostname(&self, instance: &str, ephemeral: bool) -> String;
    /// The capability stamp (identity and storage types) of a series'
    /// chain root.
    fn capabilities(&self, series: &str) -> (Vec<String>, Vec<String>);
    fn executable(&self, name: &str) -> Option<ExecutableModel>;
    /// The disk a bake of `<series>@<runtime>` gets, in GiB: the one rule
    /// (`bake_disk_size`) the input fingerprint hashes, so a packer
    /// source's volume_size / disk_size is always what was fingerprinted.
    fn bake_disk_size(&self, series: &str, runtime: &str) -> Option<String>;
    /// With `config.use_state_backends` on, where builder `builder`'s root
    /// keeps its state: its workspace and the state backend resolved from
    /// its own state_configuration, else its runtime's, else the default
    /// backend. `None` when state backends are off or nothing resolves
    /// (validation has refused that already).
    fn state_root(&self, builder: &str) -> Option<StateRoot>;
    /// The hooks of another declared builder (the packer image builder
    /// asks its runtime for the packer source): the builder its plugin
    /// makes from `decl`. `None` when no registered model declares it.
    fn builder_hooks(&self, decl: &Arc<BuilderDecl>) -> Option<Box<dyn Builder>>;
    /// Whether this run moves workspace `workspace`'s state to the
    /// location the configuration now names (a real run's
    /// `--migrate-state`): its root then begins with `csis state-migration
    /// begin` and `finish` instead of a plain `tofu init`.
    fn migrates_state(&self, _workspace: &str) -> bool {
        false
    }
    /// The image template a base image `<series>@<runtime>` is composed
    /// from (an OS builder whose runtimes entry names `template:`): the
    /// extends chain folded over the OS defaults, variables substituted.
    /// `None` for a base image without a template, or one whose chain was
    /// refused (validation reported it).
    fn base_template(&self, _series: &str, _runtime: &str) -> Option<BaseTemplate> {
        None
    }
}

/// A base image's merged image template, as generation writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseTemplate {
    /// The merged template as YAML, every value as written.
    pub full_yaml: String,
    /// The same with passwords, hash_algo values and secure-boot key and
    /// certificate paths redacted: what may be written under generated/.
    pub redacted_yaml: String,
    /// The chain's files, root first, relative to the configuration root.
    pub chain: Vec<String>,
    /// The OS defaults file folded underneath, when there is one.
    pub defaults: Option<String>,
    /// The `defaults_dir` in force (relative to the root).
    pub defaults_dir: Option<String>,
    /// The runtimes entry's `variables:`.
    pub variables: std::collections::BTreeMap<String, String>,
    /// The template's `disk.artifacts[].type` values, in order.
    pub artifact_types: Vec<String>,
}

/// Where a base image composed from a template is built, relative to the
/// configuration root: the work directory `image-composer-tool build
/// --work-dir` is handed, and where a runtime takes the artifact from.
/// Under `_private/` (kept out of git, ignored by `csis watch`), and
/// without the run id, so generated files do not change between runs.
pub fn template_work_dir(series: &str, runtime: &str) -> String {
    format!("_private/ict/{series}-{runtime}/work")
}

/// Where a base image's unredacted merged template is written before its
/// build, relative to the configuration root (when the template holds a
/// secret; otherwise the build reads the generated one).
pub fn template_private_file(series: &str, runtime: &str) -> String {
    format!("_private/ict/{series}-{runtime}/template.yml")
}

/// The file suffixes of the image artifacts a template build leaves
/// (`disk.artifacts[].type`, and ISO and initrd images), each optionally
/// followed by a compression suffix.
pub const TEMPLATE_ARTIFACT_SUFFIXES: [&str; 9] = [
    "raw", "qcow2", "vhd", "vhdx", "vmdk", "vdi", "tar", "iso", "img",
];
pub const TEMPLATE_COMPRESSION_SUFFIXES: [&str; 5] = ["gz", "gzip", "xz", "zst", "bz2"];

/// Whether a file name is an image artifact of a template build:
/// `<anything>.<artifact>[.<compression>]`.
pub fn is_template_artifact(name: &str) -> bool {
    let mut parts: Vec<&str> = name.rsplitn(3, '.').collect();
    parts.reverse();
    let last = parts.last().copied().unwrap_or_default();
    let ext_ok = |e: &str| TEMPLATE_ARTIFACT_SUFFIXES.contains(&e);
    match parts.len() {
        0 | 1 => false,
        2 => ext_ok(last),
        _ => ext_ok(last) || (TEMPLATE_COMPRESSION_SUFFIXES.contains(&last) && ext_ok(parts[1])),
    }
}

/// Where one terraform root keeps its state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateRoot {
    /// The workspace: the owning builder's super-safe name.
    pub workspace: String,
    pub backend: Arc<BuilderDecl>,
    /// The location meta-state/state-locations.yaml records: the object
    /// [`crate::state_object::StateObject::of`] names.
    pub location: String,
}

/// The path of a phase's asset: `<builder>/<phase>/<builder>-<phase>
/// [-<discriminator>][<suffix>]`.
pub fn path_for_phase(
    builder: &str,
    phase: ExecutionLifecyclePhase,
    discriminator: Option<&str>,
    suffix: &str,
) -> String {
    let p = phase.as_str();
    match discriminator {
        Some(d) => format!("{builder}/{p}/{builder}-{p}-{d}{suffix}"),
        None => format!("{builder}/{p}/{builder}-{p}{suffix}"),
    }
}

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
    /// Runtime builders: the session mechanism, when there is one.
    fn session_mechanism(&self) -> Option<&str> {
        None
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
    /// asked; the report lists the runtime as unavailable.
    fn observe(&self, _root: &std::path::Path) -> Result<Observed, String> {
        Err("this runtime cannot be asked what exists".into())
    }
    /// Runtime builders, in a real run before anything else (the tree is
    /// locked): remove the debris `observe` reported and the given builds
    /// that lineage does not record (baked by a run that ended before it
    /// recorded them). Returns a line per thing done.
    fn clean(&self, _root: &std::path::Path, _orphans: &[String]) -> Result<Vec<String>, String> {
        Ok(Vec::new())
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
}

/// A Packer plugin: `name = { source = ..., version = ... }` in
/// `required_plugins`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackerPlugin {
    pub name: &'static str,
    pub source: &'static str,
    pub version: &'static str,
}

/// Where a bake starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackerParent {
    /// A base image: the vendor image the OS builder entry names, by id
    /// (`image_id`) or by query (`query`, `owners`).
    Vendor {
        image_id: Option<String>,
        /// The merged query (OS builder then entry), values as strings.
        query: std::collections::BTreeMap<String, String>,
        /// OS builder owners, then the runtime's default_owners, then the
        /// entry's.
        owners: Vec<String>,
    },
    /// An instance image pinned to a recorded parent build.
    Build(String),
    /// An instance image whose parent is the parent series' newest build
    /// at bake time (found by its `csis_series` tag or image family).
    Series(String),
}

/// One bake as the packer image builder hands it to the runtime's
/// [`Builder::packer_source`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackerBake {
    pub series: String,
    /// The source block's label: the series as an identifier.
    pub source_name: String,
    pub parent: PackerParent,
    /// The OS family of the chain's root (the vendor image's family).
    pub family: String,
    pub machine_type: String,
    /// GiB: the fingerprint's bake_disk_size.
    pub disk_size: Option<i64>,
    pub ssh_username: String,
    /// The lineage tags and the image's own tags, sorted. A value may be a
    /// Packer template (`${var.csis_run}`); keys and values are as csis
    /// names them: a runtime with label rules adapts both.
    pub tags: Vec<(String, PackerValue)>,
}

/// A tag value: literal text, or a Packer template kept as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackerValue {
    Literal(String),
    /// The run id (`var.csis_run`) the build runs under.
    Run,
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

/// What a runtime reports exists: builds (by their lineage tags), storages
/// and instances by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    pub images: Vec<ObservedImage>,
    pub storages: Vec<String>,
    pub instances: Vec<String>,
    /// What an interrupted step left behind (a bake's partial directory, a
    /// temporary file): `(path, what it is)`, the path as the runtime
    /// names it.
    pub debris: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedImage {
    pub build_id: String,
    /// The `csis_series` lineage tag.
    pub series: String,
}

/// base-image bakes: the OS builders' `runtimes:` entries that name image
/// builder `me` and that this run bakes on `runtime` (its bake decision),
/// each with its OS builder's declaration.
pub fn base_bake_entries(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    runtime: &str,
) -> Vec<(
    Arc<BuilderDecl>,
    csis_model::models::OsBuilderBaseImageBuilderSubconfig,
)> {
    let mut out = Vec::new();
    for os_decl in ctx.builders(Vct::OsBuilderModel) {
        let csis_model::models::BaseBuilder::Os(os) = &os_decl.base else {
            continue;
        };
        for entry in &os.runtimes {
            let names_me = ctx
                .builder(Vct::ImageBuilderModel, &entry.image_builder)
                .is_some_and(|b| b.name() == me.name());
            if names_me && ctx.bake_decision(os_decl.name(), runtime).bake {
                out.push((os_decl.clone(), entry.clone()));
            }
        }
    }
    out
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
