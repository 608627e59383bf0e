//! Storages (the spec's validate row "storages"): the strict attach rule,
//! an instance attaches a group-gated storage only when its image's group
//! is allowed (N2); the transitions the declared storages request of the
//! recorded state machine (meta-state/storage-state.yaml, the rules in
//! `state::storage_state`); single-attach cardinality, a single-attach
//! storage is attached by one instance at most (N16). A storage's unknown
//! allowed groups are its foreign keys' refusal.

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Vct};

use crate::check::context::Checks;
use crate::db::{Db, Tree};
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;
use crate::load::kept_world::kept_storage;

/// One instance's storage mappings under the strict attach rule.
pub(crate) fn attach_diagnostics<'db>(
    db: &'db dyn Db,
    tree: Tree,
    id: ItemId<'db>,
) -> Vec<Diagnostic> {
    let mut v = Checks::new(db, tree);
    v.strict_attach(id);
    v.out
}

impl Checks<'_> {
    /// The strict attach rule: an instance attaches a group-gated storage
    /// only when its image's group is allowed.
    fn strict_attach(&mut self, id: ItemId<'_>) {
        let name = id.name(self.db);
        let si = structured_item(self.db, id);
        let Some(Item::Instance(inst)) = si.item.as_deref() else {
            return;
        };
        let image = inst.image.as_deref().unwrap_or_default();
        // An image that names nothing is the foreign-key check's refusal.
        let Some(image_item) = self.structured(ItemKind::IMAGES, image) else {
            return;
        };
        let Item::Image(img) = &*image_item else {
            return;
        };
        let group = &img.group;
        for m in &si.storages {
            let Some(item) = self.storage(&m.name) else {
                continue;
            };
            let Item::Storage(st) = &*item else {
                continue;
            };
            if st.public_read || st.groups.is_empty() {
                continue;
            }
            let at = si.origin.as_ref().map(|o| o.key("storages"));
            match &group {
                None => self.err(
                    format!("instance '{name}' attaches group-gated storage '{}' but its image '{image}' has no owning group", m.name),
                    at,
                ),
                Some(g) if !st.allows_group(g) => self.err(
                    format!(
                        "instance '{name}' (image '{image}', group '{g}') may not attach storage '{}': allowed groups are [{}] (N2)",
                        m.name,
                        st.groups.join(", ")
                    ),
                    at,
                ),
                _ => {}
            }
        }
    }

    /// The storage transitions, then single-attach cardinality: a
    /// single-attach storage is attached by one instance at most.
    pub(super) fn cardinality(&mut self) {
        let attached = crate::state::storage_state::attachments(self.db, self.tree);
        self.storage_transitions(&attached);
        for (storage, instances) in attached {
            // Its type as the cache kept it (load/kept_world.rs): only a
            // refusal structures the storage, for its runtime and place.
            let type_ = match kept_storage(self.db, self.tree, &storage) {
                Some(kept) => kept.type_.clone(),
                None => match self.storage(&storage).as_deref() {
                    Some(Item::Storage(st)) => st.named.type_.to_string(),
                    _ => continue,
                },
            };
            let single = self
                .builder_of(Vct::StorageBuilderModel, &type_)
                .is_some_and(|b| !b.multi_attach());
            if single && instances.len() > 1 {
                let Some(item) = self.storage(&storage) else {
                    continue;
                };
                let Item::Storage(st) = &*item else {
                    continue;
                };
                let runtime = self
                    .b
                    .resolve(Vct::RuntimeBuilderModel, &st.runtime)
                    .map_or(st.runtime.clone(), |d| d.name().to_string());
                let multi: Vec<&str> = self
                    .b
                    .by_class
                    .get(&Vct::StorageBuilderModel)
                    .into_iter()
                    .flat_map(|m| m.values())
                    .filter(|d| d.base.runtime() == Some(runtime.as_str()))
                    .filter(|d| {
                        self.builder_of(Vct::StorageBuilderModel, d.name())
                            .is_some_and(|b| b.multi_attach())
                    })
                    .map(|d| d.name())
                    .collect();
                self.err(
                    format!(
                        "storage '{storage}' ({}) is single-attach but instances [{}] all attach it (N16); multi-host storage builders on {}: [{}]",
                        st.named.type_,
                        instances.join(", "),
                        runtime,
                        multi.join(", ")
                    ),
                    self.origin_of(ItemKind::STORAGES, &storage),
                );
            }
        }
    }

    /// The transitions the declared storages request of the recorded
    /// state machine.
    fn storage_transitions(&mut self, attached: &std::collections::BTreeMap<String, Vec<String>>) {
        use crate::state::storage_state::{FILE, StorageState, check, declared, kept_declared};
        let record = crate::state::lineage::read_record::<StorageState>(self.db, self.tree, FILE);
        self.out.extend(record.diags);
        // What the cache kept of the storages (load/kept_world.rs) when
        // it finds nothing; else the structured storages, whose refusals
        // say where each is declared.
        let kept = kept_declared(self.db, self.tree)
            .map(|kept| check(&kept, &record.value, attached))
            .filter(Vec::is_empty);
        self.out.extend(
            kept.unwrap_or_else(|| check(&declared(self.db, self.tree), &record.value, attached)),
        );
    }
}
