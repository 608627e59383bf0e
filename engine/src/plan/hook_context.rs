//! The hooks' window on the tree and the plan: the engine's side of
//! plugin-api's `HookContext`. Generation asks builders through it within
//! a run; validation asks through it outside any run (a builder's
//! user-data for an instance), so both see the same answers.

use std::sync::Arc;

use csis_model::models::{ExecutableModel, Item, ItemView};
use csis_model::{ItemKind, Map, Vct};
use csis_plugin_api::cloud_config::{AccountFields, GroupAccounts, account_fields};
use csis_plugin_api::{BakeDecision, BuilderDecl, HookContext, StateRoot};

use crate::db::run_input::RunInput;
use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::plan::bakes::{bake_decision, image_graph};
use crate::plan::fingerprint::{SeriesKey, chain_root, input_fingerprint};
use crate::state::lineage::pins;

/// The hooks' window on the run: every read goes through a query, so the
/// builder's output depends on exactly what it read.
pub struct EngineContext<'a> {
    pub db: &'a dyn Db,
    pub tree: Tree,
    /// `None` outside a run (validation asking a builder for an
    /// instance's user-data): a dry run that bakes nothing.
    pub run: Option<RunInput>,
    pub lifecycle: String,
    /// The instance whose user-data the context answers for, at
    /// validate: a hook reading any other instance through it keeps this
    /// process from keeping instances files' checks
    /// (`load::kept_instances`).
    pub about: Option<&'a str>,
}

/// The accounts of one group, as plugin-api reads them: a query, so the
/// 5,000 instances of a large tree read 500 of these rather than 200,000
/// users.
#[salsa::tracked(returns(ref))]
fn group_accounts_of<'db>(db: &'db dyn Db, group: ItemId<'db>) -> Arc<GroupAccounts> {
    let ctx = EngineContext::outside_run(db, group.tree(db));
    Arc::new(csis_plugin_api::cloud_config::group_accounts(
        &ctx,
        Some(group.name(db)),
    ))
}

impl<'a> EngineContext<'a> {
    /// The tree alone, outside any run and lifecycle.
    pub fn outside_run(db: &'a dyn Db, tree: Tree) -> Self {
        EngineContext {
            db,
            tree,
            run: None,
            lifecycle: String::new(),
            about: None,
        }
    }

    /// The tree, answering for one instance's user-data at validate.
    pub fn about_instance(db: &'a dyn Db, tree: Tree, instance: &'a str) -> Self {
        EngineContext {
            about: Some(instance),
            ..EngineContext::outside_run(db, tree)
        }
    }

    /// Note a read of instance `name` (`None`: of every instance), when it
    /// is not the one this context answers for.
    fn reads_instance(&self, kind: ItemKind, name: Option<&str>) {
        if kind == ItemKind::INSTANCES
            && let Some(about) = self.about
            && name != Some(about)
            && let Some(cache) = self.db.cache()
        {
            cache.note_reach_across();
        }
    }
}

impl HookContext for EngineContext<'_> {
    fn dry_run(&self) -> bool {
        self.run.is_none_or(|run| run.options(self.db).dry_run)
    }

    fn lifecycle(&self) -> &str {
        &self.lifecycle
    }

    fn config(&self) -> Map {
        builders(self.db, self.tree).config_map()
    }

    fn tree_id(&self) -> String {
        builders(self.db, self.tree).tree_id()
    }

    fn builders(&self, vct: Vct) -> Vec<Arc<BuilderDecl>> {
        let mut v: Vec<_> = builders(self.db, self.tree)
            .by_class
            .get(&vct.sanitize())
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        v.sort_by(|a: &Arc<BuilderDecl>, b| a.name().cmp(b.name()));
        v
    }

    fn builder(&self, vct: Vct, reference: &str) -> Option<Arc<BuilderDecl>> {
        builders(self.db, self.tree)
            .resolve(vct, reference)
            .cloned()
    }

    fn items(&self, kind: ItemKind) -> Vec<ItemView> {
        self.reads_instance(kind, None);
        item_index(self.db, self.tree)
            .names(kind)
            .filter_map(|n| self.item(kind, n))
            .collect()
    }

    fn item(&self, kind: ItemKind, name: &str) -> Option<ItemView> {
        self.reads_instance(kind, Some(name));
        let id = ItemId::new(self.db, self.tree, kind, name);
        structured_item(self.db, id).view()
    }

    fn item_model(&self, kind: ItemKind, name: &str) -> Option<Arc<Item>> {
        self.reads_instance(kind, Some(name));
        let id = ItemId::new(self.db, self.tree, kind, name);
        structured_item(self.db, id).item.clone()
    }

    fn user_account(&self, user: &str) -> Option<AccountFields> {
        // A kept users file answers without structuring the user.
        if let Some(kept) = crate::load::kept_users::kept_account(self.db, self.tree, user) {
            return Some(kept);
        }
        self.item(ItemKind::USERS, user)
            .and_then(|view| account_fields(&view))
    }

    fn group_accounts(&self, group: Option<&str>) -> Arc<GroupAccounts> {
        match group {
            Some(g) => {
                let id = ItemId::new(self.db, self.tree, ItemKind::GROUPS, g);
                group_accounts_of(self.db, id).clone()
            }
            None => Arc::default(),
        }
    }

    fn item_names(&self, kind: ItemKind) -> Vec<String> {
        self.reads_instance(kind, None);
        item_index(self.db, self.tree)
            .names(kind)
            .map(String::from)
            .collect()
    }

    fn images_in_bake_order(&self) -> Vec<String> {
        image_graph(self.db, self.tree).order.clone()
    }

    fn bake_decision(&self, image: &str, runtime: &str) -> BakeDecision {
        let Some(run) = self.run else {
            return BakeDecision {
                bake: false,
                reason: "skip: outside a run".into(),
            };
        };
        // Through the decision's own query: a hook reading one decision is
        // not recomputed when another changes.
        let key = SeriesKey::new(self.db, image.to_string(), runtime.to_string());
        bake_decision(self.db, self.tree, run, key)
            .clone()
            .unwrap_or(BakeDecision {
                bake: false,
                reason: "skip: not in the plan".into(),
            })
    }

    fn fingerprint(&self, series: &str, runtime: &str) -> Option<String> {
        let key = SeriesKey::new(self.db, series.to_string(), runtime.to_string());
        input_fingerprint(self.db, self.tree, key)
            .as_ref()
            .map(|f| f.hex.clone())
    }

    fn pinned_parent(&self, image: &str, runtime: &str) -> Option<String> {
        let id = ItemId::new(self.db, self.tree, ItemKind::IMAGES, image);
        match structured_item(self.db, id).item.as_deref() {
            Some(csis_model::models::Item::Image(img)) if img.parent_policy != "follow" => {
                pins(self.db, self.tree)
                    .value
                    .images
                    .get(&format!("{image}@{runtime}"))
                    .cloned()
            }
            _ => None,
        }
    }

    fn canonical_hostname(&self, instance: &str, ephemeral: bool) -> String {
        crate::state::launch_params::canonical_hostname(self.db, self.tree, instance, ephemeral)
    }

    fn undeclared_storages(&self, builder: &str) -> Vec<String> {
        crate::state::storage_state::undeclared(self.db, self.tree)
            .into_iter()
            .filter(|(_, b)| b == builder)
            .map(|(s, _)| s)
            .collect()
    }

    fn undeclared_instances(&self) -> Vec<String> {
        self.reads_instance(ItemKind::INSTANCES, None);
        let index = item_index(self.db, self.tree);
        crate::state::launch_params::launch_record(self.db, self.tree)
            .value
            .instances
            .iter()
            .filter(|(name, r)| r.launched && !index.contains(ItemKind::INSTANCES, name))
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn instance_pin(&self, instance: &str) -> Option<String> {
        pins(self.db, self.tree)
            .value
            .instances
            .get(instance)
            .cloned()
    }

    fn capabilities(&self, series: &str) -> (Vec<String>, Vec<String>) {
        let b = builders(self.db, self.tree);
        let root = chain_root(self.db, self.tree, series).map(|(r, _)| r);
        match root
            .and_then(|r| b.resolve(Vct::OsBuilderModel, &r))
            .map(|d| &d.base)
        {
            Some(csis_model::models::BaseBuilder::Os(os)) => {
                (os.identity_types.clone(), os.storage_types.clone())
            }
            _ => (Vec::new(), Vec::new()),
        }
    }

    fn executable(&self, name: &str) -> Option<ExecutableModel> {
        builders(self.db, self.tree).executables.get(name).cloned()
    }

    fn bake_disk_size(&self, series: &str, runtime: &str) -> Option<String> {
        let key = SeriesKey::new(self.db, series.to_string(), runtime.to_string());
        input_fingerprint(self.db, self.tree, key)
            .as_ref()?
            .bake_disk_size
            .clone()
    }

    fn builder_hooks(&self, decl: &Arc<BuilderDecl>) -> Option<Box<dyn csis_plugin_api::Builder>> {
        let spec = self.db.registry().model(decl.classification, decl.model)?;
        Some((spec.builder)(decl))
    }

    fn base_template(&self, series: &str, runtime: &str) -> Option<csis_plugin_api::BaseTemplate> {
        let (u, r) =
            crate::load::templates::template_on_runtime(self.db, self.tree, series, runtime)?;
        let json = r.json.as_ref()?;
        Some(csis_plugin_api::BaseTemplate {
            full_yaml: r.full_yaml.clone(),
            redacted_yaml: r.redacted_yaml.clone(),
            chain: r.chain.clone(),
            defaults: r.defaults.clone(),
            defaults_dir: u.defaults_dir.clone(),
            variables: u.variables.clone(),
            artifact_types: crate::load::templates::artifact_types(json),
        })
    }

    fn migrates_state(&self, workspace: &str) -> bool {
        self.run.is_some_and(|run| {
            run.options(self.db)
                .migrate_state
                .iter()
                .any(|w| w == workspace)
        })
    }

    fn state_root(&self, builder: &str) -> Option<StateRoot> {
        let b = builders(self.db, self.tree);
        if !crate::state::state_locations::enabled(b) {
            return None;
        }
        let root = crate::state::state_locations::roots(self.db, self.tree)
            .into_iter()
            .find(|r| r.owner.1 == builder)?;
        let location = root.resolved.ok()?;
        let backend = b
            .resolve(Vct::StateBackendModel, &location.backend)?
            .clone();
        Some(StateRoot {
            workspace: root.workspace,
            backend,
            location: location.location,
        })
    }
}
