//! Availability zones: declared, never inferred. A zonal storage lives in
//! one zone; an instance, the zonal storages it attaches and its runtime's
//! subnet must agree on one. A zone is replace-forcing at the provider, so
//! the fix is always the declaration, never the plan.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;

const FIX: &str = "a zone is replace-forcing; fix the declaration, never the plan";

/// A storage's zone against its runtime's; an instance's, its storages'
/// and its runtime's against each other.
pub(crate) fn zones_of<'db>(db: &'db dyn Db, tree: Tree, id: ItemId<'db>) -> Vec<Diagnostic> {
    let name = id.name(db);
    let b = builders(db, tree);
    let registry = db.registry();
    // The zone a runtime places machines in: the availability zone marked
    // default, else its default subnet's.
    let runtime_zone = |rt: &str| -> Option<(String, String)> {
        let d = b.resolve(Vct::RuntimeBuilderModel, rt)?;
        let csis_model::models::BaseBuilder::Cloud(cloud) = &d.base else {
            return None;
        };
        let net = &cloud.networking;
        let zone = net
            .default_availability_zone()
            .map(str::to_string)
            .or_else(|| {
                net.default_subnet()
                    .and_then(|s| s.availability_zone.clone())
            })?;
        Some((d.name().to_string(), zone))
    };
    let item = |kind: ItemKind, name: &str| {
        structured_item(
            db,
            ItemId::new(db, tree, kind, csis_model::naming::as_safe_name(name)),
        )
    };
    // A zonal storage's declared zone.
    let storage_zone = |name: &str| -> Option<String> {
        let si = item(ItemKind::STORAGES, name);
        let Some(Item::Storage(st)) = si.item.as_deref() else {
            return None;
        };
        let d = b.resolve(Vct::StorageBuilderModel, &st.named.type_)?;
        let zonal = registry
            .model(d.classification, d.model)
            .is_some_and(|spec| (spec.builder)(d).is_zonal());
        if zonal {
            st.availability_zone.clone()
        } else {
            None
        }
    };
    let mut out = Vec::new();
    let si = structured_item(db, id);
    match si.item.as_deref() {
        Some(Item::Storage(st)) => {
            let Some(zone) = storage_zone(name) else {
                return out;
            };
            // The runtime the storage is created on: its storage
            // builder's when the builder names one (a tofu-gce storage
            // lives on the builder's gce runtime, whatever the default
            // runtime is), else the storage's own.
            let runtime = b
                .resolve(Vct::StorageBuilderModel, &st.named.type_)
                .and_then(|d| d.base.runtime().map(str::to_string))
                .unwrap_or_else(|| st.runtime.clone());
            if let Some((rt, rz)) = runtime_zone(&runtime)
                && rz != zone
            {
                out.push(
                    Diagnostic::error(format!(
                        "storage '{name}' declares availability zone '{zone}' but runtime '{rt}' (its default availability zone or subnet) is in '{rz}' -- {FIX}"
                    ))
                    .at_opt(si.origin.as_ref().map(|o| o.key("availability_zone"))),
                );
            }
        }
        Some(Item::Instance(inst)) => {
            let mut claims: BTreeMap<String, Vec<String>> = BTreeMap::new();
            if let Some(z) = &inst.availability_zone {
                claims
                    .entry(z.clone())
                    .or_default()
                    .push(format!("instance '{name}'"));
            }
            for m in &si.storages {
                if let Some(z) = storage_zone(&m.name) {
                    claims
                        .entry(z)
                        .or_default()
                        .push(format!("storage '{}'", m.name));
                }
            }
            let runtime = b
                .resolve(Vct::InstanceBuilderModel, &inst.root.named.type_)
                .and_then(|d| d.base.runtime().map(str::to_string));
            if let Some((rt, z)) = runtime.as_deref().and_then(runtime_zone) {
                claims.entry(z).or_default().push(format!("runtime '{rt}'"));
            }
            if claims.len() > 1 {
                let listed: Vec<String> = claims
                    .iter()
                    .map(|(z, who)| format!("{z} ({})", who.join(", ")))
                    .collect();
                out.push(
                    Diagnostic::error(format!(
                        "instance '{name}' cannot be in more than one availability zone: {} -- {FIX}",
                        listed.join("; ")
                    ))
                    .at_opt(si.origin_of("name")),
                );
            }
        }
        _ => {}
    }
    out
}
