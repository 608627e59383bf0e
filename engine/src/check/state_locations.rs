//! State locations, with `config.use_state_backends`: validation refuses
//! `none` (there is no "no backend"), an undeclared backend, two roots on
//! one state object, and a location that moved while something stands in
//! the root (unless `--migrate-state` names it). The resolution and the
//! record are state/state_locations.rs's; these are the rules.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::state::lineage::{lineage, read_record};
use crate::state::state_locations::{FILE, StateLocations, enabled, roots};

/// What stands in a root: the resources its state holds, as meta-state
/// records them.
fn standing(db: &dyn Db, tree: Tree, owner: &(Vct, String)) -> Vec<String> {
    let (vct, name) = owner;
    let b = builders(db, tree);
    match *vct {
        Vct::StorageBuilderModel => crate::state::storage_state::storage_record(db, tree)
            .value
            .storages
            .iter()
            .filter(|(_, r)| r.builder.as_deref() == Some(name) && r.state != "destroyed")
            .map(|(s, _)| format!("storage '{s}'"))
            .collect(),
        Vct::InstanceBuilderModel => {
            let launched = &crate::state::launch_params::launch_record(db, tree).value;
            item_index(db, tree)
                .names(ItemKind::INSTANCES)
                .filter(|i| launched.instances.get(*i).is_some_and(|r| r.launched))
                .filter(|i| {
                    let id = ItemId::new(db, tree, ItemKind::INSTANCES, *i);
                    matches!(structured_item(db, id).item.as_deref(),
                        Some(Item::Instance(inst)) if b
                            .resolve(Vct::InstanceBuilderModel, &inst.root.named.type_)
                            .is_some_and(|d| d.name() == name))
                })
                .map(|i| format!("instance '{i}'"))
                .collect()
        }
        Vct::RuntimeBuilderModel => lineage(db, tree)
            .value
            .builds
            .iter()
            .filter(|r| r.runtime == *name)
            .map(|r| format!("build '{}'", r.build_id))
            .collect(),
        _ => {
            let identity = read_record::<serde_json::Map<String, serde_json::Value>>(
                db,
                tree,
                crate::state::read_models::IDENTITY,
            )
            .value;
            ["groups", "users"]
                .iter()
                .flat_map(|k| identity.get(*k).and_then(|v| v.as_object()))
                .flat_map(|m| m.iter())
                .filter(|(_, v)| v.get("builder").and_then(|x| x.as_str()) == Some(name))
                .map(|(n, _)| format!("'{n}'"))
                .collect()
        }
    }
}

/// The state-location refusals of validation; `migrating` are the
/// workspaces `--migrate-state` names.
pub fn check(db: &dyn Db, tree: Tree, migrating: &[String]) -> Vec<Diagnostic> {
    let b = builders(db, tree);
    if !enabled(b) {
        return Vec::new();
    }
    let recorded = read_record::<StateLocations>(db, tree, FILE).value;
    let mut out = Vec::new();
    let mut by_location: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for root in roots(db, tree) {
        let loc = match root.resolved {
            Ok(loc) => loc,
            Err(msg) => {
                out.push(Diagnostic::error(msg).at_opt(root.origin));
                continue;
            }
        };
        by_location
            .entry(loc.location.clone())
            .or_default()
            .push(format!(
                "{} '{}'",
                crate::load::builder_labels::label_in_sentence(root.owner.0),
                root.owner.1
            ));
        let Some(before) = recorded.workspaces.get(&root.workspace) else {
            continue;
        };
        if before.location == loc.location || migrating.contains(&root.workspace) {
            continue;
        }
        let stands = standing(db, tree, &root.owner);
        if !stands.is_empty() {
            out.push(
                Diagnostic::error(format!(
                    "workspace '{}' would move its state from {} to {} while {} stand(s) in it -- move it with a real run's --migrate-state {} (or restore state_configuration); never rebind past the refusal",
                    root.workspace,
                    before.location,
                    loc.location,
                    stands.join(", "),
                    root.workspace
                ))
                .at_opt(root.origin),
            );
        }
    }
    for (location, owners) in by_location.iter().filter(|(_, o)| o.len() > 1) {
        out.push(Diagnostic::error(format!(
            "state location collision: the roots of {} share one state object, {location} -- give one its own state_configuration, or rename it",
            owners.join(", ")
        )));
    }
    for ws in migrating {
        match recorded.workspaces.get(ws) {
            None => out.push(Diagnostic::error(format!(
                "--migrate-state {ws}: meta-state records no location for workspace '{ws}'; there is nothing to migrate from"
            ))),
            Some(before)
                if !roots(db, tree)
                    .iter()
                    .any(|r| r.workspace == *ws && r.resolved.as_ref().is_ok_and(|l| l.location != before.location)) =>
            {
                out.push(Diagnostic::error(format!(
                    "--migrate-state {ws}: workspace '{ws}' does not move (its state stays at {})",
                    before.location
                )))
            }
            Some(_) => {}
        }
    }
    out
}
