//! The user-data an instance boots with, as its instance builder emits it
//! (asked outside any run, as validation asks), and its SHA-256: what
//! meta-state/launch-params.yaml records per instance whose builder
//! replaces a machine whose user-data changed (`user_data_sha256`, spec:
//! launch-params.yaml). A launched machine never reads its user-data
//! again, so a digest that moved means the next apply replaces the
//! machine; the plan says so.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{ItemKind, Vct};
use csis_plugin_api::Builder;
use sha2::{Digest, Sha256};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, indexed_of_kind};
use crate::load::items_model::structured_item;
use crate::plan::hook_context::EngineContext;

/// The hooks of the builder instance `id` names; `None` for an item that
/// is no instance, or a builder that is not declared.
pub fn instance_builder(db: &dyn Db, id: ItemId<'_>) -> Option<Box<dyn Builder>> {
    let si = structured_item(db, id);
    let Some(Item::Instance(inst)) = si.item.as_deref() else {
        return None;
    };
    let decl =
        builders(db, id.tree(db)).resolve(Vct::InstanceBuilderModel, &inst.root.named.type_)?;
    let spec = db.registry().model(decl.classification, decl.model)?;
    Some((spec.builder)(decl))
}

/// The SHA-256 of the rendered document, lowercase hex, for an instance
/// whose builder replaces the machine when it changes; `None` otherwise.
#[salsa::tracked]
pub fn user_data_sha256<'db>(db: &'db dyn Db, id: ItemId<'db>) -> Option<String> {
    let builder = instance_builder(db, id).filter(|b| b.replaces_on_user_data_change())?;
    let rendered = builder
        .user_data(&EngineContext::outside_run(db, id.tree(db)), id.name(db))?
        .render();
    Some(
        Sha256::digest(rendered.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// Every declared instance's digest, by name, where its builder emits
/// user-data.
pub fn user_data_digests(db: &dyn Db, tree: Tree) -> BTreeMap<String, String> {
    indexed_of_kind(db, tree, ItemKind::INSTANCES)
        .into_iter()
        .filter_map(|id| Some((id.name(db).to_string(), user_data_sha256(db, id).clone()?)))
        .collect()
}
