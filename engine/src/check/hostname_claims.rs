//! Claimed hostnames: before a real run launches machines, each instance's
//! canonical hostname is looked up in its group's server registry. A new
//! machine must not enroll under a name a registry already holds, a
//! launched one must be the only registration under its name, and a
//! registry that does not answer refuses the launch (silence is not a free
//! name). Runs only when the instance-image lifecycle is requested, the
//! run is real, and the apply scope allows the instance's runtime.

use csis_model::models::Item;
use csis_model::{ItemKind, Vct};
use serde_json::Value as J;

use crate::load::builders::builders;
use std::path::Path;

use crate::db::run_input::RunOptions;
use crate::db::{Db, Tree};
use crate::load::items::{ItemId, indexed_of_kind};
use crate::load::items_model::structured_item;
use crate::plan::bakes::apply_scope;
use crate::state::launch_params::compute_all;

/// Refusals; `root` is where a group's server registry is asked.
pub fn check(db: &dyn Db, tree: Tree, root: &Path, opts: &RunOptions) -> Vec<String> {
    let b = builders(db, tree);
    let record = &crate::state::launch_params::launch_record(db, tree).value;
    let params = compute_all(db, tree, record);
    let scope = apply_scope(db, tree, opts);
    let mut errors = Vec::new();
    for id in indexed_of_kind(db, tree, ItemKind::INSTANCES) {
        let name = id.name(db).as_str();
        let Some(Item::Instance(inst)) = structured_item(db, id).item.as_deref() else {
            continue;
        };
        let runtime = b
            .resolve(Vct::InstanceBuilderModel, &inst.root.named.type_)
            .and_then(|d| d.base.runtime().map(str::to_string));
        if let (Some(scope), Some(rt)) = (&scope, &runtime)
            && !scope.contains(rt)
        {
            continue;
        }
        let Some(p) = params.get(name) else { continue };
        let (Some(group), Some(hostname)) = (
            p.get("group").and_then(J::as_str),
            p.get("hostname").and_then(J::as_str),
        ) else {
            continue;
        };
        let group_id = ItemId::new(db, tree, ItemKind::GROUPS, group);
        let Some(Item::Group(g)) = structured_item(db, group_id).item.as_deref() else {
            continue;
        };
        let Some(decl) = b.resolve(Vct::GroupBuilderModel, &g.root.named.type_) else {
            continue;
        };
        let Some(spec) = db.registry().model(decl.classification, decl.model) else {
            continue;
        };
        let launched = record.instances.get(name).is_some_and(|r| r.launched);
        match (spec.builder)(decl).registered_servers(root, group, hostname) {
            None => {}
            Some(Err(why)) => errors.push(format!(
                "instance '{name}': could not check whether canonical hostname '{hostname}' is already claimed (group '{group}''s server registry did not answer: {why}); refusing to launch on silence"
            )),
            Some(Ok(servers)) if !launched && !servers.is_empty() => errors.push(format!(
                "instance '{name}': canonical hostname '{hostname}' is already registered to {} server(s) in group '{group}' ({}); launching would enroll a second machine under the same name. Retire the stale registration first",
                servers.len(),
                servers.join(", ")
            )),
            Some(Ok(servers)) if launched && servers.len() > 1 => errors.push(format!(
                "instance '{name}': canonical hostname '{hostname}' is registered to {} servers in group '{group}' ({}) and only one of them is this machine; sft ssh cannot choose. Deregister the others.",
                servers.len(),
                servers.join(", ")
            )),
            Some(Ok(_)) => {}
        }
    }
    errors
}
