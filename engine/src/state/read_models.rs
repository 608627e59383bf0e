//! The read-models: meta-state/identity.yaml, the structural facts of the
//! groups and users the identity lifecycle generated (gids travel by
//! terraform reference and are not recorded), and meta-state/storage.yaml,
//! each storage's requested and current state, access and attachments.
//! Both are written after their lifecycle generates; storage.yaml again
//! after a real storage apply moved the current states.
//!
//! The record is also what keeps a managed group from leaving the YAML
//! (check/groups.rs holds that rule).

use csis_model::models::Item;
use csis_model::{ItemKind, Value, Vct};
use serde_json::{Map, Value as J, json};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::state::storage_state::StorageState;

/// The read-models' file names inside meta-state/.
pub const IDENTITY: &str = "identity.yaml";
pub const STORAGE: &str = "storage.yaml";

/// The identity read-model of the tree, without the run that writes it.
pub fn identity_read_model(db: &dyn Db, tree: Tree) -> Map<String, J> {
    let b = builders(db, tree);
    let registry = db.registry();
    let index = item_index(db, tree);
    // Decrypted values are recorded as their source ciphertext.
    let mut secrets = Vec::new();
    let mut items = |kind: ItemKind| -> Vec<std::sync::Arc<Item>> {
        index
            .names(kind)
            .filter_map(|n| {
                let si = structured_item(db, ItemId::new(db, tree, kind, n));
                secrets.extend(si.secrets.iter().cloned());
                si.item.clone()
            })
            .collect()
    };
    let mut groups = Map::new();
    for item in items(ItemKind::GROUPS) {
        let Item::Group(g) = item.as_ref() else {
            continue;
        };
        let decl = b.resolve(Vct::GroupBuilderModel, &g.root.named.type_);
        let builder = decl.and_then(|d| {
            registry
                .model(d.classification, d.model)
                .map(|spec| (spec.builder)(d))
        });
        groups.insert(
            g.name().to_string(),
            json!({
                "builder": decl.map(|d| d.name().to_string()),
                "identity_type": builder.as_ref().and_then(|b| b.identity_type().map(str::to_string)),
                "gid_policy": builder.as_ref().map(|b| b.gid_policy()),
                "managed": !g.unmanaged,
                "is_root": g.is_root,
                "members": g.members,
                "admins": g.admins,
            }),
        );
    }
    let mut users = Map::new();
    for item in items(ItemKind::USERS) {
        let Item::User(u) = item.as_ref() else {
            continue;
        };
        let decl = b.resolve(Vct::UserBuilderModel, &u.root.named.type_);
        users.insert(
            u.root.name().to_string(),
            json!({
                "builder": decl.map(|d| d.name().to_string()),
                "login": u.login,
                "is_service_account": u.is_service_account,
                "is_enabled": u.is_enabled,
            }),
        );
    }
    let user_builders: Vec<&str> = b.names(Vct::UserBuilderModel);
    let mut out = Map::new();
    out.insert("groups".into(), J::Object(groups));
    out.insert("users".into(), J::Object(users));
    out.insert("user_builders".into(), json!(user_builders));
    redacted(out, &secrets)
}

/// Decrypted values as their source ciphertext.
fn redacted(model: Map<String, J>, secrets: &[csis_model::models::Secret]) -> Map<String, J> {
    let mut model = J::Object(model);
    crate::load::render::redact(&mut model, secrets);
    match model {
        J::Object(m) => m,
        _ => Map::new(),
    }
}

/// The storage read-model of the tree against the state machine's record.
pub fn storage_read_model(db: &dyn Db, tree: Tree, record: &StorageState) -> Map<String, J> {
    let b = builders(db, tree);
    let registry = db.registry();
    let attached = crate::state::storage_state::attachments(db, tree);
    let mut secrets = Vec::new();
    let mut storages = Map::new();
    for d in crate::state::storage_state::declared(db, tree) {
        let si = structured_item(
            db,
            ItemId::new(db, tree, ItemKind::STORAGES, d.name.as_str()),
        );
        let Some(Item::Storage(st)) = si.item.as_deref() else {
            continue;
        };
        secrets.extend(si.secrets.iter().cloned());
        let decl = b.resolve(Vct::StorageBuilderModel, &st.named.type_);
        let builder = decl.and_then(|d| {
            registry
                .model(d.classification, d.model)
                .map(|spec| (spec.builder)(d))
        });
        let current = record.storages.get(&d.name);
        storages.insert(
            d.name.clone(),
            json!({
                "builder": d.builder,
                "requested_state": d.requested,
                "current_state": current.map(|r| r.state.clone()),
                "generation": current.map_or(0, |r| r.generation),
                "allowed_groups": st.groups,
                "public_read": st.public_read,
                "share_mode": st.share_mode,
                "lifecycle": st.lifecycle.as_ref().map(|l| Value::map(l.clone()).to_json()),
                "attachments": attached.get(&d.name).cloned().unwrap_or_default(),
                "type": builder.as_ref().and_then(|b| b.capability_type().map(str::to_string)),
                "plugin": decl.map(|d| d.model),
                "attachment_cardinality": builder.as_ref().map(|b| if b.multi_attach() { "many" } else { "single" }),
                "posix": builder.as_ref().is_some_and(|b| b.is_posix()),
            }),
        );
    }
    let mut out = Map::new();
    out.insert("storages".into(), J::Object(storages));
    redacted(out, &secrets)
}
