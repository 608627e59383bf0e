//! What a hook may read of the run: the [`HookContext`] the engine
//! implements, the values it answers with ([`BakeDecision`],
//! [`StateRoot`]), and [`base_bake_entries`], a read composed from it that
//! the image builders share.

use std::sync::Arc;

use csis_model::models::{ExecutableModel, Item, ItemView};
use csis_model::{ItemKind, Map, Vct};

use super::{BakeStep, BaseTemplate, Builder};
use crate::BuilderDecl;

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
    /// The tree's `id` (cfg/_config.yml): what scopes the lineage tags,
    /// image lookups and image families to this tree, so two trees in
    /// one account or project never take each other's builds.
    fn tree_id(&self) -> String;
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
    /// The account ([`crate::cloud_config::account_fields`]) of the user
    /// the index names `user` (looked up as given), when it structured
    /// as a user.
    fn user_account(&self, user: &str) -> Option<crate::cloud_config::AccountFields> {
        self.item(ItemKind::USERS, user)
            .and_then(|view| crate::cloud_config::account_fields(&view))
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

/// The bakes of this run an image's bake on `runtime` comes after
/// ([`BakeStep::after`]): its parent series' bake, when the parent bakes in
/// the run too and the image starts from the parent's newest build (no
/// `pinned` parent build).
pub fn parent_bakes(
    ctx: &dyn HookContext,
    parent: &str,
    pinned: Option<&str>,
    runtime: &str,
) -> Vec<String> {
    if pinned.is_none() && ctx.bake_decision(parent, runtime).bake {
        vec![BakeStep::key(parent, runtime)]
    } else {
        Vec::new()
    }
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
